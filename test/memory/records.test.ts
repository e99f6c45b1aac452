/**
 * Long (~880 lines): one RecordService fixture for every records behaviour (ingest, query modes, timeline, TTL, forget, import).
 * @module records.test — RecordService directly (no HTTP): a real Collection per tenant in a temp
 * dir, the real TextEncoder1024 and an injectable clock. Filters, timeline pages and forget are
 * checked against a brute-force evaluation over the records the test itself wrote; text ranking
 * against cosines computed here from the encoder; TTL by moving the clock; restore's atomicity by
 * snapshots taken before, during and after.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import type { Collection } from "../../src/engine/collection.js";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { encodeRecords, readContainer, writeContainer } from "../../src/memory/container.js";
import type { ContainerRecord } from "../../src/memory/record-fields.js";
import { DAY_MS, DEFAULT_TIMELINE, RecordService, type RecordView } from "../../src/memory/records.js";
import type { LocalRecordStore } from "../../src/memory/record-store.js";
import { Lexical } from "../../src/memory/record-lexical.js";
import { timelineRequest } from "../../src/http/routes/records.js";
import { checkInput } from "../../src/http/input.js";
import type { Route } from "../../src/http/route.js";
import { RECORD_OPS } from "../../src/tools/record-ops.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import JSZip from "jszip";
import { encode as msgpackEncode } from "@msgpack/msgpack";

const T0 = 1_700_000_000_000;
const root = mkdtempSync(join(tmpdir(), "svc-records-svc-"));
// made at load time: describe blocks build their services while the file is collected
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
const encoder = TextEncoder1024.load();
const services: RecordService[] = [];
let dirs = 0;

/** A RecordService on its own data dir with a clock the test moves. */
function service(start = T0): { svc: RecordService; clock: { now: number }; engine(tenant: string): Promise<Collection> } {
  const clock = { now: start };
  const svc = new RecordService(join(root, `d${dirs++}`), { kernels, pool, encoder, durability: "none", now: () => clock.now });
  services.push(svc);
  // white-box: the engine collection behind a tenant, to count rows the API no longer shows
  const engine = (tenant: string) => (svc as unknown as { collection(t: string): Promise<Collection> }).collection(tenant);
  return { svc, clock, engine };
}

afterAll(async () => {
  for (const s of services) await s.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

type Rand = {
  int(n: number): number;
  chance(p: number): boolean;
  pick<T>(xs: readonly T[]): T;
  sample<T>(xs: readonly T[], k: number): T[];
};
function rand(seed: number): Rand {
  const next = mulberry32(seed);
  const int = (k: number): number => Math.floor((next() / 2 ** 32) * k);
  const sample = <T>(xs: readonly T[], k: number): T[] => {
    const pool = [...xs];
    const out: T[] = [];
    while (out.length < k && pool.length > 0) out.push(pool.splice(int(pool.length), 1)[0]!);
    return out;
  };
  return { int, chance: (p) => next() / 2 ** 32 < p, pick: (xs) => xs[int(xs.length)]!, sample };
}

async function expectCode(fn: () => unknown, code: string, field?: string): Promise<SvcError> {
  const err = await Promise.resolve()
    .then(fn)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(err, `expected ${code}${field ? ` (${field})` : ""}`).toBeInstanceOf(SvcError);
  const e = err as SvcError;
  expect({ code: e.code, field: e.field }).toEqual({ code, field });
  return e;
}

/** A body as the route checks it (tools/record-ops.ts, http/input.ts) before the service sees it: a refusal throws as the route's does. */
const routed = (op: keyof typeof RECORD_OPS, body: Record<string, unknown>): any => {
  checkInput({ input: RECORD_OPS[op] } as unknown as Route, { body, query: new URLSearchParams() });
  return body;
};

const params = (o: Record<string, string | number | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined) p.set(k, String(v));
  return timelineRequest(p); // the query string as the route parses it
};
const sortIds = (xs: Array<{ id: string }>) => xs.map((x) => x.id).sort();
const cosine = (a: Float32Array, b: Float32Array) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
};

// ---- the reference: what a predicate should select ---------------------------------------------

interface Written {
  id: string;
  kind: string;
  tags: string[];
  ts: number;
  text: string;
}
interface Pred {
  kind?: string[];
  tagsAny?: string[];
  tagsAll?: string[];
  tsGte?: number;
  tsLt?: number;
}
function brute(rows: Written[], p: Pred): Written[] {
  return rows.filter(
    (r) =>
      (p.kind === undefined || p.kind.includes(r.kind)) &&
      (p.tagsAny === undefined || p.tagsAny.some((t) => r.tags.includes(t))) &&
      (p.tagsAll === undefined || p.tagsAll.every((t) => r.tags.includes(t))) &&
      (p.tsGte === undefined || r.ts >= p.tsGte) &&
      (p.tsLt === undefined || r.ts < p.tsLt),
  );
}

/** Timeline order: ts descending, then id descending. */
function before(a: RecordView, b: RecordView): boolean {
  return a.ts < b.ts || (a.ts === b.ts && a.id < b.id);
}

/**
 * Walk a timeline from the newest page to the end, passing nextCursor back as until (and nextAfter
 * as after when given); checks each page's invariants on the way: newest first, at most `limit`,
 * nextCursor the oldest ts returned, and a page ends between two ts values unless it is one ts group
 * larger than `limit` (then, and only then, nextAfter is its last id).
 */
async function walk(
  svc: RecordService,
  tenant: string,
  ns: string,
  limit: number,
  extra: Record<string, string | number | undefined> = {},
): Promise<{ pages: RecordView[][]; all: RecordView[] }> {
  const pages: RecordView[][] = [];
  let until: number | undefined = typeof extra.until === "number" ? extra.until : undefined;
  let after: string | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const page = await svc.timeline(tenant, ns, params({ ...extra, limit, until, after }));
    expect(Object.keys(page).sort()).toEqual(
      page.nextAfter === undefined ? ["namespace", "nextCursor", "records"] : ["namespace", "nextAfter", "nextCursor", "records"],
    );
    expect(page.namespace).toBe(ns);
    const recs = page.records;
    // newest first; ties by id descending
    for (let i = 1; i < recs.length; i++) expect(before(recs[i]!, recs[i - 1]!)).toBe(true);
    // limit is a hard cap
    expect(recs.length).toBeLessThanOrEqual(limit);
    const prev = pages.at(-1);
    // the previous page's last ts group is whole unless that page said where to continue inside it
    if (prev !== undefined && recs.length > 0 && after === undefined) expect(recs[0]!.ts).toBeLessThan(prev.at(-1)!.ts);
    pages.push(recs);
    if (page.nextCursor === null) {
      expect(page.nextAfter).toBeUndefined();
      break;
    }
    expect(recs.length).toBeGreaterThan(0);
    const last = recs.at(-1)!;
    // always the number: the oldest ts returned
    expect(page.nextCursor).toBe(last.ts);
    if (page.nextAfter !== undefined) {
      // only a page that is one ts group, full to the limit, continues inside it
      expect(page.nextAfter).toBe(last.id);
      expect(recs.length).toBe(limit);
      for (const r of recs) expect(r.ts).toBe(last.ts);
    }
    until = page.nextCursor;
    after = page.nextAfter;
  }
  return { pages, all: pages.flat() };
}

// ---- ingest ---------------------------------------------------------------------------------------

