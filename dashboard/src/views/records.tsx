/** @module views/records — record namespaces: stats by kind, a timeline paged by nextCursor, search with kind/tag filters and scores, export/import with progress. */
import { useState } from "preact/hooks";
import { api, ApiError, download, seg, upload } from "../api.js";
import {
  Card,
  CheckField,
  ErrorNote,
  Facts,
  href,
  int,
  Json,
  Progress,
  Show,
  Status,
  SubmitField,
  Table,
  useAction,
  useLoad,
  when,
} from "../ui.js";

interface RecordView {
  id: string;
  kind: string;
  tags: string[];
  ts: number;
  text?: string;
  meta?: Record<string, unknown>;
  score?: number;
}
interface Stats {
  count: number;
  byKind: Record<string, number>;
  oldestTs: number | null;
  newestTs: number | null;
}

const NS_RE = /^[^/]{1,256}$/;

function RecordItem(props: { r: RecordView }) {
  const r = props.r;
  return (
    <li class="record">
      <div class="record-head">
        <span class="badge">{r.kind}</span>
        {r.score !== undefined && (
          <span class="score" title="similarity score">
            score {r.score.toFixed(4)}
          </span>
        )}
        <time dateTime={new Date(r.ts).toISOString()}>{when(r.ts)}</time>
      </div>
      <p class="record-text">{r.text ?? <span class="muted">(no text)</span>}</p>
      <div class="record-foot">
        {r.tags.map((t) => (
          <span key={t} class="tag">
            #{t}
          </span>
        ))}
        <code class="muted">{r.id}</code>
        {r.meta && Object.keys(r.meta).length > 0 && <Json value={r.meta} />}
      </div>
    </li>
  );
}

/** One timeline page: `nextCursor` is the oldest ts returned (null: the oldest reached); `nextAfter` only when the page ends inside a ts group. */
interface TimelinePage {
  records: RecordView[];
  nextCursor: number | null;
  nextAfter?: string;
}

function Timeline(props: { ns: string; version: number }) {
  const [pages, setPages] = useState<RecordView[][]>([]);
  // where the next page starts: `until` (the oldest ts shown) and, inside a ts group larger than a page, `after`
  const [cursor, setCursor] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const next = (p: TimelinePage) =>
    p.nextCursor === null ? null : `until=${p.nextCursor}${p.nextAfter === undefined ? "" : `&after=${encodeURIComponent(p.nextAfter)}`}`;
  const first = useLoad(
    async (signal) => {
      const p = await api<TimelinePage>(`/v1/records/${seg(props.ns)}/timeline?limit=20`, { signal });
      setPages([p.records]);
      setCursor(next(p));
      return p;
    },
    [props.ns, props.version],
  );
  const older = async () => {
    if (cursor === null) return;
    await run(async () => {
      const p = await api<TimelinePage>(`/v1/records/${seg(props.ns)}/timeline?limit=20&${cursor}`);
      setPages((ps) => [...ps, p.records]);
      setCursor(next(p));
    });
  };
  const all = pages.flat();
  return (
    <Card id="timeline-h" title="Timeline">
      <Show value={first}>
        {() => (
          <>
            {all.length === 0 ? (
              <p class="muted">No records.</p>
            ) : (
              <ol class="records" data-testid="timeline">
                {all.map((r) => (
                  <RecordItem key={r.id} r={r} />
                ))}
              </ol>
            )}
            <p class="muted" aria-live="polite">
              {all.length} shown{cursor === null ? ", the oldest reached" : ""}.
            </p>
            {cursor !== null && (
              <button type="button" onClick={older} disabled={busy}>
                {busy ? "Loading…" : "Load older"}
              </button>
            )}
            <ErrorNote error={error} />
          </>
        )}
      </Show>
    </Card>
  );
}

