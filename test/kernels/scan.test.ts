import { describe, expect, it } from "vitest";
import { Kernels, wordsFor } from "../../src/kernels/abi.js";
import { SvcError } from "../../src/errors.js";
import { duplicateRows, mulberry32, randomArena, randomQuery } from "./helpers.js";

const kernels = Kernels.create();
const DIMS = [1, 64, 100, 128, 200, 256, 500, 1000, 1024, 2048];

describe("hammingTopK equals its scalar reference", () => {
  const rand = mulberry32(7);
  for (const dim of DIMS) {
    it(`dim ${dim}: random n, k, ranges`, () => {
      for (let trial = 0; trial < 12; trial++) {
        const n = 1 + (rand() % 300);
        const arena = randomArena(kernels, n, dim, rand());
        if (trial % 3 === 0) duplicateRows(kernels, arena, 1 + (rand() % 7)); // forces ties
        const q = trial % 4 === 1 ? arena.rowPtr(rand() % n) : randomQuery(kernels, dim, arena.words, rand());
        const start = trial % 2 ? rand() % n : 0;
        const end = trial % 2 ? start + (rand() % (n - start + 1)) : n;
        for (const k of [1, 3, 10, n, n + 5]) {
          const fast = kernels.topK(arena, start, end, q, k);
          const ref = kernels.topK(arena, start, end, q, k, "reference");
          expect(fast).toEqual(ref);
          expect(fast.rows.length).toBe(Math.min(k, end - start));
        }
        arena.dispose();
      }
    });
  }

  it("orders by distance then row, and distances are true Hamming distances", () => {
    const arena = randomArena(kernels, 500, 1024, 11);
    duplicateRows(kernels, arena, 50);
    const q = arena.rowPtr(3);
    const { rows, dists } = kernels.topK(arena, 0, 500, q, 25);
    expect(Array.from(rows.slice(0, 10))).toEqual([3, 53, 103, 153, 203, 253, 303, 353, 403, 453]);
    for (let i = 0; i < rows.length; i++) {
      expect(dists[i]).toBe(kernels.hamming(arena.rowPtr(rows[i]!), q, arena.words, "reference"));
      if (i > 0) expect(dists[i - 1]! < dists[i]! || (dists[i - 1] === dists[i] && rows[i - 1]! < rows[i]!)).toBe(true);
    }
  });

  it("1024-bit stream split: every count and offset from 1 to 12 rows", () => {
    const arena = randomArena(kernels, 40, 1024, 13);
    duplicateRows(kernels, arena, 5);
    const q = arena.rowPtr(2);
    for (let start = 0; start < 5; start++) {
      for (let n = 0; n <= 12; n++) {
        for (const k of [1, 3, 20])
          expect(kernels.topK(arena, start, start + n, q, k)).toEqual(kernels.topK(arena, start, start + n, q, k, "reference"));
      }
    }
  });

  it("handles one row and empty ranges", () => {
    const arena = randomArena(kernels, 1, 1024, 3);
    const q = randomQuery(kernels, 1024, arena.words, 4);
    expect(kernels.topK(arena, 0, 1, q, 10)).toEqual(kernels.topK(arena, 0, 1, q, 10, "reference"));
    expect(kernels.topK(arena, 0, 1, q, 10).rows.length).toBe(1);
    expect(kernels.topK(arena, 0, 0, q, 10).rows.length).toBe(0);
    expect(kernels.topK(arena, 1, 1, q, 10).rows.length).toBe(0);
  });
});

