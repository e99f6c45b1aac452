/** @module kernels-bench — tinybench micro-benchmarks: every kernel's fast path next to its scalar reference. */
import { Bench } from "tinybench";
import { Kernels, type Variant } from "../src/kernels/abi.js";
import { randomBytes } from "../src/kernels/random.js";
import { Rotation } from "../src/kernels/rotation.js";
import { RowArena } from "../src/kernels/row-arena.js";

export interface KernelResult {
  task: string;
  variant: Variant;
  /** work items per call (rows scanned, vectors encoded, ...) */
  items: number;
  p50Us: number;
  meanUs: number;
  /** items per second in millions, from the mean */
  mItemsPerSec: number;
}

export async function runKernelBench(log: (line: string) => void, timeMs = 300): Promise<KernelResult[]> {
  const kernels = Kernels.create();
  const heap = kernels.heap;
  const dim = 1024,
    words = 16,
    n = 20_000;
  const arena = new RowArena(heap, dim, n);
  arena.append(randomBytes(1, n * 128));
  const q = heap.put(randomBytes(2, 128));
  const queries = heap.put(randomBytes(3, 32 * 128));
  const mask = heap.put(randomBytes(4, Math.ceil(n / 64) * 8).map((b) => (b < 26 ? 1 : 0))); // ~1.3% of rows
  const list = heap.put(Uint32Array.from({ length: 2000 }, (_, i) => (i * 7919) % n));
  const counters = heap.calloc(dim * 4);
  const out = heap.alloc(128);
  const gathered = heap.alloc(2000 * 128);
  const rot = new Rotation(kernels, dim, 7);
  const vectors = new Float32Array(64 * dim).map((_, i) => Math.sin(i * 0.37));
  const encoded = heap.alloc(64 * 128);

  const tasks: Array<[string, number, (v: Variant) => void, Variant[]]> = [
    ["hamming 1024-bit pair", 1, (v) => kernels.hamming(q, arena.base, words, v), ["fast", "reference"]],
    [`topK k=10 over ${n} rows`, n, (v) => kernels.topK(arena, 0, n, q, 10, v), ["fast", "reference"]],
    [`masked topK (~1% of ${n} rows)`, n, (v) => kernels.topKMasked(arena, 0, n, q, 10, mask, v), ["fast", "reference"]],
    ["candidate-list topK (2000 rows)", 2000, (v) => kernels.topKList(arena, list, 2000, q, 10, v), ["fast", "reference"]],
    ["gather 2000 listed rows (contiguous copy)", 2000, () => kernels.gatherRows(arena, list, 2000, gathered), ["fast"]],
    [
      `blocked 32 queries x ${n} rows, 16 POPCNTs per pair`,
      32 * n,
      () => kernels.topKMulti(arena, 0, n, queries, 32, 10, "popcnt"),
      ["fast"],
    ],
    [`blocked 32 queries x ${n} rows, query table`, 32 * n, () => kernels.topKMulti(arena, 0, n, queries, 32, 10, "table"), ["fast"]],
    ["bind 1024-bit", 1, (v) => kernels.bind(q, arena.base, out, words, v), ["fast", "reference"]],
    ["bundleAdd 1024-bit", 1, (v) => kernels.bundleAdd(counters, q, dim, 1, v), ["fast", "reference"]],
    ["bundleThreshold 1024-bit", 1, (v) => kernels.bundleThreshold(counters, dim, q, out, v), ["fast", "reference"]],
    ["encode 64 x 1024-d f32", 64, () => rot.encode(vectors, encoded), ["fast"]],
  ];
  const bench = new Bench({ time: timeMs, warmup: true });
  for (const [name, , run, variants] of tasks) for (const v of variants) bench.add(`${name} [${v}]`, () => run(v));
  await bench.run();

  const results: KernelResult[] = [];
  for (const [name, items, , variants] of tasks) {
    for (const v of variants) {
      const r = bench.getTask(`${name} [${v}]`)?.result as { latency?: { p50?: number; mean: number } } | undefined;
      if (!r?.latency) throw new Error(`benchmark task failed: ${name} [${v}]`);
      const res: KernelResult = {
        task: name,
        variant: v,
        items,
        p50Us: (r.latency.p50 ?? r.latency.mean) * 1000,
        meanUs: r.latency.mean * 1000,
        mItemsPerSec: items / (r.latency.mean / 1000) / 1e6,
      };
      results.push(res);
      log(`${`${name} [${v}]`.padEnd(48)} p50 ${res.p50Us.toFixed(2).padStart(10)} us  ${res.mItemsPerSec.toFixed(2).padStart(9)} M/s`);
    }
  }
  return results;
}