describe("ingest", () => {
  it("rejects bad input with E_BAD_REQUEST naming the field, and writes nothing of a rejected batch", async () => {
    const { svc } = service();
    const t = "val";
    const item = { kind: "note", text: "hello world" };
    const bad = async (items: unknown, field: string, ns = "n") => {
      const e = await expectCode(() => svc.ingest(t, ns, routed("records_ingest", { items }).items), "E_BAD_REQUEST", field);
      expect(e.status).toBe(400);
    };
    await bad(undefined, "items");
    await bad("x", "items");
    await bad({}, "items");
    await bad([], "items");
    await bad(
      Array.from({ length: 1001 }, () => item),
      "items",
    );
    await bad([null], "items[0]");
    await bad(["text"], "items[0]");
    await bad([[]], "items[0]");
    await bad([{ text: "no kind" }], "items[0].kind");
    await bad([{ kind: "", text: "x" }], "items[0].kind");
    await bad([{ kind: 5, text: "x" }], "items[0].kind");
    await bad([{ kind: "k".repeat(129), text: "x" }], "items[0].kind");
    await bad([{ kind: "note" }], "items[0].text");
    await bad([{ kind: "note", text: "" }], "items[0].text");
    await bad([{ kind: "note", text: "  \n\t " }], "items[0].text");
    await bad([{ kind: "note", text: 42 }], "items[0].text");
    await bad([{ kind: "note", text: "x".repeat(64 * 1024 + 1) }], "items[0].text");
    for (const ttlDays of [0, -1, 1.5, "3", null, 36_501, Number.NaN]) await bad([{ ...item, ttlDays }], "items[0].ttlDays");
    for (const ts of [1.5, "1700000000000", -1, Number.NaN, Number.POSITIVE_INFINITY, null, 2 ** 53])
      await bad([{ ...item, ts }], "items[0].ts");
    for (const meta of [[], "m", 5, null, true]) await bad([{ ...item, meta }], "items[0].meta");
    await bad([{ ...item, tags: "a" }], "items[0].tags");
    await bad([{ ...item, tags: [1] }], "items[0].tags[0]");
    await bad([{ ...item, tags: ["ok", ""] }], "items[0].tags[1]");
    await bad([{ ...item, tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }], "items[0].tags");
    // the first bad item is named, with its index
    await bad([item, item, { kind: "note", text: "" }, { text: "x" }], "items[2].text");
    for (const ns of ["", "bad ns", "-lead", "_lead", "a/b", "ünï", "x".repeat(129), "~import~n~00000000", "a\u0000b"])
      await bad([item], "namespace", ns);

    // nothing above was written anywhere
    expect(await svc.stats(t, "n")).toEqual({ count: 0, byKind: {}, oldestTs: null, newestTs: null });
    // the boundaries themselves are accepted
    const ok = await svc.ingest(t, "x".repeat(128), [
      { ...item, ttlDays: 1, ts: 0, tags: Array.from({ length: 64 }, (_, i) => `t${i}`) },
      { ...item, ttlDays: 36_500, text: "y".repeat(64 * 1024) },
    ]);
    expect(ok.count).toBe(2);
    const max = await svc.ingest(
      t,
      "A.b:c-d_9",
      Array.from({ length: 1000 }, (_, i) => ({ kind: "note", text: `item number ${i}` })),
    );
    expect(max.count).toBe(1000);
    expect((await svc.stats(t, "A.b:c-d_9")).count).toBe(1000);
  });

  it("assigns ids rec_<16 hex> in item order, fills ts with now, and keeps what was sent", async () => {
    const { svc, clock } = service(T0 + 12_345);
    const t = "ids";
    const res = await svc.ingest(t, "n", [
      { kind: "decision", text: "use postgres" },
      { kind: "note", text: "explicit ts", ts: 42, tags: ["x", "y"], meta: { a: 1, nested: { b: [1, "two", null], c: true } } },
      { kind: "mistake", text: "expires", ttlDays: 7, ts: T0 },
    ]);
    expect(Object.keys(res).sort()).toEqual(["count", "ids"]);
    expect(res.count).toBe(3);
    expect(res.ids).toHaveLength(3);
    for (const id of res.ids) expect(id).toMatch(/^rec_[0-9a-f]{16}$/);
    expect(new Set(res.ids).size).toBe(3);
    // a later batch gets new ids too
    const again = await svc.ingest(t, "n", [{ kind: "decision", text: "use postgres" }]);
    expect(res.ids).not.toContain(again.ids[0]);

    expect(await svc.get(t, "n", res.ids[0]!)).toEqual({
      id: res.ids[0],
      kind: "decision",
      tags: [],
      ts: clock.now,
      text: "use postgres",
      meta: {},
    });
    expect(await svc.get(t, "n", res.ids[1]!)).toEqual({
      id: res.ids[1],
      kind: "note",
      tags: ["x", "y"],
      ts: 42,
      text: "explicit ts",
      meta: { a: 1, nested: { b: [1, "two", null], c: true } },
    });
    expect(await svc.get(t, "n", res.ids[2]!)).toEqual({
      id: res.ids[2],
      kind: "mistake",
      tags: [],
      ts: T0,
      text: "expires",
      meta: {},
      ttlDays: 7,
    });
    // the clock, not the wall: ts follows it
    clock.now += 1000;
    const later = await svc.ingest(t, "n", [{ kind: "note", text: "later" }]);
    expect((await svc.get(t, "n", later.ids[0]!)).ts).toBe(T0 + 13_345);
  });
});

// ---- query ----------------------------------------------------------------------------------------

const TOPICS = [
  "we decided to use PostgreSQL for the billing service",
  "the database migration failed because of a missing index on orders",
  "user asked about the weather forecast in Paris tomorrow",
  "the cat sat on the mat and purred",
  "deploying the frontend bundle to production with a canary",
  "refactor the authentication middleware to use JWT tokens",
  "the unit tests for the payment gateway are flaky on CI",
  "handoff: continue the kubernetes upgrade of the staging cluster",
  "tool call to grep returned no matches in the repository",
  "the customer reported a crash when uploading large PDF files",
  "rename the variable userId to accountId across the codebase",
  "session started in the terminal with the python virtualenv",
  "memory leak in the websocket server after reconnects",
  "chose React Query over Redux for server state caching",
  "the nightly backup job to S3 timed out after two hours",
  "write documentation for the public REST API endpoints",
  "translate the onboarding emails into German and French",
  "bump the TypeScript compiler to version five",
  "a race condition in the scheduler drops queued jobs",
  "the recipe calls for two cups of flour and one egg",
  "garden tomatoes need watering every morning in summer",
  "the quarterly revenue report shows growth in Europe",
  "investigate slow SQL queries on the analytics dashboard",
  "the drone camera firmware update bricked two devices",
  "plan the team offsite in Lisbon for next spring",
];

