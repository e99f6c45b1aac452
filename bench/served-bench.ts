/**
 * @module served-bench — single-client latency of the served path (issue 24, target 5): a real `svc serve`
 * process holding N clustered vectors (the ann bench's generator, bench/engine/vectors.ts) with its
 * approximate index built, queried by one client (undici, one keep-alive connection, one request at a
 * time) with JSON top-10 bodies: p50/p99 through the index and with `exact: true`, and a uWS hello-world
 * (bench/http/hello.ts: reads the body, answers a small JSON) as the ceiling, lanes taking turns every
 * `--turn` queries so noisy neighbours slow each alike. The key is a metered tenant key by default
 * (reserve, charge: what a user pays for); `--admin` queries unmetered. `--cpu-prof DIR` runs the server
 * under `node --cpu-prof` (a .cpuprofile per thread in DIR at exit). Run `npm run build:ts` first.
 *
 *   npx tsx bench/served-bench.ts [--n 60000] [--dim 256] [--queries 300] [--turn 50] [--admin] [--cpu-prof DIR] [--log-level info] [--lanes index,exact,hello] [--server-log FILE]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "undici";
import { ClusteredVectors, exactTopK } from "./engine/vectors.js";
import { Api } from "./http/api.js";
import { FORMATS, upsertBodies } from "./http/bodies.js";
import { cpuSeconds, startChild, type Child } from "./http/child.js";
import { waitForIndex } from "./http/index-wait.js";
import { ingest } from "./http/ingest.js";
import { summarize } from "./stats.js";

const { values: o } = parseArgs({
  options: {
    n: { type: "string", default: "60000" },
    dim: { type: "string", default: "256" },
    queries: { type: "string", default: "300" },
    turn: { type: "string", default: "50" },
    admin: { type: "boolean", default: false },
    "cpu-prof": { type: "string" },
    "log-level": { type: "string", default: "info" },
    lanes: { type: "string", default: "index,exact,hello" },
    "server-log": { type: "string" },
  },
});
const N = Number(o.n),
  DIM = Number(o.dim),
  QUERIES = Number(o.queries),
  TURN = Number(o.turn);
const SEED = 20261122;
const BATCH = 1000;
const MAIN = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const HELLO = fileURLToPath(new URL("./http/hello.ts", import.meta.url));
const log = (s: string) => process.stdout.write(`${s}\n`);

/** One keep-alive connection, one request at a time; returns the body text. */
async function post(client: Client, path: string, headers: Record<string, string>, body: string): Promise<string> {
  const r = await client.request({ method: "POST", path, headers, body });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${text.slice(0, 300)}`);
  return text;
}

const root = mkdtempSync(join(tmpdir(), "svc-served-bench-"));
const dir = join(root, "data");
const children: Child[] = [];
try {
  const prof = o["cpu-prof"] === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", o["cpu-prof"]];
  // The server logs to a file, as in use: a pipe to this process would wake the client for every request's log line.
  const svc = await startChild(
    [...prof, MAIN, "serve", "--port", "0", "--data", dir, "--log-level", o["log-level"]!],
    60_000,
    join(root, "server.log"),
  );
  children.push(svc);
  const adminKey = svc.adminKey;
  if (adminKey === undefined) throw new Error(`svc serve printed no admin key:\n${svc.output()}`);
  const hello = await startChild(["--import", "tsx", HELLO]);
  children.push(hello);
  const admin = new Api(svc.url, adminKey);
  let key = adminKey;
  if (!o.admin) {
    const k = await admin.call("POST", "/v1/admin/keys", { name: "served-bench" });
    await admin.call("POST", `/v1/admin/tenants/${k.tenant as string}/credit`, { usd: 1_000_000 });
    key = k.key as string;
  }
  const api = new Api(svc.url, key);
  log(
    `served bench: ${N.toLocaleString("en-US")} x ${DIM}-d clustered, ${QUERIES} sequential top-10 per lane (turns of ${TURN}), ${o.admin ? "admin key (unmetered)" : "tenant key (metered)"}, log level ${o["log-level"]}; svc pid ${svc.pid}, hello pid ${hello.pid}`,
  );

  const data = new ClusteredVectors(DIM, SEED);
  await api.createIndex("q", DIM);
  const load = await ingest(
    api,
    "q",
    upsertBodies("msgpack-f32", data, N, BATCH),
    Array.from({ length: Math.ceil(N / BATCH) }, (_, i) => Math.min(BATCH, N - i * BATCH)),
    FORMATS["msgpack-f32"].contentType,
    4,
    svc.pid,
  );
  log(`loaded over HTTP in ${load.visibleSeconds.toFixed(1)} s`);
  // The index builds when the namespace passes 50,000 rows; the rows written meanwhile are merged once writes
  // have been idle for ANN_IDLE_MS (engine/ivf.ts): wait until the index covers them.
  const w = await waitForIndex(dir, N, 300_000);
  log(`approximate index over ${w.state.indexedRows.toLocaleString("en-US")} rows ${w.seconds.toFixed(1)} s after the load`);

  const queries = Array.from({ length: QUERIES }, (_, j) => data.get(N + 1_000_000 + j));
  const truth = exactTopK(data, N, queries.slice(0, 20), 10);
  const bodies = queries.map((q) => JSON.stringify({ vector: Array.from(q), topK: 10 }));
  const exactBodies = queries.map((q) => JSON.stringify({ vector: Array.from(q), topK: 10, exact: true }));
  const headers = { "api-key": key, "content-type": "application/json" };
  const path = "/v1/indexes/q/query";
  const svcClient = new Client(svc.url, { pipelining: 1, keepAliveTimeout: 60_000 });
  const helloClient = new Client(hello.url, { pipelining: 1, keepAliveTimeout: 60_000 });

  // Recall of both lanes on the first 20 queries (before any timing).
  for (const [name, bs] of [
    ["index", bodies],
    ["exact", exactBodies],
  ] as const) {
    let hits = 0;
    for (let q = 0; q < truth.length; q++) {
      const m = (JSON.parse(await post(svcClient, path, headers, bs[q]!)) as { matches: Array<{ id: string }> }).matches;
      const got = new Set(m.map((x) => Number(x.id)));
      hits += truth[q]!.filter((i) => got.has(i)).length;
    }
    log(`recall@10 ${name}: ${(hits / (10 * truth.length)).toFixed(3)} (${truth.length} queries vs exact float cosine)`);
  }

  const lanes = [
    { lane: "index", name: "svc top-10, approximate index", client: svcClient, bodies, ms: [] as number[] },
    { lane: "exact", name: "svc top-10, exact: true", client: svcClient, bodies: exactBodies, ms: [] as number[] },
    { lane: "hello", name: "uWS hello-world (same body)", client: helloClient, bodies, ms: [] as number[] },
  ].filter((l) => o.lanes!.split(",").includes(l.lane));
  for (const l of lanes) for (let i = 0; i < 100; i++) await post(l.client, path, headers, l.bodies[i % QUERIES]!); // warm-up
  const cpu0 = cpuSeconds(svc.pid);
  const tRun = performance.now();
  for (let start = 0; start < QUERIES; start += TURN) {
    for (const l of lanes) {
      for (let i = start; i < Math.min(QUERIES, start + TURN); i++) {
        const t = performance.now();
        await post(l.client, path, { ...headers, "x-request-id": `${l.lane}-${i}` }, l.bodies[i]!);
        l.ms.push(performance.now() - t);
      }
    }
  }
  const wall = (performance.now() - tRun) / 1000;
  log(
    `svc server CPU over the timed run: ${((cpuSeconds(svc.pid) - cpu0) / wall).toFixed(2)} cores; load average ${(await import("node:os"))
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  log(`| lane | queries | p50 ms | p90 ms | p99 ms | mean ms |`);
  log(`|---|---:|---:|---:|---:|---:|`);
  for (const l of lanes) {
    const s = summarize(l.ms);
    const p90 = [...l.ms].sort((a, b) => a - b)[Math.floor(0.9 * l.ms.length)]!;
    log(`| ${l.name} | ${s.samples} | ${s.p50.toFixed(3)} | ${p90.toFixed(3)} | ${s.p99.toFixed(3)} | ${s.mean.toFixed(3)} |`);
  }
  // The server's own view (log level info): ms from the request's first callback to its reply being handed to uWS.
  const served = new Map<string, number[]>();
  await new Promise((r) => setTimeout(r, 300)); // info lines are written in batches, at least every 100 ms
  for (const line of svc.output().split("\n")) {
    const m = /"reqId":"(index|exact|hello)-\d+".*"ms":([\d.]+)/.exec(line);
    if (m) served.set(m[1]!, [...(served.get(m[1]!) ?? []), Number(m[2])]);
  }
  if (o["server-log"] !== undefined) writeFileSync(o["server-log"], svc.output());
  for (const [lane, ms] of served) {
    const s = summarize(ms);
    log(`server-side (request log) ${lane}: p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms over ${s.samples}`);
  }
  const p50 = (lane: string) => lanes.find((l) => l.lane === lane)?.ms;
  const [ix, ex] = [p50("index"), p50("exact")];
  if (ix && ex) log(`exact p50 / index p50: ${(summarize(ex).p50 / summarize(ix).p50).toFixed(2)}x`);
  log(`timed run: ${wall.toFixed(1)} s (the last part of a --cpu-prof profile)`);
  await svcClient.close();
  await helloClient.close();
} finally {
  for (const c of children.reverse()) await c.stop();
  rmSync(root, { recursive: true, force: true });
}
