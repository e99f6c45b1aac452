/** @module serialize.test — checkpoint round trips of the metadata index: same answers before and after, and after further appends. */
import { encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { MetadataIndex, matches } from "../../../src/engine/filter/metadata-index.js";
import { parseFilter } from "../../../src/engine/filter/parse.js";
import { RoaringBitmap32 } from "../../../src/engine/roaring.js";
import { SvcError } from "../../../src/errors.js";
import { mulberry32 } from "../../../src/kernels/random.js";
function makeRows(seed, n) {
    const next = mulberry32(seed);
    const int = (k) => next() % k;
    return Array.from({ length: n }, (_, i) => {
        const m = {};
        if (int(10) < 9)
            m.cat = `c${int(30)}`;
        if (int(10) < 8)
            m.year = 1950 + int(75) + (int(4) === 0 ? 0.5 : 0);
        if (int(10) < 5)
            m.live = int(2) === 0;
        if (int(10) < 6)
            m.tags = Array.from({ length: 1 + int(3) }, () => `t${int(12)}`);
        if (int(10) < 3)
            m.mixed = [`${int(5)}`, int(5), int(2) === 0][int(3)];
        m.id = `doc-${i}`; // one row per value: stored as a bare row, not a bitmap
        if (int(3) === 0)
            m.ts = 1.7e12 + i; // a unique number per row
        return m;
    });
}
const FILTERS = [
    { cat: "c3" },
    { cat: { $in: ["c1", "c2", "c29"] } },
    { cat: { $nin: ["c1", "c2"] } },
    { year: { $gte: 1990, $lt: 2000 } },
    { year: { $gt: 2020 } },
    { year: 1999.5 },
    { live: true },
    { live: { $ne: false } },
    { tags: "t4" },
    { tags: { $in: ["t1", "t11"] }, live: { $exists: false } },
    { mixed: "3" },
    { mixed: 3 },
    { mixed: { $in: [true, 4, "0"] } },
    { id: "doc-17" },
    { id: { $in: ["doc-5", "doc-6", "doc-999999"] } },
    { id: { $ne: "doc-5" } },
    { ts: { $gte: 1.7e12 + 100, $lt: 1.7e12 + 200 } },
    { ts: 1.7e12 + 33 },
    { $or: [{ cat: "c7" }, { $and: [{ year: { $lt: 1960 } }, { tags: { $exists: true } }] }] },
    { nothing: { $exists: false } },
];
function check(index, rows, universe) {
    for (const raw of FILTERS) {
        const f = parseFilter(raw);
        const expected = universe.toArray().filter((i) => matches(f, rows[i] ?? {})); // rows never indexed have no metadata
        expect(index.evaluate(f, universe).toArray(), JSON.stringify(raw)).toEqual(expected);
    }
}
describe("MetadataIndex serialize/deserialize", () => {
    it("round trips: identical answers and estimates, then keeps indexing new rows", () => {
        const rows = makeRows(3, 6000);
        const index = new MetadataIndex();
        for (let i = 0; i < 5000; i++)
            index.add(i, rows[i]);
        const universe = new RoaringBitmap32();
        for (let i = 0; i < 6000; i++)
            if (i % 7 !== 3)
                universe.add(i);
        const bytes = index.serialize();
        const copy = MetadataIndex.deserialize(bytes);
        expect(copy.rows).toBe(5000);
        const first = rows.slice(0, 5000);
        check(index, first, universe);
        check(copy, first, universe);
        for (const raw of FILTERS)
            expect(copy.estimate(parseFilter(raw))).toBe(index.estimate(parseFilter(raw)));
        // same content, same bytes
        expect(Buffer.from(copy.serialize()).equals(Buffer.from(index.serialize()))).toBe(true);
        // Rows added after the checkpoint (in both, out of order) are indexed alike.
        const later = Array.from({ length: 1000 }, (_, i) => 5000 + ((i * 389) % 1000));
        for (const r of later) {
            index.add(r, rows[r]);
            copy.add(r, rows[r]);
        }
        check(index, rows, universe);
        check(copy, rows, universe);
        // and a second generation round trip still agrees
        check(MetadataIndex.deserialize(copy.serialize()), rows, universe);
    });
    it("round trips an empty index and one whose fields hold nothing but empty lists", () => {
        const empty = MetadataIndex.deserialize(new MetadataIndex().serialize());
        expect(empty.rows).toBe(0);
        expect(empty.evaluate(parseFilter({ a: { $ne: 1 } }), new RoaringBitmap32([0, 1])).toArray()).toEqual([0, 1]);
        const lists = new MetadataIndex();
        lists.add(0, { tags: [] });
        lists.add(1, {});
        const copy = MetadataIndex.deserialize(lists.serialize());
        const u = new RoaringBitmap32([0, 1]);
        expect(copy.evaluate(parseFilter({ tags: { $exists: true } }), u).toArray()).toEqual([0]);
        expect(copy.evaluate(parseFilter({ tags: { $ne: "a" } }), u).toArray()).toEqual([0, 1]);
    });
    it("reads from a buffer at any byte offset (decoded arrays are unaligned views)", () => {
        const rows = makeRows(5, 300);
        const index = new MetadataIndex();
        rows.forEach((m, i) => index.add(i, m));
        const bytes = index.serialize();
        const shifted = new Uint8Array(bytes.length + 3);
        shifted.set(bytes, 3);
        check(MetadataIndex.deserialize(shifted.subarray(3)), rows, new RoaringBitmap32(rows.map((_, i) => i)));
    });
    it("rejects bytes that are not an index with E_IO", () => {
        const bad = [
            new Uint8Array([1, 2, 3]),
            encode({ format: "something-else", version: 1 }),
            encode({ format: "svc.metadata-index", version: 99, rows: 0, fields: [] }),
            encode({ format: "svc.metadata-index", version: 1, rows: 1, fields: [{ name: "a", present: new Uint8Array([9, 9]) }] }),
        ];
        for (const b of bad) {
            const err = (() => {
                try {
                    MetadataIndex.deserialize(b);
                }
                catch (e) {
                    return e;
                }
                return null;
            })();
            expect(err).toBeInstanceOf(SvcError);
            expect(err.code).toBe("E_IO");
        }
    });
});
//# sourceMappingURL=serialize.test.js.map