/** safe-values: the input check (depth, reserved keys, paths) and the safe readers of stored msgpack and JSON. */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { SvcError } from "../src/errors.js";
import { MAX_DEPTH, PROTO_KEY, checkValue, decodeMsgpack, parseStoredJson } from "../src/safe-values.js";
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
/** `levels` nested arrays. */
const arrays = (levels) => (levels === 1 ? [] : [arrays(levels - 1)]);
describe("checkValue", () => {
    it("accepts MAX_DEPTH levels and refuses one more at the path of the too-deep value", () => {
        checkValue(arrays(MAX_DEPTH));
        const e = caught(() => checkValue({ a: arrays(MAX_DEPTH) }, "x"));
        expect([e.code, e.field]).toEqual(["E_TOO_DEEP", `x.a${"[0]".repeat(MAX_DEPTH - 1)}`]);
        expect(caught(() => checkValue(arrays(MAX_DEPTH + 1))).field).toBe(`${"[0]".repeat(MAX_DEPTH)}`);
    });
    it("refuses reserved keys at any depth (own JSON keys and the msgpack marker), naming them", () => {
        for (const key of ["__proto__", "constructor", "prototype"]) {
            const e = caught(() => checkValue(JSON.parse(`{"a": [{"${key}": 1}]}`), "body"));
            expect([e.code, e.field]).toEqual(["E_METADATA", `body.a[0].${key}`]);
        }
        const e = caught(() => checkValue({ m: { [PROTO_KEY]: 1 } }));
        expect([e.code, e.field]).toEqual(["E_METADATA", "m.__proto__"]);
        checkValue({ toString: "x", hasOwnProperty: 1, "": [new Uint8Array(4)], $gt: null });
    });
});
describe("stored data", () => {
    it("msgpack holding a __proto__ key decodes, the key hidden and no prototype touched", () => {
        const bytes = msgpackEncode(JSON.parse('{"m": {"__proto__": {"polluted": 1}, "a": 1}, "list": [{"__proto__": 2}]}'));
        const v = decodeMsgpack(bytes);
        expect(Object.keys(v.m)).toEqual(["a"]);
        expect(Object.getPrototypeOf(v.m)).toBe(Object.prototype);
        expect({}.polluted).toBeUndefined();
        expect(JSON.stringify(v)).toBe('{"m":{"a":1},"list":[{}]}');
        expect(Buffer.from(msgpackEncode(v))).toEqual(Buffer.from(msgpackEncode({ m: { a: 1 }, list: [{}] })));
        // Long keys (past the key cache) and non-string keys decode as before.
        const long = "k".repeat(40);
        expect(decodeMsgpack(msgpackEncode({ [long]: 1, 7: 2 }))).toEqual({ [long]: 1, 7: 2 });
    });
    it("stored JSON drops a __proto__ key, spelled plainly or escaped", () => {
        for (const text of ['{"a": {"__proto__": {"x": 1}, "b": 2}}', '{"a": {"\\u005f_proto__": {"x": 1}, "b": 2}}']) {
            const v = parseStoredJson(text);
            expect(v).toEqual({ a: { b: 2 } });
            expect(Object.keys(v.a)).toEqual(["b"]);
        }
        expect(parseStoredJson('{"constructor": 1}')).toEqual({ constructor: 1 });
    });
});
//# sourceMappingURL=safe-values.test.js.map