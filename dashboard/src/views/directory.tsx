/** @module views/directory — the public business directory (no key): search with paging, and profile pages showing each field's state and source. */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, seg } from "../api.js";
import { Card, ErrorNote, href, int, listIn, Show, SubmitField, Table, useLoad } from "../ui.js";

interface Source {
  url?: string | null;
  date?: string;
  asserted_by?: string;
}
interface Field {
  value: unknown;
  state?: string;
  source?: Source;
}
interface Business {
  id: string;
  fields?: Record<string, Field>;
  claim?: Field;
  verification?: Field;
  [k: string]: unknown;
}

const PAGE = 20;
/** Display order of the known fields; others follow. */
const ORDER = ["name", "category", "description", "services", "industries", "areas", "website", "email", "phone", "address"];
/** The directory's own facts about a business ({value, state, source} like the fields), shown in the claim card, not among the profile's fields. */
const STATUS = new Set(["listed", "claim", "verification", "bookable", "updated"]);

/** Public: never send the session's key here. */
const pub = <T,>(path: string, signal?: AbortSignal) => api<T>(path, { key: null, signal });

const isField = (v: unknown): v is Field => typeof v === "object" && v !== null && "value" in v;

/** A business's fields, whether it nests them under `fields` or carries them at the top level. */
function fieldsOf(b: Business): Record<string, Field> {
  if (b.fields && typeof b.fields === "object") return b.fields;
  const out: Record<string, Field> = {};
  for (const [k, v] of Object.entries(b)) if (isField(v) && !STATUS.has(k)) out[k] = v;
  return out;
}

function text(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return v.map(text).join(", ");
  if (typeof v === "object")
    return Object.values(v as Record<string, unknown>)
      .filter((x) => x !== undefined && x !== "")
      .map(text)
      .join(", ");
  return String(v);
}

const nameOf = (b: Business) => text(fieldsOf(b).name?.value) || b.id;

