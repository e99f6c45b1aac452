/** @module salvage-json.test — repair keeps every record of a damaged JSON file but the damaged one. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { salvageElements, tryParse } from "../../src/store/salvage-json.js";

const record = fc.record({
  id: fc.string({ maxLength: 12 }),
  n: fc.integer(),
  ok: fc.boolean(),
  gone: fc.constant(null),
  tags: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
  inner: fc.record({ s: fc.string({ maxLength: 8 }), b: fc.boolean() }),
});

describe("salvageElements", () => {
  it("returns the elements of an intact array, of an object member, and null for a missing key", () => {
    expect(salvageElements('{"keys": [{"a": 1}, {"b": "x]}"}]}', "keys")!.map(tryParse)).toEqual([{ a: 1 }, { b: "x]}" }]);
    expect(salvageElements('{"accounts":{"t1":{"balance":1},"t2":{"balance":2}}}', "accounts")!.map((p) => tryParse(`{${p}}`))).toEqual([
      { t1: { balance: 1 } },
      { t2: { balance: 2 } },
    ]);
    expect(salvageElements('{"keys": []}', "keys")).toEqual([]);
    expect(salvageElements('{"other": []}', "keys")).toBeNull();
  });

  it("a garbled literal in one record loses that record only (pretty and compact JSON)", () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 8 }), fc.nat(), fc.nat(), fc.boolean(), (records, which, at, pretty) => {
        const victim = which % records.length;
        const texts = records.map((r) => JSON.stringify(r, null, pretty ? 2 : undefined));
        // garble one character of a literal (number, true, false, null) of the victim: the file stops parsing
        const literals = literalChars(texts[victim]!);
        const pos = literals[at % literals.length]!;
        texts[victim] = `${texts[victim]!.slice(0, pos)}#${texts[victim]!.slice(pos + 1)}`;
        const file = `{"version": 1, "keys": [${texts.join(pretty ? ",\n  " : ",")}]}`;
        expect(tryParse(file)).toBeUndefined();
        const kept = (salvageElements(file, "keys") ?? []).map(tryParse);
        expect(kept.filter((v) => v !== undefined)).toEqual(records.filter((_, i) => i !== victim));
        expect(kept).toHaveLength(records.length);
      }),
      { seed: 1902, numRuns: 200 },
    );
  });
});

/** Offsets of the characters of literals (numbers, true, false, null) outside strings. */
function literalChars(text: string): number[] {
  const out: number[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (/[-0-9a-z]/.test(c)) out.push(i);
  }
  return out;
}