function Search(props: { ns: string; kinds: string[] }) {
  const [text, setText] = useState("");
  const [kind, setKind] = useState("");
  const [tags, setTags] = useState("");
  const [hybrid, setHybrid] = useState(false);
  const [topK, setTopK] = useState(10);
  const [results, setResults] = useState<RecordView[] | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(
      async () => {
        const body: Record<string, unknown> = { topK, includeText: true, includeMeta: true };
        if (text.trim() !== "") body.text = text.trim();
        // the mode is always named: "vector" ranks by cosine (score = the cosine), "hybrid" fuses it with BM25 (score = the fused rank score)
        if (text.trim() !== "") body.mode = hybrid ? "hybrid" : "vector";
        if (kind !== "") body.kind = [kind];
        const tagList = tags
          .split(",")
          .map((t) => t.trim())
          .filter((t) => t !== "");
        if (tagList.length > 0) body.tagsAny = tagList;
        const r = await api<{ records: RecordView[] }>(`/v1/records/${seg(props.ns)}/query`, { body });
        setResults(r.records);
      },
      () => setResults(null),
    );
  };
  return (
    <Card id="search-h" title="Search">
      <form onSubmit={submit} class="form-grid" role="search" aria-label={`Search records in ${props.ns}`}>
        <div class="field wide">
          <label for="q-text">Text (by meaning; empty lists newest first)</label>
          <input id="q-text" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="q-kind">Kind</label>
          <select id="q-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="">any kind</option>
            {props.kinds.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="q-tags">Tags (any of, comma-separated)</label>
          <input id="q-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </div>
        <div class="field narrow">
          <label for="q-topk">Results</label>
          <input
            id="q-topk"
            type="number"
            min={1}
            max={100}
            value={topK}
            onInput={(e) => setTopK(Math.max(1, Math.min(100, Number(e.currentTarget.value) || 10)))}
          />
        </div>
        <CheckField id="q-hybrid" label="Hybrid (meaning + keywords)" checked={hybrid} onChange={setHybrid} />
        <SubmitField label="Search" busy={busy} busyLabel="Searching…" />
      </form>
      <ErrorNote error={error} />
      {results !== null && (
        <div aria-live="polite">
          <p class="muted">
            {results.length} result{results.length === 1 ? "" : "s"}
            {text.trim() ? ", best first" : ", newest first"}.
          </p>
          <ol class="records" data-testid="search-results">
            {results.map((r) => (
              <RecordItem key={r.id} r={r} />
            ))}
          </ol>
        </div>
      )}
    </Card>
  );
}

function Transfer(props: { ns: string; onImported: () => void }) {
  const [progress, setProgress] = useState<{ label: string; done: number; total: number | null } | null>(null);
  const [message, setMessage] = useState<{ text: string; kind: "ok" | "error" } | null>(null);
  const [file, setFile] = useState<File | null>(null);
  const [schema, setSchema] = useState("1");
  const exportNs = async () => {
    setMessage(null);
    try {
      const n = await download(`/v1/records/${seg(props.ns)}/export?schema=${schema}`, `${props.ns}.svc`, (done, total) =>
        setProgress({ label: "Exporting:", done, total }),
      );
      setMessage({ text: `Exported ${props.ns}.svc (${n.toLocaleString("en-US")} bytes).`, kind: "ok" });
    } catch (err) {
      setMessage({ text: (err as ApiError).message, kind: "error" });
    } finally {
      setProgress(null);
    }
  };
  const importNs = async (e: Event) => {
    e.preventDefault();
    if (file === null) return;
    if (!confirm(`Import ${file.name} into ${props.ns}? A schema 1 container replaces the namespace; schema 2 merges by id.`)) return;
    setMessage(null);
    const form = new FormData();
    form.append("file", file, file.name);
    try {
      const r = await upload<{ imported: number }>(`/v1/records/${seg(props.ns)}/import`, form, (done, total) =>
        setProgress({ label: "Uploading:", done, total: total || null }),
      );
      setMessage({ text: `Imported ${int(r.imported)} records.`, kind: "ok" });
      props.onImported();
    } catch (err) {
      setMessage({ text: (err as ApiError).message, kind: "error" });
    } finally {
      setProgress(null);
    }
  };
  return (
    <Card id="transfer-h" title="Export and import">
      <div class="controls">
        <label>
          Container{" "}
          <select value={schema} onChange={(e) => setSchema(e.currentTarget.value)}>
            <option value="1">schema 1: this namespace</option>
            <option value="2">schema 2: also graphs and causal models</option>
          </select>
        </label>
        <button type="button" onClick={exportNs} disabled={progress !== null}>
          Export .svc
        </button>
      </div>
      <form onSubmit={importNs} class="controls">
        <label>
          Container file (.svc){" "}
          <input type="file" accept=".svc,application/zip" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={file === null || progress !== null}>
          Import
        </button>
      </form>
      {progress && <Progress {...progress} />}
      {message && <Status kind={message.kind}>{message.text}</Status>}
    </Card>
  );
}

