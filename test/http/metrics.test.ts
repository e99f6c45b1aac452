/** /metrics as an operator scrapes it: it parses (every sample in a declared family), names follow Prometheus rules, the method has its own label, HEAD answers, and the domain metrics are there and move. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import fc from "fast-check";
import { Counter, Histogram, Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { Collection } from "../../src/engine/collection.js";
import { HttpMetrics } from "../../src/http/metrics.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

/** Parse the Prometheus text format strictly: HELP and TYPE before samples; every sample belongs to a declared family. */
function parse(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const owner = (name: string): Family | undefined => {
    for (const suffix of ["", "_bucket", "_sum", "_count"]) {
      if (suffix !== "" && !name.endsWith(suffix)) continue;
      const f = families.get(name.slice(0, name.length - suffix.length));
      if (f && (suffix === "" || f.type === "histogram" || f.type === "summary")) return f;
    }
    return undefined;
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][\w:]*) (.*)$/.exec(line);
    if (m) {
      const f = families.get(m[2]!) ?? { type: "", help: "", samples: [] };
      if (m[1] === "HELP") f.help = m[3]!;
      else f.type = m[3]!;
      families.set(m[2]!, f);
      continue;
    }
    m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? "";
    const rest = body.replace(/(\w+)="((?:[^"\\]|\\.)*)",?/g, (_, k: string, v: string) => ((labels[k] = v), ""));
    if (rest !== "") throw new Error(`bad labels in: ${line}`);
    const value = /^(Nan|NaN)$/.test(m[3]!) ? NaN : Number(m[3]!.replace("Inf", "Infinity"));
    if (!/^(Nan|NaN)$/.test(m[3]!) && Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
    const f = owner(m[1]!);
    if (!f) throw new Error(`sample of an undeclared family: ${line}`);
    f.samples.push({ name: m[1]!, labels, value });
  }
  return families;
}

const sum = (f: Family | undefined, name: string, match: Record<string, string> = {}) =>
  (f?.samples ?? [])
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

