/**
 * Issue 20.10: with --no-auth any web page could call the API (CSRF, DNS rebinding). Every route then checks Host
 * and Origin like /mcp, and everywhere a body must say it is JSON (415 E_MEDIA_TYPE otherwise). Real HTTP through
 * node:http, which sends the Host header we give it.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newTenantKey } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

interface Raw {
  status: number;
  body: any;
}

/** One request with exactly these headers (Host included) and this body. */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }), ...headers },
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = text;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const index = (name: string) => JSON.stringify({ name, dimension: 2 });

describe("--no-auth: Host/Origin guard on every route", () => {
  let srv: ServerProcess;
  let host: string;
  beforeAll(async () => {
    srv = await startServerProcess({ args: ["--no-auth"] });
    host = new URL(srv.url).host;
  }, 60_000);
  afterAll(async () => {
    await srv?.dispose();
  });

  it("refuses a foreign Host (DNS rebinding) on reads and writes with 403 E_HOST_NOT_ALLOWED naming the header; nothing is written", async () => {
    const port = new URL(srv.url).port;
    for (const foreign of [`evil.example:${port}`, "evil.example", `127.0.0.1:${Number(port) + 1}`]) {
      const w = await send(srv.url, "POST", "/v1/indexes", { host: foreign, "content-type": "application/json" }, index("rebound"));
      expect(w.status, foreign).toBe(403);
      expect(w.body.error).toMatchObject({ code: "E_HOST_NOT_ALLOWED", field: "host" });
      const r = await send(srv.url, "GET", "/v1/wallet", { host: foreign });
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe("E_HOST_NOT_ALLOWED");
    }
    const list = await send(srv.url, "GET", "/v1/indexes", { host });
    expect(list.status).toBe(200);
    expect(list.body.indexes).toEqual([]);
  });

  it("refuses a cross-site Origin (CSRF) with 403 naming the origin, also on uploads a form can send; our own origin passes", async () => {
    const w = await send(
      srv.url,
      "POST",
      "/v1/indexes",
      { host, origin: "https://evil.example", "content-type": "application/json" },
      index("csrf"),
    );
    expect(w.status).toBe(403);
    expect(w.body.error).toMatchObject({ code: "E_HOST_NOT_ALLOWED", field: "origin" });
    const form =
      '--b\r\ncontent-disposition: form-data; name="file"; filename="x.svc"\r\ncontent-type: application/octet-stream\r\n\r\nPK\r\n--b--\r\n';
    const upload = await send(
      srv.url,
      "POST",
      "/v1/records/notes/import",
      { host, origin: "http://evil.example", "content-type": "multipart/form-data; boundary=b" },
      form,
    );
    expect(upload.status).toBe(403);
    expect(upload.body.error.field).toBe("origin");
    // the page served by this server (same origin) works, and so does localhost by name
    const ok = await send(
      srv.url,
      "POST",
      "/v1/indexes",
      { host, origin: `http://${host}`, "content-type": "application/json" },
      index("mine"),
    );
    expect(ok.status).toBe(201);
    const port = new URL(srv.url).port;
    expect(
      (await send(srv.url, "GET", "/v1/indexes", { host: `localhost:${port}` })).body.indexes.map((i: { name: string }) => i.name),
    ).toEqual(["mine"]);
    // /mcp keeps the same rule
    const mcp = await send(
      srv.url,
      "POST",
      "/mcp",
      { host, origin: "https://evil.example", "content-type": "application/json", accept: "application/json, text/event-stream" },
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    );
    expect(mcp.status).toBe(403);
  });

  it("a JSON body without Content-Type, or as text/plain (no CORS preflight), is 415 E_MEDIA_TYPE and does nothing", async () => {
    for (const headers of [
      { host },
      { host, "content-type": "text/plain" },
      { host, "content-type": "application/x-www-form-urlencoded" },
    ] as Array<Record<string, string>>) {
      const r = await send(srv.url, "POST", "/v1/indexes", headers, index("typeless"));
      expect(r.status, JSON.stringify(headers)).toBe(415);
      expect(r.body.error).toMatchObject({ code: "E_MEDIA_TYPE", field: "content-type" });
    }
    const names = (await send(srv.url, "GET", "/v1/indexes", { host })).body.indexes.map((i: { name: string }) => i.name);
    expect(names).not.toContain("typeless");
  });
});

describe("with keys: JSON bodies need their Content-Type too; Host is not checked", () => {
  let srv: ServerProcess;
  let key: string;
  beforeAll(async () => {
    srv = await startServerProcess();
    key = (await newTenantKey(srv)).key;
  }, 60_000);
  afterAll(async () => {
    await srv?.dispose();
  });

  it("415 without Content-Type on a tenant route and on a public commons write; a proxied Host still works", async () => {
    const host = new URL(srv.url).host;
    const r = await send(srv.url, "POST", "/v1/indexes", { host, "api-key": key }, index("typeless"));
    expect(r.status).toBe(415);
    expect(r.body.error).toMatchObject({ code: "E_MEDIA_TYPE", field: "content-type" });
    const post = await send(srv.url, "POST", "/v1/board", { host }, JSON.stringify({ agent: "a", message: "hello there" }));
    expect(post.status).toBe(415);
    const ok = await send(
      srv.url,
      "POST",
      "/v1/indexes",
      { host: "svc.example.com", "api-key": key, "content-type": "application/json; charset=utf-8" },
      index("typed"),
    );
    expect(ok.status).toBe(201);
  });
});
