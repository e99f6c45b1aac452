/** @module ui — small shared pieces: formatting, the data-loading hook, messages, progress, definition lists. */
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

export const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`);

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Run `load` now and whenever `deps` change (the previous run is aborted); errors land in `error`. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({ data: undefined, error: null, loading: true });
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
        setState({ data: undefined, error: err instanceof ApiError ? err : new ApiError(0, "E_CLIENT", (err as Error).message), loading: false });
      },
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** An error as a sentence; the router's 404 reads as "not available on this server yet". */
export function ErrorNote(props: { error: ApiError | null; what?: string }) {
  const e = props.error;
  if (e === null) return null;
  if (e.missing) return <p class="note" role="status">{props.what ?? "This part"} is not available on this server yet.</p>;
  return (
    <p class="error" role="alert">
      {e.message}
      {e.code && !e.code.startsWith("HTTP_") ? <span class="code"> ({e.code}{e.field ? `, ${e.field}` : ""})</span> : null}
    </p>
  );
}

/** Loading, error, or the content. */
export function Show<T>(props: { value: Loaded<T>; what?: string; children: (data: T) => ComponentChildren }) {
  const v = props.value;
  if (v.error) return <ErrorNote error={v.error} what={props.what} />;
  if (v.data === undefined) return <p class="muted" aria-live="polite">Loading…</p>;
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
