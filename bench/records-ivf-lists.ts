/**
 * @module records-ivf-lists — does another list count give the records' vectors list structure (issue 32 item 3)? Trains
 * k-modes centroids (as a build does) with LISTS lists on a records-scale-bench dir's indexed rows, then per held-in row
 * scans the lists by centroid distance up to 5-75% of the rows and reports recall@10 (by distance) against the exact scan.
 * Run: `npx tsx bench/records-ivf-lists.ts <dir> <lists>[,<lists>...]`.
 */
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import type { LocalRecordStore } from "../src/memory/record-store.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { assignRows, groupBy, trainCentroids } from "../src/engine/ivf.js";
import type { Partition } from "../src/engine/partition.js";
import { TextEncoder1024 } from "../src/encoder/encoder.js";

const dir = process.argv[2]!;
const counts = (process.argv[3] ?? "320").split(",").map(Number);
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const svc = new RecordService(dir, { kernels, pool, encoder: TextEncoder1024.load(), durability: "none" });
try {
  const s = await (svc as unknown as { local: { get(t: string): Promise<LocalRecordStore> } }).local.get("t");
  await s.settled();
  const p = (s.collection as unknown as { s: { partitions: Map<string, Partition> } }).s.partitions.get("big")!;
  const n = p.ivf?.indexedRows ?? p.rows;
  const pin = () => {
    const { rows, unpin } = p.arena.pin();
    return { rows: { ...rows, count: n }, unpin };
  };
  const next = mulberry32(7);
  const sample = Array.from({ length: 100 }, () => next() % n);
  const kth: number[] = [];
  {
    const { rows, unpin } = pin();
    for (const r of sample) {
      const t = kernels.topK(rows, 0, n, rows.base + r * rows.words * 8, 11);
      kth.push(Array.from(t.dists).filter((_, i) => t.rows[i] !== r)[9]!);
    }
    unpin();
  }
  const live = Uint32Array.from({ length: n }, (_, i) => i);
  for (const lists of counts) {
    const centroids = await trainCentroids(kernels, pool, pin, live, lists, p.shape.dimension, 1);
    const { nearest } = await assignRows(kernels, pool, pin, n, centroids, lists);
    const { order, offsets } = groupBy(nearest, lists);
    const fractions = [0.05, 0.15, 0.3, 0.5, 0.75];
    const hits = fractions.map(() => 0);
    const { rows, unpin } = pin();
    const rowBytes = rows.words * 8;
    for (const [i, r] of sample.entries()) {
      const byC = kernels.topK({ base: centroids, words: rows.words, count: lists }, 0, lists, rows.base + r * rowBytes, lists);
      let seen = 0,
        found = 0,
        f = 0;
      for (const l of byC.rows) {
        for (let j = offsets[l]!; j < offsets[l + 1]!; j++) {
          const o = order[j]!;
          if (o !== r && kernels.hamming(rows.base + o * rowBytes, rows.base + r * rowBytes, rows.words) <= kth[i]!) found++;
        }
        seen += offsets[l + 1]! - offsets[l]!;
        while (f < fractions.length && seen >= fractions[f]! * n) hits[f++]! += Math.min(10, found);
        if (f === fractions.length) break;
      }
    }
    unpin();
    kernels.heap.release(centroids);
    console.log(
      `${n} rows, ${lists} lists: held-in recall@10 ${fractions.map((fr, k) => `${(fr * 100).toFixed(0)}% ${(hits[k]! / (10 * sample.length)).toFixed(3)}`).join(", ")}`,
    );
  }
} finally {
  await svc.close();
  await pool.close();
}
