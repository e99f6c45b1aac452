/** @module hd-causal-bench — causal queries in-process: upload and query latency at 100k worlds x 10 variables, and the check table (observation vs intervention vs exact from the CPTs). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CausalService } from "../src/hd/causal/service.js";
import { mulberry32 } from "../src/kernels/random.js";

export interface CausalLatency {
  label: string;
  adjustment: string;
  strata: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export interface CausalCheck {
  query: string;
  observation: number;
  intervention: number;
  interventionNoGraph: number;
  exactObservation: number;
  exactIntervention: number;
}

export interface CausalBenchResult {
  worlds: number;
  vars: number;
  uploadMs: number;
  exportBytes: number;
  latencies: CausalLatency[];
  checks: CausalCheck[];
}

/*
 * SCM over 10 variables: 0 = Z (3 values) -> 1 = X (2) and 2 = Y (2); X -> Y; 3..9 are 4-valued:
 * 3..6 independent noise, 7 a child of Z, 8 a child of X, 9 a child of Y (descendants that a
 * graph-less adjustment wrongly conditions on for 8, 9).
 */
const PZ = [0.5, 0.3, 0.2];
const PX1_Z = [0.15, 0.5, 0.85];
const PY1_XZ = [
  [0.1, 0.4, 0.7],
  [0.25, 0.55, 0.9],
];
const PARENTS = [[], [0], [0, 1], [], [], [], [], [0], [1], [2]];

function exact(x: number, y: number): { obs: number; int: number } {
  let num = 0,
    den = 0,
    int = 0;
  for (let z = 0; z < 3; z++) {
    const px = x ? PX1_Z[z]! : 1 - PX1_Z[z]!;
    const py = y ? PY1_XZ[x]![z]! : 1 - PY1_XZ[x]![z]!;
    num += PZ[z]! * px * py;
    den += PZ[z]! * px;
    int += PZ[z]! * py;
  }
  return { obs: num / den, int };
}

function sample(n: number, seed: number): number[][] {
  const next = mulberry32(seed);
  const u = () => next() / 2 ** 32;
  const noisy = (parent: number) => (u() < 0.7 ? parent % 4 : Math.floor(u() * 4));
  return Array.from({ length: n }, () => {
    const r = u();
    const z = r < PZ[0]! ? 0 : r < PZ[0]! + PZ[1]! ? 1 : 2;
    const x = u() < PX1_Z[z]! ? 1 : 0;
    const y = u() < PY1_XZ[x]![z]! ? 1 : 0;
    return [z, x, y, Math.floor(u() * 4), Math.floor(u() * 4), Math.floor(u() * 4), Math.floor(u() * 4), noisy(z), noisy(x), noisy(y)];
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runHdCausalBench(opts: { worlds?: number; iterations?: number; seed?: number } = {}): Promise<CausalBenchResult> {
  const n = opts.worlds ?? 100_000;
  const iterations = opts.iterations ?? 200;
  const dir = mkdtempSync(join(tmpdir(), "svc-causal-bench-"));
  const svc = new CausalService(dir);
  try {
    const worlds = sample(n, opts.seed ?? 2024);
    const vocab = [3, 2, 2, 4, 4, 4, 4, 4, 4, 4];
    const t0 = performance.now();
    await svc.uploadWorlds("bench", "g", { n_vars: 10, vocab_per_var: vocab, worlds, parents: PARENTS });
    const uploadMs = performance.now() - t0;
    await svc.uploadWorlds("bench", "nog", { n_vars: 10, vocab_per_var: vocab, worlds });
    const q = (query_type: "observation" | "intervention", x: number, y: number) => ({
      query_type,
      condition_var: 1,
      condition_value: x,
      query_var: 2,
      query_value: y,
    });
    const cases: Array<{ label: string; model: string; type: "observation" | "intervention" }> = [
      { label: "observation", model: "g", type: "observation" },
      { label: "intervention (graph: parents of X)", model: "g", type: "intervention" },
      { label: "intervention (no graph: all other variables)", model: "nog", type: "intervention" },
    ];
    const latencies: CausalLatency[] = [];
    for (const c of cases) {
      for (let i = 0; i < 10; i++) await svc.query("bench", c.model, q(c.type, 1, 1));
      const ms: number[] = [];
      let last = await svc.query("bench", c.model, q(c.type, 1, 1));
      for (let i = 0; i < iterations; i++) {
        const s = performance.now();
        last = await svc.query("bench", c.model, q(c.type, i & 1, (i >> 1) & 1));
        ms.push(performance.now() - s);
      }
      const sorted = [...ms].sort((a, b) => a - b);
      latencies.push({
        label: c.label,
        adjustment: last.adjusted_for === "none" ? "-" : `{${last.adjustment_set.join(", ")}}`,
        strata: last.support.strata_total ?? 0,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        meanMs: ms.reduce((a, b) => a + b, 0) / ms.length,
      });
    }
    const checks: CausalCheck[] = [];
    for (const x of [0, 1]) {
      const e = exact(x, 1);
      checks.push({
        query: `P(Y=1 \\| X=${x})`,
        observation: (await svc.query("bench", "g", q("observation", x, 1))).probability!,
        intervention: (await svc.query("bench", "g", q("intervention", x, 1))).probability!,
        interventionNoGraph: (await svc.query("bench", "nog", q("intervention", x, 1))).probability ?? Number.NaN,
        exactObservation: e.obs,
        exactIntervention: e.int,
      });
    }
    return { worlds: n, vars: 10, uploadMs, exportBytes: (await svc.exportModel("bench", "g")).length, latencies, checks };
  } finally {
    await svc.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function renderHdCausalBench(r: CausalBenchResult): string {
  const f = (v: number, d = 4) => (Number.isFinite(v) ? v.toFixed(d) : "n/a");
  const lines = [
    `### Causal queries (${r.worlds.toLocaleString("en-US")} worlds x ${r.vars} variables)`,
    "",
    `Upload (validate, pack, durable .hdscm snapshot): ${f(r.uploadMs, 0)} ms; snapshot ${(r.exportBytes / 1e6).toFixed(2)} MB.`,
    "",
    "| query | adjustment set | strata | p50 ms | p99 ms | mean ms |",
    "|---|---|---:|---:|---:|---:|",
    ...r.latencies.map((l) => `| ${l.label} | ${l.adjustment} | ${l.strata} | ${f(l.p50Ms, 3)} | ${f(l.p99Ms, 3)} | ${f(l.meanMs, 3)} |`),
    "",
    "Check (Z -> X, Z -> Y, X -> Y; exact values from the CPTs; the no-graph column adjusts for descendants of X and Y too, which biases it):",
    "",
    "| query | observation | exact P(y\\|x) | intervention (graph) | intervention (no graph) | exact P(y\\|do(x)) |",
    "|---|---:|---:|---:|---:|---:|",
    ...r.checks.map(
      (c) =>
        `| ${c.query} | ${f(c.observation)} | ${f(c.exactObservation)} | ${f(c.intervention)} | ${f(c.interventionNoGraph)} | ${f(c.exactIntervention)} |`,
    ),
    "",
  ];
  return lines.join("\n");
}

// `npx tsx bench/hd-causal-bench.ts` prints the table
if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(renderHdCausalBench(await runHdCausalBench()));
}
