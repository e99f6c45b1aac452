/** @module open-child — a fresh process opens a checkpointed collection (restart time, RSS), then runs unfiltered and filtered queries with recall. */
import { Collection } from "../../src/engine/collection.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { summarize, timeCalls } from "../stats.js";
import { ClusteredVectors, exactTopK } from "./vectors.js";

const [dir, nArg, seedArg, recallArg] = process.argv.slice(2);
const n = Number(nArg);
const seed = Number(seedArg);
const recallQueries = Number(recallArg);
const mb = (bytes: number) => Math.round(bytes / 2 ** 20);

const t0 = performance.now();
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const c = await Collection.open(dir!, { kernels, pool });
const openMs = performance.now() - t0;
const rssAfterOpenMB = mb(process.memoryUsage().rss);
const count = c.stats().totalVectorCount;

const data = new ClusteredVectors(c.dimension, seed);
const queries = Array.from({ length: 60 }, (_, j) => data.get(n + 1_000_000 + j));
const cases = [
  { name: "unfiltered", filter: undefined, keep: () => true },
  { name: "1% (bucket = 7)", filter: { bucket: 7 }, keep: (i: number) => i % 100 === 7 },
  { name: "10% (bucket < 10)", filter: { bucket: { $lt: 10 } }, keep: (i: number) => i % 100 < 10 },
];
const out = [];
for (const cs of cases) {
  let plan = "";
  const stages = { filter: 0, scan: 0, estimate: 0, rescore: 0 };
  const ms = await timeCalls(queries.length - 10, 10, async (i) => {
    const r = await c.query("", { vector: queries[i]!, topK: 10, filter: cs.filter });
    plan = r.plan;
    for (const k of Object.keys(stages) as (keyof typeof stages)[]) stages[k] += r.timings![k] / queries.length;
  });
  // Recall@10 against exact float cosine over the same rows (brute force over regenerated vectors).
  const rq = queries.slice(0, recallQueries);
  const truth = exactTopK(data, n, rq, 10, cs.keep);
  let hit = 0;
  for (let j = 0; j < rq.length; j++) {
    const got = new Set((await c.query("", { vector: rq[j]!, topK: 10, filter: cs.filter })).matches.map((m) => Number(m.id)));
    hit += truth[j]!.filter((i) => got.has(i)).length;
  }
  out.push({ name: cs.name, plan, latency: summarize(ms), stages, recallAt10: hit / (10 * rq.length), recallQueries: rq.length });
}
const peakRssMB = mb(process.resourceUsage().maxRSS * 1024);
process.stdout.write(`${JSON.stringify({ count, openMs, rssAfterOpenMB, peakRssMB, queries: out, recovery: c.recovery })}\n`);
await c.close();
await pool.close();
