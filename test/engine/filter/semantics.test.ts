/** @module semantics.test — table tests of filter semantics: the reference matcher and the index must both give the expected rows. */
import { describe, expect, it } from "vitest";
import { MetadataIndex, matches } from "../../../src/engine/filter/metadata-index.js";
import type { Metadata } from "../../../src/engine/filter/metadata.js";
import { parseFilter } from "../../../src/engine/filter/parse.js";
import { RoaringBitmap32 } from "../../../src/engine/roaring.js";
import type { SvcError } from "../../../src/errors.js";

const ROWS: Metadata[] = [
  /* 0 */ { genre: "drama", year: 2001, live: true, tags: ["a", "b"] },
  /* 1 */ { genre: "comedy", year: 2010, live: false, tags: ["b"] },
  /* 2 */ { genre: "drama", year: 1999.5, tags: [] },
  /* 3 */ { genre: ["drama", "x"], year: "2001", live: "true" },
  /* 4 */ {},
  /* 5 */ { genre: "Drama", year: 2001.0, score: -3 },
  /* 6 */ { score: 0, live: false, tags: ["1", "true"] },
  /* 7 */ { genre: "1", score: 1, live: true, tags: ["a", "a"] },
  /* 8 */ { constructor: "c", year: 1e21 },
];
const ALL = ROWS.map((_, i) => i);

function indexOf(rows: Metadata[]): MetadataIndex {
  const index = new MetadataIndex();
  rows.forEach((m, r) => index.add(r, m));
  return index;
}

/** [filter, expected rows]. */
const TABLE: Array<[unknown, number[]]> = [
  // bare values and $eq: typed equality, lists match when any element equals
  [{ genre: "drama" }, [0, 2, 3]],
  [{ genre: { $eq: "drama" } }, [0, 2, 3]],
  [{ genre: "Drama" }, [5]],
  [{ genre: "x" }, [3]],
  [{ year: 2001 }, [0, 5]],
  [{ year: 2001.0 }, [0, 5]],
  [{ year: "2001" }, [3]],
  [{ live: true }, [0, 7]],
  [{ live: "true" }, [3]],
  [{ live: false }, [1, 6]],
  [{ genre: 1 }, []],
  [{ genre: "1" }, [7]],
  [{ tags: "a" }, [0, 7]],
  [{ tags: "true" }, [6]],
  [{ tags: true }, []],
  [{ tags: 1 }, []],
  [{ score: 0 }, [6]],
  [{ score: -0 }, [6]],
  [{ year: 1e21 }, [8]],
  [{ constructor: "c" }, [8]],
  [{ toString: { $exists: true } }, []],
  [{ missing: "x" }, []],
  // $ne: complement of $eq, rows without the field match (MongoDB)
  [{ genre: { $ne: "drama" } }, [1, 4, 5, 6, 7, 8]],
  [{ tags: { $ne: "b" } }, [2, 3, 4, 5, 6, 7, 8]],
  [{ year: { $ne: 2001 } }, [1, 2, 3, 4, 6, 7, 8]],
  [{ live: { $ne: true } }, [1, 2, 3, 4, 5, 6, 8]],
  [{ missing: { $ne: 1 } }, ALL],
  // $in / $nin: mixed types, lists
  [{ genre: { $in: ["comedy", "x"] } }, [1, 3]],
  [{ genre: { $in: ["drama", "drama"] } }, [0, 2, 3]],
  [{ year: { $in: [2010, 1999.5, "2001"] } }, [1, 2, 3]],
  [{ live: { $in: [true, "true"] } }, [0, 3, 7]],
  [{ tags: { $in: ["b", "1"] } }, [0, 1, 6]],
  [{ tags: { $nin: ["b", "1"] } }, [2, 3, 4, 5, 7, 8]],
  [{ genre: { $nin: ["drama", "comedy"] } }, [4, 5, 6, 7, 8]],
  [{ missing: { $in: ["a", 1, true] } }, []],
  [{ missing: { $nin: ["a", 1, true] } }, ALL],
  // ranges: numbers only, strings never match, missing never matches
  [{ year: { $gt: 2001 } }, [1, 8]],
  [{ year: { $gte: 2001 } }, [0, 1, 5, 8]],
  [{ year: { $lt: 2001 } }, [2]],
  [{ year: { $lte: 2001 } }, [0, 2, 5]],
  [{ year: { $gte: 2000, $lt: 2010 } }, [0, 5]],
  [{ year: { $gt: 1999.5, $lte: 2010 } }, [0, 1, 5]],
  [{ year: { $gte: 2001, $gt: 2001 } }, [1, 8]],
  [{ year: { $lte: 2001, $lt: 2001 } }, [2]],
  [{ year: { $gt: 2010, $lt: 2001 } }, []],
  [{ score: { $gte: -3, $lte: 0 } }, [5, 6]],
  [{ score: { $gt: -1e308 } }, [5, 6, 7]],
  [{ genre: { $gt: 0 } }, []],
  [{ live: { $gte: 0 } }, []],
  [{ tags: { $lt: 100 } }, []],
  // $exists: an empty list is present
  [{ tags: { $exists: true } }, [0, 1, 2, 6, 7]],
  [{ tags: { $exists: false } }, [3, 4, 5, 8]],
  [{ missing: { $exists: false } }, ALL],
  [{ missing: { $exists: true } }, []],
  // several operators on one field are ANDed; several fields in one object are ANDed
  [{ genre: { $in: ["drama", "comedy"], $ne: "comedy" } }, [0, 2, 3]],
  [{ year: { $exists: true, $ne: 2001 } }, [1, 2, 3, 8]],
  [{ genre: "drama", year: 2001 }, [0]],
  [{ genre: "drama", live: { $ne: false }, tags: { $exists: true } }, [0, 2]],
  // $and / $or, nested
  [{ $or: [{ genre: "comedy" }, { year: { $lt: 2000 } }] }, [1, 2]],
  [{ $and: [{ genre: "drama" }, { year: { $gte: 2000 } }] }, [0]],
  [{ $or: [{ genre: "comedy" }, { $and: [{ tags: "a" }, { live: true }] }] }, [0, 1, 7]],
  [{ $and: [{ $or: [{ genre: "drama" }, { genre: "Drama" }] }, { $or: [{ year: 2001 }, { year: "2001" }] }] }, [0, 3, 5]],
  [{ $or: [{ missing: "x" }, { tags: { $exists: false } }] }, [3, 4, 5, 8]],
  [{ genre: "drama", $or: [{ live: true }, { year: 1999.5 }] }, [0, 2]],
  [{ $and: [{ genre: { $ne: "drama" } }, { $or: [{ score: { $gte: 0 } }, { missing: { $nin: [1] } }] }] }, [1, 4, 5, 6, 7, 8]],
];

