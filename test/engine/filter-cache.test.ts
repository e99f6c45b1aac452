/**
 * A partition's filter cache (engine/filter/filter-cache.ts): a repeated filter's matches come from the cache and, from
 * its first query, its rows' 1-bit codes are scanned gathered, and stay gathered across writes (upserts changing
 * metadata, overwrites, deletes) between queries. Neither may change an answer. Property (fast-check, fixed seed):
 * every query equals the same filter asked in a form the cache never keeps (too long a key: evaluated afresh, scanned
 * by the row list), its `matched` and ids agree with a brute-force evaluation of the filter over the rows' current
 * metadata, and once a filter's codes are gathered its later queries scan them (never the row list), writes or not, gathering
 * only the rows appended since.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { engineFixture } from "./engine-fixture.js";
import { Collection } from "../../src/engine/collection.js";
import { FILTER_CACHE_ENTRIES, FILTER_KEY_MAX, FilterCache, filterKey } from "../../src/engine/filter/filter-cache.js";
import { parseFilter } from "../../src/engine/filter/parse.js";
import { RoaringBitmap32 } from "../../src/engine/roaring.js";
import { RowArena } from "../../src/kernels/row-arena.js";
import { mulberry32 } from "../kernels/helpers.js";

const fx = engineFixture("svc-filter-cache-");
/** 1024-d: depth 1, so a top-10 keeps 100 candidates and the 1,000+ rows the filters match take the list scan. */
const DIM = 1024;
const N = 2400;

type Meta = { b: number; t: string };
/** Filters matching 1,000-2,000 of the rows (so their codes are gathered), each with its brute-force predicate. */
const FILTERS: { filter: Record<string, unknown>; keep: (m: Meta) => boolean }[] = [
  { filter: { b: { $ne: 1 } }, keep: (m) => m.b !== 1 },
  { filter: { b: { $lt: 2 } }, keep: (m) => m.b < 2 },
  { filter: { t: "x" }, keep: (m) => m.t === "x" },
  { filter: { $or: [{ b: 0 }, { t: "y" }] }, keep: (m) => m.b === 0 || m.t === "y" },
];

function vector(rand: () => number): Float32Array {
  return Float32Array.from({ length: DIM }, () => rand() / 2 ** 32 - 0.5);
}

/** A clause every row passes whose key is longer than FILTER_KEY_MAX: a filter with it is never cached (the list reference). */
const UNCACHED = { pad: { $nin: Array.from({ length: Math.ceil(FILTER_KEY_MAX / 4) }, (_, i) => `p${i}`) } };

type Op =
  | { kind: "query"; f: number; seed: number }
  | { kind: "upsert"; ids: number[]; b: number; t: string }
  | { kind: "delete"; ids: number[] }
  | { kind: "compact" };

