/** @module numeric.test — the radix sort, the bitset-to-roaring builder and the numeric column against simple references. */
import { describe, expect, it } from "vitest";
import { NumericColumn, sortRowsByValue } from "../../../src/engine/filter/numeric-column.js";
import { bitmapFromSorted, isAscending, RowSetBuilder } from "../../../src/engine/filter/row-set.js";
import { RoaringBitmap32 } from "../../../src/engine/roaring.js";
import { mulberry32 } from "../../../src/kernels/random.js";

function uniform(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 2 ** 32;
}

describe("sortRowsByValue", () => {
  const u = uniform(1);
  const kinds: Array<[string, () => number]> = [
    ["small integers", () => Math.floor(u() * 100)],
    ["signed floats of every magnitude", () => (u() - 0.5) * 10 ** Math.floor(u() * 40 - 20)],
    [
      "extremes",
      () => [Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Number.MIN_VALUE, 0, 2 ** 53, -(2 ** 53)][Math.floor(u() * 7)]!,
    ],
    ["timestamps", () => 1.7e12 + Math.floor(u() * 1e9)],
  ];
  for (const n of [0, 1, 2, 63, 64, 65, 1000, 50_000]) {
    for (const [name, gen] of kinds) {
      it(`${n} rows, ${name}: equals a stable comparator sort`, () => {
        const values = new Float64Array(n + 10).fill(NaN);
        const rows = new Uint32Array(n);
        for (let i = 0; i < n; i++) {
          rows[i] = n - 1 - i + 10; // distinct, descending
          values[rows[i]!] = gen();
        }
        const pos = new Map(Array.from(rows, (r, i) => [r, i] as const));
        const got = Array.from(sortRowsByValue(rows.slice(), values));
        if (n <= 1000) {
          const expected = Array.from(rows).sort((a, b) => values[a]! - values[b]! || pos.get(a)! - pos.get(b)!);
          expect(got).toEqual(expected);
        } else {
          // ordered and stable, checked pairwise
          for (let i = 1; i < got.length; i++) {
            const a = got[i - 1]!;
            const b = got[i]!;
            expect(values[a]! < values[b]! || (values[a] === values[b] && pos.get(a)! < pos.get(b)!)).toBe(true);
          }
          expect(new Set(got).size).toBe(n);
        }
      });
    }
  }
});

describe("RowSetBuilder", () => {
  it("builds exactly the marked rows at every density, across chunks and at the array/bitset container boundary", () => {
    const u = uniform(2);
    const b = new RowSetBuilder();
    const cases: number[][] = [
      [],
      [0],
      [65535, 65536, 4294967295 % 300000],
      Array.from({ length: 4096 }, (_, i) => i * 16), // exactly 4,096 in chunk 0: array container
      Array.from({ length: 4097 }, (_, i) => i * 15), // 4,097: bitset container
      Array.from({ length: 65536 }, (_, i) => 131072 + i), // a full chunk
    ];
    for (const density of [0.0001, 0.01, 0.06, 0.0625, 0.07, 0.5, 1]) {
      const rows: number[] = [];
      for (let r = 0; r < 300_000; r++) if (u() < density) rows.push(r);
      cases.push(rows);
    }
    for (const rows of cases) {
      const shuffled = Uint32Array.from(rows);
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.floor(u() * (i + 1));
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      b.reserve(300_000);
      const half = shuffled.length >>> 1;
      b.markAll(shuffled, 0, half);
      for (let i = half; i < shuffled.length; i++) b.mark(shuffled[i]!);
      b.markAll(shuffled, 0, Math.min(10, shuffled.length)); // marking twice is harmless
      const got = b.build();
      const sorted = Array.from(new Set(rows)).sort((x, y) => x - y);
      expect(got.size).toBe(sorted.length);
      expect(got.isEqual(new RoaringBitmap32(sorted))).toBe(true);
    }
    // build() left the scratch clear
    expect(b.build().size).toBe(0);
  });

  it("bitmapFromSorted writes the same bitmap as the constructor, slices included", () => {
    const u = uniform(4);
    const cases: number[][] = [
      [],
      [7],
      [65535, 65536],
      Array.from({ length: 4096 }, (_, i) => i * 3),
      Array.from({ length: 4097 }, (_, i) => 70_000 + i * 2),
      [0, 4294967295],
    ];
    for (const density of [0.001, 0.05, 0.07, 0.9]) cases.push(Array.from({ length: 200_000 }, (_, i) => i).filter(() => u() < density));
    for (const rows of cases) {
      const padded = Uint32Array.from([9, ...rows, 1]); // from = 1, to = length - 1
      const got = bitmapFromSorted(padded, 1, padded.length - 1);
      expect(got.isEqual(new RoaringBitmap32(rows))).toBe(true);
      expect(isAscending(padded, 1, padded.length - 1)).toBe(true);
    }
    expect(isAscending(Uint32Array.from([1, 2, 2]), 0, 3)).toBe(false);
    expect(isAscending(Uint32Array.from([3, 1, 2]), 1, 3)).toBe(true);
  });

  it("keeps marks when it grows", () => {
    const b = new RowSetBuilder();
    b.reserve(10);
    b.mark(3);
    b.reserve(1_000_000);
    b.mark(999_999);
    expect(b.build().toArray()).toEqual([3, 999_999]);
  });
});