describe("masked and candidate-list scans equal their references", () => {
  const rand = mulberry32(21);
  for (const dim of [64, 200, 1024]) {
    it(`dim ${dim}`, () => {
      for (let trial = 0; trial < 10; trial++) {
        const n = 1 + (rand() % 700);
        const arena = randomArena(kernels, n, dim, rand());
        const q = randomQuery(kernels, dim, arena.words, rand());
        const density = [0, 0.01, 0.3, 1][trial % 4]!;
        const maskBytes = new Uint8Array(Math.ceil(n / 64) * 8);
        const ids: number[] = [];
        for (let r = 0; r < n; r++)
          if (rand() / 2 ** 32 < density) {
            maskBytes[r >> 3]! |= 1 << (r & 7);
            ids.push(r);
          }
        const mask = kernels.heap.put(maskBytes);
        const start = rand() % n;
        const end = start + (rand() % (n - start + 1));
        for (const k of [1, 10, n + 1]) {
          expect(kernels.topKMasked(arena, start, end, q, k, mask)).toEqual(kernels.topKMasked(arena, start, end, q, k, mask, "reference"));
          expect(kernels.topKMasked(arena, 0, n, q, k, mask).rows.length).toBe(Math.min(k, ids.length));
        }
        const shuffled = ids.sort(() => (rand() & 1) - 0.5);
        const list = kernels.heap.put(Uint32Array.from(shuffled));
        for (const k of [1, 10, n + 1]) {
          const fast = kernels.topKList(arena, list, shuffled.length, q, k);
          expect(fast).toEqual(kernels.topKList(arena, list, shuffled.length, q, k, "reference"));
          // the list holds exactly the masked rows, so both filtered paths agree
          expect(fast).toEqual(kernels.topKMasked(arena, 0, n, q, k, mask));
        }
        kernels.heap.release(mask);
        kernels.heap.release(list);
        arena.dispose();
      }
    });
  }
});

describe("gatherRows equals a row-by-row copy", () => {
  it("random lists (any order, repeats) at several widths; the gathered rows scan like the list", () => {
    const rand = mulberry32(33);
    for (const dim of [1, 64, 200, 1024, 2048]) {
      for (let trial = 0; trial < 8; trial++) {
        const n = 1 + (rand() % 500);
        const arena = randomArena(kernels, n, dim, rand());
        const len = [0, 1, 3, 4, 5, 17, n][trial % 7]! + (trial === 7 ? 40 : 0);
        const ids = Uint32Array.from({ length: len }, () => rand() % n);
        const list = kernels.heap.put(ids);
        const out = kernels.heap.alloc(Math.max(8, len * arena.rowBytes));
        kernels.gatherRows(arena, list, len, out);
        const bytes = kernels.heap.bytes();
        const want = new Uint8Array(len * arena.rowBytes);
        ids.forEach((r, i) => want.set(bytes.subarray(arena.rowPtr(r), arena.rowPtr(r) + arena.rowBytes), i * arena.rowBytes));
        expect(bytes.slice(out, out + len * arena.rowBytes)).toEqual(want);
        kernels.heap.release(out);
        // a sorted list's gathered rows, scanned contiguously and mapped back through the list, are the list scan (ties too)
        const sorted = Uint32Array.from(new Set(ids)).sort();
        if (sorted.length > 0) {
          const sl = kernels.heap.put(sorted);
          const g = kernels.heap.alloc(sorted.length * arena.rowBytes);
          kernels.gatherRows(arena, sl, sorted.length, g);
          const q = randomQuery(kernels, dim, arena.words, rand());
          for (const k of [1, 10, sorted.length + 1]) {
            const gathered = kernels.topK({ base: g, words: arena.words, count: sorted.length }, 0, sorted.length, q, k);
            const listed = kernels.topKList(arena, sl, sorted.length, q, k, "reference");
            expect({ rows: Uint32Array.from(gathered.rows, (i) => sorted[i]!), dists: gathered.dists }).toEqual(listed);
          }
          kernels.heap.release(g);
          kernels.heap.release(sl);
        }
        kernels.heap.release(list);
        arena.dispose();
      }
    }
  });
  it("a row past the arena -> E_RANGE", () => {
    const arena = randomArena(kernels, 10, 1024, 1);
    const list = kernels.heap.put(Uint32Array.from([1, 10]));
    const out = kernels.heap.alloc(2 * arena.rowBytes);
    expect(() => kernels.gatherRows(arena, list, 2, out)).toThrowError(expect.objectContaining({ code: "E_RANGE" }));
    arena.dispose();
  });
});

