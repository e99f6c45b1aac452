/**
 * The depth calibration's exact answers (engine/depth.ts exactBest): f32 dot products filter, the kept rows' exact f64
 * scores decide, and the best k per query equal those of scoring every live row exactly with dotNorm (rows and scores,
 * ties by row), on hostile rows: near-ties a few f32 roundings apart, duplicates, zero rows, norms from 1e-41 (subnormal floats) to 1e38
 * (outside the f32 range the rows are scored exactly), dims not a multiple of 8. Property: fast-check, fixed seed.
 * The same in the calling thread and on the pool's workers (a chunk of rows a task), and so the calibrated depth.
 */
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClusteredVectors } from "../../bench/engine/vectors.js";
import { calibrateDepth, exactBest } from "../../src/engine/depth.js";
import { Partition } from "../../src/engine/partition.js";
import { BestK } from "../../src/engine/search.js";
import { Kernels, type KeepRows } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { Rotation } from "../../src/kernels/rotation.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const root = mkdtempSync(join(tmpdir(), "svc-depth-truth-"));
const kernels = Kernels.create();
const heap = kernels.heap;
const pool = new ScanPool(kernels, { threads: 2 });
afterAll(async () => {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});
let dirs = 0;

/** `pool` with its exact-pass chunks run in the calling thread instead (the other tasks on its workers as before). */
const inThread: ScanPool = Object.assign(Object.create(pool) as ScanPool, {
  dotF32KeepRows: async (t: KeepRows) => kernels.dotF32KeepRows(t),
});

/** Every live row scored exactly as calibrateDepth did before exactBest: dotNorm per (row, query). */
function bruteBest(p: Partition, live: Uint32Array, queries: number, nq: number, k: number) {
  const dim = p.shape.dimension;
  const best = Array.from({ length: nq }, () => new BestK(k));
  const x = heap.alloc(dim * 4);
  const out = heap.alloc(16);
  try {
    for (const row of live) {
      p.values!.readRange(row, 1, heap.bytes().subarray(x, x + dim * 4));
      for (let j = 0; j < nq; j++) {
        kernels.dotNorm(queries + j * dim * 4, x, dim, out);
        const [dot, norm] = new Float64Array(heap.memory.buffer, out, 2);
        best[j]!.offer(row, norm! > 0 ? dot! / Math.sqrt(norm!) : 0);
      }
    }
  } finally {
    heap.release(x);
    heap.release(out);
  }
  return best.map((b) => b.sorted());
}

describe("exactBest (depth calibration's exact answers)", () => {
  it("equals scoring every live row exactly, near-ties, duplicates and extreme norms included", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          dim: fc.integer({ min: 1, max: 70 }),
          n: fc.integer({ min: 1, max: 600 }),
          nq: fc.integer({ min: 1, max: 9 }),
          k: fc.integer({ min: 1, max: 12 }),
          seed: fc.integer(),
          // how far apart the near-ties are, relative (a few f32 roundings at the smallest)
          jitter: fc.constantFrom(1e-7, 3e-7, 1e-6, 1e-4),
          extremes: fc.boolean(),
          deleted: fc.double({ min: 0, max: 0.5, noNaN: true }),
        }),
        async ({ dim, n, nq, k, seed, jitter, extremes, deleted }) => {
          const next = mulberry32(seed);
          const rnd = () => next() / 2 ** 32 - 0.5;
          const bases = Array.from({ length: 3 }, () => Float32Array.from({ length: dim }, rnd));
          const rows = new Float32Array(n * dim);
          for (let r = 0; r < n; r++) {
            const base = bases[next() % 3]!;
            const kind = next() % 10;
            const scale = extremes ? [1, 1e-30, 1e-12, 1e20, 1e36, 0, 1e38, 1e-41, 1, 1][kind]! : 1;
            for (let j = 0; j < dim; j++) rows[r * dim + j] = (base[j]! + (kind === 9 ? 0 : jitter * rnd())) * scale;
          }
          const p = new Partition(
            kernels,
            root,
            { dimension: dim, metric: "cosine" },
            { namespace: "", dir: `p${++dirs}`, rows: 0, recordBytes: 0 },
          );
          const queries = heap.alloc(nq * dim * 4);
          try {
            p.append(
              new Rotation(kernels, dim, 1),
              Array.from({ length: n }, (_, i) => `v${i}`),
              new Uint8Array(rows.buffer),
              Array.from({ length: n }, () => null),
              new Uint8Array(n * p.arena.rowBytes), // bits given: the rotation does not encode (no query here reads them)
            );
            // queries: unit vectors near the bases (so many rows tie within f32 error)
            for (let j = 0; j < nq; j++) {
              const q = Float64Array.from(bases[j % 3]!, (v) => v + jitter * rnd());
              const norm = Math.hypot(...q) || 1;
              heap.f32(queries + j * dim * 4, dim).set(Float32Array.from(q, (v) => v / norm));
            }
            const live = Uint32Array.from({ length: n }, (_, i) => i).filter(() => next() / 2 ** 32 >= deleted);
            const brute = bruteBest(p, live, queries, nq, k);
            const here = (await exactBest(kernels, p, live, queries, nq, k, () => false)).map((b) => b.sorted());
            expect(here).toEqual(brute);
            const pooled = (await exactBest(kernels, p, live, queries, nq, k, () => false, pool)).map((b) => b.sorted());
            expect(pooled).toEqual(brute);
          } finally {
            heap.release(queries);
            p.close();
          }
        },
      ),
      { seed: 20261127, numRuns: 150 },
    );
  });

  it("gives the same calibrated depth and recall in the calling thread as on the pool's workers", async () => {
    for (const [dim, n, seed] of [
      [64, 3000, 1],
      [96, 2500, 7],
    ] as const) {
      const data = new ClusteredVectors(dim, 20261128 + seed, 1, true, n / 25);
      const rows = new Float32Array(n * dim);
      for (let i = 0; i < n; i++) rows.set(data.get(i), i * dim);
      const p = new Partition(
        kernels,
        root,
        { dimension: dim, metric: "cosine" },
        { namespace: "", dir: `p${++dirs}`, rows: 0, recordBytes: 0 },
      );
      try {
        const rotation = new Rotation(kernels, dim, seed);
        p.append(
          rotation,
          Array.from({ length: n }, (_, i) => `v${i}`),
          new Uint8Array(rows.buffer),
          Array.from({ length: n }, () => null),
        );
        p.remove(Array.from({ length: Math.ceil(n / 97) }, (_, i) => `v${i * 97}`)); // chunks with holes
        const pooled = await calibrateDepth(kernels, pool, p, rotation, seed, () => false);
        const here = await calibrateDepth(kernels, inThread, p, rotation, seed, () => false);
        expect(pooled).toEqual(here);
        expect(pooled.rows).toBe(p.liveCount);
      } finally {
        p.close();
      }
    }
  });
});
