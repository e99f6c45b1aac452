/**
 * Log retention (issue 31 item 6; run by hand): `--upserts` upserts of `--dim`-d vectors over the same
 * `--ids` ids through two svc nodes (in this process, each its own NATS connection, registry and
 * ClusterIndexes; one index of 4 shards x 2 replicas) on a real 3-server JetStream cluster, with shard
 * snapshots off (the stream keeps every frame) and on (default policy: a snapshot per max(1 MiB,
 * live bytes) read, looked at every `--check-ms`). Then a third node joins: the time until it has
 * opened its shards and holds the same rows (full replay of the stream vs snapshot + tail).
 *
 *   npx tsx bench/retention-bench.ts [--ids 10000] [--upserts 100000] [--dim 128] [--batch 100] [--check-ms 1000] [--modes off,on]
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ClusterIndexes } from "../src/cluster/catalog.js";
import { LOG_STREAM } from "../src/cluster/jetstream-log.js";
import { NodeRegistry } from "../src/cluster/nodes.js";
import { Snapshots } from "../src/cluster/snapshots.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { startNatsCluster, type NatsCluster } from "../test/cluster/nats-cluster.js";

const { values: o } = parseArgs({
  options: {
    ids: { type: "string", default: "10000" },
    upserts: { type: "string", default: "100000" },
    dim: { type: "string", default: "128" },
    batch: { type: "string", default: "100" },
    "check-ms": { type: "string", default: "1000" },
    modes: { type: "string", default: "off,on" },
  },
});
const IDS = Number(o.ids),
  UPSERTS = Number(o.upserts),
  DIM = Number(o.dim),
  BATCH = Number(o.batch),
  CHECK_MS = Number(o["check-ms"]);
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1_000_000 });

let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;

interface Node {
  nc: NatsConnection;
  registry: NodeRegistry;
  indexes: ClusterIndexes;
}

async function startNode(cluster: NatsCluster, root: string, i: number, snapshots: boolean): Promise<Node> {
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const registry = await NodeRegistry.join(
    nc,
    { id: `n${i}`, url: `http://127.0.0.1:${9200 + i}`, startedAt: Date.now() },
    { heartbeatMs: 200, ttlMs: 2000 },
  );
  const snaps = snapshots ? { store: await Snapshots.open(nc), checkMs: CHECK_MS } : undefined;
  const indexes = await ClusterIndexes.open({ nc, registry, dataDir: join(root, `n${i}`), kernels, pool, snapshots: snaps });
  return { nc, registry, indexes };
}

const until = async (cond: () => boolean | Promise<boolean>, ms: number) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
};

async function run(mode: "off" | "on") {
  const cluster = await startNatsCluster(3, `svc-retention-bench-${mode}`);
  const root = mkdtempSync(join(tmpdir(), "svc-retention-bench-"));
  const nodes: Node[] = [];
  try {
    for (let i = 0; i < 2; i++) nodes.push(await startNode(cluster, root, i, mode === "on"));
    await until(() => nodes.every((n) => n.registry.live.length === 2), 20_000);
    await nodes[0]!.indexes.create("t", { name: "bench", dimension: DIM, spec: { shards: 4 } });
    const jsm = await jetstreamManager(nodes[0]!.nc);
    const bytes = async () => (await jsm.streams.info(LOG_STREAM)).state.bytes;
    const t0 = performance.now();
    let done = 0;
    for (let k = 0; done < UPSERTS; k++) {
      const n = Math.min(BATCH, UPSERTS - done);
      const vs = Array.from({ length: n }, (_, j) => ({
        id: `v${(done + j) % IDS}`,
        values: Array.from({ length: DIM }, rand),
        metadata: { k },
      }));
      await nodes[k % 2]!.indexes.use("t", "bench", (ix) => ix.upsert("", vs));
      done += n;
    }
    const writeS = (performance.now() - t0) / 1000;
    const live = IDS * DIM * 4;
    const atEnd = await bytes();
    // on: wait for the snapshot takers to catch up with the burst (a snapshot and purge after the writes stop)
    if (mode === "on") await until(async () => (await bytes()) <= 4 * live, 120_000);
    await new Promise((r) => setTimeout(r, 3 * CHECK_MS));
    const settled = await bytes();
    const info = await jsm.streams.info(LOG_STREAM);
    // a third node joins and takes its rendezvous share of the 4 shards
    const t1 = performance.now();
    nodes.push(await startNode(cluster, root, 2, mode === "on"));
    const n2 = nodes[2]!;
    await until(() => n2.registry.live.length === 3, 20_000);
    const keys = nodes[0]!.indexes.shards.shards.concat(nodes[1]!.indexes.shards.shards).filter((k, i, a) => a.indexOf(k) === i);
    const mine = keys.filter((k) => n2.registry.owners(k, 2).includes("n2"));
    const ok = await until(() => mine.every((k) => n2.indexes.shards.replica(k) !== undefined), 600_000);
    const catchUpMs = performance.now() - t1;
    const replayed = mine.map((k) => n2.indexes.shards.replica(k)?.recovery.frames ?? -1);
    const rows = mine.map((k) => n2.indexes.shards.replica(k)?.count("") ?? -1);
    console.log(
      JSON.stringify({
        mode,
        ids: IDS,
        upserts: UPSERTS,
        dim: DIM,
        batch: BATCH,
        writeSeconds: +writeS.toFixed(1),
        liveBytes: live,
        streamBytesAtEnd: atEnd,
        streamBytesSettled: settled,
        ratioSettled: +(settled / live).toFixed(2),
        messages: info.state.messages,
        newNodeShards: mine.length,
        catchUpMs: ok ? Math.round(catchUpMs) : null,
        framesReplayed: replayed,
        rowsOnNewNode: rows,
      }),
    );
  } finally {
    for (const n of nodes) {
      await n.registry.leave().catch(() => undefined);
      await n.indexes.close().catch(() => undefined);
      await n.nc.close().catch(() => undefined);
    }
    await cluster.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

for (const m of o.modes!.split(",")) await run(m as "off" | "on");
await pool.close();
