/** OpenTelemetry traces: off by default (no tracer), and when on a request's spans go from the HTTP route through the engine to the scan pool, exported (in-memory exporter here), parented to a client's traceparent. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { tracingFromEnv } from "../../src/cli/serve.js";
import { tracer } from "../../src/probes.js";

const DIM = 8;
const ROWS = 70_000;
const vec = (i: number) => Array.from({ length: DIM }, (_, j) => Math.sin(i * 31 + j));

describe("tracing configuration", () => {
  it("is off unless an OTLP endpoint is configured", () => {
    expect(tracer).toBeNull();
    expect(tracingFromEnv({})).toBeUndefined();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ endpoint: "http://collector:4318" });
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toEqual({ endpoint: "http://c:4318" });
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
  });
});

describe("spans of a traced server", () => {
  let dir: string;
  let server: Server;
  let key: string;
  const exporter = new InMemorySpanExporter();
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-tracing-"));
    server = await startServer({ dataDir: dir, port: 0, threads: 2, tracing: { exporter } });
    key = (await server.keys.create({ tenant: "t", admin: true })).key;
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { "api-key": key, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("nests engine and pool spans under the HTTP route's span, which continues the client's trace", async () => {
    expect(tracer).not.toBeNull();
    expect((await call("POST", "/v1/indexes", { name: "tr", dimension: DIM })).status).toBe(201);
    // past the pool's inline threshold (DEFAULT_INLINE_BELOW rows), so an exact scan is striped over the workers
    for (let i = 0; i < ROWS; i += 10_000) {
      const vectors = Array.from({ length: Math.min(10_000, ROWS - i) }, (_, j) => ({ id: `v${i + j}`, values: vec(i + j) }));
      expect((await call("POST", "/v1/indexes/tr/vectors/upsert", { vectors })).status).toBe(200);
    }
    for (let t = 0; t < 600; t++) {
      const stats = (await (await call("GET", "/v1/indexes/tr/describe_index_stats")).json()) as { totalVectorCount: number };
      if (stats.totalVectorCount === ROWS) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 200)); // the applier's last encode spans end
    exporter.reset();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentId = "00f067aa0ba902b7";
    const r = await call(
      "POST",
      "/v1/indexes/tr/query",
      { vector: vec(7), topK: 3, exact: true },
      { traceparent: `00-${traceId}-${parentId}-01` },
    );
    expect(r.status).toBe(200);
    expect(((await r.json()) as { matches: Array<{ id: string }> }).matches[0]!.id).toBe("v7");

    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const route = byName("POST /v1/indexes/{name}/query");
    expect(route.length).toBe(1);
    expect(route[0]!.spanContext().traceId).toBe(traceId);
    expect(parentOf(route[0]!)).toBe(parentId);
    expect(route[0]!.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/indexes/{name}/query",
      "http.response.status_code": 200,
    });
    const engine = byName("engine.query");
    expect(engine.length).toBe(1);
    expect(parentOf(engine[0]!)).toBe(route[0]!.spanContext().spanId);
    expect(engine[0]!.attributes["svc.scanned"]).toBe(ROWS);
    expect(typeof engine[0]!.attributes["svc.plan"]).toBe("string");
    const pool = byName("pool.task").filter((p) => p.spanContext().traceId === traceId);
    // `exact: true` on a float index scores every row in the calling thread (plan "exact"): no pool task; a 1-bit scan
    // past the inline threshold is striped over the workers, and each task's span nests under the engine's
    if (engine[0]!.attributes["svc.plan"] === "exact") expect(pool).toHaveLength(0);
    else expect(pool.length).toBeGreaterThanOrEqual(1);
    for (const p of pool) expect(parentOf(p)).toBe(engine[0]!.spanContext().spanId);
    expect(spans.every((s) => s.resource.attributes["service.name"] === "svc")).toBe(true);
  });

  it("records a failed request's status and an upsert's engine span", async () => {
    exporter.reset();
    expect((await call("POST", "/v1/indexes/nope/query", { vector: vec(1), topK: 1 })).status).toBe(404);
    expect((await call("POST", "/v1/indexes/tr/vectors/upsert", { vectors: [{ id: "x", values: vec(1) }] })).status).toBe(200);
    const spans = exporter.getFinishedSpans();
    const failed = spans.find((s) => s.name === "POST /v1/indexes/{name}/query")!;
    expect(failed.status.code).toBe(2); // ERROR: the handler threw E_NOT_FOUND
    const upsert = spans.find((s) => s.name === "engine.upsert")!;
    expect(upsert.attributes).toMatchObject({ "svc.namespace": "", "svc.vectors": 1 });
  });
});
