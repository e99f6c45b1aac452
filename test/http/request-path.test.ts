/**
 * The one request path without a socket (`server.request()`, as Hono's `app.request`): the same admission, codecs,
 * handlers and answers as over HTTP. Real server, real files; each answer is compared with the socket's where both apply.
 */
import { decode } from "@msgpack/msgpack";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";

const DIM = 8;
const json = (body: Buffer | string) => JSON.parse(body.toString()) as any;

describe("request() without a socket", () => {
  let dir: string;
  let server: Server;
  let key: string;
  const headers = () => ({ "api-key": key, "content-type": "application/json" });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-request-path-"));
    server = await startServer({ dataDir: dir, port: 0, auth: true });
    key = (server.keys as unknown as { create(o: { admin: boolean }): { key: string } }).create({ admin: true }).key;
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses a keyless request with 401 E_AUTH, as over HTTP", async () => {
    const r = await server.request({ method: "GET", url: "/v1/indexes" });
    expect(r.status).toBe(401);
    expect(json(r.body).error).toMatchObject({ code: "E_AUTH", field: "api-key" });
    const viaSocket = await fetch(`${server.url}/v1/indexes`);
    expect(viaSocket.status).toBe(401);
    expect(await viaSocket.json()).toEqual(json(r.body));
  });

  it("creates, upserts and queries: the answers over the socket and without one are the same", async () => {
    const created = await server.request({
      method: "POST",
      url: "/v1/indexes",
      headers: headers(),
      body: JSON.stringify({ name: "rp", dimension: DIM }),
    });
    expect(created.status, String(created.body)).toBe(201);
    const vectors = Array.from({ length: 20 }, (_, i) => ({
      id: `v${i}`,
      values: Array.from({ length: DIM }, (_, j) => Math.sin(i * 7 + j)),
    }));
    const up = await server.request({
      method: "POST",
      url: "/v1/indexes/rp/vectors/upsert",
      headers: headers(),
      body: JSON.stringify({ vectors }),
    });
    expect(up.status).toBe(200);
    expect(json(up.body)).toEqual({ upsertedCount: 20 });
    const query = JSON.stringify({ vector: vectors[3]!.values, topK: 3 });
    // Upserts become visible shortly after their acknowledgement: wait (bounded) until all 20 are counted.
    for (let i = 0; i < 500; i++) {
      const stats = await server.request({ method: "POST", url: "/v1/indexes/rp/describe_index_stats", headers: headers(), body: "{}" });
      if (json(stats.body).totalVectorCount === 20) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const a = await server.request({ method: "POST", url: "/v1/indexes/rp/query", headers: headers(), body: query });
    expect(a.status).toBe(200);
    expect(a.contentType).toBe("application/json");
    expect(json(a.body).matches[0].id).toBe("v3");
    const b = await fetch(`${server.url}/v1/indexes/rp/query`, { method: "POST", headers: headers(), body: query });
    expect(await b.json()).toEqual(json(a.body));
    // Accept: msgpack answers msgpack, as the codecs say
    const m = await server.request({
      method: "POST",
      url: "/v1/indexes/rp/query",
      headers: { ...headers(), accept: "application/msgpack" },
      body: query,
    });
    expect(m.contentType).toBe("application/msgpack");
    expect((decode(m.body as Buffer) as { matches: Array<{ id: string }> }).matches.map((x) => x.id)).toEqual(
      json(a.body).matches.map((x: { id: string }) => x.id),
    );
  });

  it("keeps the client's request id, answers HEAD without a body, 404 and 405 with Allow", async () => {
    const h = await server.request({ method: "GET", url: "/v1/health", headers: { "x-request-id": "rp-1" } });
    expect(h.status).toBe(200);
    expect(h.headers["x-request-id"]).toBe("rp-1");
    const head = await server.request({ method: "HEAD", url: "/v1/health" });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    const missing = await server.request({ method: "GET", url: "/v1/nothing-here" });
    expect(missing.status).toBe(404);
    expect(json(missing.body).error.code).toBe("E_NOT_FOUND");
    const wrong = await server.request({ method: "DELETE", url: "/v1/health" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe("GET, HEAD");
  });

  it("refuses bad input with the same 4xx as over HTTP: a wrong media type, bad percent-encoding, a body over the cap", async () => {
    const media = await server.request({
      method: "POST",
      url: "/v1/indexes",
      headers: { "api-key": key, "content-type": "text/plain" },
      body: "x",
    });
    expect(media.status).toBe(415);
    expect(json(media.body).error).toMatchObject({ code: "E_MEDIA_TYPE", field: "content-type" });
    const pct = await server.request({ method: "GET", url: "/v1/indexes/%E0%A4%A", headers: { "api-key": key } });
    expect(pct.status).toBe(400);
    expect(json(pct.body).error).toMatchObject({ code: "E_BAD_REQUEST", field: "name" });
    const viaSocket = await fetch(`${server.url}/v1/indexes/%E0%A4%A`, { headers: { "api-key": key } });
    expect(await viaSocket.json()).toEqual(json(pct.body));
    const big = await server.request({
      method: "POST",
      url: "/v1/indexes",
      headers: { ...headers(), "content-length": String(1 << 30) },
      body: "{}",
    });
    expect(big.status).toBe(413);
    expect(json(big.body).error.code).toBe("E_TOO_LARGE");
  });
});
