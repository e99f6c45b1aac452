/** id-order: code-point order is UTF-8 byte order, and pages of one sorted list or merged from disjoint shards hold every id once (fast-check, fixed seed). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareIds, idsAfter, mergePages, type IdPage } from "../../src/engine/id-order.js";

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const idArb = fc.string({
  unit: fc.constantFrom("a", "b", "#", "\u00e9", "\uE000", "\uFFFF", "\u{10000}", "\u{1F600}", "0"),
  minLength: 1,
  maxLength: 5,
});

describe("id order", () => {
  it("compareIds agrees in sign with Buffer.compare of the UTF-8 bytes", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), idArb, idArb, (a, b, c, d) => {
        expect(Math.sign(compareIds(a, b))).toBe(Math.sign(byBytes(a, b)));
        expect(Math.sign(compareIds(c, d))).toBe(Math.sign(byBytes(c, d)));
      }),
      { seed: 3302, numRuns: 2000 },
    );
  });

  it("paging one sorted list, or shards merged, yields every prefixed id exactly once in order", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(idArb, { maxLength: 60 }),
        fc.string({ unit: fc.constantFrom("a", "b", "\uE000", "\u{1F600}"), maxLength: 2 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        (ids, prefix, limit, shards, every) => {
          // keep: a filter's matches (every id when every = 1)
          const kept = new Set(ids.filter((_, i) => i % every === 0));
          const keep = (id: string) => kept.has(id);
          const want = ids.filter((id) => id.startsWith(prefix) && kept.has(id)).sort(byBytes);
          const parts = Array.from({ length: shards }, (_, s) => ids.filter((_, i) => i % shards === s).sort(compareIds));
          const got: string[] = [];
          let after: string | undefined;
          for (let n = 0; n <= want.length + 1; n++) {
            const page: IdPage = mergePages(
              parts.map((p) => idsAfter(p, { prefix, after, limit }, keep)),
              limit,
            );
            expect(page.ids.length).toBeLessThanOrEqual(limit);
            got.push(...page.ids);
            if (!page.more) break;
            expect(page.ids.length).toBe(limit); // a page short of the limit is the last
            after = page.ids.at(-1);
          }
          expect(got).toEqual(want);
        },
      ),
      { seed: 3303, numRuns: 500 },
    );
  });
});
