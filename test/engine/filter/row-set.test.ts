/** @module row-set.test — setBits: a roaring bitmap's rows written into a u32 bitset from its portable serialization (array, bitset and run containers). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { setBits } from "../../../src/engine/filter/row-set.js";
import { RoaringBitmap32 } from "../../../src/engine/roaring.js";

const ROWS = 300_000; // five containers, the last one partial

/** Rows set in words, ascending. */
function rowsOf(words: Uint32Array): number[] {
  const out: number[] = [];
  for (let w = 0; w < words.length; w++) for (let b = 0; b < 32; b++) if ((words[w]! >>> b) & 1) out.push(w * 32 + b);
  return out;
}

// A bitmap mixing the three container kinds: sparse rows (arrays), dense random rows (bitsets, > 4096 in a container), ranges (runs after runOptimize).
const bitmaps = fc.record({
  sparse: fc.array(fc.integer({ min: 0, max: ROWS + 70_000 }), { maxLength: 300 }),
  dense: fc.array(fc.record({ chunk: fc.integer({ min: 0, max: 5 }), every: fc.integer({ min: 2, max: 12 }) }), { maxLength: 3 }),
  ranges: fc.array(fc.record({ start: fc.integer({ min: 0, max: ROWS + 70_000 }), length: fc.integer({ min: 1, max: 20_000 }) }), {
    maxLength: 4,
  }),
  optimize: fc.boolean(),
});

describe("setBits", () => {
  it("sets exactly the bitmap's rows below the bitset's end, whatever the containers", () => {
    fc.assert(
      fc.property(bitmaps, ({ sparse, dense, ranges, optimize }) => {
        const b = new RoaringBitmap32(sparse);
        for (const { chunk, every } of dense) for (let r = chunk * 65536; r < (chunk + 1) * 65536; r += every) b.add(r);
        for (const { start, length } of ranges) b.addRange(start, start + length);
        if (optimize) b.runOptimize();
        const words = new Uint32Array(Math.ceil(ROWS / 64) * 2);
        setBits(b, words);
        expect(rowsOf(words)).toEqual(Array.from(b.toUint32Array()).filter((r) => r < words.length * 32));
      }),
      { seed: 24, numRuns: 60 },
    );
  });

  it("keeps bits already set (ORs into the bitset)", () => {
    const words = new Uint32Array(4);
    words[0] = 1;
    setBits(new RoaringBitmap32([5, 100]), words);
    expect(rowsOf(words)).toEqual([0, 5, 100]);
  });
});
