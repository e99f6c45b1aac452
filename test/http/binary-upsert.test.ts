/**
 * Upserts whose values arrive as msgpack bins of little-endian float32 (the fast ingest path):
 * whatever the bins' alignment inside the body and however they mix with number arrays in one
 * batch, fetch returns exactly the float32 values sent; a bad bin fails the whole batch naming
 * its field. Bodies past the server's first 1 MiB read reservation arrive whole, with a declared
 * length or chunked. Real server, real HTTP, real files. Property: fast-check, fixed seed.
 */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import fc from "fast-check";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";

const DIM = 16;
const MSGPACK = "application/msgpack";

/** Little-endian float32 bytes, written explicitly, at byte offset `pad` of a larger buffer (an unaligned view when pad % 4 != 0). */
function f32le(values: number[], pad = 0): Uint8Array {
  const out = new Uint8Array(pad + values.length * 4);
  const dv = new DataView(out.buffer);
  values.forEach((v, i) => dv.setFloat32(pad + i * 4, v, true));
  return out.subarray(pad);
}

describe("binary float32 upserts over HTTP", () => {
  let dir: string;
  let server: Server;
  let nsCount = 0;

  const post = async (path: string, body: BodyInit, type = MSGPACK, extra: RequestInit = {}) => {
    const res = await fetch(server.url + path, { method: "POST", headers: { "content-type": type }, body, ...extra });
    return { status: res.status, json: (await res.json()) as any };
  };
  /** Fetch ids until all are visible (an upsert is acknowledged before it is visible). */
  const fetchAll = async (ns: string, ids: string[], index = "b"): Promise<Record<string, { values: number[] }>> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const q = ids.map((id) => `ids=${encodeURIComponent(id)}`).join("&");
      const res = await fetch(`${server.url}/v1/indexes/${index}/vectors/fetch?namespace=${ns}&${q}`);
      const got = ((await res.json()) as any).vectors ?? {};
      if (Object.keys(got).length === ids.length) return got;
      if (Date.now() > deadline) throw new Error(`${ns}: ${Object.keys(got).length} of ${ids.length} visible`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-binary-upsert-"));
    server = await startServer({ dataDir: dir, port: 0, auth: false });
    const res = await fetch(`${server.url}/v1/indexes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "b", dimension: DIM }),
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("stores exactly the float32 values of bins at any alignment, mixed with number arrays in one batch", async () => {
    const value = fc.integer({ min: -1_000_000, max: 1_000_000 }).map((x) => Math.fround(x / 997) + 0); // + 0: JSON has no -0
    const vector = fc.record({
      values: fc.array(value, { minLength: DIM, maxLength: DIM }).filter((v) => v.some((x) => x !== 0)),
      idPad: fc.integer({ min: 0, max: 7 }), // id lengths move the bins' offsets inside the body
      binary: fc.boolean(),
      pad: fc.integer({ min: 0, max: 3 }), // the client's own view offset (msgpack copies the bytes)
    });
    await fc.assert(
      fc.asyncProperty(fc.array(vector, { minLength: 1, maxLength: 40 }), async (batch) => {
        const ns = `p${nsCount++}`;
        const sent = batch.map((v, i) => ({
          id: `${i}-${"x".repeat(v.idPad)}`,
          values: v.values,
          wire: v.binary ? f32le(v.values, v.pad) : v.values,
        }));
        const r = await post(
          "/v1/indexes/b/vectors/upsert",
          msgpackEncode({ namespace: ns, vectors: sent.map((s) => ({ id: s.id, values: s.wire })) }) as Uint8Array<ArrayBuffer>,
        );
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        expect(r.json.upsertedCount).toBe(batch.length);
        const got = await fetchAll(
          ns,
          sent.map((s) => s.id),
        );
        for (const s of sent) expect(got[s.id]!.values, s.id).toEqual(s.values);
      }),
      { seed: 20261126, numRuns: 25 },
    );
  });

  it("a bad bin fails the whole batch with its field, and nothing of the batch is written", async () => {
    const good = Array.from({ length: 5 }, (_, i) => ({ id: `g${i}`, values: f32le(Array.from({ length: DIM }, (_, d) => d + i + 1)) }));
    const cases: Array<[Uint8Array, string, string]> = [
      [new Uint8Array(DIM * 4 + 2), "E_BAD_REQUEST", "vectors[3].values"], // not whole float32s
      [f32le(Array.from({ length: DIM - 1 }, () => 1)), "E_DIMENSION", "vectors[3].values"], // one value short
      [f32le([Number.NaN, ...Array.from({ length: DIM - 1 }, () => 1)]), "E_NON_FINITE", "vectors[3].values[0]"],
    ];
    for (const [bad, code, field] of cases) {
      const vectors = [...good.slice(0, 3), { id: "bad", values: bad }, ...good.slice(3)];
      const r = await post("/v1/indexes/b/vectors/upsert", msgpackEncode({ namespace: "bad", vectors }) as Uint8Array<ArrayBuffer>);
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error.code).toBe(code);
      expect(r.json.error.field).toBe(field);
    }
    const stats = (await (await fetch(`${server.url}/v1/indexes/b/describe_index_stats`)).json()) as any;
    expect(stats.namespaces.bad).toBeUndefined();
  });

  it("bodies past the first 1 MiB reservation arrive whole: declared length and chunked", async () => {
    const dim = 64;
    const created = await post("/v1/indexes", JSON.stringify({ name: "wide", dimension: dim }), "application/json");
    expect(created.status).toBe(201);
    const n = 6_000; // 6,000 x (64 float32 + id) is about 1.6 MB of msgpack
    const rows = Array.from({ length: n }, (_, i) => ({
      id: String(i),
      values: Array.from({ length: dim }, (_, d) => Math.fround(Math.sin(i * 0.37 + d) + 2)),
    }));
    const body = msgpackEncode({
      vectors: rows.map((r) => ({ id: r.id, values: f32le(r.values) })),
      namespace: "big",
    }) as Uint8Array<ArrayBuffer>;
    expect(body.byteLength).toBeGreaterThan(1 << 20);
    const declared = await post("/v1/indexes/wide/vectors/upsert", body);
    expect(declared.status, JSON.stringify(declared.json)).toBe(200);
    expect(declared.json.upsertedCount).toBe(n);
    // the same body chunked (no Content-Length), in uneven pieces
    const pieces = [body.subarray(0, 1000), body.subarray(1000, 700_000), body.subarray(700_000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        const next = pieces.shift();
        if (next === undefined) c.close();
        else c.enqueue(next);
      },
    });
    const chunked = await post("/v1/indexes/wide/vectors/upsert", stream, MSGPACK, { duplex: "half" } as RequestInit);
    expect(chunked.status, JSON.stringify(chunked.json)).toBe(200);
    expect(chunked.json.upsertedCount).toBe(n);
    const sample = [0, 1, 4097, n - 1].map(String);
    const got = await fetchAll("big", sample, "wide");
    for (const id of sample) expect(got[id]!.values).toEqual(rows[Number(id)]!.values);
  });
  it("large msgpack bodies in flight together (their buffers reused once the upsert is done) each store their own values", async () => {
    const dim = 512;
    expect((await post("/v1/indexes", JSON.stringify({ name: "reuse", dimension: dim }), "application/json")).status).toBe(201);
    const value = (b: number, i: number, d: number) => Math.fround(Math.cos(b * 7919 + i * 31 + d) * 2 + 0.5);
    const bodies = Array.from(
      { length: 16 },
      (_, b) =>
        msgpackEncode({
          namespace: "reuse",
          vectors: Array.from({ length: 600 + b }, (_, i) => ({
            id: `${b}-${i}`,
            values: f32le(
              Array.from({ length: dim }, (_, d) => value(b, i, d)),
              i % 4,
            ),
          })),
        }) as Uint8Array<ArrayBuffer>,
    );
    expect(bodies[0]!.byteLength).toBeGreaterThan(1 << 20);
    // 4 clients, 4 batches each, back to back
    await Promise.all(
      [0, 1, 2, 3].map(async (k) => {
        for (let j = 0; j < 4; j++) {
          const r = await post("/v1/indexes/reuse/vectors/upsert", bodies[j * 4 + k]!);
          expect([r.status, r.json.upsertedCount]).toEqual([200, 600 + j * 4 + k]);
        }
      }),
    );
    for (let b = 0; b < 16; b++) {
      const got = await fetchAll(
        "reuse",
        [0, 300, 599 + b].map((i) => `${b}-${i}`),
        "reuse",
      );
      for (const [id, v] of Object.entries(got))
        expect(v.values, id).toEqual(Array.from({ length: dim }, (_, d) => value(b, Number(id.split("-")[1]), d)));
    }
  });
});