describe("filtered queries through the filter cache", () => {
  it("equal the row-list scan of the same filter uncached, and the brute-force matches, across writes", async () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant("query" as const), f: fc.nat(FILTERS.length - 1), seed: fc.nat() }) },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant("upsert" as const),
          ids: fc.array(fc.nat(N + 50), { minLength: 1, maxLength: 40 }),
          b: fc.nat(2),
          t: fc.constantFrom("x", "y"),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("delete" as const), ids: fc.array(fc.nat(N + 50), { minLength: 1, maxLength: 40 }) }),
      },
      { weight: 1, arbitrary: fc.constant({ kind: "compact" as const }) },
    );
    let run = 0;
    let gatheredAfterWrite = 0;
    let gatheredAppended = 0;
    let compacted = 0;
    expect(filterKey(parseFilter(UNCACHED)!)).toBeNull();
    const listScans = vi.spyOn(fx.pool, "topKList");
    const gathers = vi.spyOn(fx.kernels, "gatherRows");
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 14 }), async (ops) => {
        const c = await Collection.open(fx.newDir(), {
          kernels: fx.kernels,
          pool: fx.pool,
          dimension: DIM,
          annMinRows: Infinity,
          durability: "none",
        });
        try {
          const rand = mulberry32(++run);
          const metas = new Map<string, Meta>();
          const rows = Array.from({ length: N }, (_, i) => ({
            id: String(i),
            values: vector(rand),
            metadata: { b: i % 3, t: i % 2 ? "x" : "y" },
          }));
          for (const r of rows) metas.set(r.id, r.metadata);
          await c.upsert("", rows);
          await c.settled();
          /** Filters whose codes are gathered (by their second query), and whether a write came since. */
          const held = new Map<number, boolean>();
          const wrote = () => {
            for (const f of held.keys()) held.set(f, true);
          };
          for (const o of [...ops, ...ops.filter((x) => x.kind === "query")]) {
            if (o.kind !== "query") wrote();
            if (o.kind === "upsert") {
              const ids = [...new Set(o.ids)].map(String);
              await c.upsert(
                "",
                ids.map((id) => ({ id, values: vector(rand), metadata: { b: o.b, t: o.t } })),
              );
              await c.settled();
              for (const id of ids) metas.set(id, { b: o.b, t: o.t });
              continue;
            }
            if (o.kind === "compact") {
              // rows renumbered in a fresh partition: its filter cache starts empty (the old one's codes never serve it)
              await c.compact("");
              held.clear();
              compacted++;
              continue;
            }
            if (o.kind === "delete") {
              const ids = [...new Set(o.ids)].map(String);
              await c.delete("", { ids });
              await c.settled();
              for (const id of ids) metas.delete(id);
              continue;
            }
            const { filter, keep } = FILTERS[o.f]!;
            const v = vector(mulberry32(o.seed));
            // twice: the second at the same version finds the copy as it is
            for (let i = 0; i < 2; i++) {
              listScans.mockClear();
              gathers.mockClear();
              const got = await c.query("", { vector: v, topK: 10, filter });
              const scannedList = listScans.mock.calls.length > 0;
              const gatheredRows = gathers.mock.calls.map((call) => call[2]);
              // the same rows under a filter the cache never keeps: evaluated, scanned by the row list
              const listed = await c.query("", { vector: v, topK: 10, filter: { $and: [filter, UNCACHED] } });
              expect(listScans).toHaveBeenCalled();
              expect(got.matches).toEqual(listed.matches);
              const want = [...metas].filter(([, m]) => keep(m));
              expect(got.matched).toBe(want.length);
              for (const m of got.matches) expect(keep(metas.get(m.id)!)).toBe(true);
              expect(got.plan).toBe("list");
              // every filter here matches GATHER_MIN_ROWS..GATHER_MAX_ROWS rows: gathered from its first query on
              expect(scannedList).toBe(false);
              if (held.has(o.f)) {
                // kept across writes: at most the rows appended since are gathered, never the whole list again
                for (const n of gatheredRows) expect(n).toBeLessThan(got.matched!);
                if (held.get(o.f)) gatheredAfterWrite++;
                if (gatheredRows.length > 0) gatheredAppended++;
              } else expect(gatheredRows).toEqual([got.matched]);
              held.set(o.f, false);
            }
          }
        } finally {
          await c.close();
        }
      }),
      { seed: 20261128, numRuns: 8 },
    );
    expect(gatheredAfterWrite).toBeGreaterThan(0);
    expect(gatheredAppended).toBeGreaterThan(0);
    expect(compacted).toBeGreaterThan(0);
    listScans.mockRestore();
    gathers.mockRestore();
  }, 240_000);
});