describe("filter semantics", () => {
  const index = indexOf(ROWS);
  const universe = new RoaringBitmap32(ALL);

  it.each(TABLE.map(([f, rows]) => [JSON.stringify(f), f, rows] as const))("%s", (_name, raw, expected) => {
    const filter = parseFilter(raw)!;
    expect(filter).not.toBeNull();
    expect(ALL.filter((r) => matches(filter, ROWS[r]!))).toEqual(expected);
    expect(index.evaluate(filter, universe).toArray()).toEqual(expected);
    // estimate is exact on this small index (no tail past TAIL_MIN) for every leaf
    if (filter.kind !== "and" && filter.kind !== "or") expect(index.estimate(filter)).toBe(expected.length);
  });

  it("evaluates within the universe only: removed rows never match, not even negations", () => {
    const live = new RoaringBitmap32([0, 1, 3, 4, 6]);
    expect(index.evaluate(parseFilter({ genre: "drama" })!, live).toArray()).toEqual([0, 3]);
    expect(index.evaluate(parseFilter({ genre: { $ne: "drama" } })!, live).toArray()).toEqual([1, 4, 6]);
    expect(index.evaluate(parseFilter({ tags: { $exists: false } })!, live).toArray()).toEqual([3, 4]);
    expect(index.evaluate(parseFilter({ year: { $gte: 2000 } })!, live).toArray()).toEqual([0, 1]);
  });

  it("treats universe rows that were never indexed as rows without metadata", () => {
    const wide = new RoaringBitmap32([0, 20, 21]);
    expect(index.evaluate(parseFilter({ genre: { $ne: "drama" } })!, wide).toArray()).toEqual([20, 21]);
    expect(index.evaluate(parseFilter({ year: { $lt: 3000 } })!, wide).toArray()).toEqual([0]);
    expect(index.evaluate(parseFilter({ year: { $nin: [2001] } })!, wide).toArray()).toEqual([20, 21]);
  });

  it("never mutates the universe or its own bitmaps, and returns a fresh bitmap each time", () => {
    const u = new RoaringBitmap32(ALL);
    for (const [raw, expected] of TABLE) {
      const filter = parseFilter(raw)!;
      const first = index.evaluate(filter, u);
      expect(first).not.toBe(u);
      first.clear();
      first.add(99);
      expect(index.evaluate(filter, u).toArray()).toEqual(expected);
    }
    expect(u.toArray()).toEqual(ALL);
  });

  it("indexes rows added out of order", () => {
    const shuffled = new MetadataIndex();
    for (const r of [5, 2, 8, 0, 7, 1, 4, 6, 3]) shuffled.add(r, ROWS[r]!);
    for (const [raw, expected] of TABLE) expect(shuffled.evaluate(parseFilter(raw)!, universe).toArray()).toEqual(expected);
  });

  it("refuses a row added twice (E_CONFLICT) or a non-u32 row (E_RANGE), changing nothing", () => {
    const ix = indexOf(ROWS);
    const codeOf = (fn: () => void): string | undefined => {
      try {
        fn();
      } catch (err) {
        return (err as SvcError).code;
      }
      return undefined;
    };
    expect(codeOf(() => ix.add(3, { genre: "comedy", year: 1 }))).toBe("E_CONFLICT"); // out of order: checked
    expect(codeOf(() => ix.add(8, { genre: "comedy" }))).toBe("E_CONFLICT"); // the last row
    for (const bad of [-1, 1.5, 2 ** 32, NaN]) expect(codeOf(() => ix.add(bad, { genre: "comedy" }))).toBe("E_RANGE");
    expect(ix.rows).toBe(ROWS.length);
    for (const [raw, expected] of TABLE) expect(ix.evaluate(parseFilter(raw)!, universe).toArray()).toEqual(expected);
    ix.add(2 ** 32 - 1, { genre: "comedy" }); // the largest row id
    expect(ix.evaluate(parseFilter({ genre: "comedy" })!, new RoaringBitmap32([1, 2 ** 32 - 1])).toArray()).toEqual([1, 2 ** 32 - 1]);
    const copy = MetadataIndex.deserialize(indexOf(ROWS).serialize());
    expect(codeOf(() => copy.add(0, {}))).toBe("E_CONFLICT");
    copy.add(9, {});
    expect(copy.rows).toBe(ROWS.length + 1);
  });

  it('handles a "__proto__" field like any other (own-property metadata, JSON filters)', () => {
    // Input refuses such keys (validateMetadata); the index still must not trip over one held as an own property.
    const ix = new MetadataIndex();
    const rows: Metadata[] = [JSON.parse('{"__proto__": "x", "n": 1}'), JSON.parse('{"__proto__": 5}'), {}];
    rows.forEach((m, r) => ix.add(r, m));
    const u = new RoaringBitmap32([0, 1, 2]);
    for (const [raw, expected] of [
      ['{"__proto__": "x"}', [0]],
      ['{"__proto__": {"$gte": 5}}', [1]],
      ['{"__proto__": {"$exists": false}}', [2]],
      ['{"__proto__": {"$ne": "x"}}', [1, 2]],
    ] as const) {
      const f = parseFilter(JSON.parse(raw))!;
      expect(ix.evaluate(f, u).toArray(), raw).toEqual(expected);
      expect(
        [0, 1, 2].filter((r) => matches(f, rows[r]!)),
        raw,
      ).toEqual(expected);
    }
  });

  it("counts a list that names a value twice once", () => {
    expect(index.estimate(parseFilter({ tags: "a" })!)).toBe(2);
    expect(index.estimate(parseFilter({ tags: { $ne: "a" } })!)).toBe(ROWS.length - 2);
  });

  it("estimates $and/$or within [0, rows]", () => {
    for (const [raw] of TABLE) {
      const e = index.estimate(parseFilter(raw)!);
      expect(Number.isInteger(e)).toBe(true);
      expect(e).toBeGreaterThanOrEqual(0);
      expect(e).toBeLessThanOrEqual(ROWS.length);
    }
    expect(index.rows).toBe(ROWS.length);
  });

  it("parses {} / undefined / null as no filter", () => {
    expect(parseFilter({})).toBeNull();
    expect(parseFilter(undefined)).toBeNull();
    expect(parseFilter(null)).toBeNull();
  });

  it("parses to a flat AST: ranges merged, same-kind nesting flattened, $in deduplicated", () => {
    expect(parseFilter({ year: { $gte: 2000, $lt: 2010 } })).toEqual({
      kind: "range",
      field: "year",
      min: 2000,
      minInclusive: true,
      max: 2010,
      maxInclusive: false,
    });
    expect(parseFilter({ $and: [{ a: 1 }, { $and: [{ b: 2 }, { c: 3 }] }] })).toEqual({
      kind: "and",
      children: [
        { kind: "in", field: "a", values: [1], negate: false },
        { kind: "in", field: "b", values: [2], negate: false },
        { kind: "in", field: "c", values: [3], negate: false },
      ],
    });
    expect(parseFilter({ $or: [{ a: "x" }] })).toEqual({ kind: "in", field: "a", values: ["x"], negate: false });
    expect(parseFilter({ a: { $nin: ["1", 1, true, "1", 1] } })).toEqual({ kind: "in", field: "a", values: ["1", 1, true], negate: true });
  });
});