describe("query", () => {
  const { svc } = service();
  const t = "q";
  let ids: string[] = [];
  beforeAll(async () => {
    ids = (
      await svc.ingest(
        t,
        "topics",
        TOPICS.map((text, i) => ({
          kind: i % 3 === 0 ? "decision" : "note",
          text,
          tags: i % 2 === 0 ? ["even"] : ["odd"],
          ts: T0 + i * 1000,
          meta: { i },
        })),
      )
    ).ids;
  });

  it("mode vector ranks by cosine to the encoded text: the scores are the encoder's cosines, best first", async () => {
    const vecs = TOPICS.map((x) => encoder.encode(x));
    for (const text of [
      "which database did we choose for the billing service",
      "a bug in the job scheduler",
      "weather in Paris",
      "tomatoes in the garden",
      TOPICS[9]!,
    ]) {
      const q = encoder.encode(text);
      const want = TOPICS.map((_, i) => ({ id: ids[i]!, score: cosine(q, vecs[i]!) })).sort((a, b) => b.score - a.score);
      const res = await svc.query(t, "topics", { text, topK: 8, mode: "vector" });
      expect(res.namespace).toBe("topics");
      expect(res.records).toHaveLength(8);
      // each record's score is its own cosine, and the list follows the reference ranking
      for (let i = 0; i < 8; i++) {
        const r = res.records[i]!;
        expect(r.score).toBeCloseTo(cosine(q, vecs[ids.indexOf(r.id)]!), 4);
        expect(r.score, `rank ${i} for "${text}"`).toBeCloseTo(want[i]!.score, 4);
      }
    }
  });

  it("puts the semantically and lexically closest record first", async () => {
    const first = async (text: string) => (await svc.query(t, "topics", { text, topK: 3 })).records[0]!.id;
    expect(await first("which database did we choose for the billing service")).toBe(ids[0]);
    expect(await first("race condition dropping jobs in the scheduler")).toBe(ids[18]);
    expect(await first("PDF upload crash reported by a customer")).toBe(ids[9]);
    expect(await first("offsite in Lisbon")).toBe(ids[24]);
    // the exact text of a record: that record, with cosine ~1
    const exact = await svc.query(t, "topics", { text: TOPICS[7]!, topK: 1, mode: "vector" });
    expect(exact.records.map((r) => r.id)).toEqual([ids[7]]);
    expect(exact.records[0]!.score).toBeCloseTo(1, 3);
  });

  it("returns text and meta only when asked; without text lists newest first", async () => {
    const plain = await svc.query(t, "topics", { text: "billing", topK: 2 });
    for (const r of plain.records) expect(Object.keys(r).sort()).toEqual(["id", "kind", "score", "tags", "ts"]);
    const full = await svc.query(t, "topics", { text: "billing", topK: 2, includeText: true, includeMeta: true });
    expect(full.records.map((r) => r.id)).toEqual(plain.records.map((r) => r.id));
    for (const r of full.records) {
      const i = ids.indexOf(r.id);
      expect(r).toEqual({
        id: r.id,
        kind: i % 3 === 0 ? "decision" : "note",
        tags: i % 2 === 0 ? ["even"] : ["odd"],
        ts: T0 + i * 1000,
        text: TOPICS[i],
        meta: { i },
        score: expect.any(Number),
      });
    }
    expect(Object.keys((await svc.query(t, "topics", { text: "billing", topK: 1, includeText: true })).records[0]!).sort()).toEqual([
      "id",
      "kind",
      "score",
      "tags",
      "text",
      "ts",
    ]);
    expect(Object.keys((await svc.query(t, "topics", { text: "billing", topK: 1, includeMeta: true })).records[0]!).sort()).toEqual([
      "id",
      "kind",
      "meta",
      "score",
      "tags",
      "ts",
    ]);

    // no text: newest first, no score
    const newest = await svc.query(t, "topics", { topK: 5 });
    expect(newest.records.map((r) => r.id)).toEqual([24, 23, 22, 21, 20].map((i) => ids[i]));
    for (const r of newest.records) expect(r.score).toBeUndefined();
    expect((await svc.query(t, "topics", {})).records).toHaveLength(10); // default topK
    expect((await svc.query(t, "topics", { topK: 1000 })).records).toHaveLength(TOPICS.length);
    // an unknown namespace is empty, not an error
    expect(await svc.query(t, "nothing-here", { text: "billing" })).toEqual({ records: [], namespace: "nothing-here" });
    expect(await svc.query(t, "nothing-here", {})).toEqual({ records: [], namespace: "nothing-here" });
  });

  it("rejects bad query input naming the field", async () => {
    for (const text of ["", "   ", 5, null, ["a"]])
      await expectCode(() => svc.query(t, "topics", routed("records_query", { text })), "E_BAD_REQUEST", "text");
    for (const topK of [0, -1, 1001, 1.5, "3", null])
      await expectCode(() => svc.query(t, "topics", routed("records_query", { text: "x", topK })), "E_TOP_K", "topK");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { includeText: "yes" })), "E_BAD_REQUEST", "includeText");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { includeMeta: 1 })), "E_BAD_REQUEST", "includeMeta");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { kind: "note" })), "E_BAD_REQUEST", "kind");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { tagsAny: [""] })), "E_BAD_REQUEST", "tagsAny[0]");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { tagsAll: ["a", 3] })), "E_BAD_REQUEST", "tagsAll[1]");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { tsGte: 1.5 })), "E_BAD_REQUEST", "tsGte");
    await expectCode(() => svc.query(t, "topics", routed("records_query", { tsLt: "5" })), "E_BAD_REQUEST", "tsLt");
    await expectCode(() => svc.query(t, "topics", { tsGte: 10, tsLt: 10 }), "E_BAD_REQUEST", "tsGte");
    await expectCode(() => svc.query(t, "topics", { tsGte: 11, tsLt: 10 }), "E_BAD_REQUEST", "tsGte");
    await expectCode(() => svc.query(t, "bad ns", {}), "E_BAD_REQUEST", "namespace");
  });
});

// ---- typed filters and timeline against brute force --------------------------------------------------

const KINDS = ["decision", "mistake", "note", "tool_call"] as const;
const TAGS = ["a", "b", "c", "d", "e"] as const;

describe("typed filters (query and timeline) against a brute-force evaluation", () => {
  const { svc } = service();
  const t = "f";
  const rows: Written[] = [];
  const r = rand(0xf17e5);
  const tsValues = Array.from({ length: 60 }, (_, i) => T0 + i * 1000);

  beforeAll(async () => {
    const items = Array.from({ length: 360 }, (_, i) => ({
      kind: r.pick(KINDS),
      tags: r.sample(TAGS, r.int(4)),
      ts: r.pick(tsValues),
      text: `record ${i} about ${r.pick(["alpha", "beta", "gamma", "delta"])} ${r.pick(["red", "green", "blue"])}`,
    }));
    for (let i = 0; i < items.length; i += 120) {
      const batch = items.slice(i, i + 120);
      const res = await svc.ingest(t, "rand", batch);
      res.ids.forEach((id, k) => rows.push({ id, ...batch[k]! }));
    }
  });

  const randomPred = (): Pred => {
    const p: Pred = {};
    if (r.chance(0.5)) p.kind = r.sample(KINDS, 1 + r.int(2));
    if (r.chance(0.4)) p.tagsAny = r.sample(TAGS, 1 + r.int(2));
    if (r.chance(0.4)) p.tagsAll = r.sample(TAGS, 1 + r.int(2));
    if (r.chance(0.5)) p.tsGte = r.pick(tsValues) + (r.chance(0.2) ? 1 : 0);
    if (r.chance(0.5)) p.tsLt = r.pick(tsValues) + (r.chance(0.2) ? 1 : 0);
    if (p.tsGte !== undefined && p.tsLt !== undefined && p.tsGte >= p.tsLt) [p.tsGte, p.tsLt] = [p.tsLt - 1, p.tsGte + 1];
    return p;
  };

  it("query with and without text returns exactly the matching records", async () => {
    let nonEmpty = 0;
    for (let round = 0; round < 60; round++) {
      const p = round === 0 ? {} : randomPred();
      const want = brute(rows, p);
      if (want.length > 0) nonEmpty++;
      const label = JSON.stringify(p);

      const byTime = await svc.query(t, "rand", { ...p, topK: 1000 });
      expect(sortIds(byTime.records), label).toEqual(sortIds(want));
      for (let i = 1; i < byTime.records.length; i++) expect(byTime.records[i]!.ts).toBeLessThanOrEqual(byTime.records[i - 1]!.ts);
      for (const rec of byTime.records) {
        const w = rows.find((x) => x.id === rec.id)!;
        expect(rec).toEqual({ id: w.id, kind: w.kind, tags: w.tags, ts: w.ts });
      }

      const byText = await svc.query(t, "rand", { ...p, text: "alpha green", topK: 1000 });
      expect(sortIds(byText.records), label).toEqual(sortIds(want));
      for (let i = 1; i < byText.records.length; i++)
        expect(byText.records[i]!.score!).toBeLessThanOrEqual(byText.records[i - 1]!.score! + 1e-6);

      // a small topK: the newest matches (the ts values of the first 7 by time)
      const top = await svc.query(t, "rand", { ...p, topK: 7 });
      expect(
        top.records.map((x) => x.ts),
        label,
      ).toEqual(
        want
          .map((x) => x.ts)
          .sort((a, b) => b - a)
          .slice(0, 7),
      );
      const topText = await svc.query(t, "rand", { ...p, text: "beta blue", topK: 5 });
      expect(topText.records.length).toBe(Math.min(5, want.length));
      for (const rec of topText.records) expect(want.some((w) => w.id === rec.id)).toBe(true);
    }
    expect(nonEmpty).toBeGreaterThan(30);
  });

  it("tsGte is inclusive and tsLt exclusive", async () => {
    const at = tsValues[20]!;
    const exact = rows.filter((x) => x.ts === at);
    expect(exact.length).toBeGreaterThan(0);
    expect(sortIds((await svc.query(t, "rand", { tsGte: at, tsLt: at + 1, topK: 1000 })).records)).toEqual(sortIds(exact));
    const gte = (await svc.query(t, "rand", { tsGte: at, topK: 1000 })).records;
    expect(gte.filter((x) => x.ts === at)).toHaveLength(exact.length);
    expect(Math.min(...gte.map((x) => x.ts))).toBe(at);
    const lt = (await svc.query(t, "rand", { tsLt: at, topK: 1000 })).records;
    expect(lt.some((x) => x.ts === at)).toBe(false);
    expect(lt.length + gte.length).toBe(rows.length);
    const tl = await walk(svc, t, "rand", 500, { since: at, until: at + 1 });
    expect(sortIds(tl.all)).toEqual(sortIds(exact));
  });

  it("timeline with since/until/kind/tagsAny/tagsAll visits exactly the matching records, newest first", async () => {
    for (let round = 0; round < 25; round++) {
      const p = randomPred();
      const want = brute(rows, p);
      const extra = {
        since: p.tsGte,
        until: p.tsLt,
        kind: p.kind?.join(","),
        tagsAny: p.tagsAny?.join(","),
        tagsAll: p.tagsAll?.join(","),
      };
      const limit = 1 + r.int(40);
      const { all } = await walk(svc, t, "rand", limit, extra);
      expect(sortIds(all), `${JSON.stringify(p)} limit ${limit}`).toEqual(sortIds(want));
      expect(new Set(all.map((x) => x.id)).size).toBe(all.length);
      for (let i = 1; i < all.length; i++) expect(all[i]!.ts).toBeLessThanOrEqual(all[i - 1]!.ts);
      // timeline records carry text and meta
      for (const rec of all.slice(0, 3))
        expect(rec).toEqual({
          id: rec.id,
          kind: rec.kind,
          tags: rec.tags,
          ts: rec.ts,
          text: rows.find((x) => x.id === rec.id)!.text,
          meta: {},
        });
    }
    // spaces and empty entries in the lists are ignored
    const spaced = await walk(svc, t, "rand", 500, { kind: " note , ,decision " });
    expect(sortIds(spaced.all)).toEqual(sortIds(brute(rows, { kind: ["note", "decision"] })));
  });
});