describe("blocked multi-query scan", () => {
  const batch = (arena: ReturnType<typeof randomArena>, dim: number, nq: number, seed: number) => {
    const rand = mulberry32(seed);
    const queries = kernels.heap.alloc(nq * arena.rowBytes);
    for (let j = 0; j < nq; j++) {
      const qp = j % 3 === 0 ? arena.rowPtr(rand() % arena.count) : randomQuery(kernels, dim, arena.words, rand());
      kernels.heap.bytes().copyWithin(queries + j * arena.rowBytes, qp, qp + arena.rowBytes);
    }
    return queries;
  };

  it("popcnt and query-table paths both equal one reference scan per query", () => {
    const rand = mulberry32(5);
    for (const dim of [128, 333, 1024, 2048]) {
      for (const nq of [1, 2, 5, 8, 16, 20, 32, 40]) {
        const n = 1 + (rand() % 400);
        const arena = randomArena(kernels, n, dim, rand());
        duplicateRows(kernels, arena, 13);
        const queries = batch(arena, dim, nq, rand());
        const start = rand() % n;
        for (const k of [1, 10, n + 2]) {
          for (const path of ["popcnt", "table", "auto"] as const) {
            const multi = kernels.topKMulti(arena, start, n, queries, nq, k, path);
            multi.forEach((res, j) =>
              expect(res, `${path} dim ${dim} nq ${nq} k ${k} query ${j}`).toEqual(
                kernels.topK(arena, start, n, queries + j * arena.rowBytes, k, "reference"),
              ),
            );
          }
        }
      }
    }
  });

  it("query table: rows whose bytes are all 0xff and all 0x00 (largest per-byte distances)", () => {
    const arena = randomArena(kernels, 64, 1024, 3);
    kernels.heap.bytes().fill(0xff, arena.rowPtr(0), arena.rowPtr(32));
    kernels.heap.bytes().fill(0x00, arena.rowPtr(32), arena.rowPtr(64));
    const queries = kernels.heap.calloc(32 * arena.rowBytes);
    kernels.heap.bytes().fill(0xff, queries + 16 * arena.rowBytes, queries + 32 * arena.rowBytes);
    const res = kernels.topKMulti(arena, 0, 64, queries, 32, 40, "table");
    expect(res[0]!.dists[39]).toBe(1024); // 32 rows at 0, then rows at the maximum distance
    res.forEach((r, j) => expect(r).toEqual(kernels.topK(arena, 0, 64, queries + j * arena.rowBytes, 40, "reference")));
  });
});

describe("bad input is an SvcError, never a trap", () => {
  const arena = randomArena(kernels, 10, 1024, 1);
  const q = randomQuery(kernels, 1024, arena.words, 2);
  it.each([0, -1, 1.5, Number.NaN, Infinity])("k = %s -> E_TOP_K", (k) => {
    expect(() => kernels.topK(arena, 0, 10, q, k)).toThrowError(expect.objectContaining({ code: "E_TOP_K", field: "topK" }));
  });
  it("ranges past the arena -> E_RANGE", () => {
    expect(() => kernels.topK(arena, 0, 11, q, 1)).toThrowError(SvcError);
    expect(() => kernels.topK(arena, 5, 4, q, 1)).toThrowError(expect.objectContaining({ code: "E_RANGE" }));
    const list = kernels.heap.put(Uint32Array.from([1, 99]));
    expect(() => kernels.topKList(arena, list, 2, q, 1)).toThrowError(expect.objectContaining({ code: "E_RANGE" }));
  });
  it("words padding: a 1000-bit row occupies 1024 bits", () => {
    expect(wordsFor(1000)).toBe(16);
    expect(wordsFor(1)).toBe(2);
    expect(wordsFor(129)).toBe(4);
  });
});
