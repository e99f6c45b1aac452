import { describe, expect, it } from "vitest";
import { Kernels, wordsFor } from "../../src/kernels/abi.js";
import { randomBytes } from "../../src/kernels/random.js";
import { clearPadding, mulberry32, randomQuery } from "./helpers.js";

const kernels = Kernels.create();
const heap = kernels.heap;
const row = (p: number, words: number) => heap.bytes().slice(p, p + words * 8);

describe("bind", () => {
  it("fast XOR equals the reference and is its own inverse", () => {
    const rand = mulberry32(1);
    for (const dim of [1, 128, 300, 1024, 4096]) {
      const w = wordsFor(dim);
      const a = randomQuery(kernels, dim, w, rand());
      const b = randomQuery(kernels, dim, w, rand());
      const fast = heap.alloc(w * 8);
      const ref = heap.alloc(w * 8);
      kernels.bind(a, b, fast, w);
      kernels.bind(a, b, ref, w, "reference");
      expect(row(fast, w)).toEqual(row(ref, w));
      kernels.bind(fast, b, fast, w); // (a ^ b) ^ b = a, in place
      expect(row(fast, w)).toEqual(row(a, w));
      expect(kernels.hamming(ref, a, w)).toBe(kernels.hamming(b, heap.calloc(w * 8), w));
    }
  });
});

describe("bundle", () => {
  it("fast add/subtract equals the reference counters", () => {
    const rand = mulberry32(2);
    for (const dim of [1, 3, 64, 130, 1000, 1024]) {
      const w = wordsFor(dim);
      const fast = heap.calloc(dim * 4);
      const ref = heap.calloc(dim * 4);
      for (let i = 0; i < 9; i++) {
        const r = randomQuery(kernels, dim, w, rand());
        const weight = i % 4 === 3 ? -1 : 1 + (i % 3);
        kernels.bundleAdd(fast, r, dim, weight);
        kernels.bundleAdd(ref, r, dim, weight, "reference");
      }
      expect(Array.from(new Int32Array(heap.memory.buffer, fast, dim))).toEqual(Array.from(new Int32Array(heap.memory.buffer, ref, dim)));
    }
  });

  it("fast threshold equals the reference, including zero counters (ties)", () => {
    const rand = mulberry32(6);
    for (const dim of [1, 3, 4, 63, 64, 65, 200, 1024]) {
      const w = wordsFor(dim);
      const counters = new Int32Array(dim).map(() => (rand() % 5) - 2); // many zeros
      const c = heap.put(counters);
      const tie = heap.put(randomBytes(rand(), w * 8));
      const fast = heap.alloc(w * 8),
        ref = heap.alloc(w * 8);
      kernels.bundleThreshold(c, dim, tie, fast);
      kernels.bundleThreshold(c, dim, tie, ref, "reference");
      expect(row(fast, w)).toEqual(row(ref, w));
    }
  });

  it("majority of an odd bundle is per-bit majority; ties take the seeded tie row", () => {
    const dim = 200,
      w = wordsFor(dim);
    const rows = [0, 1, 2].map((s) => {
      const b = randomBytes(s + 40, w * 8);
      clearPadding(b, dim);
      return b;
    });
    const counters = heap.calloc(dim * 4);
    for (const r of rows) kernels.bundleAdd(counters, heap.put(r), dim);
    const tie = heap.put(randomBytes(99, w * 8));
    const out = heap.alloc(w * 8);
    kernels.bundleThreshold(counters, dim, tie, out);
    const got = row(out, w);
    const bit = (b: Uint8Array, j: number) => (b[j >> 3]! >> (j & 7)) & 1;
    for (let j = 0; j < dim; j++) expect(bit(got, j)).toBe(rows.reduce((s, r) => s + bit(r, j), 0) >= 2 ? 1 : 0);
    for (let j = dim; j < w * 64; j++) expect(bit(got, j)).toBe(0);

    // two opposite rows cancel everywhere: the result is the tie row
    const c2 = heap.calloc(dim * 4);
    const a = heap.put(rows[0]!);
    const notA = heap.put(rows[0]!.map((x) => ~x & 0xff));
    kernels.bundleAdd(c2, a, dim);
    kernels.bundleAdd(c2, notA, dim);
    kernels.bundleThreshold(c2, dim, tie, out);
    const tieBytes = row(tie, w);
    for (let j = 0; j < dim; j++) expect(bit(row(out, w), j)).toBe(bit(tieBytes, j));

    // subtracting what was added restores zero counters
    kernels.bundleAdd(c2, a, dim, -1);
    kernels.bundleAdd(c2, notA, dim, -1);
    expect(new Int32Array(heap.memory.buffer, c2, dim).every((c) => c === 0)).toBe(true);
  });
});
