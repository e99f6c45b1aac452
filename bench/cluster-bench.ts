/**
 * Cluster mode against single node, in one run on this machine (issue 23). Log level: one Collection
 * on the local WAL (durability batch: fsync before the ack) against one on a JetStream stream with 3
 * replicas (3 nats-servers on loopback: the ack means 2 of 3 have it) — ack latency of a one-vector
 * upsert (sequential), and durable ingest (batches of 100, 8 in flight). Served path: one `svc serve`
 * process against three `svc serve --cluster` nodes (the index in 4 shards, 2 replicas each) on the
 * same NATS cluster, over HTTP — ingest vectors/s (JSON, batches of 100, 8 in flight, spread over the
 * nodes), and sequential top-10 query latency through one node (fanned out to every shard, merged).
 * Log streams (issue 31 item 7): write throughput of LOGS shard logs (one frame in flight each, as
 * a shard replica writes; a third of them on each of three connections, one per nats-server) when
 * every log is on one stream against the logs going round three streams (svc_log, svc_log_1,
 * svc_log_2, their leaders on three servers), with one-vector frames and 100-vector frames.
 * The served path also times one-vector upserts and queries with 8 in flight spread over the nodes
 * (the issue's "through 3 nodes vs one single-node server" ratios).
 * Run `npm run build:ts` first (the processes run dist/).
 *
 *   npx tsx bench/cluster-bench.ts [--dim 256] [--acks 400] [--ingest 20000] [--n 20000] [--queries 300] [--logs 12] [--stream-ms 6000] [--ones 3000] [--part all|streams]
 */
import { connect } from "@nats-io/transport-node";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ensureLogStream, ensureLogStreams, jetStreamLog, logStreamName, LOG_STREAMS } from "../src/cluster/jetstream-log.js";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import type { OpenLog } from "../src/store/log.js";
import { startNatsCluster } from "../test/cluster/nats-cluster.js";
import { callNode, startSvcCluster } from "../test/cluster/svc-cluster.js";
import { startServerProcess } from "../test/e2e/server-process.js";
import { summarize } from "./stats.js";

const { values: o } = parseArgs({
  options: {
    dim: { type: "string", default: "256" },
    acks: { type: "string", default: "400" },
    ingest: { type: "string", default: "20000" },
    n: { type: "string", default: "20000" },
    queries: { type: "string", default: "300" },
    part: { type: "string", default: "all" },
    logs: { type: "string", default: "12" },
    "stream-ms": { type: "string", default: "6000" },
    ones: { type: "string", default: "3000" },
  },
});
const DIM = Number(o.dim),
  ACKS = Number(o.acks),
  INGEST = Number(o.ingest),
  N = Number(o.n),
  QUERIES = Number(o.queries),
  BATCH = 100,
  IN_FLIGHT = 8;
const LOGS = Number(o.logs),
  STREAM_MS = Number(o["stream-ms"]),
  ONES = Number(o.ones);
const log = (s: string) => process.stdout.write(`${s}\n`);

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const vec = (id: string) => ({ id, values: Float32Array.from({ length: DIM }, rand), metadata: { g: id.length % 5 } });

/** A vector as JSON sends it (numbers, not a Float32Array). */
const json = (v: ReturnType<typeof vec>) => ({ ...v, values: Array.from(v.values) });

export interface LogRun {
  name: string;
  ackP50Ms: number;
  ackP99Ms: number;
  ingestPerSec: number;
}

async function measure(name: string, c: Collection): Promise<LogRun> {
  for (let i = 0; i < 20; i++) await c.upsert("", [vec(`w${i}`)]); // warm-up
  const acks: number[] = [];
  for (let i = 0; i < ACKS; i++) {
    const t = performance.now();
    await c.upsert("", [vec(`a${i}`)]);
    acks.push(performance.now() - t);
  }
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (;;) {
        const start = next;
        next += BATCH;
        if (start >= INGEST) return;
        await c.upsert(
          "",
          Array.from({ length: Math.min(BATCH, INGEST - start) }, (_, j) => vec(`i${start + j}`)),
        );
      }
    }),
  );
  const ingestPerSec = (INGEST / (performance.now() - t0)) * 1000;
  const ack = summarize(acks);
  const run = { name, ackP50Ms: ack.p50, ackP99Ms: ack.p99, ingestPerSec };
  log(
    `${name.padEnd(28)} ack p50 ${run.ackP50Ms.toFixed(2)} ms  p99 ${run.ackP99Ms.toFixed(2)} ms  ingest ${Math.round(ingestPerSec).toLocaleString("en-US")} vectors/s`,
  );
  return run;
}

