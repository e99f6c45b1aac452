/**
 * Cluster mode against single node, in one run on this machine (issue 23). Log level: one Collection
 * on the local WAL (durability batch: fsync before the ack) against one on a JetStream stream with 3
 * replicas (3 nats-servers on loopback: the ack means 2 of 3 have it) — ack latency of a one-vector
 * upsert (sequential), and durable ingest (batches of 100, 8 in flight).
 *
 *   npx tsx bench/cluster-bench.ts [--dim 256] [--acks 400] [--ingest 20000]
 */
import { connect } from "@nats-io/transport-node";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ensureLogStream, jetStreamLog } from "../src/cluster/jetstream-log.js";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import type { OpenLog } from "../src/store/log.js";
import { startNatsCluster } from "../test/cluster/nats-cluster.js";
import { summarize } from "./stats.js";

const { values: o } = parseArgs({ options: { dim: { type: "string", default: "256" }, acks: { type: "string", default: "400" }, ingest: { type: "string", default: "20000" } } });
const DIM = Number(o.dim), ACKS = Number(o.acks), INGEST = Number(o.ingest), BATCH = 100, IN_FLIGHT = 8;
const log = (s: string) => process.stdout.write(`${s}\n`);

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const vec = (id: string) => ({ id, values: Float32Array.from({ length: DIM }, rand), metadata: { g: id.length % 5 } });

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
        await c.upsert("", Array.from({ length: Math.min(BATCH, INGEST - start) }, (_, j) => vec(`i${start + j}`)));
      }
    }),
  );
  const ingestPerSec = (INGEST / (performance.now() - t0)) * 1000;
  const ack = summarize(acks);
  const run = { name, ackP50Ms: ack.p50, ackP99Ms: ack.p99, ingestPerSec };
  log(`${name.padEnd(28)} ack p50 ${run.ackP50Ms.toFixed(2)} ms  p99 ${run.ackP99Ms.toFixed(2)} ms  ingest ${Math.round(ingestPerSec).toLocaleString("en-US")} vectors/s`);
  return run;
}

const root = mkdtempSync(join(tmpdir(), "svc-cluster-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const nats = await startNatsCluster(3, "svc-bench");
const nc = await connect({ servers: nats.urls, maxReconnectAttempts: -1 });
try {
  log(`cluster bench: ${DIM}-d vectors, ${ACKS} sequential one-vector upserts, ingest ${INGEST} in batches of ${BATCH}, ${IN_FLIGHT} in flight`);
  const open = (dir: string, openLog?: OpenLog) => Collection.open(join(root, dir), { kernels, pool, dimension: DIM, metric: "cosine", durability: "batch", openLog });
  const runs: LogRun[] = [];
  const wal = await open("wal");
  runs.push(await measure("single node: WAL (fsync)", wal));
  await wal.close();
  await ensureLogStream(nc, { replicas: 3 });
  const js = await open("js", jetStreamLog(nc, { name: "bench" }));
  runs.push(await measure("cluster: JetStream R3", js));
  await js.close();
  const [w, j] = runs as [LogRun, LogRun];
  log(`ratios (JetStream / WAL): ack p50 ${(j.ackP50Ms / w.ackP50Ms).toFixed(2)}x, p99 ${(j.ackP99Ms / w.ackP99Ms).toFixed(2)}x, ingest ${(j.ingestPerSec / w.ingestPerSec).toFixed(2)}x`);
} finally {
  await nc.close();
  await nats.stop();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
}
