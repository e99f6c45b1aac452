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
import { startServer, type Server } from "../../src/app/start-server.js";
import { EMBED_MODEL } from "../../src/http/routes/embed.js";
import { call } from "../e2e/client.js";

const DIM = 4;
const INDEX = "parity";
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

let dir: string;
let server: Server;
let key: string;
let pc: Pinecone;
let index: Index;
const path = (p: string) => `/v1/indexes/${INDEX}${p}`;
const wallet = async () => (await call(server.url, key, "GET", "/v1/wallet")).body.balanceUsd as number;
const fetchMeta = async (ids: string[], ns = "") =>
  (await call(server.url, key, "GET", path(`/vectors/fetch?namespace=${ns}&${ids.map((id) => `ids=${encodeURIComponent(id)}`).join("&")}`))).body.vectors as Record<string, { metadata?: Record<string, unknown> }>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-parity-"));
  server = await startServer({ dataDir: dir, port: 0, directorySeed: null });
  key = (await server.keys.create({ tenant: "parity" })).key;
  pc = new Pinecone({ apiKey: key, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
  await pc.createIndex({ name: INDEX, dimension: DIM, metric: "cosine", spec: { serverless: { cloud: "aws", region: "us-east-1" } }, waitUntilReady: true });
  index = pc.index({ name: INDEX });
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
    for (const [q, field] of [["limit=0", "limit"], ["limit=1001", "limit"], ["limit=2.5", "limit"], ["limit=ten", "limit"], ["paginationToken=%21%21", "paginationToken"], [`prefix=${"p".repeat(513)}`, "prefix"]] as const) {
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
      fc.asyncProperty(fc.uniqueArray(idArb, { minLength: 0, maxLength: 30 }), fc.array(alphabet, { maxLength: 2 }).map((p) => p.join("")), fc.integer({ min: 1, max: 7 }), async (set, prefix, limit) => {
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
      }),
      { seed: 3301, numRuns: 40 },
    );
  });
});

describe("fetch and update by metadata", () => {
  const N = 25;
  const genre = (i: number) => ["drama", "comedy", "scifi"][i % 3]!;
  beforeAll(async () => {
    await index.namespace("meta").upsert({ records: Array.from({ length: N }, (_, i) => ({ id: `m${String(i).padStart(2, "0")}`, values: [1, 2, i + 1, 3], metadata: { genre: genre(i), year: 2000 + i } })) });
  });

  it("fetchByMetadata pages through exactly the matching vectors, in id order, with values and metadata", async () => {
    const filter = { genre: { $eq: "drama" }, year: { $gte: 2003 } };
    const want = Array.from({ length: N }, (_, i) => i).filter((i) => genre(i) === "drama" && 2000 + i >= 2003).map((i) => `m${String(i).padStart(2, "0")}`);
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
    for (const [body, field] of [[{}, "filter"], [{ filter: {} }, "filter"], [{ filter: { genre: { $regex: "x" } } }, "filter.genre.$regex"], [{ filter: { genre: "drama" }, limit: 0 }, "limit"], [{ filter: { genre: "drama" }, paginationToken: "%%" }, "paginationToken"], [{ filter: { genre: "drama" }, nope: 1 }, "nope"]] as const) {
      const r = await call(server.url, key, "POST", path("/vectors/fetch_by_metadata"), { namespace: "meta", ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.field, JSON.stringify(body)).toContain(field.split(".")[0]);
    }
  });

  it("update({filter, metadata}) merges into every match and answers matchedRecords; dryRun counts only", async () => {
    const filter = { genre: { $eq: "comedy" } };
    const comedies = Array.from({ length: N }, (_, i) => i).filter((i) => genre(i) === "comedy").map((i) => `m${String(i).padStart(2, "0")}`);
    const dry = await call(server.url, key, "POST", path("/vectors/update"), { namespace: "meta", filter, setMetadata: { seen: true }, dryRun: true });
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
    const scifi = Array.from({ length: N }, (_, i) => i).filter((i) => genre(i) === "scifi").map((i) => `m${String(i).padStart(2, "0")}`);
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
    await expect(pc.inference.embed({ model: "multilingual-e5-large", inputs: ["x"] })).rejects.toBeInstanceOf(Errors.PineconeBadRequestError);
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
      const upd = await tool("update_by_metadata", { index: INDEX, namespace: "meta", filter: { year: { $lt: 2002 } }, setMetadata: { early: true } });
      expect(upd.matchedRecords).toBe(2);
      const got = await tool("fetch_by_metadata", { index: INDEX, namespace: "meta", filter: { early: { $eq: true } } });
      expect(Object.keys(got.vectors as object).sort()).toEqual(["m00", "m01"]);
      const emb = await tool("inference_embed", { model: EMBED_MODEL, inputs: [{ text: "hello world" }] });
      expect((emb.data as Array<{ values: number[] }>)[0]!.values).toHaveLength(1024);
      const bad = (await client.callTool({ name: "list_vectors", arguments: { index: INDEX, paginationToken: "%%" } })) as Result;
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});