function Namespace(props: { ns: string }) {
  const [version, setVersion] = useState(0);
  const stats = useLoad((signal) => api<Stats>(`/v1/records/${seg(props.ns)}/stats`, { signal }), [props.ns, version]);
  const kinds = Object.keys(stats.data?.byKind ?? {}).sort();
  return (
    <>
      <p class="crumbs">
        <a href={href("records")}>Records</a> / {props.ns}
      </p>
      <div class="title-row">
        <h1>Namespace {props.ns}</h1>
        <button type="button" onClick={() => setVersion((v) => v + 1)}>
          Refresh
        </button>
      </div>
      <Card id="stats-h" title="Statistics">
        <Show value={stats}>
          {(s) => (
            <>
              <Facts
                items={[
                  ["Records", <span data-testid="record-count">{int(s.count)}</span>],
                  ["Oldest", when(s.oldestTs)],
                  ["Newest", when(s.newestTs)],
                ]}
              />
              {kinds.length > 0 && (
                <Table class="compact" caption="Records by kind" cols={["Kind", ["Records", "num"]]}>
                  {Object.entries(s.byKind)
                    .sort((a, b) => b[1] - a[1])
                    .map(([k, n]) => (
                      <tr key={k}>
                        <td>{k}</td>
                        <td class="num">{int(n)}</td>
                      </tr>
                    ))}
                </Table>
              )}
            </>
          )}
        </Show>
      </Card>
      <Search ns={props.ns} kinds={kinds} />
      <Timeline ns={props.ns} version={version} />
      <Transfer ns={props.ns} onImported={() => setVersion((v) => v + 1)} />
    </>
  );
}

export function RecordsView(props: { route: string[] }) {
  const ns = props.route[0];
  const list = useLoad((signal) => api<{ namespaces: Array<{ namespace: string; count: number }> }>("/v1/records", { signal }), []);
  const [goTo, setGoTo] = useState("");
  if (ns !== undefined) return <Namespace ns={ns} />;
  return (
    <>
      <h1>Records</h1>
      <Card id="ns-h" title="Namespaces">
        <Show value={list} what="The namespace list">
          {(d) =>
            d.namespaces.length === 0 ? (
              <p class="muted">
                No records yet. Ingest with <code>POST /v1/records/&lt;namespace&gt;</code>.
              </p>
            ) : (
              <ul class="link-list" data-testid="namespaces">
                {d.namespaces.map((n) => (
                  <li key={n.namespace}>
                    <a href={href("records", n.namespace)}>{n.namespace}</a> <span class="muted">{int(n.count)} records</span>
                  </li>
                ))}
              </ul>
            )
          }
        </Show>
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (NS_RE.test(goTo.trim())) location.hash = href("records", goTo.trim());
          }}
        >
          <label for="ns-open">Open a namespace by name</label>
          <input id="ns-open" value={goTo} onInput={(e) => setGoTo(e.currentTarget.value)} required />
          <button type="submit">Open</button>
        </form>
      </Card>
    </>
  );
}
