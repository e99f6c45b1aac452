/**
 * Issue 33 item 3: sparse-only indexes (`vector_type: "sparse"`) against an in-process server over real HTTP,
 * through the official Pinecone client v8, plain HTTP where it has no call, and the MCP tools: created without a
 * dimension (dotproduct only), records with sparseValues only, queries by sparseVector or id ranked by the sparse
 * dot product — checked against brute force computed here — and every bad input a 400 naming the field that writes
 * nothing (hostile batches by fast-check, fixed seed). Queries are charged like dense ones.
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
import { mulberry32 } from "../../src/kernels/random.js";
import { call } from "../e2e/client.js";

const INDEX = "sparse-only";
const SPEC = { serverless: { cloud: "aws" as const, region: "us-east-1" } };
type Sparse = { indices: number[]; values: number[] };

let dir: string;
let server: Server;
let key: string;
let pc: Pinecone;
let index: Index;
const path = (p: string) => `/v1/indexes/${INDEX}${p}`;
const f32 = (v: number[]) => Array.from(Float32Array.from(v));
const sdot = (a: Sparse, b: Sparse) => {
  const m = new Map(b.indices.map((x, i) => [x, b.values[i]!]));
  return a.indices.reduce((s, x, i) => s + a.values[i]! * (m.get(x) ?? 0), 0);
};

// A vocabulary of 2000 terms with Zipf-like frequencies: records of 5-40 terms, weights in (0, 3].
const next = mulberry32(33003);
const rand = () => next() / 4294967296;
const term = () => Math.floor(2000 * rand() ** 3);
function sparse(n: number): Sparse {
  const m = new Map<number, number>();
  while (m.size < n) m.set(term(), Math.fround(0.05 + 3 * rand()));
  const indices = [...m.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((i) => m.get(i)!) };
}
const records = Array.from({ length: 1500 }, (_, i) => ({
  id: `d${String(i).padStart(4, "0")}`,
  sparseValues: sparse(5 + Math.floor(35 * rand())),
  metadata: { part: i % 3 },
}));

/** Records sharing an index with q (non-zero query value), best sparse dot first, ties by id. */
function bruteForce(q: Sparse, k: number, keep: (r: (typeof records)[number]) => boolean = () => true) {
  const qi = new Set(q.indices.filter((_, i) => q.values[i] !== 0));
  return records
    .filter((r) => keep(r) && r.sparseValues.indices.some((x) => qi.has(x)))
    .map((r) => ({ id: r.id, score: sdot({ indices: q.indices, values: f32(q.values) }, r.sparseValues) }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    .slice(0, k);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-sparse-"));
  server = await startServer({ dataDir: dir, port: 0, directorySeed: null });
  key = (await server.keys.create({ tenant: "sparse" })).key;
  pc = new Pinecone({ apiKey: key, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
  await pc.createIndex({ name: INDEX, vectorType: "sparse", spec: SPEC, waitUntilReady: true });
  index = pc.index({ name: INDEX });
  for (let i = 0; i < records.length; i += 500) await index.upsert({ records: records.slice(i, i + 500) });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("sparse-only indexes", () => {
  it("is created without a dimension, dotproduct, and described as sparse", async () => {
    const d = await pc.describeIndex(INDEX);
    expect(d.vectorType).toBe("sparse");
    expect(d.metric).toBe("dotproduct");
    expect(d.dimension).toBeUndefined();
    const stats = await index.describeIndexStats();
    expect(stats.totalRecordCount).toBe(records.length);
    const raw = await call(server.url, key, "GET", path("/describe_index_stats"));
    expect(raw.body.vectorType).toBe("sparse");
  });

  it("answers the brute-force top-k by sparse dot product (every query, with and without a filter), and by id", async () => {
    let same = 0;
    let total = 0;
    for (let t = 0; t < 30; t++) {
      const q = sparse(2 + Math.floor(8 * rand()));
      const filtered = t % 3 === 0;
      const want = bruteForce(q, 10, filtered ? (r) => r.metadata.part === 1 : undefined);
      const res = await index.query({ sparseVector: q, topK: 10, ...(filtered ? { filter: { part: { $eq: 1 } } } : {}) } as never);
      expect(res.matches.map((m) => m.id)).toEqual(want.map((w) => w.id));
      res.matches.forEach((m, i) => expect(m.score).toBeCloseTo(want[i]!.score, 4));
      same += res.matches.filter((m, i) => m.id === want[i]?.id).length;
      total += want.length;
    }
    expect(same / total).toBe(1); // exact: recall@10 = 1 in order
    // by the id of a stored record: its own sparse values are the query
    const byId = await index.query({ id: "d0007", topK: 5 });
    expect(byId.matches.map((m) => m.id)).toEqual(bruteForce(records[7]!.sparseValues, 5).map((w) => w.id));
    // a query sharing no index matches nothing
    const none = await index.query({ sparseVector: { indices: [4_000_000_000], values: [1] }, topK: 5 } as never);
    expect(none.matches).toEqual([]);
  });

  it("fetch and includeValues answer the sparse values and an empty dense list; update replaces the sparse values", async () => {
    const got = await index.fetch({ ids: ["d0003"] });
    expect(got.records.d0003!.values).toEqual([]);
    expect(got.records.d0003!.sparseValues).toEqual(records[3]!.sparseValues);
    const q = { indices: [4_000_000_001], values: [2] };
    await index.update({ id: "d0003", sparseValues: { indices: [4_000_000_001], values: [5] } });
    const res = await index.query({ sparseVector: q, topK: 1, includeValues: true, includeMetadata: true } as never);
    expect(res.matches).toEqual([
      { id: "d0003", score: 10, values: [], sparseValues: { indices: [4_000_000_001], values: [5] }, metadata: { part: 0 } },
    ]);
    await index.update({ id: "d0003", sparseValues: records[3]!.sparseValues });
  });

  it("refuses dense values, a missing sparseValues, a dense query, a dimension or another metric with 400 naming the field, writing nothing", async () => {
    const before = (await index.describeIndexStats()).totalRecordCount;
    const cases: Array<[string, unknown, string]> = [
      [
        "/vectors/upsert",
        {
          vectors: [
            { id: "ok", sparseValues: { indices: [1], values: [1] } },
            { id: "x", values: [1, 2], sparseValues: { indices: [1], values: [1] } },
          ],
        },
        "vectors[1].values",
      ],
      [
        "/vectors/upsert",
        {
          vectors: [
            { id: "ok", sparseValues: { indices: [1], values: [1] } },
            { id: "x", values: [1, 2] },
          ],
        },
        "vectors[1].values",
      ],
      ["/vectors/upsert", { vectors: [{ id: "ok", sparseValues: { indices: [1], values: [1] } }, { id: "x" }] }, "vectors[1].sparseValues"],
      [
        "/vectors/upsert",
        { vectors: [{ id: "x", sparseValues: { indices: [2, 1], values: [1, 1] } }] },
        "vectors[0].sparseValues.indices[1]",
      ],
      [
        "/vectors/upsert",
        { vectors: [{ id: "x", sparseValues: { indices: [1, 1], values: [1, 1] } }] },
        "vectors[0].sparseValues.indices[1]",
      ],
      ["/vectors/upsert", { vectors: [{ id: "x", sparseValues: { indices: [1, 2], values: [1] } }] }, "vectors[0].sparseValues.values"],
      [
        "/vectors/upsert",
        { vectors: [{ id: "x", sparseValues: { indices: Array.from({ length: 2049 }, (_, i) => i), values: Array(2049).fill(1) } }] },
        "vectors[0].sparseValues.indices",
      ],
      ["/vectors/update", { id: "d0001", values: [1, 2] }, "values"],
      ["/query", { vector: [1, 2], topK: 3 }, "vector"],
      ["/query", { sparseVector: { indices: [3, 3], values: [1, 1] }, topK: 3 }, "sparseVector.indices[1]"],
      ["/query", { sparseVector: { indices: [1], values: [1] }, id: "d0001", topK: 3 }, "id"],
    ];
    for (const [p, body, field] of cases) {
      const r = await call(server.url, key, "POST", path(p), body);
      expect(r.status, `${p} ${JSON.stringify(body).slice(0, 120)}`).toBe(400);
      expect(r.body.error.field, `${p} ${JSON.stringify(body).slice(0, 120)}`).toBe(field);
    }
    // 2048 entries are taken on a sparse index (1000 on a dense one)
    const wide = { indices: Array.from({ length: 2048 }, (_, i) => 3_000_000_000 + i), values: Array(2048).fill(0.5) };
    expect((await call(server.url, key, "POST", path("/vectors/upsert"), { vectors: [{ id: "wide", sparseValues: wide }] })).status).toBe(
      200,
    );
    expect((await index.fetch({ ids: ["ok", "x", "wide"] })).records.ok).toBeUndefined();
    await index.deleteOne({ id: "wide" });
    expect((await index.describeIndexStats()).totalRecordCount).toBe(before);
    expect((await index.fetch({ ids: ["d0001"] })).records.d0001!.sparseValues).toEqual(records[1]!.sparseValues);
    // create: a dimension, another metric, an unknown vector_type (the client checks some itself; plain HTTP for all)
    for (const [body, field] of [
      [{ name: "sp-dim", vector_type: "sparse", dimension: 8 }, "dimension"],
      [{ name: "sp-cos", vector_type: "sparse", metric: "cosine" }, "metric"],
      [{ name: "sp-what", vector_type: "ragged", dimension: 8 }, "vector_type"],
      [{ name: "sp-nodim" }, "dimension"],
    ] as const) {
      const r = await call(server.url, key, "POST", "/v1/indexes", body);
      expect([r.status, r.body.error.field], JSON.stringify(body)).toEqual([400, field]);
    }
    await expect(pc.createIndex({ name: "sp-cos", vectorType: "sparse", metric: "cosine", spec: SPEC })).rejects.toBeInstanceOf(
      Errors.PineconeArgumentError,
    );
    expect((await pc.listIndexes()).indexes!.map((i) => i.name)).toEqual([INDEX]);
  });

  it("a hostile batch is all written or all refused with 400, and a written one answers what was sent (property, fixed seed)", async () => {
    const entry = fc.record(
      {
        values: fc.constantFrom(undefined, [], [1]),
        sparseValues: fc.oneof(
          fc.constant(undefined),
          fc.record({
            indices: fc.array(fc.oneof(fc.nat(30), fc.integer({ min: -2, max: 2 }), fc.constant(2 ** 32)), { maxLength: 5 }),
            values: fc.array(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1e39, "x")), { maxLength: 5 }),
          }),
        ),
      },
      { requiredKeys: [] },
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 4 }), async (batch) => {
        const vectors = batch.map((v) => ({ id: `h${n++}`, ...v }));
        const valid = (v: (typeof vectors)[number]) => {
          const s = v.sparseValues as { indices: number[]; values: unknown[] } | undefined;
          if (s === undefined || (v.values !== undefined && v.values.length > 0)) return false;
          return (
            s.indices.length > 0 &&
            s.values.length === s.indices.length &&
            s.indices.every((x, i) => x >= 0 && x < 2 ** 32 && (i === 0 || x > s.indices[i - 1]!)) &&
            s.values.every((y) => typeof y === "number" && Number.isFinite(Math.fround(y)))
          );
        };
        const ok = vectors.every(valid);
        const r = await call(server.url, key, "POST", path("/vectors/upsert"), { namespace: "prop", vectors });
        expect(r.status, JSON.stringify(vectors)).toBe(ok ? 200 : 400);
        const back = (await index.namespace("prop").fetch({ ids: vectors.map((v) => v.id) })).records;
        if (!ok) expect(back).toEqual({});
        else
          for (const v of vectors)
            expect(back[v.id]!.sparseValues).toEqual({ indices: v.sparseValues!.indices, values: f32(v.sparseValues!.values as number[]) });
      }),
      { seed: 3307, numRuns: 80 },
    );
  });

  it("a query is charged its operation's price for the postings it read (at most the live records), like a dense one", async () => {
    const before = (await call(server.url, key, "GET", "/v1/wallet")).body.balanceUsd as number;
    const r = await call(server.url, key, "POST", path("/query"), { sparseVector: { indices: [4_000_000_000], values: [1] }, topK: 2 });
    expect(r.status).toBe(200);
    const after = (await call(server.url, key, "GET", "/v1/wallet")).body.balanceUsd as number;
    expect(before - after).toBeCloseTo(costOf(DEFAULT_PRICES, "query", { scanned: 0 }) / NANO_PER_USD, 12);
  });

  it("over MCP: create_index with vector_type sparse, upsert sparse records, query by sparseVector", async () => {
    type Result = CallToolResult & { structuredContent?: Record<string, unknown> };
    const client = new Client({ name: "svc-sparse", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { "api-key": key } } }));
    try {
      const tool = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as Result;
        expect(r.isError, `${name}: ${JSON.stringify(r.content)}`).toBeFalsy();
        return r.structuredContent!;
      };
      const made = await tool("create_index", { name: "mcp-sparse", vector_type: "sparse" });
      expect(made.vector_type).toBe("sparse");
      await tool("upsert", {
        index: "mcp-sparse",
        vectors: [
          { id: "a", sparseValues: { indices: [1, 7], values: [1, 3] } },
          { id: "b", sparseValues: { indices: [7], values: [1] } },
          { id: "c", sparseValues: { indices: [2], values: [9] } },
        ],
      });
      const res = await tool("query", { index: "mcp-sparse", sparseVector: { indices: [7], values: [2] }, topK: 5 });
      expect(res.matches).toEqual([
        { id: "a", score: 6 },
        { id: "b", score: 2 },
      ]);
      const bad = (await client.callTool({
        name: "upsert",
        arguments: { index: "mcp-sparse", vectors: [{ id: "d", values: [1] }] },
      })) as Result;
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});
