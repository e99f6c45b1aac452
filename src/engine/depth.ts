/** @module depth — each float partition's rescoring depth, calibrated on its own rows against exact float cosine as they grow. */
import type { Kernels } from "../kernels/abi.js";
import { mulberry32 } from "../kernels/random.js";
import type { Rotation } from "../kernels/rotation.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { CALIBRATION_RECALL, tick } from "./ivf.js";
import type { Partition } from "./partition.js";
import { BestK, candidatesFor, DEPTH_EXACT, DEPTH_MAX_FLOATS, rescoreFor, search } from "./search.js";

/**
 * The depths tried, shallowest first: depth d keeps candidatesFor(k, d) rows of the 1-bit scan and rescores
 * rescoreFor(k, d) of them (d² and d times today's 1024-d depths). Past the last, or once a depth would rescore half
 * the rows, the partition is scored exactly (DEPTH_EXACT).
 */
export const DEPTH_LADDER: readonly number[] = [1, 2, 4, 8, 16, 32, 64];
/**
 * Held-in rows that query during a calibration (their own row left out): 2,000 answers of top-10, so a depth whose
 * recall is 0.99 passes the 0.995 bar by chance about 1% of the time (with 64 rows, 640 answers, 10%: a depth with
 * held-in 0.995 gave held-out 0.9875 on 10,000 x 256-d).
 */
export const DEPTH_SAMPLE = 200;
/** Partitions below this many live rows keep the dimension's default depth (depthScale) and are not calibrated. */
export const DEPTH_MIN_ROWS = 1000;
/** Live rows read per step of the exact answers (yielding between steps). */
const TRUTH_CHUNK = 256;
const K = 10;

/** Is `p` due a calibration: float values, enough rows, not too many, and twice the live rows of its last one. */
export function depthDue(p: Partition): boolean {
  const n = p.liveCount;
  return p.values !== null && n >= DEPTH_MIN_ROWS && n * p.shape.dimension <= DEPTH_MAX_FLOATS && n >= 2 * p.depthRows;
}

/**
 * The shallowest DEPTH_LADDER depth whose default query (search.ts, unfiltered, through the index if the partition has
 * one) finds CALIBRATION_RECALL of the exact float-cosine top-10 of DEPTH_SAMPLE seeded held-in rows, each asking for
 * 11 and its own row left out (a found row counts when its cosine is at least the 10th exact one); DEPTH_EXACT when
 * none does before rescoring half the rows. Yields between steps; `stop()` abandons it (E_CLOSED).
 */
export async function calibrateDepth(
  kernels: Kernels,
  pool: ScanPool,
  p: Partition,
  rotation: Rotation,
  seed: number,
  stop: () => boolean,
): Promise<{ depth: number; recall: number; rows: number }> {
  const dim = p.shape.dimension;
  const live = p.live().toUint32Array();
  const n = live.length;
  const next = mulberry32(seed ^ 0xde9717);
  const sample = Array.from(new Set(Array.from({ length: Math.min(DEPTH_SAMPLE, n) }, () => live[next() % n]!)));
  const s = sample.length;
  const heap = kernels.heap;
  const rowBytes = dim * 4;
  const bits = heap.alloc(s * p.arena.rowBytes);
  const units = heap.alloc(s * rowBytes);
  // the norm and the s dot products of one row (dotNormMany), then the chunk of rows
  const block = heap.alloc(8 * (1 + s) + TRUTH_CHUNK * rowBytes);
  p.pins++;
  try {
    const rotated: Float32Array[] = [];
    for (const [i, r] of sample.entries()) {
      rotation.encode(p.vector(r) as Float32Array, bits + i * p.arena.rowBytes, units + i * rowBytes);
      rotated.push(rotation.lastRotated());
    }
    // The exact answers: every live row's values read once (runs of TRUTH_CHUNK rows), scored against every sample query.
    const best = sample.map(() => new BestK(K + 1));
    const buf = block + 8 * (1 + s);
    for (let i = 0; i < n;) {
      await tick(stop);
      // after the yield: shared memory may have grown (a new buffer)
      const res = new Float64Array(heap.memory.buffer, block, 1 + s);
      const start = live[i]!;
      const span = Math.min(TRUTH_CHUNK, p.rows - start);
      p.values!.readRange(start, span, heap.bytes().subarray(buf, buf + span * rowBytes));
      for (; i < n && live[i]! < start + span; i++) {
        const row = live[i]!;
        kernels.dotNormMany(units, s, buf + (row - start) * rowBytes, dim, block);
        const norm = res[0]! > 0 ? Math.sqrt(res[0]!) : 0;
        for (let j = 0; j < s; j++) best[j]!.offer(row, norm > 0 ? res[1 + j]! / norm : 0);
      }
    }
    const kth = best.map(
      (b, j) =>
        b
          .sorted()
          .filter((h) => h.row !== sample[j])
          .slice(0, K)
          .at(-1)?.score ?? -Infinity,
    );
    let recall = 0;
    for (const depth of DEPTH_LADDER) {
      if (2 * rescoreFor(K, depth) >= n) break;
      let hits = 0;
      for (let j = 0; j < s; j++) {
        if (j % 8 === 0) await tick(stop);
        const u = heap.f32(units + j * rowBytes, dim).slice();
        const { hits: found } = await search(kernels, pool, p, {
          bits: bits + j * p.arena.rowBytes,
          unit: u,
          rotated: rotated[j]!,
          k: K + 1,
          filter: null,
          candidates: candidatesFor(K, depth) + 1,
          rescore: rescoreFor(K, depth) + 1,
        });
        const others = found.filter((h) => h.row !== sample[j]).slice(0, K);
        hits += others.filter((h) => h.score >= kth[j]! - 1e-9 * Math.abs(kth[j]!)).length;
      }
      recall = hits / (K * s);
      if (recall >= CALIBRATION_RECALL) return { depth, recall, rows: n };
    }
    return { depth: DEPTH_EXACT, recall, rows: n };
  } finally {
    p.pins--;
    heap.release(bits);
    heap.release(units);
    heap.release(block);
  }
}
