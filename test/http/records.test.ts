/**
 * /v1/records over real HTTP against the built `svc serve` as a child process: every endpoint of
 * the contract's Records table with its exact response shape, the .svc export (headers, zip,
 * manifest, records.nmm read back by hand here) and import (multipart part `file`, replace and
 * merge, broken containers refused with the namespace untouched), tenant isolation, the
 * `svc export` / `svc import` CLI round trip, and metering in the tenant's wallet.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { call, cli as runCli, newTenantKey, type Reply } from "../e2e/client.js";

/** Run the built CLI (killed after 30 s). */
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, env, { killAfterMs: 30_000 });

function expectError(r: Reply, status: number, code: string, field?: string): void {
  expect(r.status, r.raw.toString()).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/json");
  expect(Object.keys(r.body)).toEqual(["error"]);
  expect(r.body.error.code, r.raw.toString()).toBe(code);
  if (field !== undefined) expect(r.body.error.field, r.raw.toString()).toBe(field);
}

/** records.nmm read by hand: "SVCNMM01", then u32 LE length + msgpack map per record. */
function parseNmm(buf: Buffer): Array<Record<string, unknown>> {
  expect(buf.subarray(0, 8).toString("latin1")).toBe("SVCNMM01");
  const out: Array<Record<string, unknown>> = [];
  for (let at = 8; at < buf.length;) {
    const len = buf.readUInt32LE(at);
    out.push(msgpackDecode(buf.subarray(at + 4, at + 4 + len)) as Record<string, unknown>);
    at += 4 + len;
  }
  return out;
}

async function unzip(data: Buffer): Promise<{ names: string[]; manifest: any; nmm: Buffer }> {
  const z = await JSZip.loadAsync(data);
  return {
    names: Object.keys(z.files).sort(),
    manifest: JSON.parse(await z.file("manifest.json")!.async("string")),
    nmm: await z.file("records.nmm")!.async("nodebuffer"),
  };
}

const form = (data: Buffer | string, part = "file") => {
  const f = new FormData();
  f.append("note", "a text part before the file");
  f.append(part, new Blob([typeof data === "string" ? data : new Uint8Array(data)], { type: "application/x-svc" }), "upload.svc");
  return f;
};

const T0 = 1_700_000_000_000;
const ITEMS = [
  {
    kind: "decision",
    text: "we decided to use PostgreSQL for the billing service",
    tags: ["db", "billing"],
    ts: T0 + 1000,
    meta: { by: "ana", n: 1 },
  },
  { kind: "mistake", text: "the migration dropped the orders index by accident", tags: ["db"], ts: T0 + 2000, meta: { severity: "high" } },
  { kind: "note", text: "the weather in Lisbon was sunny during the offsite", tags: [], ts: T0 + 3000 },
  { kind: "note", text: "remember to rotate the API keys every quarter", tags: ["security"], ts: T0 + 3000, ttlDays: 30 },
  {
    kind: "tool_call",
    text: "grep for TODO returned 14 matches in src",
    tags: ["tools"],
    ts: T0 + 4000,
    meta: { tool: "grep", matches: 14 },
  },
];