describe("FilterCache", () => {
  const filters = [parseFilter({ a: 1 })!, parseFilter({ a: { $gt: 1 } })!, parseFilter({ a: { $lt: 1 } })!, parseFilter({ a: "1" })!];

  it("keys tell apart what evaluates differently (numbers from strings, open bounds of either side)", () => {
    const keys = filters.map(filterKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(filterKey(parseFilter({ a: { $in: Array.from({ length: 2000 }, (_, i) => `value-${i}`) } })!)).toBeNull();
  });

  it("evaluates once, brings a cached bitmap and its gathered codes up to date across appends and deletes, keeps at most FILTER_CACHE_ENTRIES, gathers from the first use", () => {
    const cache = new FilterCache(fx.kernels);
    const arena = new RowArena(fx.kernels.heap, DIM, 6000);
    const rand = mulberry32(9);
    arena.append(Uint8Array.from({ length: 6000 * 128 }, () => rand() & 0xff));
    // the filter keeps the even rows; evaluate(universe) keeps those of the universe, evaluate(null) those of the first 4,000 rows
    const even = new RoaringBitmap32(Array.from({ length: 3000 }, (_, i) => i * 2));
    const first = new RoaringBitmap32(Array.from({ length: 2000 }, (_, i) => i * 2));
    const universes: (number[] | null)[] = [];
    const evaluate = (u: RoaringBitmap32 | null) => {
      universes.push(u === null ? null : u.toArray());
      return u === null ? first.clone() : RoaringBitmap32.and(even, u);
    };
    /** The gathered copy holds exactly the rows `want`, in order, with the arena's codes. */
    const expectGathered = (g: { rows: Uint32Array; codes: number } | null, want: RoaringBitmap32) => {
      expect(g).not.toBeNull();
      expect(g!.rows).toEqual(want.toUint32Array());
      const bytes = fx.kernels.heap.bytes();
      g!.rows.forEach((r, i) =>
        expect(bytes.subarray(g!.codes + i * 128, g!.codes + (i + 1) * 128)).toEqual(
          bytes.subarray(arena.rowPtr(r), arena.rowPtr(r) + 128),
        ),
      );
    };
    const s1 = { version: 1, rows: 4000, tombstones: new RoaringBitmap32() };
    const a = cache.matches(filters[0]!, s1, evaluate);
    const g = cache.gathered(a.key, arena); // first use: gathered
    expectGathered(g, first);
    expect(cache.heldBytes).toBe(2250 * 128); // 2,000 rows and an eighth more of room
    const b = cache.matches(filters[0]!, s1, evaluate);
    expect(b.matches).toBe(a.matches);
    expect(universes).toEqual([null]);
    expect(cache.gathered(b.key, arena)).toEqual(g);
    // a write: rows 4000-4004 appended, rows 2, 3, 100-199 and 4002 deleted; the codes stay held
    const s2 = { version: 2, rows: 4005, tombstones: new RoaringBitmap32([2, 3, ...Array.from({ length: 100 }, (_, i) => 100 + i), 4002]) };
    cache.matches(filters[1]!, s2, evaluate); // another filter's lookup at the new version
    expect(cache.heldBytes).toBe(2250 * 128);
    const c = cache.matches(filters[0]!, s2, evaluate);
    expect(universes).toEqual([null, null, [4000, 4001, 4003, 4004]]); // only the appended live rows evaluated
    expect(c.matches.toArray()).toEqual(even.toArray().filter((r) => r < 4005 && !s2.tombstones.has(r)));
    // first use at this version: the copy lost the deleted rows (moved down in place) and gained 4000 and 4004
    expectGathered(cache.gathered(c.key, arena), c.matches);
    expect(cache.heldBytes).toBe(2250 * 128);
    expect(cache.matches(filters[0]!, s2, evaluate).matches).toBe(c.matches);
    // more appended matches than the room left: a bigger copy
    const s3 = { version: 3, rows: 6000, tombstones: new RoaringBitmap32([...s2.tombstones.toArray(), 5000]) };
    const d = cache.matches(filters[0]!, s3, evaluate);
    expect(d.matches.toArray()).toEqual(even.toArray().filter((r) => !s3.tombstones.has(r)));
    expectGathered(cache.gathered(d.key, arena), d.matches);
    expect(cache.heldBytes).toBe((2947 + (2947 >> 3)) * 128);
    for (let i = 0; i < FILTER_CACHE_ENTRIES + 3; i++) cache.matches(parseFilter({ a: i + 10 })!, s3, evaluate);
    const n = universes.length;
    cache.matches(filters[0]!, s3, evaluate); // evicted by the newer ones: evaluated again
    expect(universes.length).toBe(n + 1);
    expect(cache.heldBytes).toBe(0);
    cache.clear();
    arena.dispose();
  });
});
