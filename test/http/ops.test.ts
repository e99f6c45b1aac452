// Long (~500 lines) because it is one server fixture shared by every ops route (health, ready, metrics, OpenAPI, wallet, usage); splitting would start that server per file.
import { spawnSync } from "node:child_process";
import http from "node:http";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.key === undefined ? {} : { "api-key": opts.key }), ...opts.headers };
  if (opts.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    // not JSON (the metrics text)
  }
  return { status: res.status, headers: res.headers, body };
}

/** Counter samples of one metric, as {labels, value}. */
function samples(text: string, metric: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split("\n")) {
    const m = new RegExp(`^${metric}\\{(.*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of m[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

/** Requests counted for "METHOD /path/template" (labels method and route), or for "unmatched" (any method). */
function requests(text: string, route: string, status: number): number {
  const [method, path] = route === "unmatched" ? [undefined, route] : route.split(" ");
  return samples(text, "svc_http_requests_total")
    .filter((s) => s.labels.route === path && (method === undefined || s.labels.method === method) && s.labels.status === String(status))
    .reduce((sum, s) => sum + s.value, 0);
}

/** The router's own answers for paths and methods it has no route for. */
function isFallback(r: Reply): boolean {
  return (
    (r.status === 404 && r.body?.error?.code === "E_NOT_FOUND" && r.body?.error?.field === "path") ||
    (r.status === 405 && r.body?.error?.code === "E_METHOD")
  );
}

describe("ops endpoints (in-process server)", () => {
  let dir: string;
  let server: Server;
  let admin: string;
  /** A site POST /v1/ask can reach: an NLWeb-style /ask on loopback, allow-listed in config.json. */
  let askSite: http.Server;
  let askSiteUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-ops-"));
    askSite = http.createServer((_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ results: [{ url: "https://example.com/ops", name: "ops" }] })),
    );
    await new Promise<void>((resolve) => askSite.listen(0, "127.0.0.1", resolve));
    const askPort = (askSite.address() as { port: number }).port;
    askSiteUrl = `http://127.0.0.1:${askPort}`;
    // bulk imports read files under imports.root: one NDJSON row for the index "real" (dimension 2)
    await mkdir(join(dir, "import-root"));
    await writeFile(join(dir, "import-root", "ops.ndjson"), `${JSON.stringify({ id: "imported", values: [2, 3] })}\n`);
    await writeFile(
      join(dir, "config.json"),
      JSON.stringify({
        commons: { outbound: { allow: [`127.0.0.1:${askPort}`], http: true } },
        imports: { root: join(dir, "import-root") },
      }),
    );
    server = await startServer({ dataDir: dir, port: 0 });
    admin = (await server.keys.create({ tenant: "ops", admin: true })).key;
  });
  afterAll(async () => {
    await server?.close();
    await new Promise((resolve) => askSite?.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it("/v1/health answers without a key", async () => {
    const r = await call(server.url, "GET", "/v1/health");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.body).toEqual({ status: "ok", version: "0.1.0", uptimeSeconds: expect.any(Number) });
    expect(r.body.uptimeSeconds).toBeGreaterThanOrEqual(0);
  });

  it("/metrics is Prometheus text and counts requests by route and status", async () => {
    const before = await call(server.url, "GET", "/metrics");
    expect(before.status).toBe(200);
    expect(before.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const t0 = before.body as string;
    expect(t0).toContain("# TYPE svc_http_requests_total counter");
    expect(t0).toContain("# TYPE svc_http_request_duration_seconds histogram");
    // every non-comment line is `name{labels} value` or `name value`; prom-client spells an
    // unsampled gauge (the event-loop lag before its first sample) "Nan", which Prometheus parses
    for (const line of t0.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      expect(line).toMatch(/^[a-zA-Z_:][\w:]*(\{.*\})? (-?[\d.e+-]+|NaN|Nan|[+-]Inf)$/);
    }

    for (let i = 0; i < 3; i++) expect((await call(server.url, "GET", "/v1/health")).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call(server.url, "GET", "/v1/indexes", { key: "svc_bad" })).status).toBe(401);
    expect((await call(server.url, "GET", "/v1/indexes", { key: admin })).status).toBe(200);
    expect((await call(server.url, "GET", "/v1/indexes/none", { key: admin })).status).toBe(404);
    expect((await call(server.url, "GET", "/no/such/route")).status).toBe(404);

    const t1 = (await call(server.url, "GET", "/metrics")).body as string;
    expect(requests(t1, "GET /v1/health", 200) - requests(t0, "GET /v1/health", 200)).toBe(3);
    expect(requests(t1, "GET /v1/indexes", 401) - requests(t0, "GET /v1/indexes", 401)).toBe(2);
    expect(requests(t1, "GET /v1/indexes", 200) - requests(t0, "GET /v1/indexes", 200)).toBe(1);
    expect(requests(t1, "GET /v1/indexes/{name}", 404) - requests(t0, "GET /v1/indexes/{name}", 404)).toBe(1);
    expect(requests(t1, "unmatched", 404) - requests(t0, "unmatched", 404)).toBe(1);
    // the first /metrics call was counted once it was answered
    expect(requests(t1, "GET /metrics", 200) - requests(t0, "GET /metrics", 200)).toBe(1);
    const latency = samples(t1, "svc_http_request_duration_seconds_count").find(
      (s) => s.labels.method === "GET" && s.labels.route === "/v1/health",
    )!;
    expect(latency.value).toBeGreaterThanOrEqual(3);
  });

  it("/metrics reports each scan worker's V8 heap (used <= total), the main isolate's array buffers and the kernels' shared memory", async () => {
    // each worker reports once it has loaded, then after tasks (at most once a second)
    const text = await until(
      "both workers' heap reports",
      async () => (await call(server.url, "GET", "/metrics")).body as string,
      (t) => samples(t, "svc_pool_worker_heap_bytes").length === 6,
    );
    const heaps = samples(text, "svc_pool_worker_heap_bytes");
    const threads = [...new Set(heaps.map((s) => s.labels.thread))];
    expect(threads).toHaveLength(2);
    for (const thread of threads) {
      const of = (kind: string) => heaps.find((s) => s.labels.thread === thread && s.labels.kind === kind)!.value;
      expect(of("used")).toBeGreaterThan(0);
      expect(of("used")).toBeLessThanOrEqual(of("total"));
      expect(of("physical")).toBeGreaterThan(0);
    }
    const arrayBuffers = /^svc_process_array_buffers_bytes (\d+)$/m.exec(text);
    expect(Number(arrayBuffers?.[1])).toBeGreaterThan(0);
    const shared = Object.fromEntries(samples(text, "svc_kernels_shared_memory_bytes").map((s) => [s.labels.kind, s.value]));
    expect(shared.size).toBeGreaterThan(0);
    expect(shared.used).toBeLessThanOrEqual(shared.size!);
  });

  it("x-request-id is echoed when the client sends a sane one and generated otherwise, on every answer", async () => {
    const echoed = await call(server.url, "GET", "/v1/health", { headers: { "x-request-id": "trace-42.a:b" } });
    expect(echoed.headers.get("x-request-id")).toBe("trace-42.a:b");
    // on errors too
    expect((await call(server.url, "GET", "/v1/indexes", { headers: { "x-request-id": "err-1" } })).headers.get("x-request-id")).toBe(
      "err-1",
    );
    expect(
      (await call(server.url, "GET", "/v1/indexes/nope", { key: admin, headers: { "x-request-id": "err-2" } })).headers.get("x-request-id"),
    ).toBe("err-2");

    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const id = (await call(server.url, "GET", "/v1/health")).headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f]{6}-[0-9a-z]+$/);
      ids.add(id!);
    }
    expect(ids.size).toBe(3);
    // unsafe or oversized ids are replaced, not echoed
    for (const bad of ["has space", "x".repeat(65), "semi;colon", 'quote"d']) {
      const got = (await call(server.url, "GET", "/v1/health", { headers: { "x-request-id": bad } })).headers.get("x-request-id");
      expect(got).toMatch(/^[0-9a-f]{6}-[0-9a-z]+$/);
    }
    // the router's own 404 and 405 answers carry one as well
    expect((await call(server.url, "GET", "/no/such", { headers: { "x-request-id": "fb-1" } })).headers.get("x-request-id")).toBe("fb-1");
    expect((await call(server.url, "PUT", "/v1/indexes")).headers.get("x-request-id")).toMatch(/^[0-9a-f]{6}-[0-9a-z]+$/);
  });

  it("/v1/openapi.json is OpenAPI 3.1 and lists exactly the routes the router has", async () => {
    const r = await call(server.url, "GET", "/v1/openapi.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    const doc = r.body as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<string, Record<string, { operationId: string; parameters?: Array<{ name: string; in: string }> }>>;
      components: Record<string, unknown>;
    };
    expect(doc.openapi).toBe("3.1.0");
    // info.version is the interface's version (the seed's 1.0.0), not the software's
    expect(doc.info).toMatchObject({ title: "svc", version: "1.0.0", "x-svc-software-version": "0.1.0" });
    expect(doc.components).toHaveProperty("securitySchemes.ApiKey");

    const documented: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        documented.push(`${method.toUpperCase()} ${path}`);
        // every {param} of the path is declared as a path parameter
        const declared = (op.parameters ?? [])
          .filter((p) => p.in === "path")
          .map((p) => p.name)
          .sort();
        expect(declared, `${method} ${path}`).toEqual([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort());
      }
    }
    const routed = server.routes.map((x) => `${x.method.toUpperCase()} ${x.path}`);
    expect(new Set(routed).size).toBe(routed.length);
    expect(documented.sort()).toEqual([...routed].sort());
    const opIds = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(opIds).size).toBe(opIds.length);
    expect(opIds.sort()).toEqual(server.routes.map((x) => x.operationId).sort());
    // sanity: the Pinecone data plane is there
    for (const op of [
      "POST /v1/indexes/{name}/vectors/upsert",
      "POST /v1/indexes/{name}/query",
      "GET /v1/indexes/{name}/vectors/fetch",
      "DELETE /v1/indexes/{name}",
    ])
      expect(documented).toContain(op);
  });

  it("every documented path and method reaches a handler (never the router's 404/405 fallback)", async () => {
    // the fallback is recognisable, so the check below can tell a handler's 404 from the router's
    expect(isFallback(await call(server.url, "GET", "/v1/nothing-here", { key: admin }))).toBe(true);
    expect(isFallback(await call(server.url, "POST", "/v1/indexes/x/vectors/nothing", { key: admin, body: {} }))).toBe(true);
    const wrongMethod = await call(server.url, "PUT", "/v1/indexes", { key: admin, body: {} });
    expect(isFallback(wrongMethod)).toBe(true);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")!.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    expect(isFallback(await call(server.url, "DELETE", "/v1/health"))).toBe(true);
    // a '.' in a route's path is literal: no 405 "use GET" for a path that does not exist
    const lookalike = await call(server.url, "POST", "/v1/openapiXjson", { key: admin, body: {} });
    expect(lookalike.status).toBe(404);
    expect(lookalike.body.error.field).toBe("path");
    expect((await call(server.url, "POST", "/v1/openapi.json", { key: admin, body: {} })).headers.get("allow")).toBe("GET, HEAD");

    const doc = (await call(server.url, "GET", "/v1/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    let checked = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => `dummy-${name}`);
        const r = await call(server.url, method.toUpperCase(), concrete, {
          key: admin,
          body: method === "post" || method === "patch" ? {} : undefined,
        });
        expect(isFallback(r), `${method.toUpperCase()} ${path} -> ${r.status} ${JSON.stringify(r.body)}`).toBe(false);
        expect(r.status, `${method.toUpperCase()} ${path}`).toBeLessThan(500);
        checked++;
      }
    }
    expect(checked).toBe(server.routes.length);

    // and with a real index, every index route answers from its handler with a success
    expect((await call(server.url, "POST", "/v1/indexes", { key: admin, body: { name: "real", dimension: 2 } })).status).toBe(201);
    expect(
      (
        await call(server.url, "POST", "/v1/indexes/real/namespaces/n1/upsert", {
          key: admin,
          body: { vectors: [{ id: "a", values: [1, 2] }] },
        })
      ).status,
    ).toBe(200);
    await until(
      "the upsert to be visible",
      () => call(server.url, "GET", "/v1/indexes/real/namespaces/n1", { key: admin }),
      (x) => x.status === 200,
    );
    // and a records namespace holding one record (its id comes from the server)
    const ingested = await call(server.url, "POST", "/v1/records/r1", {
      key: admin,
      body: { items: [{ kind: "note", text: "ops check" }] },
    });
    expect(ingested.status).toBe(200);
    const fill: Record<string, string> = { name: "real", namespace: "n1", ns: "r1", id: ingested.body.ids[0] };
    // admin routes: a key to revoke (not the one making the requests), a tenant to credit; a dashboard file
    Object.assign(fill, { keyId: (await server.keys.create({ tenant: "ops-revoke" })).record.id, tenant: "ops", file: "app.js" });
    // the agent commons: a post by another agent (to mark) and a board file (for {fileId})
    const boardPost = (await call(server.url, "POST", "/v1/board", { body: { agent: "ops-other", message: "ops check" } })).body
      .id as string;
    fill.fileId = (await call(server.url, "POST", "/v1/board/files", { body: { agent: "ops", filename: "ops.txt", content: "ops check" } }))
      .body.id as string;
    // the commons routes' {id} is a helper's record id
    const rung = (await call(server.url, "GET", "/v1/commons/rungs/line-folder", { key: admin })).body.id as string;
    const bodies: Record<string, unknown> = {
      "POST /v1/indexes": { name: "real2", dimension: 2 },
      "PATCH /v1/indexes/{name}": { tags: { team: "ops" } },
      "POST /v1/indexes/{name}/vectors/upsert": { vectors: [{ id: "b", values: [2, 1] }], namespace: "n1" },
      "POST /v1/indexes/{name}/namespaces/{namespace}/upsert": { vectors: [{ id: "c", values: [1, 1] }] },
      "POST /v1/indexes/{name}/query": { vector: [1, 2], topK: 1, namespace: "n1" },
      "POST /v1/indexes/{name}/vectors/update": { id: "a", setMetadata: { k: "v" }, namespace: "n1" },
      "POST /v1/indexes/{name}/vectors/delete": { ids: ["zzz"], namespace: "n1" },
      "POST /v1/indexes/{name}/vectors/fetch_by_metadata": { filter: { k: "v" }, namespace: "n1" },
      "POST /v1/indexes/{name}/describe_index_stats": {},
      "POST /v1/records/{ns}": { items: [{ kind: "note", text: "another" }] },
      "POST /v1/records/{ns}/forget": { ids: ["rec_0000000000000000"] },
      "POST /v1/commons/verify": { id: rung },
      "POST /v1/commons/rungs/{id}/build": { lines: ["ops check"], output_path: "ops/fold.txt" },
      "POST /v1/hd/kg/{name}/facts": {
        facts: [
          { subject: "a", relation: "r", object: "b" },
          { subject: "c", relation: "r", object: "d" },
        ],
      },
      "POST /v1/hd/kg/{name}/facts/delete": { facts: [{ subject: "c", relation: "r", object: "d" }] },
      "POST /v1/hd/kg/{name}/query": { subject: "a", relation: "r" },
      "POST /v1/hd/causal/{name}/worlds": {
        n_vars: 2,
        vocab_per_var: [2, 2],
        worlds: [
          [0, 1],
          [1, 0],
        ],
      },
      "POST /v1/hd/causal/{name}/query": { query_type: "intervention", condition_var: 0, condition_value: 1, query_var: 1, query_value: 0 },
      "POST /v1/hd/analogy": { n_feat: 3, a: 1, b: 2, c: 4 },
      "POST /v1/embed": { texts: ["ops check"] },
      "POST /v1/trust": { agent: "ops", target: "example.com", outcome: "worked" },
      "POST /v1/board": { agent: "ops", message: "ops check", reply_to: boardPost },
      "POST /v1/board/vote": { agent: "ops", post: boardPost, verdict: "useful" },
      "POST /v1/board/files": { agent: "ops", filename: "ops2.txt", content: "ops check" },
      "POST /v1/board/working": { agent: "ops", note: "ops check" },
      "POST /v1/board/profile": { agent: "ops", operator: "ops" },
      "POST /v1/ask": { site: askSiteUrl, question: "ops check" },
      "POST /v1/admin/tenants/{tenant}/credit": { usd: 1 },
      "POST /v1/hd/roles/bind": { pairs: { agent: "alice" } },
      "POST /v1/hd/roles/read": { vector: Buffer.alloc(1024).toString("base64"), roles: ["agent"], candidates: ["alice"] },
      "POST /v1/indexes/{name}/bulk/imports": { uri: "ops.ndjson", namespace: "n1" },
      "POST /v1/backups/{backup_id}/create-index": { name: "real-restored" },
    };
    /** Ids the server hands out along the way: a backup (Ready before its routes run), its restore job, an import. */
    let importId = "";
    /** The import route takes multipart/form-data: upload the namespace's own export. */
    const importOwnExport = async (path: string): Promise<Reply> => {
      const exported = await fetch(`${server.url}/v1/records/r1/export`, { headers: { "api-key": admin } });
      expect(exported.status).toBe(200);
      const form = new FormData();
      form.append("file", new Blob([await exported.arrayBuffer()]), "r1.svc");
      const res = await fetch(server.url + path, { method: "POST", headers: { "api-key": admin }, body: form });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    /** The causal import takes the raw .hdscm bytes: upload the model's own export. */
    const importOwnHdscm = async (path: string): Promise<Reply> => {
      const exported = await fetch(`${server.url}/v1/hd/causal/real/export`, { headers: { "api-key": admin } });
      const res = await fetch(server.url + path, {
        method: "POST",
        headers: { "api-key": admin, "content-type": "application/octet-stream" },
        body: new Uint8Array(await exported.arrayBuffer()),
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    /** The KG import takes the raw .hdkg bytes: upload the graph's own export. */
    const importOwnHdkg = async (path: string): Promise<Reply> => {
      const exported = await fetch(`${server.url}/v1/hd/kg/real/export`, { headers: { "api-key": admin } });
      const res = await fetch(server.url + path, {
        method: "POST",
        headers: { "api-key": admin, "content-type": "application/octet-stream" },
        body: new Uint8Array(await exported.arrayBuffer()),
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    const query: Record<string, string> = { "GET /v1/indexes/{name}/vectors/fetch": "?ids=a&namespace=n1" };
    Object.assign(query, { "GET /v1/trust": "?target=example.com", "GET /v1/board/recall": "?q=ops" });
    // the directory routes' {id}: an unclaimed demo business; its admin routes come first in the table (claim, booking on), the release last
    const business = (await call(server.url, "GET", "/api/businesses?limit=100")).body.results.find(
      (x: { claim: { value: string } }) => x.claim.value === "unclaimed",
    ).id as string;
    const slot = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 3_600_000).toISOString();
    Object.assign(bodies, {
      "POST /api/admin/businesses/{id}/claim": { owner: { name: "Ops", email: "ops@ops.example" } },
      "PATCH /api/admin/businesses/{id}/fields": { fields: { phone: "+44 20 7946 0000" } },
      "POST /api/admin/businesses/{id}/booking": {
        booking: {
          utc_offset: "+00:00",
          hours: Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, ["00:00-24:00"]])),
          slot_minutes: 60,
        },
      },
      "POST /api/admin/businesses/{id}/listing": { listed: true },
      "POST /api/businesses/{id}/consultation-request": {
        start: slot,
        customer: { name: "Ops", email: "ops@ops.example" },
        customer_confirmed: true,
      },
    });
    query["GET /api/businesses/{id}/availability"] = `?start=${slot}&end=${new Date(Date.parse(slot) + 86_400_000).toISOString()}`;
    // deletes last, so the others find the index and namespace
    const ordered = server.routes
      .filter((x) => x.method !== "delete")
      .concat(
        server.routes.filter((x) => x.method === "delete" && x.path.includes("namespace")),
        server.routes.filter((x) => x.method === "delete" && !x.path.includes("namespace")),
      );
    for (const route of ordered) {
      const label = `${route.method.toUpperCase()} ${route.path}`;
      const concrete =
        route.path.replace(/\{(\w+)\}/g, (_, n: string) =>
          route.path.startsWith("/v1/commons/")
            ? rung
            : route.path.includes("businesses/{id}")
              ? business
              : route.path.includes("bulk/imports/{id}") && n === "id"
                ? importId
                : fill[n]!,
        ) + (query[label] ?? "");
      const r =
        label === "POST /v1/hd/kg/{name}/import"
          ? await importOwnHdkg(concrete)
          : label === "POST /v1/records/{ns}/import"
            ? await importOwnExport(concrete)
            : label === "POST /v1/hd/causal/{name}/import"
              ? await importOwnHdscm(concrete)
              : await call(server.url, route.method.toUpperCase(), concrete, {
                  key: admin,
                  body: bodies[label] ?? (route.method === "post" || route.method === "patch" ? {} : undefined),
                });
      expect(r.status, `${label} -> ${JSON.stringify(r.body)}`).toBe(route.response.status);
      if (label === "POST /v1/indexes/{name}/backups") {
        fill.backup_id = r.body.backup_id as string;
        await until(
          "the backup to be Ready",
          () => call(server.url, "GET", `/v1/backups/${fill.backup_id}`, { key: admin }),
          (x) => x.body.status === "Ready",
        );
      }
      if (label === "POST /v1/backups/{backup_id}/create-index") fill.job_id = r.body.restore_job_id as string;
      if (label === "POST /v1/indexes/{name}/bulk/imports") importId = r.body.id as string;
    }
  });
});

describe("svc --help", () => {
  it("lists the serve and keys commands", () => {
    const r = spawnSync(process.execPath, [MAIN, "--help"], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("Usage:");
    expect(r.stdout).toMatch(/^ {2}svc serve /m);
    expect(r.stdout).toMatch(/^ {2}svc keys create /m);
    expect(r.stdout).toContain("svc keys revoke <key-id>");
    expect(r.stdout).toContain("--no-auth");
  });
});

// ---- process behaviour: the built server as a child process --------------------------------------

const G_DIM = 16;
/** Float32-exact values derived from an id's number. */
const gvec = (n: number) => Array.from({ length: G_DIM }, (_, d) => Math.fround(Math.sin(n * 0.37 + d * 1.91) * 3));

describe("graceful shutdown (SIGTERM on svc serve)", () => {
  it("exits 0 with upserts in flight; after a restart on the same data dir every acknowledged vector is there, every batch whole or absent", async () => {
    let srv: ServerProcess = await startServerProcess({ args: ["--no-auth"] });
    const dataDir = srv.dataDir;
    try {
      expect((await call(srv.url, "POST", "/v1/indexes", { body: { name: "g", dimension: G_DIM } })).status).toBe(201);
      const acked = new Map<string, { ns: string; ids: number[] }>();
      // acknowledged before the signal, in two namespaces
      for (let b = 0; b < 6; b++) {
        const ids = Array.from({ length: 150 }, (_, i) => b * 150 + i);
        const ns = b % 2 === 0 ? "" : "two";
        const r = await call(srv.url, "POST", "/v1/indexes/g/vectors/upsert", {
          body: { namespace: ns, vectors: ids.map((n) => ({ id: `s${n}`, values: gvec(n), metadata: { batch: b } })) },
        });
        expect(r.body).toEqual({ upsertedCount: 150 });
        acked.set(`s${b}`, { ns, ids });
      }
      // then a burst; SIGTERM arrives once a third of it was acknowledged, and more requests follow the signal
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
        srv.child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      const BURST = 30;
      let done = 0;
      const late: Array<Promise<{ k: number; ids: number[]; status: number }>> = [];
      const upsert = async (k: number) => {
        const ids = Array.from({ length: 40 }, (_, i) => 10_000 + k * 40 + i);
        try {
          const r = await call(srv.url, "POST", "/v1/indexes/g/vectors/upsert", {
            body: { namespace: "burst", vectors: ids.map((n) => ({ id: `b${n}`, values: gvec(n) })) },
          });
          if (r.status === 200) acked.set(`b${k}`, { ns: "burst", ids: ids });
          else {
            expect(r.body.error.code, JSON.stringify(r.body)).toBe("E_CLOSED");
            expect(r.headers.get("retry-after"), "a request refused by the stopping server says when to retry").toBe("1");
          }
          return { k, ids, status: r.status };
        } catch {
          return { k, ids, status: 0 }; // connection refused or closed by the stopping server
        } finally {
          if (++done === BURST / 3) {
            srv.child.kill("SIGTERM");
            for (let j = 0; j < 10; j++) late.push(upsert(BURST + j));
          }
        }
      };
      const outcomes = await Promise.all(Array.from({ length: BURST }, (_, k) => upsert(k)));
      outcomes.push(...(await Promise.all(late)));
      expect(outcomes).toHaveLength(BURST + 10);
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(srv.output()).toContain("svc stopped");
      expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThanOrEqual(BURST / 3);

      srv = await startServerProcess({ dataDir, args: ["--no-auth"] });
      const fetchAll = async (ns: string, ids: number[], prefix: string) => {
        const out: Record<string, { id: string; values: number[] }> = {};
        for (let i = 0; i < ids.length; i += 500) {
          const q = ids
            .slice(i, i + 500)
            .map((n) => `ids=${prefix}${n}`)
            .join("&");
          const r = await call(srv.url, "GET", `/v1/indexes/g/vectors/fetch?namespace=${ns}&${q}`);
          expect(r.status).toBe(200);
          Object.assign(out, r.body.vectors);
        }
        return out;
      };
      for (const [key, { ns, ids }] of acked) {
        const prefix = key[0]!;
        const got = await fetchAll(ns, ids, prefix);
        expect(Object.keys(got).length, `batch ${key}`).toBe(ids.length);
        for (const n of ids) expect(got[`${prefix}${n}`]!.values).toEqual(gvec(n));
      }
      // batches without an acknowledgement are all there or not there at all
      let burstPresent = 0;
      for (const o of outcomes.filter((x) => x.status !== 200)) {
        const n = Object.keys(await fetchAll("burst", o.ids, "b")).length;
        expect([0, o.ids.length]).toContain(n);
        burstPresent += n;
      }
      const stats = await call(srv.url, "GET", "/v1/indexes/g/describe_index_stats");
      expect(stats.body.namespaces).toEqual({
        __default__: { vectorCount: 450 },
        two: { vectorCount: 450 },
        burst: { vectorCount: outcomes.filter((o) => o.status === 200).length * 40 + burstPresent },
      });
    } finally {
      await srv.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("large and aborted transfers (svc serve)", () => {
  const DIM = 2048;
  const N = 1000;
  /** Values k/64 - 2: exact in float32 and short in JSON. */
  const big = (i: number) => Array.from({ length: DIM }, (_, d) => ((i * 31 + d * 17) % 256) / 64 - 2);
  let srv: ServerProcess;
  const idsQuery = Array.from({ length: N }, (_, i) => `ids=v${i}`).join("&");

  beforeAll(async () => {
    srv = await startServerProcess({ args: ["--no-auth"] });
    expect((await call(srv.url, "POST", "/v1/indexes", { body: { name: "big", dimension: DIM } })).status).toBe(201);
    // upsert as msgpack with float32 bins (8 MB)
    for (let start = 0; start < N; start += 500) {
      const vectors = Array.from({ length: 500 }, (_, k) => ({
        id: `v${start + k}`,
        values: new Uint8Array(new Float32Array(big(start + k)).buffer),
      }));
      const res = await fetch(`${srv.url}/v1/indexes/big/vectors/upsert`, {
        method: "POST",
        headers: { "content-type": "application/msgpack" },
        body: new Uint8Array(msgpackEncode({ vectors })),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    await until(
      "the vectors to be visible",
      () => call(srv.url, "GET", "/v1/indexes/big/describe_index_stats"),
      (r) => r.body.totalVectorCount === N,
    );
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  /** GET with node:http, not reading the response until the server had to stop and wait for the socket. */
  const slowGet = (path: string) =>
    new Promise<{ status: number; length: number; body: Buffer }>((resolve, reject) => {
      http
        .get(srv.url + path, (res) => {
          res.pause();
          const chunks: Buffer[] = [];
          setTimeout(() => {
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () =>
              resolve({ status: res.statusCode!, length: Number(res.headers["content-length"]), body: Buffer.concat(chunks) }),
            );
            res.on("error", reject);
            res.resume();
          }, 300);
        })
        .on("error", reject);
    });

  const checkAll = (vectors: Record<string, { id: string; values: number[] }>) => {
    expect(Object.keys(vectors).length).toBe(N);
    for (let i = 0; i < N; i++) {
      const v = vectors[`v${i}`]!;
      expect(v.id).toBe(`v${i}`);
      expect(v.values.length).toBe(DIM);
      const want = big(i);
      for (let d = 0; d < DIM; d++) if (v.values[d] !== want[d]) throw new Error(`v${i}[${d}] = ${v.values[d]}, want ${want[d]}`);
    }
  };

  it("a fetch of 1000 x 2048-d vectors (megabytes) arrives complete to a slow reader, in JSON and msgpack", async () => {
    const r = await slowGet(`/v1/indexes/big/vectors/fetch?${idsQuery}`);
    expect(r.status).toBe(200);
    expect(r.body.length).toBeGreaterThan(8 << 20);
    expect(r.body.length).toBe(r.length);
    checkAll(JSON.parse(r.body.toString("utf8")).vectors);

    const res = await fetch(`${srv.url}/v1/indexes/big/vectors/fetch?${idsQuery}`, { headers: { accept: "application/msgpack" } });
    expect(res.headers.get("content-type")).toBe("application/msgpack");
    const buf = new Uint8Array(await res.arrayBuffer());
    expect(buf.length).toBeGreaterThan(16 << 20);
    checkAll((msgpackDecode(buf) as { vectors: Record<string, { id: string; values: number[] }> }).vectors);
  });

  it("clients that abort mid-upload or mid-download do not take the server down", async () => {
    const health = async () => (await call(srv.url, "GET", "/v1/health")).status;
    const chunk = Buffer.alloc(1 << 20, 0x20); // whitespace: valid JSON padding, were it ever completed

    // 1. aborted uploads with a declared length (node:http + AbortController)
    for (let round = 0; round < 3; round++) {
      const ac = new AbortController();
      const failed = new Promise<Error>((resolve) => {
        const req = http.request(`${srv.url}/v1/indexes/big/vectors/upsert`, {
          method: "POST",
          headers: { "content-type": "application/json", "content-length": String(40 << 20) },
          signal: ac.signal,
        });
        req.on("error", resolve);
        req.on("response", () => resolve(new Error("unexpected response")));
        const write = (n: number): void => {
          if (n === 0) return ac.abort();
          req.write(chunk, () => write(n - 1));
        };
        write(4);
      });
      expect((await failed).name).toBe("AbortError");
    }
    expect(await health()).toBe(200);

    // 2. aborted streamed upload with fetch (chunked, no declared length)
    const ac = new AbortController();
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 3) {
          ac.abort();
          return new Promise(() => {}); // never more
        }
        sent++;
        controller.enqueue(new Uint8Array(chunk));
      },
    });
    await expect(
      fetch(`${srv.url}/v1/indexes/big/vectors/upsert`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: stream,
        duplex: "half",
        signal: ac.signal,
      } as RequestInit),
    ).rejects.toThrow();
    expect(await health()).toBe(200);

    // 3. downloads abandoned after the first bytes, while the server is sending megabytes
    for (let round = 0; round < 3; round++) {
      const dl = new AbortController();
      const res = await fetch(`${srv.url}/v1/indexes/big/vectors/fetch?${idsQuery}`, { signal: dl.signal });
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      dl.abort();
      await reader.read().catch(() => undefined);
    }

    // the server is alive and whole: nothing was half-written, large replies still complete, writes still work
    expect(srv.child.exitCode).toBeNull();
    expect(await health()).toBe(200);
    expect((await call(srv.url, "GET", "/v1/indexes/big/describe_index_stats")).body.totalVectorCount).toBe(N);
    const full = await fetch(`${srv.url}/v1/indexes/big/vectors/fetch?${idsQuery}`);
    checkAll(((await full.json()) as { vectors: Record<string, { id: string; values: number[] }> }).vectors);
    expect(
      (await call(srv.url, "POST", "/v1/indexes/big/vectors/upsert", { body: { vectors: [{ id: "after", values: big(5000) }] } })).body,
    ).toEqual({ upsertedCount: 1 });
    // and it still shuts down cleanly (no request left counted as in flight)
    expect(await srv.stop()).toBe(0);
    expect(srv.output()).toContain("svc stopped");
  });
});