describe("NumericColumn", () => {
  it("answers ranges and points like a scan, through appends, merges and small universes", () => {
    const u = uniform(3);
    const col = new NumericColumn();
    const values = new Map<number, number>();
    const universe = new RoaringBitmap32();
    let row = 0;
    for (const batch of [10, 900, 1200, 20_000, 40_000]) {
      for (let i = 0; i < batch; i++, row++) {
        if (u() < 0.2) continue; // no number on this row
        const v = Math.floor(u() * 500) - 250 + (u() < 0.1 ? 0.25 : 0);
        col.add(row, v);
        values.set(row, v);
        if (u() < 0.9) universe.add(row);
      }
      const small = new RoaringBitmap32(universe.toArray().filter((_, i) => i % 97 === 0));
      for (let q = 0; q < 20; q++) {
        const min = Math.floor(u() * 600) - 300;
        const max = min + Math.floor(u() * 300);
        const minInclusive = u() < 0.5;
        const maxInclusive = u() < 0.5;
        const test = (v: number): boolean => (minInclusive ? v >= min : v > min) && (maxInclusive ? v <= max : v < max);
        const points = Float64Array.from(
          new Set(Array.from({ length: 1 + Math.floor(u() * 5) }, () => Math.floor(u() * 500) - 250)),
        ).sort();
        for (const uni of [universe, small]) {
          const expectRange = [...values]
            .filter(([r, v]) => uni.has(r) && test(v))
            .map(([r]) => r)
            .sort((a, b) => a - b);
          expect(col.select({ kind: "range", min, minInclusive, max, maxInclusive }, uni).toArray()).toEqual(expectRange);
          const expectPoints = [...values]
            .filter(([r, v]) => uni.has(r) && points.includes(v))
            .map(([r]) => r)
            .sort((a, b) => a - b);
          expect(col.select({ kind: "points", points }, uni).toArray()).toEqual(expectPoints);
        }
        const exact = [...values.values()].filter(test).length;
        const est = col.estimate({ kind: "range", min, minInclusive, max, maxInclusive });
        if (row <= 2200)
          expect(est).toBe(exact); // tail within TAIL_MIN or merged: exact
        else expect(Math.abs(est - exact)).toBeLessThanOrEqual(Math.max(50, exact * 0.2));
      }
    }
    expect(col.count).toBe(values.size);
  });

  it("answers integer columns filled in row order (row-ordered slices) plus a tail added later", () => {
    const u = uniform(5);
    const col = new NumericColumn();
    const values: number[] = [];
    const n = 120_000;
    for (let r = 0; r < n; r++) {
      values[r] = Math.floor(u() * 40);
      col.add(r, values[r]!);
    }
    const all = new RoaringBitmap32();
    all.addRange(0, n + 2000);
    const check = (): void => {
      for (const [min, max] of [
        [3, 3],
        [0, 9],
        [10, 30],
        [39, 39],
        [-5, 100],
      ] as const) {
        const expected = values.flatMap((v, r) => (v >= min && v <= max ? [r] : []));
        expect(col.select({ kind: "range", min, minInclusive: true, max, maxInclusive: true }, all).toArray()).toEqual(expected);
      }
      const points = Float64Array.from([2, 17, 33]);
      expect(col.select({ kind: "points", points }, all).toArray()).toEqual(values.flatMap((v, r) => (points.includes(v) ? [r] : [])));
    };
    check(); // merges the tail of 120k, then every slice is in row order
    for (let r = n; r < n + 2000; r++) {
      values[r] = Math.floor(u() * 40);
      col.add(r, values[r]!); // a tail below the merge threshold
    }
    check();
  });

  it("snapshot/restore keeps answers and rejects inconsistent arrays", () => {
    const col = new NumericColumn();
    [5, -1, 5, 3].forEach((v, r) => col.add(r, v));
    const s = col.snapshot();
    const back = NumericColumn.restore(s.len, s.values.slice(), s.sorted.slice());
    expect(
      back.select({ kind: "range", min: 0, minInclusive: true, max: 5, maxInclusive: true }, new RoaringBitmap32([0, 1, 2, 3])).toArray(),
    ).toEqual([0, 2, 3]);
    expect(() => NumericColumn.restore(4, s.values.slice(), Uint32Array.from([0, 1, 2, 3]))).toThrow(/order/);
    expect(() => NumericColumn.restore(4, s.values.slice(), Uint32Array.from([1, 3]))).toThrow(/sorted rows/);
    expect(() => NumericColumn.restore(5, s.values.slice(), s.sorted.slice())).toThrow(/values/);
  });
});
