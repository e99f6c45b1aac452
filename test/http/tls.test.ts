import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wrapClient } from "../../src/recorders/index.js";
import { checkServiceUrl } from "../../src/service-url.js";
import { restApi } from "../../src/tools/rest-api.js";
import { cli } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

interface HttpsReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTPS request that trusts only `ca` (the test's self-signed certificate). */
function https(url: string, ca: Buffer, method: string, headers: Record<string, string> = {}, body?: string): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, ca }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (data += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: data }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("svc serve --tls-cert/--tls-key (a real HTTPS server, self-signed certificate)", () => {
  let dir: string;
  let cert: string;
  let key: string;
  let ca: Buffer;
  let server: ServerProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-tls-"));
    cert = join(dir, "cert.pem");
    key = join(dir, "key.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-days",
        "1",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: "ignore" },
    );
    ca = await readFile(cert);
    server = await startServerProcess({ args: ["--tls-cert", cert, "--tls-key", key] });
  }, 60_000);
  afterAll(async () => {
    await server?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves REST over TLS, verified against the certificate", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const health = await https(`${server.url}/v1/health`, ca, "GET");
    expect(health.status).toBe(200);
    const write = await https(
      `${server.url}/v1/records/tls`,
      ca,
      "POST",
      { "api-key": server.adminKey!, "content-type": "application/json" },
      JSON.stringify({ items: [{ kind: "note", text: "over tls" }] }),
    );
    expect(write.status).toBe(200);
    expect(JSON.parse(write.body).count).toBe(1);
    const created = await https(
      `${server.url}/v1/indexes`,
      ca,
      "POST",
      { "api-key": server.adminKey!, "content-type": "application/json" },
      JSON.stringify({ name: "tls-index", dimension: 4 }),
    );
    expect(created.status).toBe(201);
    expect(JSON.parse(created.body).host).toMatch(/^https:\/\//); // links name the scheme the server serves
    // The same port does not speak plain HTTP.
    await expect(fetch(server.url.replace("https:", "http:") + "/v1/health", { signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
  });

  it("serves /mcp and the dashboard over TLS", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "tls-test", version: "1" } },
    };
    const r = await https(
      `${server.url}/mcp`,
      ca,
      "POST",
      { "api-key": server.adminKey!, "content-type": "application/json", accept: "application/json, text/event-stream" },
      JSON.stringify(init),
    );
    expect(r.status).toBe(200);
    expect(r.headers["mcp-session-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body).toContain('"serverInfo"');
    const dash = await https(`${server.url}/dashboard`, ca, "GET");
    expect(dash.status).toBe(200);
    expect(dash.body).toContain("<html");
  });

  it("a recorder sends to the https URL (trusting the certificate through NODE_EXTRA_CA_CERTS)", async () => {
    const entry = fileURLToPath(new URL("../../dist/recorders/index.js", import.meta.url));
    const script = `
      const { wrapClient, flushRecorders } = await import(${JSON.stringify(entry)});
      const raw = { messages: { create: async () => ({ model: "m", content: [{ type: "text", text: "secure" }], stop_reason: "end_turn", usage: {} }) } };
      const client = wrapClient(raw, { namespace: "tls-rec" });
      await client.messages.create({ model: "m", messages: [{ role: "user", content: "over https" }] });
      await flushRecorders();`;
    const url = server.url.replace("127.0.0.1", "localhost");
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, SVC_URL: url, SVC_API_KEY: server.adminKey!, NODE_EXTRA_CA_CERTS: cert, SVC_ALLOW_INSECURE: "" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    expect(await new Promise((resolve) => child.once("exit", resolve)), err).toBe(0);
    const q = await until(
      "the record",
      () =>
        https(
          `${server.url}/v1/records/tls-rec/query`,
          ca,
          "POST",
          { "api-key": server.adminKey!, "content-type": "application/json" },
          JSON.stringify({ includeText: true }),
        ),
      (r) => r.status === 200 && JSON.parse(r.body).records.length === 1,
    );
    expect(JSON.parse(q.body).records[0].text).toBe("USER: over https\n\nASSISTANT: secure");
  });

  it("refuses a missing file or a lone option with E_BAD_REQUEST naming it", async () => {
    const missing = await cli(["serve", "--port", "0", "--data", join(dir, "d1"), "--tls-cert", join(dir, "nope.pem"), "--tls-key", key]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("E_BAD_REQUEST");
    expect(missing.stderr).toContain("--tls-cert");
    const lone = await cli(["serve", "--port", "0", "--data", join(dir, "d2"), "--tls-cert", cert]);
    expect(lone.code).toBe(2);
    expect(lone.stderr).toContain("--tls-cert and --tls-key go together");
    const swapped = await cli(["serve", "--port", "0", "--data", join(dir, "d3"), "--tls-cert", key, "--tls-key", cert]);
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain("not PEM, or the key does not match");
  }, 60_000);
});

describe("clients refuse plain http to a non-loopback host (one check: src/service-url.ts)", () => {
  it("checkServiceUrl: https anywhere, http on loopback, http elsewhere only with SVC_ALLOW_INSECURE=1", () => {
    for (const ok of ["https://svc.example.com", "http://127.0.0.1:8080", "http://127.9.9.9", "http://localhost:1", "http://[::1]:8080"])
      expect(checkServiceUrl(ok, { env: {} }).href).toBe(new URL(ok).href);
    for (const bad of ["http://svc.example.com", "http://10.0.0.5:8080", "http://[2001:db8::1]", "http://127.0.0.1.nip.io"]) {
      expect(() => checkServiceUrl(bad, { env: {} }), bad).toThrow(expect.objectContaining({ code: "E_INSECURE_URL", field: "url" }));
      expect(checkServiceUrl(bad, { env: { SVC_ALLOW_INSECURE: "1" } }).protocol).toBe("http:");
    }
    expect(() => checkServiceUrl("http://svc.example.com", { env: { SVC_ALLOW_INSECURE: "true" } })).toThrow(
      expect.objectContaining({ code: "E_INSECURE_URL" }),
    );
    expect(() => checkServiceUrl("ftp://svc.example.com", { env: {} })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST" }));
    expect(() => checkServiceUrl("not a url", { field: "SVC_URL", env: {} })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "SVC_URL" }),
    );
  });

  it("the recorder and the stdio server's REST client refuse at construction, with the reason", () => {
    const fake = { messages: { create: async () => ({}) } };
    expect(() => wrapClient(fake, { namespace: "n", url: "http://svc.example.com" })).toThrow(
      /refusing to send the API key over plain http to svc\.example\.com/,
    );
    expect(() => restApi("http://svc.example.com:8080", "k")).toThrow(expect.objectContaining({ code: "E_INSECURE_URL" }));
    expect(() => restApi("https://svc.example.com:8080", "k")).not.toThrow();
  });

  it("svc mcp, svc export and svc install-hooks exit 2 with E_INSECURE_URL and write nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-insecure-"));
    try {
      const mcp = await cli(["mcp", "--url", "http://svc.example.com"], { SVC_ALLOW_INSECURE: "" }, { killAfterMs: 20_000 });
      expect(mcp.code).toBe(2);
      expect(mcp.stderr).toContain("E_INSECURE_URL");
      expect(mcp.stderr).toContain("SVC_ALLOW_INSECURE=1");
      const exp = await cli(["export", "ns", "--out", join(dir, "x.svc")], {
        SVC_URL: "http://10.0.0.5:8080",
        SVC_API_KEY: "k",
        SVC_ALLOW_INSECURE: "",
      });
      expect(exp.code).toBe(2);
      expect(exp.stderr).toContain("E_INSECURE_URL");
      const settings = join(dir, "settings.json");
      const inst = await cli(["install-hooks", "--settings", settings, "--yes", "--no-mcp", "--url", "http://svc.example.com"], {
        SVC_HOME: join(dir, "home"),
        SVC_ALLOW_INSECURE: "",
      });
      expect(inst.code).toBe(2);
      expect(inst.stderr).toContain("E_INSECURE_URL");
      await expect(readFile(settings)).rejects.toThrow(); // nothing written
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