describe("/metrics on a server", () => {
  let dir: string;
  let server: Server;
  let admin: string;
  const scrape = async () => {
    const r = await fetch(`${server.url}/metrics`);
    expect(r.status).toBe(200);
    return parse(await r.text());
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-metrics-"));
    server = await startServer({ dataDir: dir, port: 0, durability: "batch" });
    admin = (await server.keys.create({ tenant: "ops", admin: true })).key;
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it("parses; counters end in _total and nothing else does; every family has help", async () => {
    const families = await scrape();
    expect(families.size).toBeGreaterThan(20);
    for (const [name, f] of families) {
      expect(f.help, name).not.toBe("");
      expect(["counter", "gauge", "histogram", "summary"], name).toContain(f.type);
      if (f.type === "counter") expect(name, "a counter's name ends in _total").toMatch(/_total$/);
      else expect(name, `a ${f.type} is not named *_total`).not.toMatch(/_total$/);
    }
    // what the dropped *_total gauges summed is still there, by type
    expect(families.get("svc_nodejs_active_handles")?.type).toBe("gauge");
    for (const name of [
      "svc_pool_worker_heap_bytes",
      "svc_kernels_shared_memory_bytes",
      "svc_process_array_buffers_bytes",
      "svc_store_damage",
      "svc_wal_fsync_seconds",
      "svc_maintenance_duration_seconds",
      "svc_index_rows",
      "svc_mcp_sessions",
    ])
      expect(families.has(name), name).toBe(true);
  });

  it("counts requests with the method in its own label, HEAD included", async () => {
    const head = await fetch(`${server.url}/metrics`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(Number(head.headers.get("content-length"))).toBeGreaterThan(1000);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    expect((await fetch(`${server.url}/v1/health`, { method: "HEAD" })).status).toBe(200);
    await fetch(`${server.url}/no/such/path`, { method: "DELETE" });
    const f = (await scrape()).get("svc_http_requests_total")!;
    for (const s of f.samples) {
      expect(s.labels.method, JSON.stringify(s.labels)).toMatch(/^[A-Z]+$/);
      expect(s.labels.route, "the route label holds no method").not.toMatch(/^[A-Z]+ /);
    }
    expect(sum(f, "svc_http_requests_total", { method: "HEAD", route: "/metrics", status: "200" })).toBe(1);
    expect(sum(f, "svc_http_requests_total", { method: "GET", route: "/metrics", status: "200" })).toBeGreaterThanOrEqual(1); // the scrape of the first test
    expect(sum(f, "svc_http_requests_total", { method: "DELETE", route: "unmatched", status: "404" })).toBe(1);
    const d = (await scrape()).get("svc_http_request_duration_seconds")!;
    expect(sum(d, "svc_http_request_duration_seconds_count", { method: "HEAD", route: "/v1/health" })).toBe(1);
  });

  it("reports WAL fsync latency, rows per index and open MCP sessions", async () => {
    const headers = { "api-key": admin, "content-type": "application/json" };
    expect(
      (await fetch(`${server.url}/v1/indexes`, { method: "POST", headers, body: JSON.stringify({ name: "m", dimension: 4 }) })).status,
    ).toBe(201);
    const before = await scrape();
    const vectors = Array.from({ length: 7 }, (_, i) => ({ id: `v${i}`, values: [1, i, 0, 1] }));
    expect(
      (await fetch(`${server.url}/v1/indexes/m/vectors/upsert`, { method: "POST", headers, body: JSON.stringify({ vectors }) })).status,
    ).toBe(200);
    const after = await scrape();
    expect(sum(after.get("svc_wal_fsync_seconds"), "svc_wal_fsync_seconds_count")).toBeGreaterThan(
      sum(before.get("svc_wal_fsync_seconds"), "svc_wal_fsync_seconds_count"),
    );
    expect(after.get("svc_wal_fsync_seconds")!.type).toBe("histogram");
    expect(sum(after.get("svc_index_rows"), "svc_index_rows", { tenant: "ops", index: "m" })).toBe(7);

    expect(sum(after.get("svc_mcp_sessions"), "svc_mcp_sessions")).toBe(0);
    const client = new Client({ name: "metrics-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { "api-key": admin } } }),
    );
    try {
      expect(sum((await scrape()).get("svc_mcp_sessions"), "svc_mcp_sessions")).toBe(1);
    } finally {
      await client.close();
    }
    // single node: no cluster gauges' samples
    expect(after.has("svc_nats_connected")).toBe(false);
  });
});

describe("request metrics counted locally, handed to prom-client at a scrape", () => {
  /** The four request families' text from a registry's exposition. */
  const families = (text: string) =>
    text
      .split("\n\n")
      .map((block) => block.trimEnd())
      .filter((block) =>
        /^# HELP svc_(http_(requests_total|request_duration_seconds|request_bytes_total|response_bytes_total)|vectors_(written|scanned)_total) /.test(
          block,
        ),
      )
      .join("\n\n");

  it("gives the same exposition as prom-client's own Counter and Histogram fed the same requests", async () => {
    const methods = ["GET", "HEAD", "POST", "DELETE", "OTHER"];
    const routes = ["/v1/indexes/{name}/query", "/metrics", "unmatched", 'a"odd\\route\nname'];
    const request = fc.record({
      method: fc.constantFrom(...methods),
      route: fc.constantFrom(...routes),
      status: fc.constantFrom(200, 201, 400, 404, 413, 500, 503),
      // bucket bounds exactly, just past them, 0, and beyond the largest
      seconds: fc.oneof(
        fc.constantFrom(0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 10.5, 1e-9),
        fc.double({ min: 0, max: 20, noNaN: true }),
      ),
      bytesIn: fc.nat(1 << 20),
      bytesOut: fc.nat(1 << 20),
      written: fc.nat(1000),
      scanned: fc.nat(1 << 20),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { maxLength: 200 }), fc.nat(200), async (requests, scrapeAt) => {
        const m = new HttpMetrics();
        const ref = new Registry();
        const counter = new Counter({
          name: "svc_http_requests_total",
          help: "HTTP requests answered, by method, route (the path template, or 'unmatched') and status",
          labelNames: ["method", "route", "status"],
          registers: [ref],
        });
        const histogram = new Histogram({
          name: "svc_http_request_duration_seconds",
          help: "Time from request to reply, by method and route",
          labelNames: ["method", "route"],
          buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
          registers: [ref],
        });
        const bytesIn = new Counter({ name: "svc_http_request_bytes_total", help: "Request body bytes received", registers: [ref] });
        const bytesOut = new Counter({ name: "svc_http_response_bytes_total", help: "Response body bytes sent", registers: [ref] });
        const written = new Counter({ name: "svc_vectors_written_total", help: "Vectors written (upsert, update)", registers: [ref] });
        const scanned = new Counter({ name: "svc_vectors_scanned_total", help: "Vectors scanned by queries", registers: [ref] });
        try {
          for (const [i, r] of requests.entries()) {
            if (i === scrapeAt) expect(families(await m.text())).toBe(families(await ref.metrics())); // a scrape between requests changes nothing after it
            m.observe(r.method, r.route, r.status, r.seconds, r.bytesIn, r.bytesOut);
            counter.inc({ method: r.method, route: r.route, status: String(r.status) });
            histogram.observe({ method: r.method, route: r.route }, r.seconds);
            if (r.bytesIn) bytesIn.inc(r.bytesIn);
            if (r.bytesOut) bytesOut.inc(r.bytesOut);
            m.usage({ written: r.written, scanned: r.scanned });
            if (r.written) written.inc(r.written);
            if (r.scanned) scanned.inc(r.scanned);
          }
          const mine = families(await m.text());
          expect(mine).toBe(families(await ref.metrics()));
          expect(mine).toContain("# TYPE svc_http_request_duration_seconds histogram");
          if (requests.some((r) => r.scanned > 0)) expect(mine).toContain("# TYPE svc_vectors_scanned_total counter");
          expect(families(await m.text())).toBe(mine); // a scrape does not count twice
        } finally {
          m.close();
        }
      }),
      { seed: 3202, numRuns: 60 },
    );
  });
});

describe("compaction and index-build metrics", () => {
  it("times each rewrite by kind and outcome; _count counts them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-metrics-coll-"));
    const kernels = Kernels.create();
    const pool = new ScanPool(kernels, { threads: 1 });
    const metrics = new HttpMetrics();
    const c = await Collection.open(dir, { kernels, pool, dimension: 8 });
    try {
      const rows = Array.from({ length: 64 }, (_, i) => ({
        id: `r${i}`,
        values: Array.from({ length: 8 }, (_, j) => Math.sin(i * 8 + j)),
      }));
      await c.upsert("ns", rows);
      await c.settled();
      await c.delete("ns", { ids: ["r1", "r2", "r3"] });
      await c.compact("ns");
      await c.buildIndex("ns");
      const m = parse(await metrics.text()).get("svc_maintenance_duration_seconds")!;
      expect(m.type).toBe("histogram");
      expect(sum(m, "svc_maintenance_duration_seconds_count", { kind: "compaction", outcome: "ok" })).toBe(1);
      expect(sum(m, "svc_maintenance_duration_seconds_count", { kind: "index_build", outcome: "ok" })).toBe(1);
      expect(sum(m, "svc_maintenance_duration_seconds_sum", { kind: "index_build" })).toBeGreaterThan(0);
    } finally {
      await c.close();
      metrics.close();
      await pool.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
