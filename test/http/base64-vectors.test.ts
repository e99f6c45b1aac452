/**
 * JSON bodies whose `values` (upsert) and `vector` (query) are base64 of little-endian float32 (the svc
 * extension that spares parsing 1024 decimal numbers): fetch returns exactly the float32 values sent,
 * mixed with number arrays in one batch; a base64 query answers exactly what the same query as numbers
 * answers; a string that is not base64 of whole float32s is a 400 naming its field, and nothing of its batch
 * is written. Real server, real HTTP, real files. Property: fast-check, fixed seed.
 */
import fc from "fast-check";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";

const DIM = 16;
const b64 = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString("base64");

describe("base64 float32 vectors in JSON bodies", () => {
  let dir: string;
  let server: Server;
  let nsCount = 0;

  const post = async (path: string, body: unknown) => {
    const res = await fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  const fetchAll = async (ns: string, ids: string[]): Promise<Record<string, { values: number[] }>> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const q = ids.map((id) => `ids=${encodeURIComponent(id)}`).join("&");
      const got = ((await (await fetch(`${server.url}/v1/indexes/b/vectors/fetch?namespace=${ns}&${q}`)).json()) as any).vectors ?? {};
      if (Object.keys(got).length === ids.length) return got;
      if (Date.now() > deadline) throw new Error(`${ns}: ${Object.keys(got).length} of ${ids.length} visible`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-base64-vectors-"));
    server = await startServer({ dataDir: dir, port: 0, auth: false });
    expect((await post("/v1/indexes", { name: "b", dimension: DIM })).status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("upserts store exactly the float32 values sent as base64, mixed with number arrays; base64 queries answer as number queries do", async () => {
    const value = fc.integer({ min: -1_000_000, max: 1_000_000 }).map((x) => Math.fround(x / 997) + 0);
    const vector = fc.record({
      values: fc.array(value, { minLength: DIM, maxLength: DIM }).filter((v) => v.some((x) => x !== 0)),
      base64: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(vector, { minLength: 1, maxLength: 30 }), async (batch) => {
        const ns = `p${nsCount++}`;
        const sent = batch.map((v, i) => ({ id: String(i), values: v.values, wire: v.base64 ? b64(v.values) : v.values }));
        const r = await post("/v1/indexes/b/vectors/upsert", { namespace: ns, vectors: sent.map((s) => ({ id: s.id, values: s.wire })) });
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        expect(r.json.upsertedCount).toBe(batch.length);
        const got = await fetchAll(
          ns,
          sent.map((s) => s.id),
        );
        for (const s of sent) expect(got[s.id]!.values, s.id).toEqual(s.values);
        const q = sent[sent.length - 1]!.values;
        const asNumbers = await post("/v1/indexes/b/query", { namespace: ns, vector: q, topK: 5 });
        const asBase64 = await post("/v1/indexes/b/query", { namespace: ns, vector: b64(q), topK: 5 });
        expect(asBase64.status, JSON.stringify(asBase64.json)).toBe(200);
        expect(asBase64.json.matches).toEqual(asNumbers.json.matches);
        expect(asBase64.json.matches[0].score).toBeCloseTo(1, 5);
      }),
      { seed: 20261126, numRuns: 20 },
    );
  });

  it("a string that is not base64 of whole float32s is a 400 naming the field; nothing of the batch is written", async () => {
    const good = Array.from({ length: 4 }, (_, i) => ({ id: `g${i}`, values: b64(Array.from({ length: DIM }, (_, d) => d + i + 1)) }));
    const cases: Array<[string, string, string]> = [
      ["not base64!", "E_BAD_REQUEST", "vectors[2].values"],
      ["AAAA=AAA", "E_BAD_REQUEST", "vectors[2].values"], // padding inside
      ["AAA", "E_BAD_REQUEST", "vectors[2].values"], // not a whole quantum
      ["AAAA AAA", "E_BAD_REQUEST", "vectors[2].values"], // whitespace
      ["A===", "E_BAD_REQUEST", "vectors[2].values"], // too much padding
      [`${b64(Array.from({ length: DIM - 1 }, () => 1))}AA==`, "E_BAD_REQUEST", "vectors[2].values"], // 61 bytes: not whole float32s
      [b64(Array.from({ length: DIM - 1 }, () => 1)), "E_DIMENSION", "vectors[2].values"],
      [b64([Number.NaN, ...Array.from({ length: DIM - 1 }, () => 1)]), "E_NON_FINITE", "vectors[2].values[0]"],
    ];
    for (const [bad, code, field] of cases) {
      const r = await post("/v1/indexes/b/vectors/upsert", {
        namespace: "bad",
        vectors: [...good.slice(0, 2), { id: "bad", values: bad }, ...good.slice(2)],
      });
      expect(r.status, `${bad}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error.code, bad).toBe(code);
      expect(r.json.error.field, bad).toBe(field);
    }
    const stats = (await (await fetch(`${server.url}/v1/indexes/b/describe_index_stats`)).json()) as any;
    expect(stats.namespaces.bad).toBeUndefined();
    const q = await post("/v1/indexes/b/query", { vector: "@@@@", topK: 1 });
    expect(q.status).toBe(400);
    expect(q.json.error).toMatchObject({ code: "E_BAD_REQUEST", field: "vector" });
    const short = await post("/v1/indexes/b/query", { vector: b64([1, 2, 3]), topK: 1 });
    expect(short.status).toBe(400);
    expect(short.json.error).toMatchObject({ code: "E_DIMENSION", field: "vector" });
  });
});
