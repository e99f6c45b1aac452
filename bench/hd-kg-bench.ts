/**
 * @module hd-kg-bench — the knowledge graph (src/hd/kg): top-1 accuracy and calibration vs facts per shard
 * (500 .. 20k) next to the theoretical curve for D = 262,144, and query latency. Self-contained: run it with
 * `npx tsx bench/hd-kg-bench.ts` or call runKgBench / renderKgBench.
 *
 * Past capacity: `npx tsx bench/hd-kg-bench.ts 60000 2000 300` (60k facts over 2,000 objects, 300 queries), the
 * overloaded shard whose answers must say so (low confidence, null below 0.05, stats.overloaded).
 *
 * Workload: one relation; fact i is (s<i>, rel, o<j>) with j uniform over `objects` entities, so every subject
 * has exactly one object and a query is cleaned up against `objects` candidates. Queries: `queries` random facts.
 */
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { capacity, theoreticalAccuracy } from "../src/hd/kg/calibration.js";
import { Graph, type Fact } from "../src/hd/kg/graph.js";
import { KG_DEFAULT_SEED, KG_DIM } from "../src/hd/kg/vectors.js";
import { summarize, type Latency } from "./stats.js";

export interface KgPoint {
  facts: number;
  accuracy: number;
  theoretical: number;
  /** Mean confidence of the answers, and the expected calibration error over 10 equal-width bins. */
  meanConfidence: number;
  ece: number;
  /** Answers with object null (confidence < 0.05). */
  nulls: number;
  latency: Latency;
  addPerSec: number;
}

export interface KgBenchResult {
  dim: number;
  objects: number;
  queries: number;
  points: KgPoint[];
  /** Calibration pooled over all sizes: per bin, answers, mean confidence, accuracy. */
  reliability: Array<{ lo: number; hi: number; n: number; confidence: number; accuracy: number }>;
  pooledEce: number;
}

export interface KgBenchOptions {
  sizes?: number[];
  objects?: number;
  queries?: number;
  seed?: number;
}

const BINS = 10;

export function runKgBench(opts: KgBenchOptions = {}): KgBenchResult {
  const sizes = opts.sizes ?? [500, 1000, 2000, 5000, 10000, 20000];
  const objects = opts.objects ?? 256;
  const queries = opts.queries ?? 1000;
  const kernels = Kernels.create();
  const points: KgPoint[] = [];
  const pooled: Array<{ c: number; ok: boolean }> = [];
  for (const n of sizes) {
    const rnd = mulberry32((opts.seed ?? 7) + n);
    const facts: Fact[] = Array.from({ length: n }, (_, i) => ({
      subject: `s${i}`,
      relation: "rel",
      object: `o${Math.floor((rnd() / 2 ** 32) * objects)}`,
    }));
    const graph = new Graph(kernels, KG_DEFAULT_SEED);
    try {
      const t0 = performance.now();
      graph.add(facts);
      const addPerSec = n / ((performance.now() - t0) / 1000);
      graph.query("s0", "rel"); // threshold once, outside the timing
      const answers: Array<{ c: number; ok: boolean }> = [];
      const ms: number[] = [];
      let nulls = 0;
      for (let q = 0; q < queries; q++) {
        const f = facts[Math.floor((rnd() / 2 ** 32) * n)]!;
        const t = process.hrtime.bigint();
        const a = graph.query(f.subject, "rel");
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (a.object === null) nulls++;
        // calibration: an answer with confidence c should be right with probability c (a null answer is wrong)
        answers.push({ c: a.confidence, ok: a.object === f.object });
      }
      pooled.push(...answers);
      const accuracy = answers.filter((x) => x.ok).length / answers.length;
      points.push({
        facts: n,
        accuracy,
        theoretical: theoreticalAccuracy(n, objects, KG_DIM),
        meanConfidence: answers.reduce((s, x) => s + x.c, 0) / answers.length,
        ece: reliability(answers).ece,
        nulls,
        latency: summarize(ms),
        addPerSec,
      });
    } finally {
      graph.dispose();
    }
  }
  const r = reliability(pooled);
  return { dim: KG_DIM, objects, queries, points, reliability: r.bins, pooledEce: r.ece };
}

/** Expected calibration error over equal-width confidence bins. */
export function reliability(answers: Array<{ c: number; ok: boolean }>): { ece: number; bins: KgBenchResult["reliability"] } {
  const bins = Array.from({ length: BINS }, (_, i) => ({ lo: i / BINS, hi: (i + 1) / BINS, n: 0, confidence: 0, accuracy: 0 }));
  for (const a of answers) {
    const b = bins[Math.min(BINS - 1, Math.floor(a.c * BINS))]!;
    b.n++;
    b.confidence += a.c;
    b.accuracy += a.ok ? 1 : 0;
  }
  let ece = 0;
  for (const b of bins) {
    if (b.n === 0) continue;
    b.confidence /= b.n;
    b.accuracy /= b.n;
    ece += (b.n / answers.length) * Math.abs(b.accuracy - b.confidence);
  }
  return { ece, bins };
}

export function renderKgBench(r: KgBenchResult): string {
  const f = (x: number, d = 4) => x.toFixed(d);
  const cap = capacity(r.objects, r.dim);
  const lines = [
    `## Knowledge graph (src/hd/kg): D = ${r.dim.toLocaleString("en-US")} bits, ${r.objects} candidate objects, ${r.queries} queries per size`,
    "",
    `Capacity (facts at >= 0.99 theoretical accuracy with ${r.objects} objects): ${cap}; load = facts / capacity.`,
    "",
    "| facts/shard | load | accuracy | theoretical | mean confidence | ECE | null answers | query p50 ms | query p99 ms | adds/s |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...r.points.map(
      (p) =>
        `| ${p.facts} | ${f(p.facts / cap, 2)} | ${f(p.accuracy)} | ${f(p.theoretical)} | ${f(p.meanConfidence)} | ${f(p.ece)} | ${p.nulls} | ${f(p.latency.p50, 3)} | ${f(p.latency.p99, 3)} | ${Math.round(p.addPerSec)} |`,
    ),
    "",
    `Calibration pooled over all sizes (ECE ${f(r.pooledEce)}):`,
    "",
    "| confidence bin | answers | mean confidence | accuracy |",
    "|---|---:|---:|---:|",
    ...r.reliability
      .filter((b) => b.n > 0)
      .map((b) => `| [${b.lo.toFixed(1)}, ${b.hi.toFixed(1)}) | ${b.n} | ${f(b.confidence)} | ${f(b.accuracy)} |`),
  ];
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // [sizes] [objects] [queries]
  const sizes = process.argv[2]?.split(",").map(Number);
  const num = (i: number) => (process.argv[i] === undefined ? undefined : Number(process.argv[i]));
  console.log(renderKgBench(runKgBench({ sizes, objects: num(3), queries: num(4) })));
}
