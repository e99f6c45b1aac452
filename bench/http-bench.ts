/** @module http-bench — the real `svc serve` in a child process under HTTP load: top-10 QPS and latency vs a uWS hello-world, and durable ingest per wire format. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ClusteredVectors } from "./engine/vectors.js";
import { Api } from "./http/api.js";
import { FORMATS, queryBody, upsertBodies, type Format } from "./http/bodies.js";
import { startChild, type Child } from "./http/child.js";
import { ingest, type IngestTiming } from "./http/ingest.js";
import { loadRun, type LoadRun } from "./http/load.js";
import { verifyQueries, type Verified } from "./http/verify.js";

export interface IngestResult extends IngestTiming {
  format: Format;
  label: string;
  batch: number;
  clients: number;
  /** Mean request body. */
  bodyMB: number;
  /** Client-side encoding of all bodies, done before the clock starts (not in the rates). */
  encodeSeconds: number;
}

export interface HttpResult {
  n: number;
  dim: number;
  /** Distinct query bodies cycled through by every connection. */
  queryBodies: number;
  warmupSeconds: number;
  /** The queried index was loaded over HTTP (msgpack float32 bins) before the runs. */
  load: IngestTiming;
  verified: Verified;
  query: LoadRun;
  hello: LoadRun;
  /** svc QPS / hello-world QPS under the same load. */
  ratio: number;
  ingest: IngestResult[];
}

export interface HttpBenchOptions {
  n: number;
  ingestN: number;
  dim: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  log: (line: string) => void;
}

const SEED = 20261122;
const BATCH = 1000;
const CLIENTS = 4;
const QUERY_BODIES = 256;
const VERIFY_QUERIES = 8;
const MAIN = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const HELLO = fileURLToPath(new URL("./http/hello.ts", import.meta.url));
const batchCounts = (n: number) => Array.from({ length: Math.ceil(n / BATCH) }, (_, i) => Math.min(BATCH, n - i * BATCH));
const int = (x: number) => Math.round(x).toLocaleString("en-US");

export async function runHttpBench(o: HttpBenchOptions): Promise<HttpResult> {
  const { n, dim, log } = o;
  const dir = mkdtempSync(join(tmpdir(), "svc-http-bench-"));
  const children: Child[] = [];
  try {
    const svc = await startChild([MAIN, "serve", "--port", "0", "--data", dir, "--log-level", "silent"]);
    children.push(svc);
    const key = /^ {2}(svc_\S+)/m.exec(svc.output())?.[1];
    if (key === undefined) throw new Error(`svc serve printed no admin key:\n${svc.output()}`);
    const hello = await startChild(["--import", "tsx", HELLO]);
    children.push(hello);
    const api = new Api(svc.url, key);
    const data = new ClusteredVectors(dim, SEED);
    log(`svc serve (pid ${svc.pid}) at ${svc.url}, admin key (unmetered); uWS hello-world (pid ${hello.pid}) at ${hello.url}`);

    // The queried index: n vectors upserted over HTTP, then checked before any load.
    await api.createIndex("query", dim);
    const load = await ingest(api, "query", upsertBodies("msgpack-f32", data, n, BATCH), batchCounts(n), FORMATS["msgpack-f32"].contentType, CLIENTS, svc.pid);
    log(`loaded ${int(n)} x ${dim}-d over HTTP in ${load.visibleSeconds.toFixed(1)} s`);
    const queries = Array.from({ length: QUERY_BODIES }, (_, j) => data.get(n + 1_000_000 + j));
    const verified = await verifyQueries(api, "query", data, n, queries.slice(0, VERIFY_QUERIES));
    log(`verified: ${verified.queries} queries with recall@10 ${verified.recallAt10.toFixed(3)} vs exact cosine, ${verified.selfQueries} stored vectors find themselves`);

    const bodies = queries.map((q) => queryBody(q));
    const headers = { "api-key": key, "content-type": "application/json" };
    const run = (child: Child) => loadRun({ url: child.url, path: "/v1/indexes/query/query", headers, bodies, connections: o.connections, seconds: o.seconds, warmupSeconds: o.warmupSeconds, serverPid: child.pid });
    const show = (name: string, r: LoadRun) =>
      log(`${name}: ${int(r.qps)} QPS, p50 ${r.latency.p50} / p90 ${r.latency.p90} / p99 ${r.latency.p99} / max ${r.latency.max} ms, ${r.non2xx} non-2xx, ${r.errors} errors; CPU cores: server ${r.serverCores.toFixed(2)}, autocannon ${r.clientCores.toFixed(2)}`);
    log(`\n## top-10 over HTTP: autocannon, ${o.connections} connections, pipelining 1, ${o.warmupSeconds} s warm-up + ${o.seconds} s, ${QUERY_BODIES} JSON query bodies (${(bodies[0]!.length / 1024).toFixed(0)} KB each)`);
    const query = await run(svc);
    show("svc query", query);
    if (query.non2xx + query.errors + query.timeouts > 0) throw new Error("the svc load run had failed requests");
    const helloRun = await run(hello);
    show("uWS hello-world", helloRun);
    const ratio = query.qps / helloRun.qps;
    log(`svc / hello-world: ${ratio.toFixed(3)}`);
    await api.deleteIndex("query");

    log(`\n## durable ingest over HTTP: ${int(o.ingestN)} x ${dim}-d per format into a fresh index, batches of ${BATCH}, ${CLIENTS} clients (bodies encoded before the clock starts)`);
    const results: IngestResult[] = [];
    for (const format of Object.keys(FORMATS) as Format[]) {
      const index = `ingest-${format}`;
      await api.createIndex(index, dim);
      const te = performance.now();
      const bodies = upsertBodies(format, data, o.ingestN, BATCH);
      const encodeSeconds = (performance.now() - te) / 1000;
      const bodyMB = bodies.reduce((s, b) => s + b.length, 0) / bodies.length / 2 ** 20;
      const t = await ingest(api, index, bodies, batchCounts(o.ingestN), FORMATS[format].contentType, CLIENTS, svc.pid);
      results.push({ format, label: FORMATS[format].label, batch: BATCH, clients: CLIENTS, bodyMB, encodeSeconds, ...t });
      log(`${FORMATS[format].label}: ${int(t.ackedPerSec)} vectors/s acknowledged, ${int(t.visiblePerSec)}/s visible (${bodyMB.toFixed(1)} MB bodies; server ${t.serverCores.toFixed(2)} cores, client ${t.clientCores.toFixed(2)})`);
      await api.deleteIndex(index);
    }
    return { n, dim, queryBodies: QUERY_BODIES, warmupSeconds: o.warmupSeconds, load, verified, query, hello: helloRun, ratio, ingest: results };
  } finally {
    for (const c of children.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