describe("records over HTTP (svc serve process)", () => {
  let srv: ServerProcess;
  let admin: string;
  let key: string; // a non-admin tenant
  let other: string; // another tenant
  let meter: string; // a third tenant, for exact metering
  let ids: string[] = [];
  let scratch: string;

  const createKey = async (): Promise<string> => {
    const k = await newTenantKey(srv);
    expect(k.admin).toBe(false);
    return k.key;
  };

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "svc-records-http-"));
    srv = await startServerProcess();
    admin = srv.adminKey!;
    expect(admin).toMatch(/^svc_/);
    [key, other, meter] = [await createKey(), await createKey(), await createKey()];
    const r = await call(srv.url, key, "POST", "/v1/records/notes", { items: ITEMS });
    expect(r.status, r.raw.toString()).toBe(200);
    ids = r.body.ids;
  });
  afterAll(async () => {
    await srv?.dispose();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("timeline limit is a hard cap: 600 records sharing one ts (one ingest call) page through exactly once, in (ts, id) descending order, by nextCursor -> until and nextAfter -> after", async () => {
    const items = Array.from({ length: 600 }, (_, i) => ({ kind: "note", text: `tie record ${i}` }));
    const ing = await call(srv.url, admin, "POST", "/v1/records/ties", { items });
    expect(ing.status, ing.raw.toString()).toBe(200);
    const expected = [...(ing.body.ids as string[])].sort().reverse();
    for (const limit of [1, 7, 500]) {
      const seen: { id: string; ts: number }[] = [];
      let until: number | null = null;
      let after: string | undefined;
      let pages = 0;
      do {
        const q: string = `/v1/records/ties/timeline?limit=${limit}${until === null ? "" : `&until=${until}`}${after === undefined ? "" : `&after=${after}`}`;
        const r = await call(srv.url, admin, "GET", q);
        expect(r.status, r.raw.toString()).toBe(200);
        const recs = r.body.records as { id: string; ts: number }[];
        expect(recs.length).toBeLessThanOrEqual(limit);
        if (r.body.nextCursor !== null) {
          // the group alone exceeds the limit: the number, and where to go on inside the group
          expect(recs.length).toBe(limit);
          expect(r.body.nextCursor).toBe(recs.at(-1)!.ts);
          expect(r.body.nextAfter).toBe(recs.at(-1)!.id);
        } else expect(r.body.nextAfter).toBeUndefined();
        seen.push(...recs);
        until = r.body.nextCursor;
        after = r.body.nextAfter;
        pages++;
      } while (until !== null && pages <= 700);
      expect(pages, `limit ${limit}`).toBe(Math.ceil(600 / limit));
      expect(new Set(seen.map((x) => x.ts)).size).toBe(1);
      expect(seen.map((x) => x.id)).toEqual(expected);
    }
  }, 60_000);

  it("ingest, query, timeline, get, delete, forget and stats answer with the contract's shapes", async () => {
    // ingest: {ids, count}
    const ing = await call(srv.url, key, "POST", "/v1/records/shapes", {
      items: [
        { kind: "note", text: "alpha record about apples", tags: ["x"], ts: 10 },
        { kind: "note", text: "beta record about bananas", ts: 20, meta: { a: [1, 2] } },
        { kind: "decision", text: "gamma record about cherries", ts: 30 },
      ],
    });
    expect(ing.status).toBe(200);
    expect(ing.headers.get("content-type")).toBe("application/json");
    expect(Object.keys(ing.body).sort()).toEqual(["count", "ids"]);
    expect(ing.body.count).toBe(3);
    for (const id of ing.body.ids) expect(id).toMatch(/^rec_[0-9a-f]{16}$/);
    const [a, b, c] = ing.body.ids as string[];

    // query with text: {records, namespace}; records {id, kind, tags, ts, score} unless asked for text/meta
    const q = await call(srv.url, key, "POST", "/v1/records/shapes/query", { text: "bananas", topK: 2 });
    expect(q.status).toBe(200);
    expect(Object.keys(q.body).sort()).toEqual(["namespace", "records"]);
    expect(q.body.namespace).toBe("shapes");
    expect(q.body.records).toHaveLength(2);
    expect(q.body.records[0]).toEqual({ id: b, kind: "note", tags: [], ts: 20, score: expect.any(Number) });
    expect(q.body.records[0].score).toBeGreaterThan(q.body.records[1].score);
    // text queries rank by cosine ("ranked by cosine similarity"; score = the cosine of the encoded texts), as mode vector
    const enc = TextEncoder1024.load();
    const [qv, bv] = [enc.encode("bananas"), enc.encode("beta record about bananas")];
    expect(q.body.records[0].score).toBeCloseTo(
      qv.reduce((sum, v, i) => sum + v * bv[i]!, 0),
      5,
    );
    expect(q.body.records[0].score).toBeGreaterThan(0.2);
    expect((await call(srv.url, key, "POST", "/v1/records/shapes/query", { text: "bananas", topK: 2, mode: "vector" })).body).toEqual(
      q.body,
    );
    // mode hybrid: reciprocal rank fusion, scores at most 2/61
    const hyb = await call(srv.url, key, "POST", "/v1/records/shapes/query", { text: "bananas", topK: 2, mode: "hybrid" });
    expect(hyb.body.records[0].id).toBe(b);
    expect(hyb.body.records[0].score).toBeLessThanOrEqual(2 / 61 + 1e-12);
    const full = await call(srv.url, key, "POST", "/v1/records/shapes/query", {
      text: "bananas",
      topK: 1,
      includeText: true,
      includeMeta: true,
    });
    expect(full.body.records).toEqual([
      { id: b, kind: "note", tags: [], ts: 20, text: "beta record about bananas", meta: { a: [1, 2] }, score: expect.any(Number) },
    ]);
    // typed filters in the same call
    const filtered = await call(srv.url, key, "POST", "/v1/records/shapes/query", {
      text: "bananas",
      kind: ["note"],
      tagsAny: ["x"],
      tsGte: 10,
      tsLt: 11,
    });
    expect(filtered.body.records.map((r: { id: string }) => r.id)).toEqual([a]);
    // without text: newest first, no score
    const byTime = await call(srv.url, key, "POST", "/v1/records/shapes/query", {});
    expect(byTime.body).toEqual({
      records: [
        { id: c, kind: "decision", tags: [], ts: 30 },
        { id: b, kind: "note", tags: [], ts: 20 },
        { id: a, kind: "note", tags: ["x"], ts: 10 },
      ],
      namespace: "shapes",
    });

    // timeline: {records, namespace, nextCursor}, pages back through until
    const p1 = await call(srv.url, key, "GET", "/v1/records/shapes/timeline?limit=2");
    expect(p1.status).toBe(200);
    expect(p1.body).toEqual({
      records: [
        { id: c, kind: "decision", tags: [], ts: 30, text: "gamma record about cherries", meta: {} },
        { id: b, kind: "note", tags: [], ts: 20, text: "beta record about bananas", meta: { a: [1, 2] } },
      ],
      namespace: "shapes",
      nextCursor: 20,
    });
    const p2 = await call(srv.url, key, "GET", `/v1/records/shapes/timeline?limit=2&until=${p1.body.nextCursor}`);
    expect(p2.body).toEqual({
      records: [{ id: a, kind: "note", tags: ["x"], ts: 10, text: "alpha record about apples", meta: {} }],
      namespace: "shapes",
      nextCursor: null,
    });
    const filteredTl = await call(
      srv.url,
      key,
      "GET",
      "/v1/records/shapes/timeline?since=10&until=30&kind=note,decision&tagsAny=x,y&tagsAll=x",
    );
    expect(filteredTl.body).toEqual({ records: [p2.body.records[0]], namespace: "shapes", nextCursor: null });

    // get: one record
    const g = await call(srv.url, key, "GET", `/v1/records/shapes/${b}`);
    expect(g.status).toBe(200);
    expect(g.body).toEqual({ id: b, kind: "note", tags: [], ts: 20, text: "beta record about bananas", meta: { a: [1, 2] } });

    // stats
    const s = await call(srv.url, key, "GET", "/v1/records/shapes/stats");
    expect(s.status).toBe(200);
    expect(s.body).toEqual({ count: 3, byKind: { note: 2, decision: 1 }, oldestTs: 10, newestTs: 30 });

    // delete: {deleted}
    expect((await call(srv.url, key, "DELETE", `/v1/records/shapes/${b}`)).body).toEqual({ deleted: true });
    expect((await call(srv.url, key, "DELETE", `/v1/records/shapes/${b}`)).body).toEqual({ deleted: false });
    expectError(await call(srv.url, key, "GET", `/v1/records/shapes/${b}`), 404, "E_NOT_FOUND", "id");

    // forget: {forgottenCount}
    expect((await call(srv.url, key, "POST", "/v1/records/shapes/forget", { kind: ["note"], tagsAll: ["x"] })).body).toEqual({
      forgottenCount: 1,
    });
    expect((await call(srv.url, key, "POST", "/v1/records/shapes/forget", { ids: [a, c, "rec_0000000000000000"] })).body).toEqual({
      forgottenCount: 1,
    });
    expect((await call(srv.url, key, "GET", "/v1/records/shapes/stats")).body).toEqual({
      count: 0,
      byKind: {},
      oldestTs: null,
      newestTs: null,
    });
  });

  it("bad input: the exact 4xx, code and field", async () => {
    expectError(await call(srv.url, key, "POST", "/v1/records/notes", {}), 400, "E_BAD_REQUEST", "items");
    expectError(
      await call(srv.url, key, "POST", "/v1/records/notes", { items: [{ kind: "note" }] }),
      400,
      "E_BAD_REQUEST",
      "items[0].text",
    );
    expectError(
      await call(srv.url, key, "POST", "/v1/records/notes", { items: [{ kind: "note", text: "x", ttlDays: 0 }] }),
      400,
      "E_BAD_REQUEST",
      "items[0].ttlDays",
    );
    expectError(await call(srv.url, key, "POST", "/v1/records/notes", [1, 2]), 400, "E_BAD_REQUEST", "body");
    // a JSON null body is not an absent one
    expectError(await call(srv.url, key, "POST", "/v1/records/notes/query", null), 400, "E_BAD_REQUEST", "body");
    expectError(
      await call(srv.url, key, "POST", "/v1/records/bad%20ns", { items: [{ kind: "note", text: "x" }] }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expectError(await call(srv.url, key, "POST", "/v1/records/notes/query", { topK: 0 }), 400, "E_TOP_K", "topK");
    expectError(await call(srv.url, key, "POST", "/v1/records/notes/query", { tsGte: 5, tsLt: 5 }), 400, "E_BAD_REQUEST", "tsGte");
    expectError(await call(srv.url, key, "GET", "/v1/records/notes/timeline?limit=501"), 400, "E_BAD_REQUEST", "limit");
    expectError(await call(srv.url, key, "GET", "/v1/records/notes/timeline?until=yesterday"), 400, "E_BAD_REQUEST", "until");
    expectError(await call(srv.url, key, "POST", "/v1/records/notes/forget", {}), 400, "E_BAD_REQUEST", "kind");
    expectError(await call(srv.url, key, "GET", "/v1/records/notes/rec_0000000000000000"), 404, "E_NOT_FOUND", "id");
    expectError(await call(srv.url, null, "GET", "/v1/records/notes/stats"), 401, "E_AUTH");
    expectError(await call(srv.url, key, "PUT", "/v1/records/notes"), 405, "E_METHOD");
    // none of that changed the namespace
    expect((await call(srv.url, key, "GET", "/v1/records/notes/stats")).body).toEqual({
      count: 5,
      byKind: { decision: 1, mistake: 1, note: 2, tool_call: 1 },
      oldestTs: T0 + 1000,
      newestTs: T0 + 4000,
    });
  });

  it("export: application/x-svc attachment <ns>.svc holding manifest.json and records.nmm", async () => {
    const health = await call(srv.url, null, "GET", "/v1/health");
    const r = await call(srv.url, key, "GET", "/v1/records/notes/export");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/x-svc");
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="notes.svc"');
    expect(Number(r.headers.get("content-length"))).toBe(r.raw.length);
    expect(r.raw.subarray(0, 4)).toEqual(Buffer.from([0x50, 0x4b, 0x03, 0x04])); // a zip
    const { names, manifest, nmm } = await unzip(r.raw);
    expect(names).toEqual(["manifest.json", "records.nmm"]);
    expect(Object.keys(manifest)).toEqual(["schema_version", "exported_at_ms", "namespace", "sections", "counts", "exported_by"]);
    expect(manifest).toEqual({
      schema_version: 1,
      exported_at_ms: expect.any(Number),
      namespace: "notes",
      sections: ["records"],
      counts: { records: 5 },
      exported_by: `svc ${health.body.version}`,
    });
    expect(Math.abs(manifest.exported_at_ms - Date.now())).toBeLessThan(600_000);
    const recs = parseNmm(nmm);
    // oldest first, ties by id; every field the ingest gave, and the absolute expiry of the one with ttlDays
    const want = ITEMS.map((it, i) => ({
      id: ids[i],
      kind: it.kind,
      text: it.text,
      tags: it.tags,
      ts: it.ts,
      meta: it.meta ?? {},
      ...(it.ttlDays ? { ttlDays: it.ttlDays, exp: expect.any(Number) } : {}),
    })).sort((x, y) => x.ts - y.ts || (x.id! < y.id! ? -1 : 1));
    expect(recs).toEqual(want);
    const withTtl = recs.find((x) => x.ttlDays === 30)!;
    expect(withTtl.exp as number).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    // an unknown namespace exports an empty container
    const empty = await unzip((await call(srv.url, key, "GET", "/v1/records/never-written/export")).raw);
    expect(empty.manifest.counts).toEqual({ records: 0 });
    expect(empty.nmm).toEqual(Buffer.from("SVCNMM01"));
  });

  it("import (multipart part file) replaces the namespace and answers {imported, manifest}; schema 2 merges", async () => {
    const exported = (await call(srv.url, key, "GET", "/v1/records/notes/export")).raw;
    const source = await unzip(exported);
    const old = (
      await call(srv.url, key, "POST", "/v1/records/target", {
        items: [
          { kind: "note", text: "to be replaced" },
          { kind: "note", text: "me too" },
        ],
      })
    ).body.ids as string[];

    const r = await call(srv.url, key, "POST", "/v1/records/target/import", form(exported));
    expect(r.status, r.raw.toString()).toBe(200);
    expect(r.body).toEqual({ imported: 5, manifest: source.manifest });
    // the namespace is now exactly the container: same records, same bytes on export
    const after = await unzip((await call(srv.url, key, "GET", "/v1/records/target/export")).raw);
    expect(after.nmm.equals(source.nmm)).toBe(true);
    expect(after.manifest).toEqual({ ...source.manifest, namespace: "target", exported_at_ms: expect.any(Number) });
    for (const id of old) expectError(await call(srv.url, key, "GET", `/v1/records/target/${id}`), 404, "E_NOT_FOUND", "id");
    expect((await call(srv.url, key, "GET", `/v1/records/target/${ids[0]}`)).body).toEqual({ id: ids[0], ...ITEMS[0] });
    // a query by meaning works on the imported records
    expect(
      (await call(srv.url, key, "POST", "/v1/records/target/query", { text: "which database for billing", topK: 1 })).body.records[0].id,
    ).toBe(ids[0]);

    // schema 2: merged by id, the rest kept
    const zip = new JSZip();
    const extra = { id: "rec_00000000000000e1", kind: "note", text: "merged in", tags: ["m"], ts: 7, meta: {} };
    const changed = {
      id: ids[1],
      kind: "mistake",
      text: "the migration dropped the index (edited)",
      tags: ["db"],
      ts: T0 + 2000,
      meta: {},
    };
    zip.file(
      "manifest.json",
      JSON.stringify({
        schema_version: 2,
        exported_at_ms: 1,
        namespace: "elsewhere",
        sections: ["records", "kg"],
        counts: { records: 2 },
        exported_by: "test",
      }),
    );
    const frames = [extra, changed].map((x) => {
      const body = Buffer.from(msgpackEncode(x));
      const len = Buffer.alloc(4);
      len.writeUInt32LE(body.length);
      return Buffer.concat([len, body]);
    });
    zip.file("records.nmm", Buffer.concat([Buffer.from("SVCNMM01"), ...frames]));
    zip.file("analogy.json", "reserved: analogy is stateless, readers ignore it"); // kg/scm sections: test/http/container-v2.test.ts
    const merged = await call(srv.url, key, "POST", "/v1/records/target/import", form(await zip.generateAsync({ type: "nodebuffer" })));
    expect(merged.status, merged.raw.toString()).toBe(200);
    expect(merged.body.imported).toBe(2);
    expect(merged.body.manifest.schema_version).toBe(2);
    expect((await call(srv.url, key, "GET", "/v1/records/target/stats")).body.count).toBe(6);
    expect((await call(srv.url, key, "GET", `/v1/records/target/${ids[1]}`)).body.text).toBe("the migration dropped the index (edited)");
    expect((await call(srv.url, key, "GET", `/v1/records/target/${extra.id}`)).body).toEqual({
      id: extra.id,
      kind: "note",
      tags: ["m"],
      ts: 7,
      text: "merged in",
      meta: {},
    });
  });

  it("a bad or truncated container is 400 E_CONTAINER (field file) and leaves the namespace unchanged", async () => {
    const good = (await call(srv.url, key, "GET", "/v1/records/notes/export")).raw;
    await call(srv.url, key, "POST", "/v1/records/guarded", {
      items: [
        { kind: "note", text: "guarded one" },
        { kind: "decision", text: "guarded two", ttlDays: 5 },
      ],
    });
    const before = (await unzip((await call(srv.url, key, "GET", "/v1/records/guarded/export")).raw)).nmm;

    const z = await JSZip.loadAsync(good);
    const nmm = await z.file("records.nmm")!.async("nodebuffer");
    const variant = async (edit: (zip: JSZip) => void) => {
      const copy = await JSZip.loadAsync(good);
      edit(copy);
      return copy.generateAsync({ type: "nodebuffer" });
    };
    const bad: Array<[string, Buffer | string]> = [
      ["truncated zip", good.subarray(0, Math.floor(good.length / 2))],
      ["zip missing its last byte", good.subarray(0, good.length - 1)],
      ["not a zip", "hello, I am not a container"],
      ["empty file", Buffer.alloc(0)],
      ["truncated records.nmm", await variant((x) => x.file("records.nmm", nmm.subarray(0, nmm.length - 3)))],
      ["wrong magic", await variant((x) => x.file("records.nmm", Buffer.concat([Buffer.from("NOTNMM01"), nmm.subarray(8)])))],
      [
        "count mismatch",
        await variant((x) =>
          x.file(
            "manifest.json",
            JSON.stringify({
              schema_version: 1,
              exported_at_ms: 1,
              namespace: "notes",
              sections: ["records"],
              counts: { records: 4 },
              exported_by: "t",
            }),
          ),
        ),
      ],
      [
        "unknown schema",
        await variant((x) =>
          x.file(
            "manifest.json",
            JSON.stringify({
              schema_version: 3,
              exported_at_ms: 1,
              namespace: "notes",
              sections: ["records"],
              counts: { records: 5 },
              exported_by: "t",
            }),
          ),
        ),
      ],
      ["no manifest", await variant((x) => x.remove("manifest.json"))],
      ["no records", await variant((x) => x.remove("records.nmm"))],
    ];
    for (const [label, data] of bad) {
      const r = await call(srv.url, key, "POST", "/v1/records/guarded/import", form(data));
      expect(r.status, label).toBe(400);
      expectError(r, 400, "E_CONTAINER", "file");
    }
    // not multipart, or no part named file
    expectError(await call(srv.url, key, "POST", "/v1/records/guarded/import", { file: "x" }), 415, "E_MEDIA_TYPE", "content-type");
    expectError(await call(srv.url, key, "POST", "/v1/records/guarded/import", form(good, "upload")), 400, "E_BAD_REQUEST", "file");

    const after = (await unzip((await call(srv.url, key, "GET", "/v1/records/guarded/export")).raw)).nmm;
    expect(after.equals(before)).toBe(true);
    expect(
      parseNmm(after)
        .map((x) => x.text)
        .sort(),
    ).toEqual(["guarded one", "guarded two"]);
  });

  it("tenants are isolated: another tenant's key sees an empty namespace and cannot reach the records", async () => {
    const before = (await unzip((await call(srv.url, key, "GET", "/v1/records/notes/export")).raw)).nmm;
    expect((await call(srv.url, other, "GET", "/v1/records/notes/timeline")).body).toEqual({
      records: [],
      namespace: "notes",
      nextCursor: null,
    });
    expect((await call(srv.url, other, "POST", "/v1/records/notes/query", { text: "billing" })).body).toEqual({
      records: [],
      namespace: "notes",
    });
    expect((await call(srv.url, other, "POST", "/v1/records/notes/query", {})).body).toEqual({ records: [], namespace: "notes" });
    expect((await call(srv.url, other, "GET", "/v1/records/notes/stats")).body).toEqual({
      count: 0,
      byKind: {},
      oldestTs: null,
      newestTs: null,
    });
    for (const id of ids) {
      expectError(await call(srv.url, other, "GET", `/v1/records/notes/${id}`), 404, "E_NOT_FOUND", "id");
      expect((await call(srv.url, other, "DELETE", `/v1/records/notes/${id}`)).body).toEqual({ deleted: false });
    }
    expect((await call(srv.url, other, "POST", "/v1/records/notes/forget", { ids })).body).toEqual({ forgottenCount: 0 });
    expect(
      (await call(srv.url, other, "POST", "/v1/records/notes/forget", { kind: ["note", "decision", "mistake", "tool_call"] })).body,
    ).toEqual({ forgottenCount: 0 });
    expect((await unzip((await call(srv.url, other, "GET", "/v1/records/notes/export")).raw)).manifest.counts).toEqual({ records: 0 });
    // the other tenant writing and replacing its own "notes" touches nothing of ours
    expect((await call(srv.url, other, "POST", "/v1/records/notes", { items: [{ kind: "note", text: "theirs" }] })).body.count).toBe(1);
    const empty = (await call(srv.url, other, "GET", "/v1/records/never/export")).raw;
    expect((await call(srv.url, other, "POST", "/v1/records/notes/import", form(empty))).body.imported).toBe(0);
    // the admin key is a tenant of its own as well
    expect((await call(srv.url, admin, "GET", "/v1/records/notes/stats")).body.count).toBe(0);

    const after = (await unzip((await call(srv.url, key, "GET", "/v1/records/notes/export")).raw)).nmm;
    expect(after.equals(before)).toBe(true);
  });

  it("svc export / svc import round trip through a file, with a progress line on stderr", async () => {
    const file = join(scratch, "notes.svc");
    const exp = await cli(["export", "notes", "--url", srv.url, "--key", key, "--out", file], { SVC_PROGRESS: "1" });
    expect(exp.code, exp.stderr).toBe(0);
    const size = (await readFile(file)).length;
    expect(exp.stdout).toBe(`wrote ${file} (${size} bytes)\n`);
    expect(exp.stderr).toMatch(/export notes \[#{30}\] 100%/);
    const fromFile = await unzip(await readFile(file));
    expect(fromFile.manifest).toMatchObject({ schema_version: 1, namespace: "notes", counts: { records: 5 } });

    // a second namespace already holding something: replaced
    await call(srv.url, key, "POST", "/v1/records/notes2", { items: [{ kind: "note", text: "goes away" }] });
    const imp = await cli(["import", "notes2", file, "--url", srv.url, "--key", key], { SVC_PROGRESS: "1" });
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stdout).toBe("imported 5 records into notes2\n");
    expect(imp.stderr).toMatch(/import notes2 \[#{30}\] 100%/);
    // without SVC_PROGRESS (and not a terminal): no progress line
    const quiet = await cli(["import", "notes3", file, "--url", srv.url], { SVC_API_KEY: key });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe("");

    // identical records: every field through get and timeline, and the same records.nmm bytes
    // (records sharing a ts come in row order, which an import may change: compare them by id)
    const tl = async (ns: string) =>
      ((await call(srv.url, key, "GET", `/v1/records/${ns}/timeline?limit=500`)).body.records as Array<{ id: string; ts: number }>).sort(
        (x, y) => y.ts - x.ts || (x.id < y.id ? -1 : 1),
      );
    expect(await tl("notes2")).toEqual(await tl("notes"));
    expect(await tl("notes3")).toEqual(await tl("notes"));
    for (const id of ids)
      expect((await call(srv.url, key, "GET", `/v1/records/notes2/${id}`)).body).toEqual(
        (await call(srv.url, key, "GET", `/v1/records/notes/${id}`)).body,
      );
    const re = await unzip((await call(srv.url, key, "GET", "/v1/records/notes2/export")).raw);
    expect(re.nmm.equals(fromFile.nmm)).toBe(true);
    expect((await call(srv.url, key, "GET", "/v1/records/notes2/stats")).body).toEqual(
      (await call(srv.url, key, "GET", "/v1/records/notes/stats")).body,
    );

    // failures: a broken file is refused by the server (exit 2, namespace unchanged); a bad key is refused too
    const broken = join(scratch, "broken.svc");
    await writeFile(broken, (await readFile(file)).subarray(0, 100));
    const bad = await cli(["import", "notes2", broken, "--url", srv.url, "--key", key]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("E_CONTAINER");
    expect(await tl("notes2")).toEqual(await tl("notes"));
    const denied = await cli(["export", "notes", "--url", srv.url, "--key", "svc_nope", "--out", join(scratch, "denied.svc")]);
    expect(denied.code).toBe(2);
    expect(denied.stderr).toContain("401");
  });

  it("records operations are metered in the tenant's wallet (failed ones are free)", async () => {
    const w0 = (await call(srv.url, meter, "GET", "/v1/wallet?limit=100")).body;
    expect(w0.unmetered).toBe(false);
    expect(w0.recent.map((e: { op: string }) => e.op)).toEqual(["credit:signup"]);

    const ing = await call(srv.url, meter, "POST", "/v1/records/m", { items: ITEMS.slice(0, 3) });
    expect(ing.status).toBe(200);
    expect((await call(srv.url, meter, "POST", "/v1/records/m", { items: [] })).status).toBe(400); // not charged
    expect((await call(srv.url, meter, "POST", "/v1/records/m/query", { text: "billing" })).status).toBe(200);
    expect((await call(srv.url, meter, "GET", "/v1/records/m/timeline")).status).toBe(200);
    expect((await call(srv.url, meter, "GET", `/v1/records/m/${ing.body.ids[0]}`)).status).toBe(200);
    expect((await call(srv.url, meter, "DELETE", `/v1/records/m/${ing.body.ids[0]}`)).body).toEqual({ deleted: true });
    expect((await call(srv.url, meter, "POST", "/v1/records/m/forget", { ids: [ing.body.ids[1]] })).body).toEqual({ forgottenCount: 1 });
    expect((await call(srv.url, meter, "GET", "/v1/records/m/stats")).body.count).toBe(1);
    const exported = await call(srv.url, meter, "GET", "/v1/records/notes/export");
    expect(exported.status).toBe(200);
    const imported = await call(
      srv.url,
      meter,
      "POST",
      "/v1/records/m/import",
      form((await call(srv.url, key, "GET", "/v1/records/notes/export")).raw),
    );
    expect(imported.body.imported).toBe(5);

    const w = (await call(srv.url, meter, "GET", "/v1/wallet?limit=100")).body;
    const recent = w.recent as Array<{ op: string; costUsd: number; written: number; scanned: number }>;
    expect(recent.map((e) => e.op)).toEqual([
      "records_import",
      "records_export",
      "records_stats",
      "records_forget",
      "records_delete",
      "records_get",
      "records_timeline",
      "records_query",
      "records_ingest",
      "credit:signup",
    ]);
    expect(recent.find((e) => e.op === "records_ingest")!.written).toBe(3);
    expect(recent.find((e) => e.op === "records_import")!.written).toBe(5);
    for (const e of recent.slice(0, -1)) expect(e.costUsd, e.op).toBeGreaterThan(0);
    // writing costs more than the same call without writes
    expect(recent.find((e) => e.op === "records_ingest")!.costUsd).toBeGreaterThan(recent.find((e) => e.op === "records_stats")!.costUsd);
    const spent = recent.slice(0, -1).reduce((s, e) => s + Math.round(e.costUsd * 1e9), 0);
    expect(Math.round(w.spentUsd * 1e9)).toBe(spent);
    expect(Math.round(w.balanceUsd * 1e9)).toBe(Math.round(w.creditedUsd * 1e9) - spent);

    // the admin key is unmetered
    const a0 = (await call(srv.url, admin, "GET", "/v1/wallet?limit=100")).body;
    await call(srv.url, admin, "POST", "/v1/records/m", { items: ITEMS.slice(0, 1) });
    await call(srv.url, admin, "GET", "/v1/records/m/stats");
    const a1 = (await call(srv.url, admin, "GET", "/v1/wallet?limit=100")).body;
    expect(a1.unmetered).toBe(true);
    expect(a1).toEqual(a0);
  });
});