describe("timeline paging over records sharing a ts", () => {
  const { svc } = service();
  const t = "tl";
  const all: Written[] = [];
  beforeAll(async () => {
    // 70 ts values; groups of 1..7 records each, plus groups of 12 and 9 (larger than any limit below)
    const items: Array<{ kind: string; text: string; ts: number; tags: string[] }> = [];
    for (let g = 0; g < 70; g++) {
      const size = g === 33 ? 12 : g === 0 ? 9 : 1 + ((g * 5) % 7);
      for (let k = 0; k < size; k++)
        items.push({ kind: k % 2 === 0 ? "a" : "b", text: `group ${g} member ${k}`, ts: T0 + g * 10, tags: k % 3 === 0 ? ["x"] : [] });
    }
    // ingest in a shuffled order, so rows sharing a ts are not adjacent in the engine
    const r = rand(77);
    const shuffled = r.sample(items, items.length);
    for (let i = 0; i < shuffled.length; i += 100) {
      const batch = shuffled.slice(i, i + 100);
      const res = await svc.ingest(t, "g", batch);
      res.ids.forEach((id, k) => all.push({ id, ...batch[k]! }));
    }
    expect(all.length).toBeGreaterThan(250);
  });

  it("walking nextCursor -> until (and nextAfter -> after) visits every record exactly once, in (ts, id) descending order, at most limit per page, ending with null", async () => {
    const groupSize = new Map<number, number>();
    for (const x of all) groupSize.set(x.ts, (groupSize.get(x.ts) ?? 0) + 1);
    for (const limit of [1, 2, 3, 4, 5, 7, 13, 500]) {
      const { pages, all: seen } = await walk(svc, t, "g", limit);
      expect(seen.length, `limit ${limit}`).toBe(all.length);
      expect(new Set(seen.map((x) => x.id)).size).toBe(all.length);
      expect(sortIds(seen)).toEqual(sortIds(all));
      for (let i = 1; i < seen.length; i++) expect(before(seen[i]!, seen[i - 1]!)).toBe(true);
      // a ts group is split across pages only when it alone is larger than the limit (the group of 12 below 12)
      const split = [...groupSize.keys()].filter((ts) => pages.filter((p) => p.some((x) => x.ts === ts)).length > 1);
      expect(split.sort(), `limit ${limit}`).toEqual(
        [...groupSize]
          .filter(([, n]) => n > limit)
          .map(([ts]) => ts)
          .sort(),
      );
      if (limit < 12) expect(split).toContain(T0 + 330);
    }
  });

  it("pages under filters, since and until, with the default limit; rejects a bad limit or cursor", async () => {
    const def = await svc.timeline(t, "g", params({}));
    expect(def.records.length).toBeGreaterThan(0);
    expect(def.records.length).toBeLessThanOrEqual(DEFAULT_TIMELINE);
    const last = def.records.at(-1)!;
    expect(def.nextCursor).toBe(last.ts);

    const since = T0 + 200;
    const until = T0 + 500;
    for (const limit of [1, 3, 5]) {
      const { all: seen } = await walk(svc, t, "g", limit, { since, until, kind: "a", tagsAll: "x" });
      expect(sortIds(seen)).toEqual(sortIds(brute(all, { tsGte: since, tsLt: until, kind: ["a"], tagsAll: ["x"] })));
      const { all: any } = await walk(svc, t, "g", limit, { tagsAny: "x,nope" });
      expect(sortIds(any)).toEqual(sortIds(brute(all, { tagsAny: ["x", "nope"] })));
    }
    // the last page ends with null, also when the filter matches nothing
    expect(await svc.timeline(t, "g", params({ kind: "zzz" }))).toEqual({ records: [], namespace: "g", nextCursor: null });
    expect(await svc.timeline(t, "empty-ns", params({}))).toEqual({ records: [], namespace: "empty-ns", nextCursor: null });

    for (const limit of ["501", "0", "-1", "1.5", "abc", "", "1e3"])
      await expectCode(() => svc.timeline(t, "g", params({ limit })), "E_BAD_REQUEST", "limit");
    expect((await svc.timeline(t, "g", params({ limit: 500 }))).records.length).toBeLessThanOrEqual(500);
    // until is a ts (the earlier "<ts>:<id>" cursor is gone: nextCursor is always the number)
    for (const until of ["abc", "12x", "", " ", "1.5", "9007199254740993", "12:", ":rec_1", "x:rec_1", `${T0 + 330}:rec_1`])
      await expectCode(() => svc.timeline(t, "g", params({ until })), "E_BAD_REQUEST", "until");
    // after continues inside the group at until: it needs until, and is an id
    await expectCode(() => svc.timeline(t, "g", params({ after: "rec_1" })), "E_BAD_REQUEST", "after");
    await expectCode(() => svc.timeline(t, "g", params({ until: T0 + 330, after: "" })), "E_BAD_REQUEST", "after");
    await expectCode(() => svc.timeline(t, "g", params({ until: T0 + 330, after: "x".repeat(257) })), "E_BAD_REQUEST", "after");
    // since == until is a valid window with after (the rest of that one group)
    const group = all
      .filter((x) => x.ts === T0 + 330)
      .map((x) => x.id)
      .sort()
      .reverse();
    const rest = await svc.timeline(t, "g", params({ since: T0 + 330, until: T0 + 330, after: group[4]!, limit: 500 }));
    expect(rest.records.map((x) => x.id)).toEqual(group.slice(5));
    expect(rest.nextCursor).toBeNull();
    for (const since of ["x", "1,2"]) await expectCode(() => svc.timeline(t, "g", params({ since })), "E_BAD_REQUEST", "since");
    await expectCode(() => svc.timeline(t, "g", params({ since: 10, until: 10 })), "E_BAD_REQUEST", "since");
    for (const name of ["kind", "tagsAny", "tagsAll"])
      await expectCode(() => svc.timeline(t, "g", params({ [name]: " , " })), "E_BAD_REQUEST", name);
    await expectCode(() => svc.timeline(t, "bad/ns", params({})), "E_BAD_REQUEST", "namespace");
  });
});

// ---- get, delete, forget, stats ---------------------------------------------------------------------

