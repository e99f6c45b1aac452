/**
 * @module recall-bench — recall@10 of the default query and of `exact: true` against brute-force float truth, per
 * dimension and metric, on the 1000-centre clustered generator (bench/engine/vectors.ts), with the mean query time.
 * `npx tsx bench/recall-bench.ts [cases] [queries]`; cases like `5000x64,20000x128` (default: the issue-32 set), metric
 * suffix `:dotproduct` / `:euclidean` scales each vector to a norm in [0.5, 3] (seeded) and ranks by that metric;
 * `[basis]` is `per-cluster` (default: each cluster its own low-rank part) or `shared`; `[spread]` scales the low-rank part
 * (default 1: tight clusters; 2-3 overlap). Queries run once the partition's depth is calibrated (engine/depth.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Collection } from "../src/engine/collection.js";
import type { Scoring } from "../src/engine/search.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { ClusteredVectors } from "./engine/vectors.js";

const K = 10;
const SEED = 32;

export interface RecallCase {
  n: number;
  dim: number;
  metric: Scoring;
  /** The generator's latent basis: one per cluster (default) or one shared by all clusters. */
  basis?: "per-cluster" | "shared";
  /** The generator's spread (ClusteredVectors): 1 by default. */
  spread?: number;
}

export interface RecallRow extends RecallCase {
  queries: number;
  recallDefault: number;
  recallExact: number;
  /** Mean ms per query, one at a time, in-process. */
  msDefault: number;
  msExact: number;
  plan: string;
  /** The partition's calibrated depth (engine/depth.ts; Infinity: exact), and the wall ms from the last upsert until calibrated. */
  depth: number | null;
  msCalibrate: number;
}

/** Vector i of the case: the clustered vector, scaled to a seeded norm in [0.5, 3] for dotproduct/euclidean. */
export function caseVector(data: ClusteredVectors, metric: Scoring, i: number): Float32Array {
  const v = data.get(i);
  if (metric === "cosine") return v;
  const next = mulberry32(SEED ^ Math.imul(i + 7, 0x85ebca6b));
  let s = 0;
  for (const x of v) s += x * x;
  const scale = (0.5 + (2.5 * next()) / 2 ** 32) / Math.sqrt(s);
  for (let j = 0; j < v.length; j++) v[j]! *= scale;
  return v;
}

/** Brute-force top-k rows of `q` over `rows` under `metric` (float64 sums), best first, ties by row. */
export function bruteTopK(rows: readonly Float32Array[], q: Float32Array, metric: Scoring, k: number): number[] {
  const qn = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
  const scored = rows.map((v, i) => {
    let dot = 0;
    let vv = 0;
    for (let j = 0; j < v.length; j++) {
      dot += q[j]! * v[j]!;
      vv += v[j]! * v[j]!;
    }
    // Larger is better in every case: the euclidean score is the negated squared distance (|q|² is the same for every row).
    const s = metric === "cosine" ? dot / (qn * Math.sqrt(vv)) : metric === "dotproduct" ? dot : 2 * dot - vv;
    return { i, s };
  });
  scored.sort((a, b) => b.s - a.s || a.i - b.i);
  return scored.slice(0, k).map((e) => e.i);
}

export async function runRecallCase(kernels: Kernels, pool: ScanPool, c: RecallCase, nq: number): Promise<RecallRow> {
  const root = mkdtempSync(join(tmpdir(), "svc-recall-"));
  const data = new ClusteredVectors(c.dim, SEED, c.spread ?? 1, c.basis !== "shared");
  const rows = Array.from({ length: c.n }, (_, i) => caseVector(data, c.metric, i));
  const queries = Array.from({ length: nq }, (_, i) => caseVector(data, c.metric, c.n + i));
  const col = await Collection.open(join(root, "c"), {
    kernels,
    pool,
    dimension: c.dim,
    metric: "cosine",
    durability: "none",
    annMinRows: Infinity,
  });
  try {
    for (let i = 0; i < c.n; i += 1000)
      await col.upsert(
        "",
        rows.slice(i, i + 1000).map((values, j) => ({ id: String(i + j), values })),
      );
    await col.settled();
    const t0 = performance.now();
    await col.depthCalibrated();
    const msCalibrate = performance.now() - t0;
    const truth = queries.map((q) => bruteTopK(rows, q, c.metric, K));
    const run = async (exact: boolean) => {
      let hit = 0;
      let plan = "";
      const t0 = performance.now();
      for (let qi = 0; qi < nq; qi++) {
        const res = await col.query("", { vector: queries[qi]!, topK: K, exact, scoring: c.metric });
        plan = res.plan;
        const want = new Set(truth[qi]!.map(String));
        for (const m of res.matches) if (want.has(m.id)) hit++;
      }
      return { recall: hit / (nq * K), ms: (performance.now() - t0) / nq, plan };
    };
    await run(false); // warm-up (page cache, JIT)
    const d = await run(false);
    const e = await run(true);
    return {
      ...c,
      queries: nq,
      recallDefault: d.recall,
      recallExact: e.recall,
      msDefault: d.ms,
      msExact: e.ms,
      plan: d.plan,
      depth: col.depthOf(""),
      msCalibrate,
    };
  } finally {
    await col.close();
    rmSync(root, { recursive: true, force: true });
  }
}

export function parseCases(spec: string): RecallCase[] {
  return spec.split(",").map((s) => {
    const [size, metric = "cosine"] = s.split(":");
    const [n, dim] = size!.split("x").map(Number);
    return { n: n!, dim: dim!, metric: metric as Scoring };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cases = parseCases(process.argv[2] ?? "5000x32,5000x64,20000x128,20000x256,5000x1024,20000x1024,5000x2048,5000x4096");
  const nq = Number(process.argv[3] ?? 100);
  const basis = (process.argv[4] ?? "per-cluster") as RecallCase["basis"];
  const spread = Number(process.argv[5] ?? 1);
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 1 });
  console.log(
    `clustered data (1000 centres, ${basis} latent basis, spread ${spread}), ${nq} held-out queries, recall@10 against brute-force float ranking`,
  );
  console.log(
    "| n × dim | metric | depth | recall@10 default | recall@10 exact | ms/query default | ms/query exact | plan | calibration s |",
  );
  console.log("|---|---|---:|---:|---:|---:|---:|---|---:|");
  for (const c of cases) {
    const r = await runRecallCase(kernels, pool, { ...c, basis, spread }, nq);
    console.log(
      `| ${r.n.toLocaleString("en-US")} × ${r.dim} | ${r.metric} | ${r.depth === null ? "default" : r.depth === Infinity ? "exact" : r.depth} | ${r.recallDefault.toFixed(3)} | ${r.recallExact.toFixed(3)} | ${r.msDefault.toFixed(3)} | ${r.msExact.toFixed(3)} | ${r.plan} | ${(r.msCalibrate / 1000).toFixed(1)} |`,
    );
  }
  await pool.close();
}
