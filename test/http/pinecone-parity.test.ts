/**
 * Issue 33 items 1, 6, 7 against an in-process server over real HTTP: `vectors/list`
 * (index.listPaginated), fetch and update by metadata (index.fetchByMetadata, index.update({filter})),
 * and Pinecone's inference embed (pc.inference.embed) on /v1/embed — through the official client v8,
 * plain HTTP where it has no call, and the MCP tools over /mcp; bad input is a 4xx that writes nothing,
 * and every call is charged to the wallet. Expected ids and orders are computed here (UTF-8 byte order
 * via Buffer.compare), never read back from the server.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Errors, Pinecone, type Index } from "@pinecone-database/pinecone";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costOf, DEFAULT_PRICES, NANO_PER_USD } from "../../src/account/prices.js";
import { startServer, type Server } from "../../src/app/start-server.js";
import { EMBED_MODEL } from "../../src/http/routes/embed.js";
import { call } from "../e2e/client.js";

const DIM = 4;
const INDEX = "parity";
/** A dotproduct index: sparse-dense vectors. */
const HYBRID = "parity-hybrid";
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

let dir: string;
let server: Server;
let key: string;
let pc: Pinecone;
let index: Index;
const path = (p: string) => `/v1/indexes/${INDEX}${p}`;
const wallet = async () => (await call(server.url, key, "GET", "/v1/wallet")).body.balanceUsd as number;
const fetchMeta = async (ids: string[], ns = "") =>
  (await call(server.url, key, "GET", path(`/vectors/fetch?namespace=${ns}&${ids.map((id) => `ids=${encodeURIComponent(id)}`).join("&")}`)))
    .body.vectors as Record<string, { metadata?: Record<string, unknown> }>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-parity-"));
  server = await startServer({ dataDir: dir, port: 0, directorySeed: null });
  key = (await server.keys.create({ tenant: "parity" })).key;
  pc = new Pinecone({ apiKey: key, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
  await pc.createIndex({
    name: INDEX,
    dimension: DIM,
    metric: "cosine",
    spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    waitUntilReady: true,
  });
  index = pc.index({ name: INDEX });
  await pc.createIndex({
    name: HYBRID,
    dimension: DIM,
    metric: "dotproduct",
    spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    waitUntilReady: true,
  });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("vectors/list (index.listPaginated)", () => {
  // Ids around the places where UTF-16 order and UTF-8 byte order differ (U+E000.. vs astral characters).
  const ids = ["doc1#a", "doc1#b", "doc1#c", "doc10#a", "doc2#a", "doc1#\u{E000}", "doc1#\u{1F600}", "doc1#Z", "doc1", "x"];
  beforeAll(async () => {
    await index.namespace("lst").upsert({ records: ids.map((id, i) => ({ id, values: [1, i + 1, 2, 3] })) });
  });

  it("pages through a prefix in byte order with opaque tokens, and through everything", async () => {
    const want = ids.filter((id) => id.startsWith("doc1#")).sort(byBytes);
    const got: string[] = [];
    let token: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const r = await index.namespace("lst").listPaginated({ prefix: "doc1#", limit: 2, paginationToken: token });
      expect(r.namespace).toBe("lst");
      expect(r.usage?.readUnits).toBe(1);
      got.push(...r.vectors!.map((v) => v.id!));
      token = r.pagination?.next;
      if (token === undefined) break;
      expect(token).not.toContain("doc1"); // opaque, not the id in clear
    }
    expect(got).toEqual(want);
    expect(got.indexOf("doc1#\u{E000}")).toBeLessThan(got.indexOf("doc1#\u{1F600}")); // UTF-8 bytes, not UTF-16 units
    const all = await index.namespace("lst").listPaginated();
    expect(all.vectors!.map((v) => v.id)).toEqual([...ids].sort(byBytes));
    expect(all.pagination).toBeUndefined();
    // The default namespace is empty; a missing namespace lists nothing.
    expect((await index.listPaginated()).vectors).toEqual([]);
  });

  it("refuses bad limits, prefixes and tokens with 400 naming the field", async () => {
    const before = await wallet();
    for (const [q, field] of [
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["limit=2.5", "limit"],
      ["limit=ten", "limit"],
      ["paginationToken=%21%21", "paginationToken"],
      [`prefix=${"p".repeat(513)}`, "prefix"],
    ] as const) {
      const r = await call(server.url, key, "GET", path(`/vectors/list?namespace=lst&${q}`));
      expect(r.status, q).toBe(400);
      expect(r.body.error.field, q).toBe(field);
    }
    expect(await wallet()).toBe(before); // refused requests are not charged
    await expect(index.namespace("lst").listPaginated({ limit: 5000 })).rejects.toBeInstanceOf(Errors.PineconeBadRequestError);
  });

  it("is charged like fetch: one request price per page", async () => {
    const before = await wallet();
    await index.namespace("lst").listPaginated({ limit: 3 });
    expect(await wallet()).toBeLessThan(before);
  });

  it("returns every id exactly once across pages under random id sets, prefixes and limits (property, fixed seed)", async () => {
    const alphabet = fc.constantFrom("a", "b", "ab", "#", "é", "\u{E000}", "\u{1F600}", "0");
    const idArb = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((p) => p.join(""));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(idArb, { minLength: 0, maxLength: 30 }),
        fc.array(alphabet, { maxLength: 2 }).map((p) => p.join("")),
        fc.integer({ min: 1, max: 7 }),
        async (set, prefix, limit) => {
          const ns = `prop-${run++}`;
          if (set.length > 0) await index.namespace(ns).upsert({ records: set.map((id, i) => ({ id, values: [1, i + 1, 1, 1] })) });
          const want = set.filter((id) => id.startsWith(prefix)).sort(byBytes);
          const got: string[] = [];
          let token: string | undefined;
          for (let pages = 0; pages <= want.length + 1; pages++) {
            const r = await index.namespace(ns).listPaginated({ prefix, limit, paginationToken: token });
            expect(r.vectors!.length).toBeLessThanOrEqual(limit);
            got.push(...r.vectors!.map((v) => v.id!));
            token = r.pagination?.next;
            if (token === undefined) break;
          }
          expect(token).toBeUndefined();
          expect(got).toEqual(want);
        },
      ),
      { seed: 3301, numRuns: 40 },
    );
  });
});

