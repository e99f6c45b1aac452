/** @module errors.test — every malformed filter (E_FILTER) and metadata value (E_METADATA) names its exact path. */
import { describe, expect, it } from "vitest";
import { SvcError } from "../../../src/errors.js";
import { MAX_METADATA_BYTES, mergeMetadata, validateMetadata } from "../../../src/engine/filter/metadata.js";
import { MAX_FILTER_DEPTH, MAX_IN_VALUES, parseFilter } from "../../../src/engine/filter/parse.js";
function caught(fn) {
    try {
        fn();
    }
    catch (err) {
        expect(err).toBeInstanceOf(SvcError);
        return err;
    }
    throw new Error("expected a throw");
}
/** A filter nested `depth` objects deep ($and inside $or inside $and ...), and the path of its innermost object. */
function nested(depth) {
    let filter = { genre: "drama" };
    for (let d = depth - 1; d >= 1; d--)
        filter = { [d % 2 === 1 ? "$and" : "$or"]: [filter] };
    let innermost = "filter";
    for (let d = 1; d < depth; d++)
        innermost += `.${d % 2 === 1 ? "$and" : "$or"}[0]`;
    return { filter, innermost };
}
describe("E_FILTER", () => {
    const cases = [
        ["filter not an object (string)", "genre", "filter"],
        ["filter not an object (array)", [{ genre: "drama" }], "filter"],
        ["filter not an object (number)", 3, "filter"],
        ["unknown field operator", { year: { $between: [1, 2] } }, "filter.year.$between"],
        ["key without $ inside an operator object", { year: { gt: 1 } }, "filter.year.gt"],
        ["unknown top-level operator", { $not: { genre: "drama" } }, "filter.$not"],
        ["field operator at top level", { $eq: "drama" }, "filter.$eq"],
        ["$gt given a string", { year: { $gt: "2000" } }, "filter.year.$gt"],
        ["$lte given a boolean", { year: { $lte: true } }, "filter.year.$lte"],
        ["$gte given NaN", { year: { $gte: NaN } }, "filter.year.$gte"],
        ["$lt given Infinity", { year: { $lt: Infinity } }, "filter.year.$lt"],
        ["nested path of a bad operand", { $and: [{ genre: "drama" }, { year: { $gt: "x" } }] }, "filter.$and[1].year.$gt"],
        ["deeper nested path", { $or: [{ a: 1 }, { $and: [{ b: 2 }, { c: { $in: [] } }] }] }, "filter.$or[1].$and[1].c.$in"],
        ["empty $in", { genre: { $in: [] } }, "filter.genre.$in"],
        ["empty $nin", { genre: { $nin: [] } }, "filter.genre.$nin"],
        ["$in not an array", { genre: { $in: "drama" } }, "filter.genre.$in"],
        ["$in holding null", { genre: { $in: ["a", null] } }, "filter.genre.$in[1]"],
        ["$nin holding a list", { genre: { $nin: ["a", "b", ["c"]] } }, "filter.genre.$nin[2]"],
        ["$in holding an object", { genre: { $in: [{ a: 1 }] } }, "filter.genre.$in[0]"],
        ["$eq given a list", { genre: { $eq: ["drama"] } }, "filter.genre.$eq"],
        ["$eq given null", { genre: { $eq: null } }, "filter.genre.$eq"],
        ["$ne given an object", { genre: { $ne: { a: 1 } } }, "filter.genre.$ne"],
        ["$exists given a string", { genre: { $exists: "yes" } }, "filter.genre.$exists"],
        ["$exists given 1", { genre: { $exists: 1 } }, "filter.genre.$exists"],
        ["$and not an array", { $and: { genre: "drama" } }, "filter.$and"],
        ["$or empty", { $or: [] }, "filter.$or"],
        ["$or holding a non-object", { $or: [{ a: 1 }, 1] }, "filter.$or[1]"],
        ["$and holding an array", { $and: [[{ a: 1 }]] }, "filter.$and[0]"],
        ["$and holding an empty object", { $and: [{}] }, "filter.$and[0]"],
        ["bare list value", { genre: ["drama"] }, "filter.genre"],
        ["bare null value", { genre: null }, "filter.genre"],
        ["bare non-finite number", { score: Infinity }, "filter.score"],
        ["empty operator object", { genre: {} }, "filter.genre"],
        ["empty field name", { "": "x" }, "filter."],
        ["too many $in values", { id: { $in: Array.from({ length: MAX_IN_VALUES + 1 }, (_, i) => i) } }, "filter.id.$in"],
        ["too deep", nested(MAX_FILTER_DEPTH + 1).filter, nested(MAX_FILTER_DEPTH + 1).innermost],
        ["far too deep: the first object past the limit is named", nested(50).filter, nested(MAX_FILTER_DEPTH + 1).innermost],
    ];
    it.each(cases)("%s", (_name, filter, field) => {
        const err = caught(() => parseFilter(filter));
        expect(err.code).toBe("E_FILTER");
        expect(err.field).toBe(field);
        expect(err.status).toBe(400);
        expect(err.message.length).toBeGreaterThan(10);
    });
    it("the depth limit is inclusive: MAX_FILTER_DEPTH objects deep parses", () => {
        const { filter } = nested(MAX_FILTER_DEPTH);
        expect(JSON.stringify(filter)).toContain('"$and":[{"$or":[{"$and"');
        expect(parseFilter(filter)).toEqual({ kind: "in", field: "genre", values: ["drama"], negate: false });
        expect(caught(() => parseFilter(nested(MAX_FILTER_DEPTH + 1).filter)).field).toMatch(/\]$/);
    });
    it("uses the caller's path prefix", () => {
        const err = caught(() => parseFilter({ year: { $gt: "x" } }, "queries[2].filter"));
        expect(err.field).toBe("queries[2].filter.year.$gt");
        expect(caught(() => parseFilter(7, "queries[2].filter")).field).toBe("queries[2].filter");
    });
    it("accepts MAX_IN_VALUES values", () => {
        const f = parseFilter({ id: { $in: Array.from({ length: MAX_IN_VALUES }, (_, i) => i) } });
        expect(f?.kind === "in" && f.values.length).toBe(MAX_IN_VALUES);
    });
});
describe("E_METADATA", () => {
    const F = "vectors[3].metadata";
    const cases = [
        ["metadata a string", "drama", F],
        ["metadata an array", [{ genre: "drama" }], F],
        ["metadata a number", 5, F],
        ["nested object", { genre: { name: "drama" } }, `${F}.genre`],
        ["null value", { genre: null }, `${F}.genre`],
        ["NaN", { score: NaN }, `${F}.score`],
        ["Infinity", { score: -Infinity }, `${F}.score`],
        ["list with a number", { tags: ["a", 1] }, `${F}.tags[1]`],
        ["list with null", { tags: [null] }, `${F}.tags[0]`],
        ["list with a list", { tags: ["a", "b", ["c"]] }, `${F}.tags[2]`],
        ["empty key", { "": "x" }, `${F}[""]`],
        ["key starting with $", { $genre: "drama" }, `${F}.$genre`],
        ["a bigint", { n: 1n }, `${F}.n`],
        ["a function", { f: () => 1 }, `${F}.f`],
        ["over 40 KB", { text: "x".repeat(MAX_METADATA_BYTES) }, F],
        ["over 40 KB in multi-byte characters", { text: "é".repeat(MAX_METADATA_BYTES / 2) }, F],
    ];
    it.each(cases)("%s", (_name, meta, field) => {
        const err = caught(() => validateMetadata(meta, F));
        expect(err.code).toBe("E_METADATA");
        expect(err.field).toBe(field);
        expect(err.status).toBe(400);
    });
    it("the size limit is on the UTF-8 bytes of the JSON: exactly 40 KB passes, one byte more fails", () => {
        const overhead = JSON.stringify({ t: "" }).length; // {"t":""}
        expect(Object.keys(validateMetadata({ t: "x".repeat(MAX_METADATA_BYTES - overhead) }, F))).toEqual(["t"]);
        expect(caught(() => validateMetadata({ t: "x".repeat(MAX_METADATA_BYTES - overhead + 1) }, F)).field).toBe(F);
        // "é" is 2 UTF-8 bytes: half as many fit
        const half = (MAX_METADATA_BYTES - overhead) / 2;
        expect(validateMetadata({ t: "é".repeat(half) }, F).t).toHaveLength(half);
        expect(caught(() => validateMetadata({ t: `x${"é".repeat(half)}` }, F)).code).toBe("E_METADATA");
    });
    it("accepts the four value types and returns a copy", () => {
        const tags = ["a", "b"];
        const input = { genre: "drama", year: 2001, score: -0.5, live: false, tags, empty: [], skipped: undefined };
        const out = validateMetadata(input, F);
        expect(out).toEqual({ genre: "drama", year: 2001, score: -0.5, live: false, tags: ["a", "b"], empty: [] });
        expect(Object.keys(out)).not.toContain("skipped");
        tags.push("c");
        expect(out.tags).toEqual(["a", "b"]);
    });
    it("treats undefined and null as no metadata", () => {
        expect(validateMetadata(undefined, F)).toEqual({});
        expect(validateMetadata(null, F)).toEqual({});
    });
    it("refuses reserved keys (__proto__, constructor, prototype) naming the field, without touching a prototype", () => {
        for (const key of ["__proto__", "constructor", "prototype"]) {
            const input = JSON.parse(`{"a": 1, "${key}": "x"}`);
            const e = caught(() => validateMetadata(input, F));
            expect([e.code, e.field]).toEqual(["E_METADATA", `${F}.${key}`]);
        }
        expect(Object.getPrototypeOf(JSON.parse('{"__proto__": "x"}'))).toBe(Object.prototype);
    });
    it('mergeMetadata keeps a "__proto__" key (logged before such keys were refused) a plain key', () => {
        const out = JSON.parse('{"__proto__": "x", "a": 1}');
        const merged = mergeMetadata(out, { b: true });
        expect(Object.getOwnPropertyDescriptor(merged, "__proto__")?.value).toBe("x");
        expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    });
    it("mergeMetadata overwrites the patch's keys, keeps the rest, and changes neither input", () => {
        const base = { genre: "drama", year: 2001, tags: ["a"] };
        const patch = { year: 2002, live: true };
        expect(mergeMetadata(base, patch)).toEqual({ genre: "drama", year: 2002, tags: ["a"], live: true });
        expect(base).toEqual({ genre: "drama", year: 2001, tags: ["a"] });
        expect(patch).toEqual({ year: 2002, live: true });
    });
});
//# sourceMappingURL=errors.test.js.map