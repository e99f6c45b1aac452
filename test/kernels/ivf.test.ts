import { describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { duplicateRows, mulberry32, randomArena, randomQuery } from "./helpers.js";

const kernels = Kernels.create();

/** Reference: exact top-k (ascending distance, ties by row) over the rows that pass `keep`, by the scalar reference distance. */
function reference(
  arena: { rowPtr(r: number): number; words: number; count: number },
  q: number,
  k: number,
  keep: (r: number) => boolean,
): Array<[number, number]> {
  const all: Array<[number, number]> = [];
  for (let r = 0; r < arena.count; r++) if (keep(r)) all.push([kernels.hamming(arena.rowPtr(r), q, arena.words, "reference"), r]);
  all.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return all.slice(0, k);
}

const pairs = (top: { rows: Uint32Array; dists: Uint32Array }) => Array.from(top.rows, (r, i) => [top.dists[i]!, r] as [number, number]);

describe("inverted-file kernels", () => {
  for (const dimBits of [1024, 256, 200]) {
    it(`hammingTopKRanges equals the reference over the union of ranges, with and without a mask (${dimBits} bits)`, () => {
      const arena = randomArena(kernels, 3000, dimBits, dimBits);
      duplicateRows(kernels, arena, 700); // ties
      const q = randomQuery(kernels, dimBits, arena.words, 9);
      const next = mulberry32(dimBits + 1);
      const ranges: Array<[number, number]> = [
        [0, 0],
        [5, 130],
        [900, 1500],
        [2999, 3000],
        [1600, 1601],
        [2000, 2700],
      ];
      const inRange = (r: number) => ranges.some(([s, e]) => r >= s && r < e);
      const mask = kernels.heap.calloc(Math.ceil(3000 / 64) * 8);
      const words = kernels.heap.u32(mask, Math.ceil(3000 / 64) * 2);
      const set = new Set<number>();
      for (let i = 0; i < 900; i++) {
        const r = next() % 3000;
        set.add(r);
        words[r >>> 5]! |= 1 << (r & 31);
      }
      const rp = kernels.heap.put(Uint32Array.from(ranges.flat()));
      try {
        for (const k of [1, 10, 100]) {
          expect(pairs(kernels.topKRanges(arena, rp, ranges.length, q, k))).toEqual(reference(arena, q, k, inRange));
          expect(pairs(kernels.topKRanges(arena, rp, ranges.length, q, k, mask))).toEqual(
            reference(arena, q, k, (r) => inRange(r) && set.has(r)),
          );
        }
      } finally {
        kernels.heap.release(rp);
        kernels.heap.release(mask);
        kernels.heap.release(q);
        arena.dispose();
      }
    });
  }

  it("rejects ranges outside the rows with E_RANGE", () => {
    const arena = randomArena(kernels, 10, 1024, 1);
    const q = randomQuery(kernels, 1024, arena.words, 2);
    const rp = kernels.heap.put(Uint32Array.from([0, 11]));
    expect(() => kernels.topKRanges(arena, rp, 1, q, 3)).toThrowError(expect.objectContaining({ code: "E_RANGE" }));
    kernels.heap.release(rp);
    kernels.heap.release(q);
    arena.dispose();
  });

  it("nearestCentroids finds each row's nearest centroid (ties to the lower index) and its distance", () => {
    const arena = randomArena(kernels, 500, 256, 3);
    const cents = randomArena(kernels, 37, 256, 4);
    duplicateRows(kernels, cents, 30); // centroids 30..36 repeat 0..6: ties must pick the lower index
    const out = kernels.heap.alloc(500 * 4);
    const dists = kernels.heap.alloc(500 * 4);
    kernels.nearestCentroids(arena, 0, 500, cents.base, 37, out, dists);
    const got = kernels.heap.u32(out, 500).slice();
    const gotD = kernels.heap.u32(dists, 500).slice();
    for (let r = 0; r < 500; r++) {
      let best = Infinity,
        arg = -1;
      for (let c = 0; c < 37; c++) {
        const d = kernels.hamming(arena.rowPtr(r), cents.rowPtr(c), arena.words, "reference");
        if (d < best) [best, arg] = [d, c];
      }
      expect([got[r], gotD[r]]).toEqual([arg, best]);
    }
    kernels.heap.release(out);
    kernels.heap.release(dists);
    arena.dispose();
    cents.dispose();
  });

  for (const dimBits of [1024, 128]) {
    it(`ivfProbe over every list equals an exact scan; a probe of one list scans that list and the delta (${dimBits} bits)`, () => {
      // rows [0, 2400) in 24 lists of 100, rows [2400, 2500) the delta
      const arena = randomArena(kernels, 2500, dimBits, 5 + dimBits);
      const lists = 24;
      const cents = randomArena(kernels, lists, dimBits, 6);
      const offsets = kernels.heap.put(Uint32Array.from({ length: lists + 1 }, (_, l) => l * 100));
      const radii = kernels.heap.put(new Uint32Array(lists));
      const ref = { centroids: cents.base, lists, offsets, radii, indexedRows: 2400 };
      const q = randomQuery(kernels, dimBits, arena.words, 8);
      try {
        for (const k of [1, 10, 50]) {
          const all = kernels.ivfProbe(arena, ref, q, k, { minProbe: lists, cap: lists, slack: 0 });
          expect(all.probed).toBe(lists);
          expect(pairs(all.top)).toEqual(reference(arena, q, k, () => true));
        }
        // one list, k small enough that the delta fills the heap: the nearest centroid's list + the delta only
        const near = kernels.topK(cents, 0, lists, q, 1).rows[0]!;
        const one = kernels.ivfProbe(arena, ref, q, 10, { minProbe: 1, cap: 1, slack: 0 });
        expect(one.probed).toBe(1);
        expect(pairs(one.top)).toEqual(reference(arena, q, 10, (r) => r >= 2400 || (r >= near * 100 && r < near * 100 + 100)));
      } finally {
        kernels.heap.release(offsets);
        kernels.heap.release(radii);
        kernels.heap.release(q);
        arena.dispose();
        cents.dispose();
      }
    });
  }
});
