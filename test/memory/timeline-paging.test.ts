/**
 * @module timeline-paging.test — property test (fast-check, fixed seed) of records timeline paging: random
 * timestamps with many ties and random limits; walking nextCursor -> until (and nextAfter -> after when
 * given) to the end yields every record exactly once, in (ts, id) descending order; nextCursor is always
 * the number (the oldest ts returned); a page ends inside a ts group only when that group alone is larger
 * than the limit, so paging by `until` alone is exact whenever no group is.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { Kernels } from "../../src/kernels/abi.js";
import { RecordService } from "../../src/memory/records.js";
import { timelineRequest } from "../../src/http/routes/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const root = mkdtempSync(join(tmpdir(), "svc-timeline-prop-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1_000_000 });
const svc = new RecordService(root, { kernels, pool, encoder: TextEncoder1024.load(), durability: "none" });

afterAll(async () => {
  await svc.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

const params = (o: Record<string, string | number | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined) p.set(k, String(v));
  return timelineRequest(p); // the query string as the route parses it
};

interface Page {
  ids: string[];
  ts: number[];
  nextCursor: number | null;
  nextAfter?: string;
}

/** Every page from the newest to the end; `exact`: also pass nextAfter back as after. */
async function walk(ns: string, limit: number, exact: boolean, kind?: string): Promise<Page[]> {
  const pages: Page[] = [];
  let until: number | undefined;
  let after: string | undefined;
  for (let guard = 0; guard < 1000; guard++) {
    const p = await svc.timeline("t", ns, params({ limit, until, after, kind }));
    pages.push({
      ids: p.records.map((r) => r.id),
      ts: p.records.map((r) => r.ts),
      nextCursor: p.nextCursor,
      ...(p.nextAfter === undefined ? {} : { nextAfter: p.nextAfter }),
    });
    if (p.nextCursor === null) return pages;
    until = p.nextCursor;
    after = exact ? p.nextAfter : undefined;
  }
  throw new Error("the walk did not end");
}

describe("timeline paging (property)", () => {
  it("walking to the end yields every record exactly once, in order; pages end at ts boundaries unless one group exceeds the limit", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        // few distinct ts values, so many records share one; two kinds, so a filter thins the groups
        fc.array(fc.record({ ts: fc.integer({ min: 0, max: 6 }), kind: fc.constantFrom("a", "b") }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        async (items, limit, filtered) => {
          const ns = `p${run++}`;
          const written =
            items.length === 0
              ? []
              : (
                  await svc.ingest(
                    "t",
                    ns,
                    items.map((x, i) => ({ kind: x.kind, text: `record ${i}`, ts: 5000 + x.ts * 1000 })),
                  )
                ).ids.map((id, i) => ({ id, ts: 5000 + items[i]!.ts * 1000, kind: items[i]!.kind }));
          const kind = filtered ? "a" : undefined;
          const want = written.filter((x) => kind === undefined || x.kind === kind).sort((a, b) => b.ts - a.ts || (a.id < b.id ? 1 : -1));
          const groups = new Map<number, number>();
          for (const x of want) groups.set(x.ts, (groups.get(x.ts) ?? 0) + 1);
          const oversized = [...groups.values()].some((n) => n > limit);

          const pages = await walk(ns, limit, true, kind);
          // every record exactly once, in (ts, id) descending order
          expect(pages.flatMap((p) => p.ids)).toEqual(want.map((x) => x.id));
          pages.forEach((p, i) => {
            expect(p.ids.length).toBeLessThanOrEqual(limit);
            if (p.nextCursor === null) {
              expect(i).toBe(pages.length - 1);
              expect(p.nextAfter).toBeUndefined();
              return;
            }
            // always the number: the oldest ts returned
            expect(p.nextCursor).toBe(p.ts.at(-1));
            const next = pages[i + 1]!;
            if (p.nextAfter === undefined) {
              // ended at a ts boundary: the next page starts with an older ts
              if (next.ts.length > 0) expect(next.ts[0]).toBeLessThan(p.nextCursor);
            } else {
              // ended inside a group larger than the limit, the whole page being that group
              expect(groups.get(p.nextCursor)!).toBeGreaterThan(limit);
              expect(new Set(p.ts)).toEqual(new Set([p.nextCursor]));
              expect(p.ids.length).toBe(limit);
              expect(p.nextAfter).toBe(p.ids.at(-1));
            }
          });
          if (!oversized) {
            // no group exceeds the limit: until alone pages exactly
            expect(pages.every((p) => p.nextAfter === undefined)).toBe(true);
            expect((await walk(ns, limit, false, kind)).flatMap((p) => p.ids)).toEqual(want.map((x) => x.id));
          }
        },
      ),
      { seed: 29, numRuns: 60 },
    );
  }, 120_000);
});