describe("fetch and update by metadata", () => {
  const N = 25;
  const genre = (i: number) => ["drama", "comedy", "scifi"][i % 3]!;
  beforeAll(async () => {
    await index.namespace("meta").upsert({
      records: Array.from({ length: N }, (_, i) => ({
        id: `m${String(i).padStart(2, "0")}`,
        values: [1, 2, i + 1, 3],
        metadata: { genre: genre(i), year: 2000 + i },
      })),
    });
  });

  it("fetchByMetadata pages through exactly the matching vectors, in id order, with values and metadata", async () => {
    const filter = { genre: { $eq: "drama" }, year: { $gte: 2003 } };
    const want = Array.from({ length: N }, (_, i) => i)
      .filter((i) => genre(i) === "drama" && 2000 + i >= 2003)
      .map((i) => `m${String(i).padStart(2, "0")}`);
    const got: string[] = [];
    let token: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const r = await index.namespace("meta").fetchByMetadata({ filter, limit: 3, paginationToken: token });
      const page = Object.keys(r.records);
      expect(page.length).toBeLessThanOrEqual(3);
      for (const id of page) {
        const i = Number(id.slice(1));
        expect(r.records[id]!.metadata).toEqual({ genre: "drama", year: 2000 + i });
        expect(r.records[id]!.values).toHaveLength(DIM);
      }
      got.push(...page.sort(byBytes));
      token = r.pagination?.next;
      if (token === undefined) break;
    }
    expect(got).toEqual(want);
  });

  it("refuses a missing or empty filter, a bad limit and a bad token (400)", async () => {
    for (const [body, field] of [
      [{}, "filter"],
      [{ filter: {} }, "filter"],
      [{ filter: { genre: { $regex: "x" } } }, "filter.genre.$regex"],
      [{ filter: { genre: "drama" }, limit: 0 }, "limit"],
      [{ filter: { genre: "drama" }, paginationToken: "%%" }, "paginationToken"],
      [{ filter: { genre: "drama" }, nope: 1 }, "nope"],
    ] as const) {
      const r = await call(server.url, key, "POST", path("/vectors/fetch_by_metadata"), { namespace: "meta", ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.field, JSON.stringify(body)).toContain(field.split(".")[0]);
    }
  });

  it("update({filter, metadata}) merges into every match and answers matchedRecords; dryRun counts only", async () => {
    const filter = { genre: { $eq: "comedy" } };
    const comedies = Array.from({ length: N }, (_, i) => i)
      .filter((i) => genre(i) === "comedy")
      .map((i) => `m${String(i).padStart(2, "0")}`);
    const dry = await call(server.url, key, "POST", path("/vectors/update"), {
      namespace: "meta",
      filter,
      setMetadata: { seen: true },
      dryRun: true,
    });
    expect(dry.status).toBe(200);
    expect(dry.body).toEqual({ matchedRecords: comedies.length });
    expect(Object.values(await fetchMeta(comedies, "meta")).every((v) => v.metadata?.seen === undefined)).toBe(true);

    await index.namespace("meta").update({ filter, metadata: { seen: true } }); // the client's call
    const after = await fetchMeta([...comedies, "m00"], "meta");
    for (const id of comedies) expect(after[id]!.metadata).toEqual({ genre: "comedy", year: 2000 + Number(id.slice(1)), seen: true });
    expect(after.m00!.metadata).toEqual({ genre: "drama", year: 2000 }); // not a comedy: untouched
  });

  it("refuses id + filter, values with a filter, dryRun by id, and bad setMetadata, writing nothing", async () => {
    const filter = { genre: { $eq: "scifi" } };
    const scifi = Array.from({ length: N }, (_, i) => i)
      .filter((i) => genre(i) === "scifi")
      .map((i) => `m${String(i).padStart(2, "0")}`);
    const before = await fetchMeta(scifi, "meta");
    for (const [body, field] of [
      [{ id: "m02", filter, setMetadata: { x: 1 } }, "id"],
      [{ filter, values: [1, 2, 3, 4] }, "values"],
      [{ id: "m02", setMetadata: { x: 1 }, dryRun: true }, "dryRun"],
      [{ filter, setMetadata: { nested: { deep: 1 } } }, "setMetadata.nested"],
      [{ filter }, "setMetadata"],
      [{ filter: {}, setMetadata: { x: 1 } }, "filter"],
      [{ filter: { year: { $gt: "soon" } }, setMetadata: { x: 1 } }, "filter.year.$gt"],
      [{ setMetadata: { x: 1 } }, "id"],
    ] as const) {
      const r = await call(server.url, key, "POST", path("/vectors/update"), { namespace: "meta", ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.field, JSON.stringify(body)).toBe(field);
    }
    expect(await fetchMeta(scifi, "meta")).toEqual(before);
    await expect(index.namespace("meta").update({ id: "m02", filter } as never)).rejects.toThrow(); // the client refuses both itself
  });
});

describe("sparse-dense vectors (sparseValues, sparseVector)", () => {
  // Pinecone takes sparse values on dotproduct indexes only (and sparse ones): the hybrid score is dense dot + sparse dot.
  let hybridIndex: Index;
  const hpath = (p: string) => `/v1/indexes/${HYBRID}${p}`;
  type Rec = { id: string; values: number[]; sparseValues?: { indices: number[]; values: number[] } };
  const f32 = (v: number[]) => Array.from(Float32Array.from(v));
  const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  const sdot = (a: Rec["sparseValues"], b: Rec["sparseValues"]) => {
    if (!a || !b) return 0;
    const m = new Map(b.indices.map((x, i) => [x, b.values[i]!]));
    return a.indices.reduce((s, x, i) => s + a.values[i]! * (m.get(x) ?? 0), 0);
  };
  const recs: Rec[] = Array.from({ length: 30 }, (_, i) => ({
    id: `s${String(i).padStart(2, "0")}`,
    values: [1 + (i % 5), (i * 7) % 11, 3 - (i % 3), (i % 4) + 0.5],
    ...(i % 4 === 3 ? {} : { sparseValues: { indices: [i % 6, 10 + (i % 9), 1000 + i], values: [0.5 + (i % 3), 0.25 * (i % 5), 2] } }),
  }));

  beforeAll(async () => {
    hybridIndex = pc.index({ name: HYBRID });
    await hybridIndex.namespace("sparse").upsert({ records: recs });
  });

  it("stores sparse values (fetch answers them) and scores hybrid queries as dense dot + sparse dot, exactly", async () => {
    const index = hybridIndex;
    const path = hpath;
    const got = await index.namespace("sparse").fetch({ ids: ["s00", "s03"] });
    expect(got.records.s00!.sparseValues).toEqual({ indices: recs[0]!.sparseValues!.indices, values: f32(recs[0]!.sparseValues!.values) });
    expect(got.records.s03!.sparseValues).toBeUndefined();
    const q = { vector: [2, 1, 0.5, 1], sparseVector: { indices: [1, 2, 12, 1005], values: [1, 2, 0.5, 1.5] } };
    const want = recs
      .map((r) => ({
        id: r.id,
        score:
          dot(f32(q.vector), f32(r.values)) +
          sdot(
            { indices: q.sparseVector.indices, values: f32(q.sparseVector.values) },
            r.sparseValues && { indices: r.sparseValues.indices, values: f32(r.sparseValues.values) },
          ),
      }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
      .slice(0, 8);
    const res = await index.namespace("sparse").query({ ...q, topK: 8, includeValues: true });
    expect(res.matches.map((m) => m.id)).toEqual(want.map((w) => w.id));
    res.matches.forEach((m, i) => expect(m.score).toBeCloseTo(want[i]!.score, 4));
    for (const m of res.matches) {
      const r = recs.find((x) => x.id === m.id)!;
      expect(m.values).toEqual(f32(r.values));
      expect(m.sparseValues).toEqual(r.sparseValues && { indices: r.sparseValues.indices, values: f32(r.sparseValues.values) });
    }
    // sparse only (plain HTTP: the client requires a vector): score = sparse dot; with a filter
    const only = await call(server.url, key, "POST", path("/query"), {
      namespace: "sparse",
      sparseVector: { indices: [1005], values: [1] },
      topK: 3,
    });
    expect(only.status).toBe(200);
    expect(only.body.matches[0]).toEqual({ id: "s05", score: 2 });
    // update by id replaces the sparse values
    await index.namespace("sparse").update({ id: "s03", sparseValues: { indices: [1005], values: [10] } });
    const again = await call(server.url, key, "POST", path("/query"), {
      namespace: "sparse",
      sparseVector: { indices: [1005], values: [1] },
      topK: 1,
    });
    expect(again.body.matches[0]).toEqual({ id: "s03", score: 10 });
  });

  it("a cosine (or euclidean) index refuses sparse values on upsert, update and query with 400 naming the field, writing nothing, as Pinecone", async () => {
    const sv = { indices: [1, 2], values: [1, 1] };
    const up = await call(server.url, key, "POST", path("/vectors/upsert"), {
      namespace: "nosparse",
      vectors: [
        { id: "ok", values: [1, 1, 1, 1] },
        { id: "b", values: [1, 2, 3, 4], sparseValues: sv },
      ],
    });
    expect(up.status).toBe(400);
    expect(up.body.error.field).toBe("vectors[1].sparseValues");
    expect(up.body.error.message).toMatch(/metric cosine.*does not take sparse values/);
    await expect(
      index.namespace("nosparse").upsert({ records: [{ id: "c", values: [1, 1, 1, 1], sparseValues: sv }] }),
    ).rejects.toBeInstanceOf(Errors.PineconeBadRequestError);
    await index.namespace("nosparse").upsert({ records: [{ id: "d", values: [1, 1, 1, 1] }] });
    const u = await call(server.url, key, "POST", path("/vectors/update"), { namespace: "nosparse", id: "d", sparseValues: sv });
    expect([u.status, u.body.error.field]).toEqual([400, "sparseValues"]);
    const q = await call(server.url, key, "POST", path("/query"), {
      namespace: "nosparse",
      vector: [1, 1, 1, 1],
      sparseVector: sv,
      topK: 1,
    });
    expect([q.status, q.body.error.field]).toEqual([400, "sparseVector"]);
    expect(Object.keys((await index.namespace("nosparse").fetch({ ids: ["ok", "b", "c", "d"] })).records)).toEqual(["d"]);
    expect((await index.namespace("nosparse").fetch({ ids: ["d"] })).records.d!.sparseValues).toBeUndefined();
  });

  it("refuses unsorted or repeated indices, length mismatches and bad values with 400 naming the entry, writing nothing", async () => {
    const index = hybridIndex;
    const path = hpath;
    const before = (await index.describeIndexStats()).namespaces?.sparse?.recordCount;
    const bad: Array<[unknown, string]> = [
      [{ indices: [3, 1], values: [1, 1] }, "indices[1]"],
      [{ indices: [1, 1], values: [1, 1] }, "indices[1]"],
      [{ indices: [1, 2], values: [1] }, "values"],
      [{ indices: [], values: [] }, "indices"],
      [{ indices: [-1], values: [1] }, "indices[0]"],
      [{ indices: [0.5], values: [1] }, "indices[0]"],
      [{ indices: [4294967296], values: [1] }, "indices[0]"],
      [{ indices: [1], values: ["x"] }, "values[0]"],
      [{ indices: [1], values: [1e39] }, "values[0]"],
      [[1, 2], "sparseValues"],
    ];
    for (const [sv, field] of bad) {
      const up = await call(server.url, key, "POST", path("/vectors/upsert"), {
        namespace: "sparse",
        vectors: [
          { id: "ok-first", values: [1, 1, 1, 1] },
          { id: "bad", values: [1, 2, 3, 4], sparseValues: sv },
        ],
      });
      expect(up.status, JSON.stringify(sv)).toBe(400);
      expect(up.body.error.field, JSON.stringify(sv)).toBe(
        field === "sparseValues" ? "vectors[1].sparseValues" : `vectors[1].sparseValues.${field}`,
      );
      const q = await call(server.url, key, "POST", path("/query"), {
        namespace: "sparse",
        vector: [1, 1, 1, 1],
        sparseVector: sv,
        topK: 1,
      });
      expect(q.status, JSON.stringify(sv)).toBe(400);
      expect(q.body.error.field, JSON.stringify(sv)).toBe(field === "sparseValues" ? "sparseVector" : `sparseVector.${field}`);
      const u = await call(server.url, key, "POST", path("/vectors/update"), { namespace: "sparse", id: "s00", sparseValues: sv });
      expect(u.status, JSON.stringify(sv)).toBe(400);
    }
    expect((await index.describeIndexStats()).namespaces?.sparse?.recordCount).toBe(before);
    expect((await index.namespace("sparse").fetch({ ids: ["ok-first", "bad"] })).records).toEqual({});
    expect((await index.namespace("sparse").fetch({ ids: ["s00"] })).records.s00!.sparseValues!.indices).toEqual(
      recs[0]!.sparseValues!.indices,
    );
  });

  it("upsert answers 400 exactly for invalid sparse values and stores valid ones exactly (property, fixed seed)", async () => {
    const index = hybridIndex;
    const path = hpath;
    const entry = fc.record({
      indices: fc.array(fc.oneof(fc.nat(20), fc.integer({ min: -2, max: 2 })), { maxLength: 5 }),
      values: fc.array(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1e39, -1e39)), { maxLength: 5 }),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(entry, async (sv) => {
        const id = `p${n++}`;
        const ok =
          sv.indices.length > 0 &&
          sv.values.length === sv.indices.length &&
          sv.indices.every((x, i) => x >= 0 && (i === 0 || x > sv.indices[i - 1]!)) &&
          sv.values.every((v) => Number.isFinite(Math.fround(v)));
        const r = await call(server.url, key, "POST", path("/vectors/upsert"), {
          namespace: "sparse-prop",
          vectors: [{ id, values: [1, 2, 3, 4], sparseValues: sv }],
        });
        expect(r.status, JSON.stringify(sv)).toBe(ok ? 200 : 400);
        const back = (await index.namespace("sparse-prop").fetch({ ids: [id] })).records[id];
        if (ok) expect(back!.sparseValues).toEqual({ indices: sv.indices, values: f32(sv.values) });
        else expect(back).toBeUndefined();
      }),
      { seed: 3306, numRuns: 60 },
    );
  });
});

describe("pc.inference.embed on /v1/embed", () => {
  it("answers Pinecone's EmbeddingsList with the vectors svc's own shape gives", async () => {
    const texts = ["the cat sat on the mat", "Quarterly revenue grew by nine percent"];
    const res = await pc.inference.embed({ model: EMBED_MODEL, inputs: texts, parameters: { inputType: "passage", truncate: "END" } });
    expect(res.model).toBe(EMBED_MODEL);
    expect(res.vectorType).toBe("dense");
    const own = (await call(server.url, key, "POST", "/v1/embed", { texts })).body.vectors as number[][];
    expect(res.data.map((d) => (d as { values: number[] }).values)).toEqual(own);
    expect(res.usage.totalTokens).toBeGreaterThanOrEqual(texts.join(" ").split(/\s+/).length - 4); // stop words may drop a few
  });

  it("refuses an unknown model, mixed shapes, bad inputs and unknown parameters with 400 naming the field", async () => {
    await expect(pc.inference.embed({ model: "multilingual-e5-large", inputs: ["x"] })).rejects.toBeInstanceOf(
      Errors.PineconeBadRequestError,
    );
    for (const [body, field] of [
      [{ model: "multilingual-e5-large", inputs: [{ text: "x" }] }, "model"],
      [{ inputs: [{ text: "x" }] }, "model"],
      [{ model: EMBED_MODEL, inputs: [] }, "inputs"],
      [{ model: EMBED_MODEL, inputs: [{ text: 3 }] }, "inputs[0].text"],
      [{ model: EMBED_MODEL, inputs: [{ text: "x" }], texts: ["x"] }, "texts"],
      [{ model: EMBED_MODEL, inputs: [{ text: "x" }], parameters: { input_type: "document" } }, "parameters.input_type"],
      [{ model: EMBED_MODEL, inputs: [{ text: "x" }], parameters: { dimension: 512 } }, "parameters.dimension"],
      [{ model: EMBED_MODEL, inputs: [{ text: "x" }], parameters: { pooling: "mean" } }, "parameters.pooling"],
    ] as const) {
      const r = await call(server.url, key, "POST", "/v1/embed", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.field, JSON.stringify(body)).toBe(field);
    }
  });
});

describe("metering", () => {
  it("charges each new call its operation's price (and a hybrid query its scanned rows), like its neighbours", async () => {
    const cases: Array<[string, () => Promise<unknown>, string, { scanned?: number; written?: number }]> = [
      ["list_vectors", () => call(server.url, key, "GET", path("/vectors/list?namespace=lst&limit=2")), "list_vectors", {}],
      [
        "fetch_by_metadata",
        () => call(server.url, key, "POST", path("/vectors/fetch_by_metadata"), { namespace: "meta", filter: { genre: "drama" } }),
        "fetch_by_metadata",
        {},
      ],
      [
        "update by filter",
        () =>
          call(server.url, key, "POST", path("/vectors/update"), {
            namespace: "meta",
            filter: { genre: "drama" },
            setMetadata: { billed: true },
          }),
        "update",
        { written: 0 },
      ],
      [
        "embed (Pinecone shape)",
        () => call(server.url, key, "POST", "/v1/embed", { model: EMBED_MODEL, inputs: [{ text: "a b c" }] }),
        "embed",
        {},
      ],
      [
        "hybrid query",
        () =>
          call(server.url, key, "POST", `/v1/indexes/${HYBRID}/query`, {
            namespace: "sparse",
            sparseVector: { indices: [1], values: [1] },
            topK: 2,
          }),
        "query",
        { scanned: 30 },
      ],
    ];
    for (const [what, run, op, usage] of cases) {
      const before = await wallet();
      const r = (await run()) as { status: number };
      expect(r.status, what).toBe(200);
      expect(before - (await wallet()), what).toBeCloseTo(costOf(DEFAULT_PRICES, op, usage) / NANO_PER_USD, 12);
    }
  });
});

describe("over MCP (/mcp)", () => {
  type Result = CallToolResult & { structuredContent?: Record<string, unknown> };
  it("lists ids, fetches and updates by metadata, and embeds in Pinecone's shape", async () => {
    const client = new Client({ name: "svc-parity", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { "api-key": key } } }));
    try {
      const tool = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as Result;
        expect(r.isError, `${name}: ${JSON.stringify(r.content)}`).toBeFalsy();
        return r.structuredContent!;
      };
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === "inference_embed")!.description).toContain(`"${EMBED_MODEL}"`); // the tool's model name is the route's
      const page = await tool("list_vectors", { index: INDEX, namespace: "lst", prefix: "doc1#", limit: 3 });
      expect((page.vectors as Array<{ id: string }>).map((v) => v.id)).toEqual(["doc1#Z", "doc1#a", "doc1#b"]);
      expect(typeof (page.pagination as { next: string }).next).toBe("string");
      const upd = await tool("update_by_metadata", {
        index: INDEX,
        namespace: "meta",
        filter: { year: { $lt: 2002 } },
        setMetadata: { early: true },
      });
      expect(upd.matchedRecords).toBe(2);
      const got = await tool("fetch_by_metadata", { index: INDEX, namespace: "meta", filter: { early: { $eq: true } } });
      expect(Object.keys(got.vectors as object).sort()).toEqual(["m00", "m01"]);
      await tool("upsert", {
        index: HYBRID,
        namespace: "mcp-sparse",
        vectors: [
          { id: "a", values: [1, 0, 0, 0], sparseValues: { indices: [7], values: [3] } },
          { id: "b", values: [0, 1, 0, 0] },
        ],
      });
      const hybrid = await tool("query", {
        index: HYBRID,
        namespace: "mcp-sparse",
        vector: [0, 1, 0, 0],
        sparseVector: { indices: [7], values: [1] },
        topK: 2,
      });
      expect(hybrid.matches).toEqual([
        { id: "a", score: 3 },
        { id: "b", score: 1 },
      ]);
      const emb = await tool("inference_embed", { model: EMBED_MODEL, inputs: [{ text: "hello world" }] });
      expect((emb.data as Array<{ values: number[] }>)[0]!.values).toHaveLength(1024);
      const bad = (await client.callTool({ name: "list_vectors", arguments: { index: INDEX, paginationToken: "%%" } })) as Result;
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});