function Value(props: { name: string; value: unknown }) {
  const t = text(props.value);
  if (props.name === "website" && /^https?:\/\//i.test(t))
    return (
      <a href={t} rel="noopener noreferrer nofollow" target="_blank">
        {t}
      </a>
    );
  if (props.name === "email" && t.includes("@")) return <a href={`mailto:${t}`}>{t}</a>;
  return <>{t}</>;
}

function SourceNote(props: { f: Field }) {
  const s = props.f.source;
  const parts: ComponentChildren[] = [];
  if (props.f.state) parts.push(<span class="badge">{props.f.state.replace(/_/g, " ")}</span>);
  if (s?.asserted_by) parts.push(<span> by {s.asserted_by}</span>);
  if (s?.date) parts.push(<span> on {s.date}</span>);
  if (s?.url)
    parts.push(
      <span>
        {" "}
        ·{" "}
        <a href={s.url} rel="noopener noreferrer nofollow" target="_blank">
          source
        </a>
      </span>,
    );
  return <span class="source">{parts}</span>;
}

/** GET .../services: {services: Field<string[]> | null}. */
function Services(props: { base: string }) {
  const r = useLoad((signal) => pub<{ services?: Field | null }>(`${props.base}/services`, signal), [props.base]);
  return (
    <Card id="svc-h" title="Services">
      <Show value={r} what="Services">
        {(d) => {
          const f = d.services;
          const list = f && Array.isArray(f.value) ? (f.value as unknown[]) : [];
          return list.length === 0 ? (
            <p class="muted">No services listed.</p>
          ) : (
            <>
              <ul class="plain bullets">
                {list.map((x, i) => (
                  <li key={i}>{text(x)}</li>
                ))}
              </ul>
              <SourceNote f={f!} />
            </>
          );
        }}
      </Show>
    </Card>
  );
}

/** GET .../trust: claim and verification state, and each field's state and source. */
function Trust(props: { base: string }) {
  const r = useLoad(
    (signal) =>
      pub<{ claim?: Field; verification?: Field; fields?: Record<string, { state?: string; source?: Source }> }>(
        `${props.base}/trust`,
        signal,
      ),
    [props.base],
  );
  return (
    <Card id="trust-h" title="Claim and verification">
      <Show value={r} what="The trust view">
        {(d) => (
          <>
            <dl class="facts">
              <div>
                <dt>Claim</dt>
                <dd>
                  {text(d.claim?.value) || "—"}
                  {d.claim?.source?.date ? ` (${d.claim.source.date})` : ""}
                </dd>
              </div>
              <div>
                <dt>Verification</dt>
                <dd>
                  {text(d.verification?.value) || "—"}
                  {d.verification?.source?.date ? ` (${d.verification.source.date})` : ""}
                </dd>
              </div>
            </dl>
            {d.fields && Object.keys(d.fields).length > 0 && (
              <Table class="compact" caption="Where each field comes from" cols={["Field", "State", "Source"]}>
                {Object.entries(d.fields).map(([k, v]) => (
                  <tr key={k}>
                    <td>{k.replace(/_/g, " ")}</td>
                    <td>{(v.state ?? "").replace(/_/g, " ")}</td>
                    <td>
                      {v.source?.asserted_by ?? ""}
                      {v.source?.date ? ` on ${v.source.date}` : ""}
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </>
        )}
      </Show>
    </Card>
  );
}

/** GET .../actions: {actions: [...]}; empty unless the business is claimed with booking on. */
function Actions(props: { base: string }) {
  const r = useLoad((signal) => pub<unknown>(`${props.base}/actions`, signal), [props.base]);
  return (
    <Card id="act-h" title="Actions">
      <Show value={r} what="Actions">
        {(d) => {
          const list = listIn<Record<string, unknown>>(d, ["actions"]);
          return list.length === 0 ? (
            <p class="muted">No actions: only claimed businesses that turned on booking list actions.</p>
          ) : (
            <ul class="plain bullets">
              {list.map((a, i) => (
                <li key={i}>{text(a.name ?? a.type ?? a.description ?? JSON.stringify(a))}</li>
              ))}
            </ul>
          );
        }}
      </Show>
    </Card>
  );
}

function Profile(props: { id: string }) {
  const b = useLoad((signal) => pub<Business>(`/api/businesses/${seg(props.id)}`, signal), [props.id]);
  const base = `/api/businesses/${seg(props.id)}`;
  return (
    <>
      <p class="crumbs">
        <a href={href("directory")}>Directory</a> / profile
      </p>
      <Show value={b} what="The business directory">
        {(biz) => {
          const fields = fieldsOf(biz);
          const names = [...ORDER.filter((k) => k in fields), ...Object.keys(fields).filter((k) => !ORDER.includes(k))];
          return (
            <>
              <h1>{nameOf(biz)}</h1>
              <Card id="prof-h" title="Profile">
                <p class="muted">
                  Sourced facts are what the company's website said on a date, not confirmed facts.
                  {biz.claim?.value ? ` This profile is ${text(biz.claim.value)}.` : ""}
                </p>
                <dl class="profile">
                  {names.map((k) => (
                    <div key={k}>
                      <dt>{k.replace(/_/g, " ")}</dt>
                      <dd>
                        <Value name={k} value={fields[k]!.value} /> <SourceNote f={fields[k]!} />
                      </dd>
                    </div>
                  ))}
                </dl>
              </Card>
              <Services base={base} />
              <Trust base={base} />
              <Actions base={base} />
            </>
          );
        }}
      </Show>
    </>
  );
}

interface SearchReply {
  total?: number;
  match?: string;
  offset?: number;
}

function Search() {
  const [q, setQ] = useState("");
  const [category, setCategory] = useState("");
  const [query, setQuery] = useState<{ q: string; category: string; offset: number }>({ q: "", category: "", offset: 0 });
  const [error, setError] = useState<ApiError | null>(null);
  const [reply, setReply] = useState<{ body: SearchReply; items: Array<{ b: Business; match?: string }> } | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    const params = new URLSearchParams({ limit: String(PAGE), offset: String(query.offset) });
    if (query.q) params.set("q", query.q);
    if (query.category) params.set("category", query.category);
    setError(null);
    pub<SearchReply>(`/api/businesses?${params}`, ctl.signal).then(
      (body) => {
        const items = listIn<Record<string, unknown>>(body, ["results", "businesses", "items", "hits", "data"]).map((x) =>
          typeof x.business === "object" && x.business !== null
            ? { b: x.business as Business, match: x.match as string | undefined }
            : { b: x as Business, match: x.match as string | undefined },
        );
        setReply({ body, items });
      },
      (err: unknown) => !ctl.signal.aborted && (setError(err as ApiError), setReply(null)),
    );
    return () => ctl.abort();
  }, [query.q, query.category, query.offset]);
  const total = reply?.body.total;
  const partial = reply !== null && (reply.body.match === "partial" || reply.items.some((i) => i.match === "partial"));
  return (
    <>
      <Card id="dir-search-h" title="Search businesses">
        <form
          class="form-grid"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ q: q.trim(), category: category.trim(), offset: 0 });
          }}
        >
          <div class="field wide">
            <label for="dir-q">Words (name, services, industries, areas, description)</label>
            <input id="dir-q" type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="dir-cat">Category</label>
            <input id="dir-cat" value={category} onInput={(e) => setCategory(e.currentTarget.value)} />
          </div>
          <SubmitField label="Search" />
        </form>
      </Card>
      <ErrorNote error={error} what="The business directory" />
      {reply && (
        <Card id="dir-res-h" title={total !== undefined ? `${int(total)} businesses` : "Businesses"} live>
          {partial && <p class="note">No profile matched every word; these match some of them.</p>}
          {reply.items.length === 0 ? (
            <p class="muted">Nothing found.</p>
          ) : (
            <ul class="link-list" data-testid="businesses">
              {reply.items.map(({ b }) => {
                const f = fieldsOf(b);
                return (
                  <li key={b.id}>
                    <a href={href("directory", b.id)}>{nameOf(b)}</a>
                    {f.category && <span class="muted"> · {text(f.category.value)}</span>}
                    {f.areas && <span class="muted"> · {text(f.areas.value)}</span>}
                  </li>
                );
              })}
            </ul>
          )}
          <div class="pager">
            <button
              type="button"
              disabled={query.offset === 0}
              onClick={() => setQuery({ ...query, offset: Math.max(0, query.offset - PAGE) })}
            >
              Previous
            </button>
            <span class="muted">{reply.items.length > 0 ? `${query.offset + 1}–${query.offset + reply.items.length}` : ""}</span>
            <button
              type="button"
              disabled={total !== undefined ? query.offset + PAGE >= total : reply.items.length < PAGE}
              onClick={() => setQuery({ ...query, offset: query.offset + PAGE })}
            >
              Next
            </button>
          </div>
        </Card>
      )}
    </>
  );
}

export function DirectoryView(props: { route: string[] }) {
  if (props.route[0] !== undefined) return <Profile id={props.route[0]} />;
  return (
    <>
      <h1>Business directory</h1>
      <Search />
    </>
  );
}
