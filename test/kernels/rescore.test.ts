/**
 * The cosine ranking's float kernels: dotNorm (SIMD, f64 accumulation) gives the same bits as its scalar
 * reference and agrees with a plain f64 sum; asymTable builds the same table as the JS fillTable bit for bit and
 * asymScores gives the same scores as the JS AsymmetricScorer (the references) for any candidate list, dims not a
 * multiple of 8 or 128 too. Property: fast-check, fixed seed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bestEstimated, AsymmetricScorer, fillTable } from "../../src/engine/estimate.js";
import { Kernels } from "../../src/kernels/abi.js";
import { randomArena } from "./helpers.js";

const kernels = Kernels.create();
const heap = kernels.heap;

describe("dotNorm", () => {
  it("fast equals the scalar reference bit for bit, and a plain f64 sum within rounding", () => {
    const f32 = fc.float({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true });
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 300 })
          .chain((dim) =>
            fc.tuple(
              fc.float32Array({ minLength: dim, maxLength: dim, min: -1e6, max: 1e6, noNaN: true }),
              fc.array(f32, { minLength: dim, maxLength: dim }),
            ),
          ),
        ([q, xs]) => {
          const dim = q.length;
          const x = Float32Array.from(xs);
          const qp = heap.put(q);
          const xp = heap.put(x);
          const fast = heap.alloc(16);
          const ref = heap.alloc(16);
          try {
            kernels.dotNorm(qp, xp, dim, fast);
            kernels.dotNorm(qp, xp, dim, ref, "reference");
            const f = new Float64Array(heap.memory.buffer, fast, 2).slice();
            const r = new Float64Array(heap.memory.buffer, ref, 2).slice();
            expect(f).toEqual(r);
            let dot = 0;
            let norm = 0;
            let scale = 0;
            for (let j = 0; j < dim; j++) {
              dot += q[j]! * x[j]!;
              norm += x[j]! * x[j]!;
              scale += Math.abs(q[j]! * x[j]!);
            }
            expect(Math.abs(f[0]! - dot)).toBeLessThanOrEqual(1e-12 * scale + 1e-300);
            expect(Math.abs(f[1]! - norm)).toBeLessThanOrEqual(1e-12 * norm + 1e-300);
          } finally {
            for (const ptr of [qp, xp, fast, ref]) heap.release(ptr);
          }
        },
      ),
      { seed: 20261126, numRuns: 200 },
    );
  });
});

describe("dotNormMany", () => {
  it("gives every query's dot product and the row's norm with the same bits as dotNorm, for any count of queries and any dim", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }).chain((dim) =>
          fc.tuple(
            fc.array(fc.float32Array({ minLength: dim, maxLength: dim, min: -1e6, max: 1e6, noNaN: true }), {
              minLength: 0,
              maxLength: 11,
            }),
            fc.float32Array({ minLength: dim, maxLength: dim, min: -1e6, max: 1e6, noNaN: true }),
          ),
        ),
        ([qs, x]) => {
          const dim = x.length;
          const nq = qs.length;
          const all = new Float32Array(Math.max(1, nq * dim));
          qs.forEach((q, i) => all.set(q, i * dim));
          const qp = heap.put(all);
          const xp = heap.put(x);
          const many = heap.alloc(8 * (1 + nq));
          const one = heap.alloc(16);
          try {
            kernels.dotNormMany(qp, nq, xp, dim, many);
            const got = new Float64Array(heap.memory.buffer, many, 1 + nq).slice();
            for (let i = 0; i < nq; i++) {
              kernels.dotNorm(qp + i * dim * 4, xp, dim, one);
              const [dot, norm] = new Float64Array(heap.memory.buffer, one, 2);
              expect(Object.is(got[1 + i], dot)).toBe(true);
              expect(Object.is(got[0], norm)).toBe(true);
            }
            kernels.dotNorm(xp, xp, dim, one);
            expect(got[0]).toBe(new Float64Array(heap.memory.buffer, one, 2)[1]);
          } finally {
            for (const ptr of [qp, xp, many, one]) heap.release(ptr);
          }
        },
      ),
      { seed: 20261127, numRuns: 200 },
    );
  });
});

describe("asymTable", () => {
  it("writes the same f32 bits as fillTable for any query, any dim (odd ones too) and any padding of the row", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 300 }).chain((dim) =>
          fc.tuple(
            // the whole finite f32 range, -0 and subnormals included: pair sums overflow to Infinity at the store
            fc.float32Array({ minLength: dim, maxLength: dim, noNaN: true, noDefaultInfinity: true }),
            fc.integer({ min: Math.max(1, Math.ceil(dim / 64)), max: Math.ceil(dim / 64) + 2 }),
          ),
        ),
        ([q, words]) => {
          const dim = q.length;
          const tableLength = words * 8 * 32;
          const want = new Float32Array(tableLength);
          fillTable(q, dim, want);
          const qp = heap.put(q.length > 0 ? q : new Float32Array(1));
          const table = heap.alloc(tableLength * 4);
          try {
            heap.bytes().fill(0xa5, table, table + tableLength * 4); // what is not written shows
            kernels.asymTable({ base: 0, words, count: 0 }, qp, dim, table);
            expect(heap.u32(table, tableLength)).toEqual(new Uint32Array(want.buffer));
          } finally {
            heap.release(qp);
            heap.release(table);
          }
        },
      ),
      { seed: 20261129, numRuns: 300 },
    );
  });

  it("refuses a query wider than the rows", () => {
    const table = heap.alloc(2 * 8 * 32 * 4);
    try {
      expect(() => kernels.asymTable({ base: 0, words: 2, count: 0 }, 0, 129, table)).toThrow(
        expect.objectContaining({ code: "E_DIMENSION" }),
      );
      expect(() => kernels.asymTable({ base: 0, words: 2, count: 0 }, 0, 1.5, table)).toThrow(
        expect.objectContaining({ code: "E_DIMENSION" }),
      );
    } finally {
      heap.release(table);
    }
  });
});

describe("asymScores", () => {
  it("scores every listed row as the JS AsymmetricScorer does; bestEstimated keeps the best by score, ties by row", () => {
    for (const dim of [1024, 300, 100, 13]) {
      const arena = randomArena(kernels, 500, dim, dim);
      const { rows, unpin } = arena.pin();
      fc.assert(
        fc.property(
          fc.uniqueArray(fc.integer({ min: 0, max: 499 }), { minLength: 1, maxLength: 200 }),
          fc.integer({ min: 1, max: 60 }),
          fc.integer(),
          (list, keep, seed) => {
            let s = seed;
            const rotated = Float32Array.from({ length: dim }, () => (s = (Math.imul(s, 1103515245) + 12345) | 0) / 2 ** 31);
            const scorer = new AsymmetricScorer(rotated, dim);
            const bytes = heap.bytes();
            const want = list.map((r) => ({ r, s: scorer.score(bytes, rows.base + r * rows.words * 8) }));
            const candidates = Uint32Array.from(list);
            const best = bestEstimated(kernels, rows, candidates, rotated, keep);
            // the rotated query read in place from shared memory (the reader's way) keeps the same rows
            const at = heap.put(rotated);
            try {
              expect(bestEstimated(kernels, rows, candidates, new Float32Array(dim), keep, at)).toEqual(best);
            } finally {
              heap.release(at);
            }
            if (list.length <= keep) expect(best).toBe(candidates);
            else {
              want.sort((a, b) => b.s - a.s || a.r - b.r);
              // which rows are kept matters (in no particular order: rescoring sorts them)
              const byRow = (a: number, b: number) => a - b;
              expect(Array.from(best).sort(byRow)).toEqual(
                want
                  .slice(0, keep)
                  .map((w) => w.r)
                  .sort(byRow),
              );
            }
          },
        ),
        { seed: dim, numRuns: 30 },
      );
      unpin();
      arena.dispose();
    }
  });
});

describe("dotF32Many / dotF32Keep", () => {
  it("are within (dim/8 + 12) x 2^-24 x Σ|q·x| of the exact dot product, and Keep returns exactly the queries at or above their floor", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1100 }).chain((dim) =>
          fc.tuple(
            fc.array(fc.float32Array({ minLength: dim, maxLength: dim, min: -1e3, max: 1e3, noNaN: true }), {
              minLength: 1,
              maxLength: 9,
            }),
            fc.float32Array({ minLength: dim, maxLength: dim, min: -1e3, max: 1e3, noNaN: true }),
            fc.array(fc.double({ min: -2e6, max: 2e6, noNaN: true }), { minLength: 9, maxLength: 9 }),
          ),
        ),
        ([qs, x, floorsIn]) => {
          const dim = x.length;
          const nq = qs.length;
          const all = new Float32Array(nq * dim);
          qs.forEach((q, i) => all.set(q, i * dim));
          const qp = heap.put(all);
          const xp = heap.put(x);
          const out = heap.alloc(8 * nq);
          const floors = heap.put(Float64Array.from(floorsIn.slice(0, nq)));
          const idx = heap.alloc(4 * nq);
          try {
            kernels.dotF32Many(qp, nq, xp, dim, out);
            const approx = new Float64Array(heap.memory.buffer, out, nq).slice();
            for (let i = 0; i < nq; i++) {
              let dot = 0;
              let abs = 0;
              for (let j = 0; j < dim; j++) {
                dot += qs[i]![j]! * x[j]!;
                abs += Math.abs(qs[i]![j]! * x[j]!);
              }
              expect(Math.abs(approx[i]! - dot)).toBeLessThanOrEqual((dim / 8 + 12) * 2 ** -24 * abs + 1e-30);
            }
            const norm = 3.5;
            const kept = kernels.dotF32Keep(qp, nq, xp, dim, norm, floors, idx, out);
            const want = [...approx.keys()].filter((i) => approx[i]! / norm >= floorsIn[i]!);
            expect(Array.from(new Uint32Array(heap.memory.buffer, idx, kept))).toEqual(want);
            expect(Array.from(new Float64Array(heap.memory.buffer, out, kept))).toEqual(want.map((i) => approx[i]! / norm));
          } finally {
            for (const ptr of [qp, xp, out, floors, idx]) heap.release(ptr);
          }
        },
      ),
      { seed: 20261128, numRuns: 150 },
    );
  });
});