describe("get, delete, forget, stats", () => {
  const { svc } = service();
  const t = "gdf";

  it("get and delete: deleted true once, then false; the record is gone and nothing else is", async () => {
    const { ids } = await svc.ingest(t, "d", [
      { kind: "note", text: "one", ts: 1 },
      { kind: "note", text: "two", ts: 2 },
      { kind: "decision", text: "three", ts: 3 },
    ]);
    // straight after the ingest answered: visible and deletable
    expect(await svc.delete(t, "d", ids[0]!)).toEqual({ deleted: true });
    expect(await svc.delete(t, "d", ids[0]!)).toEqual({ deleted: false });
    await expectCode(() => svc.get(t, "d", ids[0]!), "E_NOT_FOUND", "id");
    expect((await expectCode(() => svc.get(t, "d", "rec_0000000000000000"), "E_NOT_FOUND", "id")).status).toBe(404);
    expect(await svc.delete(t, "d", "rec_0000000000000000")).toEqual({ deleted: false });
    expect(await svc.delete(t, "other", ids[1]!)).toEqual({ deleted: false });
    await expectCode(() => svc.get(t, "other", ids[1]!), "E_NOT_FOUND", "id");
    expect((await svc.get(t, "d", ids[1]!)).text).toBe("two");
    expect(await svc.stats(t, "d")).toEqual({ count: 2, byKind: { note: 1, decision: 1 }, oldestTs: 2, newestTs: 3 });
    expect(sortIds((await svc.query(t, "d", { text: "one", topK: 10 })).records)).toEqual([ids[1], ids[2]].sort());
    // another tenant does not see them
    await expectCode(() => svc.get("someone-else", "d", ids[1]!), "E_NOT_FOUND", "id");
    expect(await svc.delete("someone-else", "d", ids[1]!)).toEqual({ deleted: false });
    expect((await svc.stats(t, "d")).count).toBe(2);
  });

  it("stats: count, byKind, oldestTs, newestTs of the live records", async () => {
    expect(await svc.stats(t, "s")).toEqual({ count: 0, byKind: {}, oldestTs: null, newestTs: null });
    const { ids } = await svc.ingest(t, "s", [
      { kind: "decision", text: "a", ts: 500 },
      { kind: "note", text: "b", ts: 100 },
      { kind: "note", text: "c", ts: 900 },
      { kind: "tool_call", text: "d", ts: 100 },
    ]);
    const s = await svc.stats(t, "s");
    expect(Object.keys(s)).toEqual(["count", "byKind", "oldestTs", "newestTs"]);
    expect(s).toEqual({ count: 4, byKind: { decision: 1, note: 2, tool_call: 1 }, oldestTs: 100, newestTs: 900 });
    await svc.delete(t, "s", ids[2]!);
    expect(await svc.stats(t, "s")).toEqual({ count: 3, byKind: { decision: 1, note: 1, tool_call: 1 }, oldestTs: 100, newestTs: 500 });
    await svc.forget(t, "s", { kind: ["decision", "tool_call", "note"] });
    expect(await svc.stats(t, "s")).toEqual({ count: 0, byKind: {}, oldestTs: null, newestTs: null });
  });

  describe("forget", () => {
    const r = rand(0xf0f0);
    const items = Array.from({ length: 80 }, (_, i) => ({
      kind: KINDS[i % 4]!,
      tags: r.sample(TAGS, r.int(3)),
      ts: T0 + (i % 20) * 100,
      text: `forgettable ${i}`,
    }));
    let n = 0;
    /** A fresh namespace holding `items`, plus a neighbour namespace that must never change. */
    const setup = async () => {
      const ns = `fg${n++}`;
      const res = await svc.ingest(t, ns, items);
      await svc.ingest(t, `${ns}-other`, items.slice(0, 10));
      return { ns, rows: res.ids.map((id, i) => ({ id, ...items[i]! })) };
    };
    const remaining = async (ns: string) => sortIds((await svc.query(t, ns, { topK: 1000 })).records);

    it("each criterion and combinations delete exactly the matches and report their number", async () => {
      const cases: Pred[] = [
        { kind: ["note"] },
        { kind: ["note", "mistake"] },
        { tagsAny: ["a"] },
        { tagsAny: ["a", "e"] },
        { tagsAll: ["b"] },
        { tagsAll: ["b", "c"] },
        { tsGte: T0 + 1000 },
        { tsLt: T0 + 500 },
        { tsGte: T0 + 500, tsLt: T0 + 700 },
        { kind: ["decision"], tagsAny: ["a", "b"], tsLt: T0 + 1500 },
        { kind: ["zzz"] },
      ];
      for (const p of cases) {
        const { ns, rows } = await setup();
        const want = brute(rows, p);
        const res = await svc.forget(t, ns, { ...p });
        expect(res, JSON.stringify(p)).toEqual({ forgottenCount: want.length });
        const wantLeft = rows
          .filter((x) => !want.includes(x))
          .map((x) => x.id)
          .sort();
        expect(await remaining(ns), JSON.stringify(p)).toEqual(wantLeft);
        expect((await svc.stats(t, `${ns}-other`)).count).toBe(10);
        // forgetting again finds nothing
        expect(await svc.forget(t, ns, { ...p })).toEqual({ forgottenCount: 0 });
      }
    });

    it("by ids, alone and with other criteria; unknown and repeated ids are not counted", async () => {
      const { ns, rows } = await setup();
      const pick = [rows[0]!, rows[1]!, rows[5]!, rows[6]!, rows[13]!];
      expect(await svc.forget(t, ns, { ids: [pick[0]!.id, pick[1]!.id] })).toEqual({ forgottenCount: 2 });
      // ids AND kind: only those of the kind go
      const rest = pick.slice(2);
      const ofKind = rest.filter((x) => x.kind === rest[0]!.kind);
      expect(await svc.forget(t, ns, { ids: rest.map((x) => x.id), kind: [rest[0]!.kind] })).toEqual({ forgottenCount: ofKind.length });
      // unknown, already forgotten, repeated ids and ids of another namespace
      const other = (await svc.query(t, `${ns}-other`, { topK: 1 })).records[0]!.id;
      const dup = rows[20]!.id;
      expect(await svc.forget(t, ns, { ids: [dup, dup, dup, "rec_ffffffffffffffff", pick[0]!.id, other] })).toEqual({ forgottenCount: 1 });
      expect(await svc.forget(t, ns, { ids: [] })).toEqual({ forgottenCount: 0 });
      const gone = new Set([pick[0]!.id, pick[1]!.id, ...ofKind.map((x) => x.id), dup]);
      expect(await remaining(ns)).toEqual(
        rows
          .filter((x) => !gone.has(x.id))
          .map((x) => x.id)
          .sort(),
      );
      expect((await svc.stats(t, `${ns}-other`)).count).toBe(10);
      // ids with a time window
      const inWindow = rows.filter((x) => !gone.has(x.id)).slice(0, 30);
      const window = { tsGte: T0 + 300, tsLt: T0 + 900 };
      const hit = brute(inWindow, window);
      expect(await svc.forget(t, ns, { ids: inWindow.map((x) => x.id), ...window })).toEqual({ forgottenCount: hit.length });
    });

    it("needs at least one criterion and well-formed ones", async () => {
      const { ns } = await setup();
      await expectCode(() => svc.forget(t, ns, {}), "E_BAD_REQUEST", "kind");
      await expectCode(() => svc.forget(t, ns, routed("records_forget", { ids: "rec_1" })), "E_BAD_REQUEST", "ids");
      await expectCode(() => svc.forget(t, ns, routed("records_forget", { ids: [5] })), "E_BAD_REQUEST", "ids[0]");
      await expectCode(() => svc.forget(t, ns, routed("records_forget", { kind: "note" })), "E_BAD_REQUEST", "kind");
      await expectCode(() => svc.forget(t, ns, { tsGte: 5, tsLt: 5 }), "E_BAD_REQUEST", "tsGte");
      await expectCode(() => svc.forget(t, "no such ns", { kind: ["note"] }), "E_BAD_REQUEST", "namespace");
      expect((await svc.stats(t, ns)).count).toBe(items.length);
    });
  });
});

// ---- TTL ---------------------------------------------------------------------------------------

