/** @module views/models — the tenant's knowledge graphs (stats per relation) and causal models (shape, rows). */
import { api, seg } from "../api.js";
import { Card, Facts, int, Show, Table, useLoad } from "../ui.js";

interface KgStats {
  name: string;
  facts: number;
  entities: number;
  relations: Array<{ relation: string; facts: number; objects: number; expectedAccuracy: number; capacityLeft: number }>;
}
interface CausalModel {
  name: string;
  n_vars: number;
  vocab_per_var: number[];
  rows_total: number;
  has_graph: boolean;
}

function Graph(props: { name: string }) {
  const stats = useLoad((signal) => api<KgStats>(`/v1/hd/kg/${seg(props.name)}/stats`, { signal }), [props.name]);
  return (
    <li class="model">
      <h3>{props.name}</h3>
      <Show value={stats}>
        {(s) => (
          <>
            <Facts
              items={[
                ["Facts", int(s.facts)],
                ["Entities", int(s.entities)],
                ["Relations", int(s.relations.length)],
              ]}
            />
            {s.relations.length > 0 && (
              <Table
                class="compact"
                cols={["Relation", ["Facts", "num"], ["Objects", "num"], ["Expected accuracy", "num"], ["Capacity left", "num"]]}
              >
                {s.relations.map((r) => (
                  <tr key={r.relation}>
                    <td>{r.relation}</td>
                    <td class="num">{int(r.facts)}</td>
                    <td class="num">{int(r.objects)}</td>
                    <td class="num">{(r.expectedAccuracy * 100).toFixed(1)}%</td>
                    <td class="num">{int(r.capacityLeft)}</td>
                  </tr>
                ))}
              </Table>
            )}
          </>
        )}
      </Show>
    </li>
  );
}

export function ModelsView() {
  const graphs = useLoad((signal) => api<{ graphs: string[] }>("/v1/hd/kg", { signal }), []);
  const causal = useLoad((signal) => api<{ models: CausalModel[] }>("/v1/hd/causal", { signal }), []);
  return (
    <>
      <h1>Models</h1>
      <Card id="kg-h" title="Knowledge graphs">
        <Show value={graphs} what="The graph list">
          {(d) =>
            d.graphs.length === 0 ? (
              <p class="muted">
                No knowledge graphs. Add facts with <code>POST /v1/hd/kg/&lt;name&gt;/facts</code>.
              </p>
            ) : (
              <ul class="model-list">
                {d.graphs.map((g) => (
                  <Graph key={g} name={g} />
                ))}
              </ul>
            )
          }
        </Show>
      </Card>
      <Card id="causal-h" title="Causal models">
        <Show value={causal} what="The model list">
          {(d) =>
            d.models.length === 0 ? (
              <p class="muted">
                No causal models. Upload worlds with <code>POST /v1/hd/causal/&lt;name&gt;/worlds</code>.
              </p>
            ) : (
              <Table cols={["Name", ["Variables", "num"], "Categories per variable", ["Worlds", "num"], "Causal graph"]}>
                {d.models.map((m) => (
                  <tr key={m.name}>
                    <td>{m.name}</td>
                    <td class="num">{int(m.n_vars)}</td>
                    <td>{m.vocab_per_var.length > 12 ? `${m.vocab_per_var.slice(0, 12).join(", ")}, …` : m.vocab_per_var.join(", ")}</td>
                    <td class="num">{int(m.rows_total)}</td>
                    <td>{m.has_graph ? "yes" : "no"}</td>
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
