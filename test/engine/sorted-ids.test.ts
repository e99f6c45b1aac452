/**
 * sorted-ids: list pages of a real collection, kept sorted incrementally (a run plus a merged-lazily delta), hold every
 * live id exactly once in UTF-8 byte order, with writes (new ids, overwrites, deletes) interleaved between the pages
 * of one walk (fast-check, fixed seed). An id alive for the whole walk is listed exactly once; no id twice; never out
 * of order; and a walk with no writes equals the brute-force sorted live ids.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { engineFixture } from "./engine-fixture.js";

const { kernels, pool, newDir } = engineFixture("svc-sorted-ids-");
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const idArb = fc.string({ unit: fc.constantFrom("a", "b", "\u00e9", "\uE000", "\u{1F600}", "0"), minLength: 1, maxLength: 4 });

type Op = { kind: "put"; ids: string[] } | { kind: "del"; ids: string[] } | { kind: "page"; limit: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("put" as const), ids: fc.uniqueArray(idArb, { minLength: 1, maxLength: 40 }) }),
  fc.record({ kind: fc.constant("del" as const), ids: fc.uniqueArray(idArb, { minLength: 1, maxLength: 10 }) }),
  fc.record({ kind: fc.constant("page" as const), limit: fc.integer({ min: 1, max: 7 }) }),
);

describe("sorted ids under interleaved writes", () => {
  it("every id alive throughout a walk is listed exactly once, in byte order; a quiet walk is the sorted live set", async () => {
    const c = await Collection.open(newDir(), { kernels, pool, dimension: 4, durability: "none" });
    try {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), fc.constantFrom("", "a", "\uE000"), async (ops, prefix) => {
          const ns = `ns${n++}`;
          const live = new Set<string>();
          // one walk in progress: what it has listed, the ids alive since it began and still alive, its cursor
          let listed: string[] = [];
          let steady = new Set<string>();
          let after: string | undefined;
          const put = async (ids: string[]) => {
            await c.upsert(
              ns,
              ids.map((id, i) => ({ id, values: [1, i + 1, 2, 3] })),
            );
            ids.forEach((id) => live.add(id)); // an overwrite keeps the id alive (a new row, the old one dead)
          };
          for (const op of ops) {
            if (op.kind === "put") await put(op.ids);
            else if (op.kind === "del") {
              await c.delete(ns, { ids: op.ids });
              op.ids.forEach((id) => (live.delete(id), steady.delete(id)));
            } else {
              await c.settled();
              if (after === undefined && listed.length === 0) steady = new Set(live); // a walk begins
              const page = c.list(ns, { prefix, after, limit: op.limit });
              expect(page.ids.length).toBeLessThanOrEqual(op.limit);
              listed.push(...page.ids);
              after = page.ids.at(-1) ?? after;
              if (!page.more) {
                // the walk ended: strictly ascending (so no id twice), and every id alive throughout it is in it
                for (let i = 1; i < listed.length; i++) expect(byBytes(listed[i - 1]!, listed[i]!)).toBeLessThan(0);
                for (const id of steady) if (id.startsWith(prefix)) expect(listed).toContain(id);
                listed = [];
                after = undefined;
              }
            }
          }
          // a quiet walk: exactly the live ids with the prefix, sorted by their UTF-8 bytes
          await c.settled();
          const all: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages < 500; pages++) {
            const page = c.list(ns, { prefix, after: cursor, limit: 3 });
            all.push(...page.ids);
            cursor = page.ids.at(-1);
            if (!page.more) break;
          }
          expect(all).toEqual([...live].filter((id) => id.startsWith(prefix)).sort(byBytes));
        }),
        { seed: 3308, numRuns: 120 },
      );
    } finally {
      await c.close();
    }
  }, 300_000);

  it("keeps the order across the delta's merges into the run (thousands of ids, writes between every page)", async () => {
    const c = await Collection.open(newDir(), { kernels, pool, dimension: 4, durability: "none" });
    try {
      const live = new Set<string>();
      let seed = 11;
      const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      const id = () => `k${Math.floor(rnd() * 20_000).toString(36)}`;
      for (let round = 0; round < 30; round++) {
        const ids = [...new Set(Array.from({ length: 300 }, id))];
        await c.upsert(
          "",
          ids.map((x) => ({ id: x, values: [1, 2, 3, 4] })),
        );
        ids.forEach((x) => live.add(x));
        const gone = [...new Set(Array.from({ length: 40 }, id))];
        await c.delete("", { ids: gone });
        gone.forEach((x) => live.delete(x));
        await c.settled();
        const all: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const page = c.list("", { after: cursor, limit: 1000 });
          all.push(...page.ids);
          cursor = page.ids.at(-1);
          if (!page.more) break;
        }
        expect(all).toEqual([...live].sort(byBytes));
      }
    } finally {
      await c.close();
    }
  }, 300_000);
});
