/** @module ui — small shared pieces: formatting, the data-loading and user-action hooks, messages, progress, definition lists, tables. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.js";

/** Who the session's key acts for. */
export interface Who {
  tenant: string;
  admin: boolean;
}

/** A hash link to a dashboard page: href("records", ns) -> #/records/<ns>. */
export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join("/")}`;

export const usd = (n: number | null | undefined) => (typeof n === "number" && Number.isFinite(n) ? `$${n.toFixed(6)}` : "—");
export const int = (n: number | null | undefined) => (typeof n === "number" ? n.toLocaleString("en-US") : "—");

/** Local time as YYYY-MM-DD HH:MM:SS (sortable, unambiguous). */
export function when(ts: number | string | null | undefined): string {
  if (ts === null || ts === undefined || ts === "") return "—";
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Short local time: HH:MM:SS today, else YYYY-MM-DD HH:MM. */
export function whenShort(ts: number): string {
  const full = when(ts);
  return full.slice(0, 10) === when(Date.now()).slice(0, 10) ? full.slice(11) : full.slice(0, 16);
}

export const bytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Run `load` now and whenever `deps` change (the previous run is aborted); errors land in `error`. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    loadRef.current(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (err: unknown) => {
        if (ctl.signal.aborted) return;
        setState({
          data: undefined,
          error: err instanceof ApiError ? err : new ApiError(0, "E_CLIENT", (err as Error).message),
          loading: false,
        });
      },
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export interface Action {
  busy: boolean;
  error: ApiError | null;
  setError: (error: ApiError | null) => void;
  /** Run `work` with `busy` set and `error` cleared; a failure lands in `error`, then `onError` runs. */
  run: (work: () => Promise<void>, onError?: () => void) => Promise<void>;
}

/** Something the user starts (a form submit, a button): whether it runs now and how it last failed. */
export function useAction(): Action {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<void>, onError?: () => void) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(err as ApiError);
      onError?.();
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/** An error as a sentence; the router's 404 reads as "not available on this server yet". */
export function ErrorNote(props: { error: ApiError | null; what?: string }) {
  const e = props.error;
  if (e === null) return null;
  if (e.missing)
    return (
      <p class="note" role="status">
        {props.what ?? "This part"} is not available on this server yet.
      </p>
    );
  return (
    <p class="error" role="alert">
      {e.message}
      {e.code && !e.code.startsWith("HTTP_") ? (
        <span class="code">
          {" "}
          ({e.code}
          {e.field ? `, ${e.field}` : ""})
        </span>
      ) : null}
    </p>
  );
}

/** Loading, error, or the content. */
export function Show<T>(props: { value: Loaded<T>; what?: string; children: (data: T) => ComponentChildren }) {
  const v = props.value;
  if (v.error) return <ErrorNote error={v.error} what={props.what} />;
  if (v.data === undefined)
    return (
      <p class="muted" aria-live="polite">
        Loading…
      </p>
    );
  return <>{props.children(v.data)}</>;
}

export function Progress(props: { label: string; done: number; total: number | null }) {
  const pct = props.total ? Math.min(100, Math.round((props.done / props.total) * 100)) : null;
  return (
    <div class="progress">
      <label>
        {props.label} {pct === null ? bytes(props.done) : `${pct}% of ${bytes(props.total!)}`}
        <progress max={props.total ?? undefined} value={props.total ? props.done : undefined} />
      </label>
    </div>
  );
}

/** A page section: a card headed by `title`, labelled by its heading (`id`); `live` announces changes to screen readers. */
export function Card(props: { id: string; title: ComponentChildren; live?: boolean; children: ComponentChildren }) {
  return (
    <section class="card" aria-labelledby={props.id} aria-live={props.live ? "polite" : undefined}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** A form's submit button in its own field; while `busy` it is disabled and reads `busyLabel`. */
export function SubmitField(props: { label: string; busy?: boolean; busyLabel?: string }) {
  return (
    <div class="field">
      <button type="submit" disabled={props.busy}>
        {props.busy ? props.busyLabel : props.label}
      </button>
    </div>
  );
}

/** A labelled checkbox field of a form. */
export function CheckField(props: { id: string; label: string; checked: boolean; onChange: (checked: boolean) => void }) {
  return (
    <div class="field checkbox">
      <input id={props.id} type="checkbox" checked={props.checked} onChange={(e) => props.onChange(e.currentTarget.checked)} />
      <label for={props.id}>{props.label}</label>
    </div>
  );
}

/** Term/value pairs. */
export function Facts(props: { items: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="facts">
      {props.items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A column heading: its label, or [label, class] ("num" right-aligns, "opt" hides on narrow screens). */
export type Col = string | [string, string];

/**
 * A table that scrolls sideways when narrow: a caption (`hideCaption`: for screen readers only), a heading row
 * of `cols`, and the body rows as children; `live` announces changes to screen readers.
 */
export function Table(props: {
  cols: Col[];
  class?: string;
  testid?: string;
  caption?: ComponentChildren;
  hideCaption?: boolean;
  live?: boolean;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap" aria-live={props.live ? "polite" : undefined}>
      <table class={props.class} data-testid={props.testid}>
        {props.caption !== undefined && <caption class={props.hideCaption ? "visually-hidden" : undefined}>{props.caption}</caption>}
        <thead>
          <tr>
            {props.cols.map((c) =>
              typeof c === "string" ? (
                <th key={c} scope="col">
                  {c}
                </th>
              ) : (
                <th key={c[0]} scope="col" class={c[1]}>
                  {c[0]}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A status line that screen readers announce. */
export function Status(props: { children: ComponentChildren; kind?: "ok" | "error" }) {
  return (
    <p class={props.kind === "error" ? "error" : "ok"} role={props.kind === "error" ? "alert" : "status"}>
      {props.children}
    </p>
  );
}

/** A JSON value, compact, for metadata and unknown fields. */
export function Json(props: { value: unknown }) {
  const text = JSON.stringify(props.value);
  return <code class="json">{text.length > 300 ? `${text.slice(0, 300)}…` : text}</code>;
}

/**
 * The list in a reply whose exact shape a contract leaves open: the body itself when it is an
 * array, else the first of `names` that holds an array, else the first array-valued property.
 */
export function listIn<T>(body: unknown, names: string[]): T[] {
  if (Array.isArray(body)) return body as T[];
  if (typeof body !== "object" || body === null) return [];
  const o = body as Record<string, unknown>;
  for (const n of names) if (Array.isArray(o[n])) return o[n] as T[];
  for (const v of Object.values(o)) if (Array.isArray(v)) return v as T[];
  return [];
}