const root = mkdtempSync(join(tmpdir(), "svc-cluster-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const nats = await startNatsCluster(3, "svc-bench");
const nc = await connect({ servers: nats.urls, maxReconnectAttempts: -1 });
try {
  log(
    `cluster bench: ${DIM}-d vectors, ${ACKS} sequential one-vector upserts, ingest ${INGEST} in batches of ${BATCH}, ${IN_FLIGHT} in flight`,
  );
  const open = (dir: string, openLog?: OpenLog) =>
    Collection.open(join(root, dir), { kernels, pool, dimension: DIM, metric: "cosine", durability: "batch", openLog });
  const runs: LogRun[] = [];
  if (o.part === "all") {
    const wal = await open("wal");
    runs.push(await measure("single node: WAL (fsync)", wal));
    await wal.close();
    await ensureLogStream(nc, { replicas: 3 });
    const js = await open("js", jetStreamLog(nc, { name: "bench" }));
    runs.push(await measure("cluster: JetStream R3", js));
    await js.close();
    // catch-up: a new replica (an empty directory) replays the log's whole subject into its collection
    const t1 = performance.now();
    const fresh = await open("js-new", jetStreamLog(nc, { name: "bench" }));
    const replaySec = (performance.now() - t1) / 1000;
    const replayed = fresh.stats().totalVectorCount;
    log(
      `catch-up of a new replica: ${replayed.toLocaleString("en-US")} vectors (${ACKS + 20} one-vector frames, ${Math.ceil(INGEST / BATCH)} of ${BATCH}) replayed in ${replaySec.toFixed(2)} s: ${Math.round(replayed / replaySec).toLocaleString("en-US")} vectors/s`,
    );
    await fresh.close();
    const [w, j] = runs as [LogRun, LogRun];
    log(
      `ratios (JetStream / WAL): ack p50 ${(j.ackP50Ms / w.ackP50Ms).toFixed(2)}x, p99 ${(j.ackP99Ms / w.ackP99Ms).toFixed(2)}x, ingest ${(j.ingestPerSec / w.ingestPerSec).toFixed(2)}x`,
    );
  }

  const leaders = await ensureLogStreams(nc, { replicas: 3 });
  log(
    `\nlog streams: ${LOGS} logs, one frame in flight each, ${STREAM_MS} ms per run; leaders ${leaders.map((l, i) => `${logStreamName(i)}@${l}`).join(", ")}`,
  );
  const conns = await Promise.all(nats.urls.map((_, i) => connect({ servers: [nats.urls[i]!, ...nats.urls], maxReconnectAttempts: -1 })));
  try {
    for (const vectors of [1, BATCH]) {
      const one = await streamRun(conns, 1, vectors);
      const three = await streamRun(conns, LOG_STREAMS, vectors);
      log(`  ${LOG_STREAMS} streams / 1 stream, ${vectors}-vector frames: ${(three / one).toFixed(2)}x`);
    }
  } finally {
    for (const c of conns) await c.close();
  }
} finally {
  await nc.close();
  await nats.stop();
}

/** CPU seconds (user + system) each nats-server of this process's cluster has used, by server name (n0, n1, ...), from /proc. */
function natsCpu(): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const m = cmd.includes(`svc-nats-${process.pid}-`) ? /\/(n\d+)\.conf/.exec(cmd) : null;
      if (m === null) continue;
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      out.set(m[1]!, (Number(f[11]) + Number(f[12])) / 100); // utime, stime in clock ticks (100/s)
    } catch {
      // a process that went meanwhile
    }
  }
  return out;
}

/** Frames/s acknowledged by LOGS logs (log i on connection i mod 3 and stream i mod `streams`), each appending `vectors`-vector frames one at a time for STREAM_MS. */
async function streamRun(conns: Awaited<ReturnType<typeof connect>>[], streams: number, vectors: number): Promise<number> {
  const run = `s${streams}v${vectors}`;
  const logs = await Promise.all(
    Array.from(
      { length: LOGS },
      async (_, i) =>
        (
          await jetStreamLog(conns[i % conns.length]!, { name: `tp.${run}.${i}`, stream: logStreamName(i % streams) })({
            onFrame: () => undefined,
          })
        ).log,
    ),
  );
  const body = { ns: "", vectors: Array.from({ length: vectors }, (_, k) => ({ id: `x${k}`, values: vec("x").values })) };
  for (const l of logs) await l.append(1, body); // warm-up
  let frames = 0;
  const acks: number[] = [];
  const cpu0 = natsCpu();
  const end = performance.now() + STREAM_MS;
  const t0 = performance.now();
  await Promise.all(
    logs.map(async (l) => {
      while (performance.now() < end) {
        const t = performance.now();
        await l.append(1, body);
        acks.push(performance.now() - t);
        frames++;
      }
    }),
  );
  const perSec = (frames / (performance.now() - t0)) * 1000;
  const cpu = [...natsCpu()].map(([n, c]) => `${n} ${Math.round(((c - (cpu0.get(n) ?? 0)) / frames) * 1e6)}`).join(", ");
  for (const l of logs) await l.close();
  const a = summarize(acks);
  log(
    `  ${String(streams).padStart(2)} stream(s), ${String(vectors).padStart(3)}-vector frames: ${Math.round(perSec).toLocaleString("en-US").padStart(6)} frames/s (${Math.round(perSec * vectors).toLocaleString("en-US")} vectors/s), ack p50 ${a.p50.toFixed(2)} ms p99 ${a.p99.toFixed(2)} ms; nats-server CPU µs/frame: ${cpu}`,
  );
  return perSec;
}

