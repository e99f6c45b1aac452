/**
 * @module filtered-bench — filtered top-10 on one in-process Collection (issue 24, target 3):
 * `npx tsx bench/filtered-bench.ts [--n 1000000] [--data DIR] [--queries 60] [--recall 20] [--no-index] [--rebuild]`.
 *
 * The collection (cosine, 1024-d) is filled directly with `Collection.upsert` (batches of 1,000,
 * 4 in flight; no HTTP) from the ann bench's clustered generator (bench/engine/vectors.ts: 1000
 * clusters, so the rows are clustered, not random) and metadata `{bucket: i % 100, shard: i % 10}`,
 * which is independent of the cluster a row belongs to. The automatic index build is off while
 * filling; the cases run first on the rows in append order, then after `buildIndex` (the state a
 * served 1M namespace is in: rows grouped by centroid). Per case: the planner's choice, p50/p99 of
 * top-10, mean stage times, recall@10 against exact cosine over the rows the filter keeps.
 * `--rebuild` builds the index again (a kept collection's index is otherwise used as it is).
 * `--data` keeps (named so: the roaring binding's loader reads `--dir` from argv) the collection (and the exact answers) for the next run.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { summarize, timeCalls } from "./stats.js";
import { ClusteredVectors, exactTopK } from "./engine/vectors.js";

const { values: args } = parseArgs({
  options: {
    n: { type: "string", default: "1000000" },
    dim: { type: "string", default: "1024" },
    data: { type: "string" },
    queries: { type: "string", default: "60" },
    recall: { type: "string", default: "20" },
    "no-index": { type: "boolean", default: false },
    rebuild: { type: "boolean", default: false },
  },
});
const N = Number(args.n);
const DIM = Number(args.dim);
const QUERIES = Number(args.queries);
const RECALL = Number(args.recall);
const SEED = 20261122;
const BATCH = 1000;
const IN_FLIGHT = 4;

const CASES = [
  { name: "unfiltered", filter: undefined, keep: () => true },
  { name: "1% (bucket = 7)", filter: { bucket: 7 }, keep: (i: number) => i % 100 === 7 },
  { name: "10% (shard = 3)", filter: { shard: 3 }, keep: (i: number) => i % 10 === 3 },
  { name: "10% (bucket < 10)", filter: { bucket: { $lt: 10 } }, keep: (i: number) => i % 100 < 10 },
];

const log = (line: string) => console.log(line);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

async function fill(c: Collection, data: ClusteredVectors, from: number): Promise<void> {
  const t0 = performance.now();
  let next = from;
  let last = t0;
  const worker = async () => {
    while (next < N) {
      const start = next;
      next += BATCH;
      const count = Math.min(BATCH, N - start);
      const values = new Float32Array(count * DIM);
      for (let j = 0; j < count; j++) data.write(start + j, values, j * DIM);
      const i = (j: number) => start + j;
      await c.upsert(
        "",
        Array.from({ length: count }, (_, j) => ({
          id: String(i(j)),
          values: values.subarray(j * DIM, (j + 1) * DIM),
          metadata: { bucket: i(j) % 100, shard: i(j) % 10 },
        })),
      );
      if (performance.now() - last > 5000) {
        last = performance.now();
        log(`  fill: ${start.toLocaleString("en-US")} / ${N.toLocaleString("en-US")}`);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await c.settled();
  await c.checkpoint();
  log(`filled ${(N - from).toLocaleString("en-US")} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** Exact top-10 row numbers per case for the first RECALL queries (cached in the kept dir: they depend only on n, seed and queries). */
function truths(dir: string | undefined, data: ClusteredVectors, queries: Float32Array[]): number[][][] {
  const file = dir ? join(dir, `truth-${N}-${RECALL}.json`) : null;
  if (file && existsSync(file)) return JSON.parse(readFileSync(file, "utf8"));
  const t0 = performance.now();
  const out = CASES.map((cs) => exactTopK(data, N, queries.slice(0, RECALL), 10, cs.keep));
  log(`exact answers for recall: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (file) writeFileSync(file, JSON.stringify(out));
  return out;
}

async function runCases(c: Collection, label: string, queries: Float32Array[], truth: number[][][]): Promise<void> {
  log(`\n${label} (load average ${load()})`);
  log(
    `| query | plan | matched | p50 ms | p99 ms | p50 ms per stage: filter / 1-bit scan / estimate / rescore | lists probed (mean) | recall@10 |`,
  );
  log(`|---|---|---:|---:|---:|---|---:|---:|`);
  for (const [ci, cs] of CASES.entries()) {
    let plan = "";
    let matched = 0;
    let probed = 0;
    const stages = { filter: [] as number[], scan: [] as number[], estimate: [] as number[], rescore: [] as number[] };
    const ms = await timeCalls(QUERIES - 10, 10, async (i) => {
      const r = await c.query("", { vector: queries[i]!, topK: 10, filter: cs.filter });
      plan = r.plan;
      matched = r.matched ?? N;
      probed += (r.probed ?? 0) / QUERIES; // warm-up calls included, as for the stages
      for (const k of Object.keys(stages) as (keyof typeof stages)[]) stages[k].push(r.timings![k]);
    });
    let hit = 0;
    for (let j = 0; j < RECALL; j++) {
      const got = new Set((await c.query("", { vector: queries[j]!, topK: 10, filter: cs.filter })).matches.map((m) => Number(m.id)));
      hit += truth[ci]![j]!.filter((i) => got.has(i)).length;
    }
    const l = summarize(ms);
    // p50 of each stage over all calls (warm-up included: the stages are read from the query's own timings)
    const st = [stages.filter, stages.scan, stages.estimate, stages.rescore].map((x) => summarize(x).p50.toFixed(2)).join(" / ");
    log(
      `| ${cs.name} | ${plan} | ${matched.toLocaleString("en-US")} | ${l.p50.toFixed(2)} | ${l.p99.toFixed(2)} | ${st} | ${probed ? probed.toFixed(0) : "-"} | ${(hit / (10 * RECALL)).toFixed(3)} |`,
    );
  }
}

async function main(): Promise<void> {
  const dir = args.data ?? mkdtempSync(join(tmpdir(), "svc-filtered-bench-"));
  mkdirSync(dir, { recursive: true });
  log(
    `filtered-bench: N = ${N.toLocaleString("en-US")} x ${DIM}-d clustered (ann generator, 1000 clusters), cosine, node ${process.version}, load average ${load()}, dir ${dir}`,
  );
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const path = join(dir, "c");
  const c = await Collection.open(path, { kernels, pool, dimension: DIM, annMinRows: Infinity });
  try {
    const data = new ClusteredVectors(DIM, SEED);
    const have = c.stats().totalVectorCount;
    if (have < N) await fill(c, data, have);
    const queries = Array.from({ length: QUERIES }, (_, j) => data.get(N + 1_000_000 + j));
    const truth = truths(args.data, data, queries);
    const indexed = () => c.indexStats("") !== null;
    if (!indexed()) await runCases(c, "rows in append order, no index", queries, truth);
    if (!args["no-index"]) {
      if (!indexed() || args.rebuild) {
        const t0 = performance.now();
        await c.buildIndex("");
        await c.checkpoint();
        log(`\nindex built in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(c.indexStats(""))}`);
      }
      await runCases(c, "with the approximate index (rows grouped by centroid)", queries, truth);
    }
  } finally {
    await c.close();
    await pool.close();
    if (!args.data) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
