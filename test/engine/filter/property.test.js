/** @module property.test — seeded random rows and filters: the index must equal the brute-force reference matcher exactly. */
import { describe, expect, it } from "vitest";
import { MetadataIndex, matches } from "../../../src/engine/filter/metadata-index.js";
import { parseFilter } from "../../../src/engine/filter/parse.js";
import { RoaringBitmap32 } from "../../../src/engine/roaring.js";
import { mulberry32 } from "../../../src/kernels/random.js";
function rand(seed) {
    const next = mulberry32(seed);
    const int = (n) => Math.floor((next() / 2 ** 32) * n);
    return { int, chance: (p) => next() / 2 ** 32 < p, pick: (xs) => xs[int(xs.length)] };
}
// Values that collide across types on purpose: "1" / 1 / true / "true", 0 / -0 / "0".
const STRINGS = ["a", "b", "c", "d", "e", "1", "true", "0", "", "é"];
const NUMBERS = [0, 1, 2, 3, 5, 8, -1, -2.5, 0.5, 1.5, 1e9, -1e-9, 2 ** 40];
const FIELDS = ["cat", "num", "flag", "tags", "mixed", "rare"];
function randomValue(r, field) {
    switch (field) {
        case "cat":
            return r.chance(0.9) ? r.pick(STRINGS) : r.pick(NUMBERS);
        case "num":
            return r.chance(0.85) ? r.pick(NUMBERS) + (r.chance(0.3) ? r.int(50) : 0) : r.pick(STRINGS);
        case "flag":
            return r.chance(0.9) ? r.chance(0.5) : r.pick(["true", "false"]);
        case "tags":
            return Array.from({ length: r.int(4) }, () => r.pick(STRINGS));
        default: {
            const k = r.int(4);
            if (k === 0)
                return r.pick(STRINGS);
            if (k === 1)
                return r.pick(NUMBERS);
            if (k === 2)
                return r.chance(0.5);
            return Array.from({ length: r.int(3) }, () => r.pick(STRINGS));
        }
    }
}
function randomRow(r) {
    const m = {};
    for (const f of FIELDS)
        if (r.chance(f === "rare" ? 0.05 : 0.7))
            m[f] = randomValue(r, f);
    return m;
}
function randomScalar(r) {
    const k = r.int(3);
    return k === 0 ? r.pick(STRINGS) : k === 1 ? r.pick(NUMBERS) + (r.chance(0.3) ? r.int(50) : 0) : r.chance(0.5);
}
function randomLeaf(r) {
    const field = r.chance(0.05) ? "absent" : r.pick(FIELDS);
    const num = () => (r.chance(0.7) ? r.pick(NUMBERS) + r.int(50) : r.pick(NUMBERS));
    switch (r.int(11)) {
        case 0:
            return { [field]: randomScalar(r) };
        case 1:
            return { [field]: { $eq: randomScalar(r) } };
        case 2:
            return { [field]: { $ne: randomScalar(r) } };
        case 3:
            return { [field]: { $in: Array.from({ length: 1 + r.int(4) }, () => randomScalar(r)) } };
        case 4:
            return { [field]: { $nin: Array.from({ length: 1 + r.int(4) }, () => randomScalar(r)) } };
        case 5:
            return { [field]: { [r.pick(["$gt", "$gte", "$lt", "$lte"])]: num() } };
        case 6:
            return { [field]: { [r.pick(["$gt", "$gte"])]: num(), [r.pick(["$lt", "$lte"])]: num() } };
        case 7:
            return { [field]: { $exists: r.chance(0.5) } };
        case 8:
            return { [field]: { $exists: true, $ne: randomScalar(r) } };
        case 9:
            return { [r.pick(FIELDS)]: randomScalar(r), [r.pick(FIELDS)]: { $gte: num() } };
        default:
            return { [field]: { $in: [r.pick(STRINGS), r.pick(NUMBERS)], $lte: num() } };
    }
}
function randomFilter(r, depth) {
    if (depth < 4 && r.chance(0.4)) {
        const children = Array.from({ length: 1 + r.int(3) }, () => randomFilter(r, depth + 1));
        const node = { [r.chance(0.5) ? "$and" : "$or"]: children };
        if (r.chance(0.2))
            Object.assign(node, randomLeaf(r));
        return node;
    }
    return randomLeaf(r);
}
function brute(filter, rows, universe) {
    const out = [];
    for (let i = 0; i < rows.length; i++)
        if (universe.has(i) && matches(filter, rows[i]))
            out.push(i);
    return out;
}
describe("index = brute force on random data", () => {
    it("2,000 rows of mixed types, 400 random nested filters, a universe with rows removed", () => {
        const r = rand(7);
        const rows = Array.from({ length: 2000 }, () => randomRow(r));
        const index = new MetadataIndex();
        rows.forEach((m, i) => index.add(i, m));
        const universe = new RoaringBitmap32();
        for (let i = 0; i < rows.length + 50; i++)
            if (r.chance(0.85))
                universe.add(i); // includes never-indexed rows
        let nonTrivial = 0;
        for (let q = 0; q < 400; q++) {
            const raw = randomFilter(r, 1);
            const filter = parseFilter(raw);
            const expected = brute(filter, rows, universe).concat(universe.toArray().filter((x) => x >= rows.length && matches(filter, {})));
            const got = index.evaluate(filter, universe).toArray();
            expect(got, JSON.stringify(raw)).toEqual(expected);
            if (expected.length > 0 && expected.length < universe.size)
                nonTrivial++;
        }
        expect(nonTrivial).toBeGreaterThan(200); // the filters really discriminate
    });
    it("rows arriving shuffled and in batches, queried between batches (tail merges, direct tests, bitset builds)", () => {
        const r = rand(11);
        const n = 150_000;
        const rows = new Array(n);
        for (let i = 0; i < n; i++) {
            const m = {};
            if (r.chance(0.9))
                m.v = r.chance(0.97) ? r.int(2000) / (r.chance(0.5) ? 1 : 4) - 300 : r.pick(STRINGS);
            if (r.chance(0.8))
                m.k = `k${r.int(64)}`;
            if (r.chance(0.3))
                m.b = r.chance(0.5);
            rows[i] = m;
        }
        const order = Array.from({ length: n }, (_, i) => i);
        for (let w = 0; w < n; w += 1000) {
            // Mostly increasing: shuffled within windows of 1,000 rows
            for (let i = Math.min(n, w + 1000) - 1; i > w; i--) {
                const j = w + r.int(i - w + 1);
                [order[i], order[j]] = [order[j], order[i]];
            }
        }
        const index = new MetadataIndex();
        const universe = new RoaringBitmap32();
        const added = new Array(n).fill(false);
        const batches = [500, 3000, 20_000, 60_000, n];
        let at = 0;
        for (const end of batches) {
            for (; at < end; at++) {
                const row = order[at];
                index.add(row, rows[row]);
                added[row] = true;
                if (r.chance(0.9))
                    universe.add(row);
            }
            const present = rows.map((m, i) => (added[i] ? m : {}));
            for (let q = 0; q < 24; q++) {
                const lo = r.int(2000) / 4 - 300;
                const raw = [
                    { v: { $gte: lo, $lt: lo + r.int(700) } },
                    { v: { $gt: lo } },
                    { v: { $in: Array.from({ length: 1 + r.int(40) }, () => r.int(2000) - 300) } },
                    { v: { $nin: [r.int(2000) - 300, r.pick(STRINGS)] } },
                    { k: `k${r.int(64)}`, v: { $lte: lo } },
                    { $and: [{ k: { $in: [`k${r.int(64)}`, `k${r.int(64)}`] } }, { b: true }, { v: { $gte: lo } }] },
                    { $or: [{ v: { $lt: lo } }, { k: { $ne: `k${r.int(64)}` } }] },
                    { v: r.int(2000) - 300 },
                ][q % 8];
                const filter = parseFilter(raw);
                const got = index.evaluate(filter, universe).toArray();
                expect(got, JSON.stringify(raw)).toEqual(brute(filter, present, universe));
            }
        }
        const all = parseFilter({ v: { $gte: -1e9 } });
        expect(index.evaluate(all, universe).size).toBe(brute(all, rows, universe).length);
    });
});
//# sourceMappingURL=property.test.js.map