/**
 * @module filtered-cpu — CPU time per filtered top-10 query on the collection `bench/filtered-bench.ts --data DIR` kept:
 * `npx tsx bench/filtered-cpu.ts [queries=600] [case: 1 | 10s | 10b | none] [mode: warm | cold | gather | write | write7 | distinct] [DIR=/tmp/filt1m-data]`.
 * Cases as in filtered-bench (1%: bucket = 7; 10s: shard = 3; 10b: bucket < 10). Modes: warm, the filter repeats (the
 * partition's filter cache holds it); cold, the cache is emptied before each query (what the first query of a filter,
 * or the first after a write, costs); gather, emptied, one untimed query, then the timed one (which gathers the codes;
 * its CPU figure holds both); write, one upsert before each query (its CPU counted too): row "0" again, a row no case's
 * filter keeps but `none`; write7, row "7" again (bucket 7, shard 7: a row the 1% filter keeps tombstoned, one appended);
 * distinct (case 1 only), query i filters on bucket = i % 100: always a filter's first query in the cache (it keeps 16),
 * on rows no recent query read (so not in the CPU's caches either, unlike cold's). Prints one JSON line: p50/p99 wall ms, process CPU ms per query (every thread), mean
 * stage ms, load average, RSS. PROF=file.cpuprofile writes a CPU profile of the timed loop only.
 */
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { ClusteredVectors } from "./engine/vectors.js";
import { loadavg } from "node:os";
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
const N = 1_000_000,
  DIM = 1024;
const n = Number(process.argv[2] ?? 600);
const which = process.argv[3] ?? "1";
const filter = which === "1" ? { bucket: 7 } : which === "10s" ? { shard: 3 } : which === "10b" ? { bucket: { $lt: 10 } } : undefined;
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const c = await Collection.open(`${process.argv[5] ?? "/tmp/filt1m-data"}/c`, { kernels, pool, dimension: DIM, annMinRows: Infinity });
const data = new ClusteredVectors(DIM, 20261122);
const qs = Array.from({ length: 110 }, (_, j) => data.get(N + 1_000_000 + j));
for (let i = 0; i < 20; i++) await c.query("", { vector: qs[i % 110]!, topK: 10, filter });
const ms: number[] = [];
const st = { filter: 0, scan: 0, estimate: 0, rescore: 0 };
let plan = "";
let queryCpu = 0; // µs of process CPU while a timed query ran
const prof = process.env.PROF ? new Session() : null;
if (prof) {
  prof.connect();
  await prof.post("Profiler.enable");
  await prof.post("Profiler.setSamplingInterval", { interval: 50 });
  await prof.post("Profiler.start");
}
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const mode = process.argv[4] ?? "warm"; // cold: the filter cache emptied before each query; gather: emptied, one query, then the timed one (which gathers)
// the namespace's partition (private to the collection; the bench empties its filter cache)
const part = (c as unknown as { s: { partitions: Map<string, { filters: { clear(): void } }> } }).s.partitions.get("")!;
for (let i = 0; i < n; i++) {
  if (mode === "cold" || mode === "gather") part.filters.clear();
  if (mode === "write" || mode === "write7") {
    // one upsert (row "0" or "7" again, same values and metadata: a tombstone and an appended row) before each query
    const row = mode === "write" ? 0 : 7;
    await c.upsert("", [{ id: String(row), values: data.get(row), metadata: { bucket: row, shard: row } }]);
    await c.settled();
  }
  if (mode === "gather") await c.query("", { vector: qs[(i + 1) % 110]!, topK: 10, filter });
  const t = performance.now();
  const u = process.cpuUsage();
  const r = await c.query("", { vector: qs[i % 110]!, topK: 10, filter: mode === "distinct" ? { bucket: i % 100 } : filter });
  const du = process.cpuUsage(u);
  queryCpu += du.user + du.system;
  ms.push(performance.now() - t);
  plan = r.plan;
  for (const k of Object.keys(st) as (keyof typeof st)[]) st[k] += r.timings![k] / n;
}
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
if (prof) {
  const { profile } = await prof.post("Profiler.stop");
  writeFileSync(process.env.PROF!, JSON.stringify(profile));
}
ms.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    case: which,
    mode,
    plan,
    n,
    p50: ms[n >> 1]!.toFixed(3),
    p99: ms[Math.floor(n * 0.99)]!.toFixed(3),
    cpuMsPerQuery: ((cpu.user + cpu.system) / 1000 / n).toFixed(3),
    queryCpuMs: (queryCpu / 1000 / n).toFixed(3),
    wallMsPerQuery: (wall / n).toFixed(3),
    stagesMean: Object.fromEntries(Object.entries(st).map(([k, v]) => [k, v.toFixed(3)])),
    load: loadavg()[0]!.toFixed(2),
    rssMB: Math.round(process.memoryUsage().rss / 2 ** 20),
  }),
);
await c.close();
await pool.close();