export interface ServedRun {
  name: string;
  ingestPerSec: number;
  queryP50Ms: number;
  queryP99Ms: number;
  /** One-vector upserts/s, IN_FLIGHT at once, spread over the nodes. */
  onesPerSec: number;
  /** Top-10 queries/s, IN_FLIGHT at once, spread over the nodes. */
  queriesPerSec: number;
}

/** `count` calls of `call(i)`, IN_FLIGHT at once; calls/s. */
async function rate(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let i = next++; i < count; i = next++) await call(i);
    }),
  );
  return (count / (performance.now() - t0)) * 1000;
}

/** Load N vectors through `urls` (round robin), then time sequential top-10 queries through urls[last]. */
async function served(name: string, urls: string[], key: string | null): Promise<ServedRun> {
  const post = async (i: number, path: string, body: unknown) => {
    const r = await callNode(urls[i % urls.length]!, "POST", path, body, key);
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  await post(0, "/v1/indexes", {
    name: "bench",
    dimension: DIM,
    metric: "cosine",
    spec: { serverless: { cloud: "aws", region: "us-east-1" } },
  });
  for (let i = 0; i < urls.length; i++)
    for (let t = 0; (await callNode(urls[i]!, "GET", "/v1/indexes/bench/describe_index_stats", undefined, key)).status !== 200; t++)
      await new Promise((r) => setTimeout(r, 100));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, w) => {
      for (let b = w; ; b++) {
        const start = next;
        next += BATCH;
        if (start >= N) return;
        await post(b, "/v1/indexes/bench/vectors/upsert", {
          vectors: Array.from({ length: Math.min(BATCH, N - start) }, (_, j) => json(vec(`v${start + j}`))),
        });
      }
    }),
  );
  const ingestPerSec = (N / (performance.now() - t0)) * 1000;
  const last = urls.length - 1;
  while (((await post(last, "/v1/indexes/bench/describe_index_stats", {})).totalVectorCount as number) < N)
    await new Promise((r) => setTimeout(r, 100));
  const qs = Array.from({ length: 64 }, () => json(vec("")).values);
  for (let i = 0; i < 30; i++) await post(last, "/v1/indexes/bench/query", { vector: qs[i % 64], topK: 10 });
  const lat: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const t = performance.now();
    await post(last, "/v1/indexes/bench/query", { vector: qs[i % 64], topK: 10 });
    lat.push(performance.now() - t);
  }
  const q = summarize(lat);
  const queriesPerSec = await rate(QUERIES * 2, (i) => post(i, "/v1/indexes/bench/query", { vector: qs[i % 64], topK: 10 }));
  const onesPerSec = await rate(ONES, (i) => post(i, "/v1/indexes/bench/vectors/upsert", { vectors: [json(vec(`o${i}`))] }));
  const run = { name, ingestPerSec, queryP50Ms: q.p50, queryP99Ms: q.p99, onesPerSec, queriesPerSec };
  log(
    `${name.padEnd(36)} ingest ${Math.round(ingestPerSec).toLocaleString("en-US")} vectors/s  query p50 ${q.p50.toFixed(2)} ms  p99 ${q.p99.toFixed(2)} ms  ${Math.round(queriesPerSec)} queries/s  ${Math.round(onesPerSec)} one-vector upserts/s (${IN_FLIGHT} in flight)`,
  );
  return run;
}

if (o.part !== "all") {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}
log(`\nserved path: ${N} x ${DIM}-d over HTTP (JSON), ${QUERIES} sequential top-10 queries`);
const single = await startServerProcess({ args: ["--no-auth"] });
let one: ServedRun;
try {
  one = await served("single node (WAL)", [single.url], null);
} finally {
  await single.dispose();
}
const cluster = await startSvcCluster(3);
try {
  const three = await served("3 nodes, 4 shards x 2 replicas (R3 log)", cluster.urls, cluster.adminKey);
  log(
    `ratios (cluster / single): batches ${(three.ingestPerSec / one.ingestPerSec).toFixed(2)}x, one-vector upserts ${(three.onesPerSec / one.onesPerSec).toFixed(2)}x, queries/s ${(three.queriesPerSec / one.queriesPerSec).toFixed(2)}x; query p50 ${(three.queryP50Ms / one.queryP50Ms).toFixed(2)}x, p99 ${(three.queryP99Ms / one.queryP99Ms).toFixed(2)}x`,
  );
} finally {
  await cluster.stop();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
}
