/** @module views/indexes — vector indexes: dimension and counts per namespace, and a query box (by text for 1024-d indexes, by id, or by vector). */
import { useState } from "preact/hooks";
import { api, ApiError, seg } from "../api.js";
import { Card, ErrorNote, Facts, href, int, Json, Show, SubmitField, Table, useAction, useLoad } from "../ui.js";

interface IndexModel {
  name: string;
  dimension: number;
  metric: string;
  status?: { ready?: boolean; state?: string };
}
interface IndexStats {
  dimension: number;
  namespaces: Record<string, { vectorCount: number }>;
  totalVectorCount: number;
}
interface Match {
  id: string;
  score: number;
  metadata?: Record<string, unknown>;
}

/** The server's text encoder speaks 1024 dimensions: only such indexes get the text query. */
const TEXT_DIM = 1024;
const DEFAULT_NS = "__default__";

function Query(props: { index: IndexModel; namespaces: string[] }) {
  const textOk = props.index.dimension === TEXT_DIM;
  const [by, setBy] = useState<"text" | "id" | "vector">(textOk ? "text" : "id");
  const [input, setInput] = useState("");
  const [ns, setNs] = useState(props.namespaces[0] ?? "");
  const [topK, setTopK] = useState(10);
  const [filter, setFilter] = useState("");
  const [matches, setMatches] = useState<Match[] | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(
      async () => {
        const body: Record<string, unknown> = { topK, includeMetadata: true, namespace: ns === DEFAULT_NS ? "" : ns };
        if (filter.trim() !== "") {
          try {
            body.filter = JSON.parse(filter);
          } catch {
            throw new ApiError(0, "E_CLIENT", "The filter is not valid JSON.", "filter");
          }
        }
        if (by === "id") body.id = input.trim();
        else if (by === "vector") {
          try {
            body.vector = JSON.parse(input);
          } catch {
            throw new ApiError(0, "E_CLIENT", "The vector must be a JSON array of numbers.", "vector");
          }
        } else {
          const emb = await api<{ vectors: number[][] }>("/v1/embed", { body: { texts: [input] } });
          body.vector = emb.vectors[0];
        }
        const r = await api<{ matches: Match[] }>(`/v1/indexes/${seg(props.index.name)}/query`, { body });
        setMatches(r.matches);
      },
      () => setMatches(null),
    );
  };
  return (
    <Card id="iq-h" title="Query">
      <form onSubmit={submit} class="form-grid">
        <div class="field">
          <label for="iq-by">Query by</label>
          <select id="iq-by" value={by} onChange={(e) => setBy(e.currentTarget.value as typeof by)}>
            {textOk && <option value="text">text (embedded by the server)</option>}
            <option value="id">id of a stored vector</option>
            <option value="vector">vector (JSON array)</option>
          </select>
        </div>
        <div class="field wide">
          <label for="iq-input">{by === "text" ? "Text" : by === "id" ? "Vector id" : `Vector of ${props.index.dimension} numbers`}</label>
          {by === "vector" ? (
            <textarea id="iq-input" rows={3} value={input} onInput={(e) => setInput(e.currentTarget.value)} required />
          ) : (
            <input id="iq-input" value={input} onInput={(e) => setInput(e.currentTarget.value)} required />
          )}
        </div>
        <div class="field">
          <label for="iq-ns">Namespace</label>
          <select id="iq-ns" value={ns} onChange={(e) => setNs(e.currentTarget.value)}>
            {props.namespaces.length === 0 && <option value="">(default)</option>}
            {props.namespaces.map((n) => (
              <option key={n} value={n}>
                {n === DEFAULT_NS || n === "" ? "(default)" : n}
              </option>
            ))}
          </select>
        </div>
        <div class="field narrow">
          <label for="iq-topk">Top k</label>
          <input
            id="iq-topk"
            type="number"
            min={1}
            max={1000}
            value={topK}
            onInput={(e) => setTopK(Math.max(1, Number(e.currentTarget.value) || 10))}
          />
        </div>
        <div class="field wide">
          <label for="iq-filter">Metadata filter (JSON, optional)</label>
          <input id="iq-filter" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder='{"year": {"$gte": 2020}}' />
        </div>
        <SubmitField label="Query" busy={busy} busyLabel="Querying…" />
      </form>
      <ErrorNote error={error} />
      {matches !== null && (
        <Table cols={["Id", ["Score", "num"], "Metadata"]} caption={<>{matches.length} matches, best first</>} live>
          {matches.map((m) => (
            <tr key={m.id}>
              <td>
                <code>{m.id}</code>
              </td>
              <td class="num">{m.score.toFixed(4)}</td>
              <td>{m.metadata ? <Json value={m.metadata} /> : "—"}</td>
            </tr>
          ))}
        </Table>
      )}
    </Card>
  );
}

function IndexPage(props: { index: IndexModel }) {
  const stats = useLoad(
    (signal) => api<IndexStats>(`/v1/indexes/${seg(props.index.name)}/describe_index_stats`, { signal }),
    [props.index.name],
  );
  return (
    <>
      <p class="crumbs">
        <a href={href("indexes")}>Indexes</a> / {props.index.name}
      </p>
      <h1>Index {props.index.name}</h1>
      <Card id="is-h" title="Namespaces">
        <Show value={stats}>
          {(s) => (
            <>
              <Facts
                items={[
                  ["Dimension", int(props.index.dimension)],
                  ["Metric", props.index.metric],
                  ["Vectors", int(s.totalVectorCount)],
                ]}
              />
              <Table class="compact" cols={["Namespace", ["Vectors", "num"]]}>
                {Object.entries(s.namespaces).map(([n, v]) => (
                  <tr key={n}>
                    <td>{n === "" || n === DEFAULT_NS ? "(default)" : n}</td>
                    <td class="num">{int(v.vectorCount)}</td>
                  </tr>
                ))}
              </Table>
            </>
          )}
        </Show>
      </Card>
      {stats.data && <Query index={props.index} namespaces={Object.keys(stats.data.namespaces)} />}
    </>
  );
}

export function IndexesView(props: { route: string[] }) {
  const list = useLoad((signal) => api<{ indexes: IndexModel[] }>("/v1/indexes", { signal }), []);
  const name = props.route[0];
  if (name !== undefined) {
    return (
      <Show value={list}>
        {(d) => {
          const ix = d.indexes.find((i) => i.name === name);
          return ix ? <IndexPage index={ix} /> : <ErrorNote error={new ApiError(404, "E_NOT_FOUND", `No index '${name}'.`)} />;
        }}
      </Show>
    );
  }
  return (
    <>
      <h1>Indexes</h1>
      <Card id="ix-h" title="Vector indexes">
        <Show value={list}>
          {(d) =>
            d.indexes.length === 0 ? (
              <p class="muted">
                No indexes. Create one with <code>POST /v1/indexes</code> or a Pinecone client.
              </p>
            ) : (
              <Table cols={["Name", ["Dimension", "num"], "Metric", "State"]}>
                {d.indexes.map((i) => (
                  <tr key={i.name}>
                    <td>
                      <a href={href("indexes", i.name)}>{i.name}</a>
                    </td>
                    <td class="num">{int(i.dimension)}</td>
                    <td>{i.metric}</td>
                    <td>{i.status?.state ?? (i.status?.ready ? "Ready" : "—")}</td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Show>
      </Card>
    </>
  );
}
