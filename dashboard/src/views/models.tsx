/** @module views/models — the tenant's knowledge graphs (stats per relation) and causal models (shape, rows). */
import { api, seg } from "../api.js";
import { Facts, int, Show, useLoad } from "../ui.js";

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
            <Facts items={[["Facts", int(s.facts)], ["Entities", int(s.entities)], ["Relations", int(s.relations.length)]]} />
            {s.relations.length > 0 && (
              <div class="table-wrap">
                <table class="compact">
                  <thead>
                    <tr>
                      <th scope="col">Relation</th>
                      <th scope="col" class="num">Facts</th>
                      <th scope="col" class="num">Objects</th>
                      <th scope="col" class="num">Expected accuracy</th>
                      <th scope="col" class="num">Capacity left</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.relations.map((r) => (
                      <tr key={r.relation}>
                        <td>{r.relation}</td>
                        <td class="num">{int(r.facts)}</td>
                        <td class="num">{int(r.objects)}</td>
                        <td class="num">{(r.expectedAccuracy * 100).toFixed(1)}%</td>
                        <td class="num">{int(r.capacityLeft)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
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
      <section class="card" aria-labelledby="kg-h">
        <h2 id="kg-h">Knowledge graphs</h2>
        <Show value={graphs} what="The graph list">
          {(d) =>
            d.graphs.length === 0 ? (
              <p class="muted">No knowledge graphs. Add facts with <code>POST /v1/hd/kg/&lt;name&gt;/facts</code>.</p>
            ) : (
              <ul class="model-list">{d.graphs.map((g) => <Graph key={g} name={g} />)}</ul>
            )
          }
        </Show>
      </section>
      <section class="card" aria-labelledby="causal-h">
        <h2 id="causal-h">Causal models</h2>
        <Show value={causal} what="The model list">
          {(d) =>
            d.models.length === 0 ? (
              <p class="muted">No causal models. Upload worlds with <code>POST /v1/hd/causal/&lt;name&gt;/worlds</code>.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col" class="num">Variables</th>
                      <th scope="col">Categories per variable</th>
                      <th scope="col" class="num">Worlds</th>
                      <th scope="col">Causal graph</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.models.map((m) => (
                      <tr key={m.name}>
                        <td>{m.name}</td>
                        <td class="num">{int(m.n_vars)}</td>
                        <td>{m.vocab_per_var.length > 12 ? `${m.vocab_per_var.slice(0, 12).join(", ")}, …` : m.vocab_per_var.join(", ")}</td>
                        <td class="num">{int(m.rows_total)}</td>
                        <td>{m.has_graph ? "yes" : "no"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Show>
      </section>
    </>
  );
}