describe("TTL", () => {
  it("an expired record vanishes from every read the moment the clock passes its expiry; sweep() deletes it", async () => {
    const { svc, clock, engine } = service(T0);
    const t = "ttl";
    const { ids } = await svc.ingest(t, "n", [
      { kind: "note", text: "short lived memory about apples", ttlDays: 1, ts: T0 - 5000, tags: ["fruit"] },
      { kind: "decision", text: "two day memory about bananas", ttlDays: 2, ts: T0 - 1000 },
      { kind: "note", text: "forever memory about cherries", ts: T0 - 9000 },
    ]);
    const [a, b, c] = ids as [string, string, string];
    const c0 = await engine(t);
    const visible = async () => ({
      query: sortIds((await svc.query(t, "n", { topK: 100 })).records),
      text: sortIds((await svc.query(t, "n", { text: "memory about apples", topK: 100 })).records),
      timeline: sortIds((await svc.timeline(t, "n", params({}))).records),
      stats: await svc.stats(t, "n"),
    });

    clock.now = T0 + DAY_MS - 1;
    expect(await visible()).toEqual({
      query: [a, b, c].sort(),
      text: [a, b, c].sort(),
      timeline: [a, b, c].sort(),
      stats: { count: 3, byKind: { note: 2, decision: 1 }, oldestTs: T0 - 9000, newestTs: T0 - 1000 },
    });
    expect((await svc.get(t, "n", a)).ttlDays).toBe(1);
    expect(await svc.sweep()).toBe(0);

    // a expires exactly at ingest time + 1 day
    clock.now = T0 + DAY_MS;
    expect(await visible()).toEqual({
      query: [b, c].sort(),
      text: [b, c].sort(),
      timeline: [b, c].sort(),
      stats: { count: 2, byKind: { note: 1, decision: 1 }, oldestTs: T0 - 9000, newestTs: T0 - 1000 },
    });
    await expectCode(() => svc.get(t, "n", a), "E_NOT_FOUND", "id");
    expect(await svc.delete(t, "n", a)).toEqual({ deleted: false });
    expect(await svc.forget(t, "n", { ids: [a] })).toEqual({ forgottenCount: 0 });
    expect(await svc.forget(t, "n", { tagsAny: ["fruit"] })).toEqual({ forgottenCount: 0 });
    expect((await svc.all(t, "n")).map((x) => x.id).sort()).toEqual([b, c].sort());
    // still in the engine until the sweep
    expect(c0.count("n")).toBe(3);
    expect(await svc.sweep()).toBe(1);
    await c0.settled();
    expect(c0.count("n")).toBe(2);
    expect(c0.fetch("n", [a])).toEqual([]);

    clock.now = T0 + 2 * DAY_MS + 1;
    expect(await visible()).toEqual({
      query: [c],
      text: [c],
      timeline: [c],
      stats: { count: 1, byKind: { note: 1 }, oldestTs: T0 - 9000, newestTs: T0 - 9000 },
    });
    expect(c0.count("n")).toBe(2);
    expect(await svc.sweep()).toBe(1);
    await c0.settled();
    expect(c0.count("n")).toBe(1);
    expect(await svc.sweep()).toBe(0);
    expect(c0.count("n")).toBe(1);
  });

  it("expiry counts from ingest time, not from the record's ts; a restored record keeps its expiry", async () => {
    const { svc, clock } = service(T0);
    const t = "ttl2";
    const { ids } = await svc.ingest(t, "n", [{ kind: "note", text: "old event recorded now", ts: T0 - 10 * DAY_MS, ttlDays: 1 }]);
    expect((await svc.get(t, "n", ids[0]!)).ts).toBe(T0 - 10 * DAY_MS);
    const exported = await svc.all(t, "n");
    expect(exported).toEqual([
      { id: ids[0], kind: "note", tags: [], ts: T0 - 10 * DAY_MS, text: "old event recorded now", meta: {}, ttlDays: 1, exp: T0 + DAY_MS },
    ]);
    clock.now = T0 + DAY_MS / 2;
    await svc.restore(t, "copy", exported, "replace");
    expect((await svc.get(t, "copy", ids[0]!)).ttlDays).toBe(1);
    clock.now = T0 + DAY_MS;
    await expectCode(() => svc.get(t, "copy", ids[0]!), "E_NOT_FOUND", "id");
    await expectCode(() => svc.get(t, "n", ids[0]!), "E_NOT_FOUND", "id");
  });
});

// ---- restore --------------------------------------------------------------------------------------

describe("restore", () => {
  const { svc, engine } = service();
  const t = "rs";
  const snapshot = (ns: string) => svc.all(t, ns);
  const stagingNamespaces = async () => {
    const c = await engine(t);
    await c.settled();
    return c.namespaces().filter((ns) => !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(ns));
  };
  const containerRecord = (i: number, extra: Partial<ContainerRecord> = {}): ContainerRecord => ({
    id: `rec_${(0xabc000 + i).toString(16).padStart(16, "0")}`,
    kind: i % 2 ? "note" : "decision",
    text: `restored record ${i}`,
    tags: i % 3 ? ["r"] : [],
    ts: T0 + i,
    meta: { i },
    ...extra,
  });

  it("replace: the namespace holds exactly the container's records afterwards", async () => {
    await svc.ingest(t, "rep", [
      { kind: "note", text: "old one" },
      { kind: "note", text: "old two" },
    ]);
    const recs = Array.from({ length: 5 }, (_, i) => containerRecord(i, i === 4 ? { ttlDays: 30, exp: T0 + 30 * DAY_MS } : {}));
    const { zip } = await writeContainer("rep", recs, "test");
    const { manifest, records } = await readContainer(zip);
    expect(manifest.schema_version).toBe(1);
    expect(await svc.restore(t, "rep", records, "replace")).toBe(5);
    expect(await snapshot("rep")).toEqual(recs.map((x) => ({ ...x })));
    expect(await svc.get(t, "rep", recs[4]!.id)).toEqual({
      id: recs[4]!.id,
      kind: "decision",
      text: "restored record 4",
      tags: ["r"],
      ts: T0 + 4,
      meta: { i: 4 },
      ttlDays: 30,
    });
    expect(await stagingNamespaces()).toEqual([]);
    // an empty container empties the namespace
    expect(await svc.restore(t, "rep", [], "replace")).toBe(0);
    expect(await svc.stats(t, "rep")).toEqual({ count: 0, byKind: {}, oldestTs: null, newestTs: null });
  });

  it("a container whose record N is malformed is refused by readContainer before anything is written", async () => {
    const before = (
      await svc.ingest(t, "keep", [
        { kind: "note", text: "must survive" },
        { kind: "decision", text: "me too", tags: ["x"] },
      ])
    ).ids;
    const snap = await snapshot("keep");
    const good = Array.from({ length: 40 }, (_, i) => containerRecord(i));
    for (const bad of [{ ts: -1 }, { text: "" }, { id: "not-a-rec" }, { tags: ["ok", 3] }, { meta: [1] }, { kind: "" }]) {
      const frames = encodeRecords(good.slice(0, 17));
      const badFrame = Buffer.from(msgpackEncode({ ...containerRecord(17), ...bad }));
      const len = Buffer.alloc(4);
      len.writeUInt32LE(badFrame.length);
      const nmm = Buffer.concat([frames, len, badFrame, encodeRecords(good.slice(18)).subarray(8)]);
      const zip = new JSZip();
      zip.file(
        "manifest.json",
        JSON.stringify({
          schema_version: 1,
          exported_at_ms: T0,
          namespace: "keep",
          sections: ["records"],
          counts: { records: 40 },
          exported_by: "test",
        }),
      );
      zip.file("records.nmm", nmm);
      const data = await zip.generateAsync({ type: "nodebuffer" });
      const err = await expectCode(() => readContainer(data), "E_CONTAINER", "file");
      expect(err.message).toContain("record 17");
    }
    expect(await snapshot("keep")).toEqual(snap);
    expect(sortIds(snap)).toEqual([...before].sort());
  });

  it("replace is atomic: a write failing midway leaves the namespace as it was and no staging namespace behind", async () => {
    await svc.ingest(t, "atomic", [
      { kind: "note", text: "original a" },
      { kind: "note", text: "original b" },
      { kind: "mistake", text: "original c" },
    ]);
    const snap = await snapshot("atomic");
    // record 1500 (in the second batch of 1000) is refused by the engine
    const recs = Array.from({ length: 1800 }, (_, i) => containerRecord(i, i === 1500 ? { tags: [42 as unknown as string] } : {}));
    await expect(svc.restore(t, "atomic", recs, "replace")).rejects.toBeInstanceOf(SvcError);
    expect(await snapshot("atomic")).toEqual(snap);
    expect(await stagingNamespaces()).toEqual([]);
    for (const id of [recs[0]!.id, recs[999]!.id]) await expectCode(() => svc.get(t, "atomic", id), "E_NOT_FOUND", "id");
  });

  it("readers see the old or the new namespace during a replace, never a mix, and never the staging namespace", async () => {
    const old = (
      await svc.ingest(
        t,
        "live",
        Array.from({ length: 30 }, (_, i) => ({ kind: "note", text: `live old ${i}` })),
      )
    ).ids.sort();
    const recs = Array.from({ length: 2600 }, (_, i) => containerRecord(10_000 + i));
    const next = recs.map((x) => x.id).sort();
    const c = await engine(t);
    let done = false;
    let sawStaging = false;
    // white-box: catch the staging namespace as restore moves it into place
    const moves: Array<{ from: string; to: string; staged: number; liveAtMove: number }> = [];
    const move = c.moveNamespace.bind(c);
    c.moveNamespace = async (from: string, to: string) => {
      await c.settled();
      moves.push({ from, to, staged: c.count(from), liveAtMove: (await svc.stats(t, "live")).count });
      await expectCode(() => svc.stats(t, from), "E_BAD_REQUEST", "namespace");
      await expectCode(() => svc.timeline(t, from, params({})), "E_BAD_REQUEST", "namespace");
      return move(from, to);
    };
    const running = svc.restore(t, "live", recs, "replace").finally(() => (done = true));
    const seen = new Set<string>();
    let reads = 0;
    const checkStaging = async () => {
      const staging = c.namespaces().filter((ns) => ns.startsWith("~"));
      if (staging.length === 0) return;
      sawStaging = true;
      // a staging namespace cannot be named through the API
      await expectCode(() => svc.stats(t, staging[0]!), "E_BAD_REQUEST", "namespace");
      await expectCode(() => svc.query(t, staging[0]!, {}), "E_BAD_REQUEST", "namespace");
    };
    while (!done) {
      await checkStaging();
      const s = await svc.stats(t, "live");
      await checkStaging();
      const ids = sortIds((await svc.query(t, "live", { topK: 1000 })).records);
      const tl = await svc.timeline(t, "live", params({ limit: 500 }));
      expect([30, 2600]).toContain(s.count);
      // the old 30, or 1000 (topK) of the new 2600
      if (s.count === 30) expect(ids).toEqual(old);
      else {
        expect(ids).toHaveLength(1000);
        expect(ids.every((id) => next.includes(id))).toBe(true);
      }
      expect(tl.records.every((x) => old.includes(x.id)) || tl.records.every((x) => next.includes(x.id))).toBe(true);
      seen.add(ids.length === 30 ? "old" : "new");
      reads++;
      await new Promise((r) => setImmediate(r));
    }
    expect(await running).toBe(2600);
    expect(reads, [...seen].join()).toBeGreaterThan(0);
    expect(seen.has("old")).toBe(true);
    delete (c as { moveNamespace?: unknown }).moveNamespace; // back to the prototype's
    // the records went to a staging namespace first (full, while "live" still held the old 30), then moved in one step
    expect(moves).toHaveLength(1);
    expect(moves[0]!.from).toMatch(/^~import~live~[0-9a-f]{8}$/);
    expect(moves[0]).toMatchObject({ to: "live", staged: 2600, liveAtMove: 30 });
    if (sawStaging) expect(seen.has("old")).toBe(true);
    expect(sortIds(await snapshot("live"))).toEqual(next);
    expect(await stagingNamespaces()).toEqual([]);
  });

  it("merge (schema 2) keeps records the container does not name and replaces those it does", async () => {
    const { ids } = await svc.ingest(t, "merge", [
      { kind: "note", text: "kept one", ts: 1 },
      { kind: "note", text: "kept two", ts: 2 },
      { kind: "note", text: "to be replaced", ts: 3 },
    ]);
    const incoming: ContainerRecord[] = [
      { id: ids[2]!, kind: "decision", text: "replacement", tags: ["m"], ts: 30, meta: { v: 2 } },
      containerRecord(500),
    ];
    expect(await svc.restore(t, "merge", incoming, "merge")).toBe(2);
    const after = await snapshot("merge");
    expect(after.map((x) => x.id).sort()).toEqual([ids[0]!, ids[1]!, ids[2]!, incoming[1]!.id].sort());
    expect(await svc.get(t, "merge", ids[2]!)).toEqual({
      id: ids[2],
      kind: "decision",
      text: "replacement",
      tags: ["m"],
      ts: 30,
      meta: { v: 2 },
    });
    expect((await svc.get(t, "merge", ids[0]!)).text).toBe("kept one");
    expect(await svc.stats(t, "merge")).toEqual({ count: 4, byKind: { note: 2, decision: 2 }, oldestTs: 1, newestTs: T0 + 500 });
  });
});

describe("hybrid query (vector + BM25, reciprocal rank fusion)", () => {
  it("fuses both rankings under the typed filters and sees every acknowledged write", async () => {
    const { svc } = service();
    await svc.ingest("t", "h", [
      { kind: "note", text: "the compressor blade flutter was measured in the wind tunnel", tags: ["aero"] },
      { kind: "note", text: "boundary layer transition on a flat plate at high speed", tags: ["aero"] },
      { kind: "decision", text: "we store embeddings as one bit per dimension", tags: ["db"] },
    ]);
    const first = await svc.query("t", "h", { text: "compressor blade flutter", mode: "hybrid", topK: 3, includeText: true });
    expect(first.records[0]!.text).toContain("compressor blade flutter");
    // RRF scores: 1/(60 + rank) summed over the two rankings, so at most 2/61 and strictly decreasing
    expect(first.records[0]!.score!).toBeLessThanOrEqual(2 / 61 + 1e-12);
    for (let i = 1; i < first.records.length; i++) expect(first.records[i]!.score!).toBeLessThanOrEqual(first.records[i - 1]!.score!);
    // filters apply to both rankings
    const filtered = await svc.query("t", "h", { text: "compressor blade flutter", mode: "hybrid", topK: 3, kind: ["decision"] });
    expect(filtered.records.map((r) => r.kind)).toEqual(["decision"]);
    // a write after the BM25 index was built is in the next hybrid answer (the index is updated in place)
    const { ids } = await svc.ingest("t", "h", [
      { kind: "note", text: "flutter flutter of the compressor blade, second test run", tags: ["aero"] },
    ]);
    const second = await svc.query("t", "h", { text: "compressor blade flutter", mode: "hybrid", topK: 4 });
    expect(second.records.map((r) => r.id)).toContain(ids[0]);
    await svc.delete("t", "h", ids[0]!);
    const third = await svc.query("t", "h", { text: "compressor blade flutter", mode: "hybrid", topK: 4 });
    expect(third.records.map((r) => r.id)).not.toContain(ids[0]);
    await expectCode(() => svc.query("t", "h", routed("records_query", { mode: "hybrid" })), "E_BAD_REQUEST", "text");
    await expectCode(() => svc.query("t", "h", routed("records_query", { text: "x", mode: "lexical" })), "E_BAD_REQUEST", "mode");
  });

  it("text queries rank by cosine by default (score = the cosine of the query's and the record's vectors); hybrid only when asked", async () => {
    const { svc } = service();
    const { ids } = await svc.ingest(
      "t",
      "d",
      TOPICS.map((text, i) => ({ kind: "note", text, ts: T0 + i })),
    );
    const vecs = TOPICS.map((x) => encoder.encode(x));
    for (const text of [
      "which database did we choose for the billing service",
      "race condition dropping jobs in the scheduler",
      "offsite in Lisbon",
    ]) {
      const q = encoder.encode(text);
      const byDefault = await svc.query("t", "d", { text, topK: 5 });
      expect(byDefault).toEqual(await svc.query("t", "d", { text, topK: 5, mode: "vector" }));
      // each score is that record's cosine, in order, and they are the 5 best cosines of the namespace
      const want = vecs
        .map((v, i) => ({ id: ids[i]!, score: cosine(q, v) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 5);
      expect(byDefault.records).toHaveLength(5);
      byDefault.records.forEach((r, i) => {
        expect(r.score).toBeCloseTo(cosine(q, vecs[ids.indexOf(r.id)]!), 5);
        expect(r.score, `rank ${i} for "${text}"`).toBeCloseTo(want[i]!.score, 5);
        if (i > 0) expect(r.score!).toBeLessThanOrEqual(byDefault.records[i - 1]!.score!);
      });
      expect(byDefault.records[0]!.score!).toBeGreaterThan(0.1);
      // hybrid: the fused score, at most 2/61, never a cosine
      const hybrid = await svc.query("t", "d", { text, topK: 5, mode: "hybrid" });
      expect(hybrid.records).toHaveLength(5);
      for (const r of hybrid.records) expect(r.score!).toBeLessThanOrEqual(2 / 61 + 1e-12);
    }
  });

  it("the BM25 side ranks among the records the predicate keeps, however many others outrank them", async () => {
    const { svc } = service();
    // 1,200 records of kind "a" outrank every "b" record on the words: a cut of BM25 at any depth <= 1,200 before the predicate holds no "b"
    for (let i = 0; i < 1200; i += 600)
      await svc.ingest(
        "t",
        "deep",
        Array.from({ length: 600 }, (_, j) => ({ kind: "a", text: `turbine turbine turbine blade ${i + j}` })),
      );
    const { ids } = await svc.ingest("t", "deep", [
      { kind: "b", text: "turbine blade with the long coolant passage and several other words in it" },
      { kind: "b", text: "an unrelated note about lunch" },
    ]);
    const res = await svc.query("t", "deep", { text: "turbine blade", topK: 2, kind: ["b"], mode: "hybrid" });
    expect(res.records.map((r) => r.id)).toEqual([ids[0], ids[1]]);
    // the first is in both rankings (rank 1 of each among kind "b": 2/61); the second only in the vector one (BM25 does not match it)
    expect(res.records[0]!.score).toBeCloseTo(2 / 61, 12);
    expect(res.records[1]!.score).toBeCloseTo(1 / 62, 12);
  });

  it("a text query of a namespace without expired records is an unfiltered engine query (full scan or index), with one only while one is expired", async () => {
    const { svc, clock, engine } = service(T0);
    await svc.ingest("t", "plan", [
      { kind: "note", text: "short lived memory about apples", ttlDays: 1 },
      { kind: "note", text: "forever memory about cherries" },
    ]);
    const c = await engine("t");
    const plans: string[] = [];
    const query = c.query.bind(c);
    c.query = async (ns, req) => {
      const res = await query(ns, req);
      plans.push(res.plan);
      return res;
    };
    for (const mode of ["vector", "hybrid"] as const) await svc.query("t", "plan", { text: "memory", mode });
    expect(plans).toEqual(["full", "full"]);
    clock.now = T0 + DAY_MS;
    plans.length = 0;
    for (const mode of ["vector", "hybrid"] as const)
      expect((await svc.query("t", "plan", { text: "memory", mode })).records).toHaveLength(1);
    expect(plans).toEqual(["list", "list"]);
    await svc.sweep();
    plans.length = 0;
    await svc.query("t", "plan", { text: "memory", kind: ["note"] });
    expect(plans).toEqual(["list"]);
    await svc.query("t", "plan", { text: "memory" });
    // the swept row is a tombstone until compaction; every live row is a candidate, so no 1-bit scan ranks them
    expect(plans).toEqual(["list", "full"]);
  });

  it("the BM25 side is incremental: built once, then ingest, delete and forget update it without a rebuild", async () => {
    const { svc } = service();
    const { ids } = await svc.ingest("t", "inc", [
      { kind: "note", text: "the compressor blade flutter was measured in the wind tunnel", tags: ["aero"] },
      { kind: "note", text: "boundary layer transition on a flat plate", tags: ["aero"] },
    ]);
    const top = async (text: string) => (await svc.query("t", "inc", { text, topK: 10, mode: "hybrid" })).records.map((r) => r.id);
    expect((await top("compressor flutter"))[0]).toBe(ids[0]);
    expect(svc.lexicalBuilds).toBe(1);
    // a new record with a word no other record has is found by it at once (BM25 is what finds an exact rare word)
    const added = (await svc.ingest("t", "inc", [{ kind: "decision", text: "zyxomorphic resonance in the hangar", tags: ["x"] }])).ids[0]!;
    expect((await top("zyxomorphic"))[0]).toBe(added);
    await svc.delete("t", "inc", added);
    expect(await top("zyxomorphic")).not.toContain(added);
    const again = (await svc.ingest("t", "inc", [{ kind: "decision", text: "quixotic plenum chamber", tags: ["y"] }])).ids[0]!;
    expect((await top("quixotic plenum"))[0]).toBe(again);
    expect((await svc.forget("t", "inc", { tagsAny: ["y"] })).forgottenCount).toBe(1);
    expect(await top("quixotic plenum")).not.toContain(again);
    // the same records as a fresh build would hold
    expect((await top("boundary layer")).sort()).toEqual([ids[0]!, ids[1]!].sort());
    expect(svc.lexicalBuilds).toBe(1);
  });

  it("the BM25 side builds a page at a time: the event loop turns while it builds, and writes sent meanwhile are in its answers", async () => {
    const { svc } = service();
    const rnd = mulberry32(7);
    const words = ["wing", "flow", "shock", "panel", "heat", "layer", "blade", "nozzle"];
    for (let i = 0; i < 5000; i += 1000)
      await svc.ingest(
        "t",
        "big",
        Array.from({ length: 1000 }, () => ({ kind: "note", text: `${words[rnd() % 8]} ${words[rnd() % 8]} ${words[rnd() % 8]}` })),
      );
    const doomed = (await svc.ingest("t", "big", [{ kind: "note", text: "vorticial doomed record" }])).ids[0]!;
    const store = await (svc as unknown as { local: { get(t: string): Promise<LocalRecordStore> } }).local.get("t");
    // the build reads 6 pages of up to 1,000 records (5,001): count the records it adds in each turn of the event loop, writing on the second
    const adds = vi.spyOn(Lexical.prototype, "add");
    let built = false,
      turns = 0,
      mostInOneTurn = 0;
    const build = store.lexicon.get("big").then(() => (built = true));
    let added: Promise<string> | undefined;
    while (!built) {
      const before = adds.mock.calls.length;
      await new Promise((resolve) => setImmediate(resolve));
      mostInOneTurn = Math.max(mostInOneTurn, adds.mock.calls.length - before);
      if (++turns === 2) {
        added = svc.ingest("t", "big", [{ kind: "note", text: "zyxomorphic plenum" }]).then((r) => r.ids[0]!);
        void svc.delete("t", "big", doomed);
      }
    }
    await build;
    expect(adds.mock.calls.length).toBeGreaterThanOrEqual(5001);
    expect(mostInOneTurn).toBeLessThanOrEqual(1001); // a page, and the write sent meanwhile if it lands in the same turn
    adds.mockRestore();
    const hybrid = async (text: string) => (await svc.query("t", "big", { text, topK: 5, mode: "hybrid" })).records.map((r) => r.id);
    expect((await hybrid("zyxomorphic"))[0]).toBe(await added!);
    expect(await hybrid("vorticial")).not.toContain(doomed);
    expect(svc.lexicalBuilds).toBe(1);
  });

  it("timeline integers must be plain decimal: 0x10, 1e3 and 12x are refused", async () => {
    const { svc } = service();
    for (const until of ["0x10", "1e3", "12x", " 5", ""])
      await expectCode(() => svc.timeline("t", "h", params({ until })), "E_BAD_REQUEST", "until");
  });
});
