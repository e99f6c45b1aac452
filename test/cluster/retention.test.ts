/**
 * Log retention (issue 31 item 6) on a real 3-server JetStream cluster, svc "nodes" in this process
 * (each its own NATS connection, NodeRegistry, ClusterIndexes with shard snapshots, data dir):
 * steady overwrites of the same ids keep the stream at most 5x the live bytes (snapshots in the
 * object store, each subject purged up to its older snapshot's floor); a node added after the purge catches up from the
 * snapshot and answers the same top-k as the others; a snapshot that does not check (cut short,
 * another format) is never used, and nothing is purged while no snapshot reads.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrices } from "../../src/account/prices.js";
import { ClusterIndexes } from "../../src/cluster/catalog.js";
import { ensureLogStream, LOG_STREAMS } from "../../src/cluster/jetstream-log.js";
import { NodeRegistry, rank } from "../../src/cluster/nodes.js";
import { indexStreams, shardLogSubject, type ClusterIndexRecord } from "../../src/cluster/shards.js";
import { encodeSnapshot, SNAPSHOT_BUCKET, Snapshots } from "../../src/cluster/snapshots.js";
import { ClusterWallets, LEDGER_STREAM, LEDGER_SUBJECTS } from "../../src/cluster/wallet.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const DIM = 64;
const IDS = 1000;
const ROUNDS = 12;
const T = "acme";
const root = mkdtempSync(join(tmpdir(), "svc-retention-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1_000_000 });

interface Node {
  id: string;
  nc: NatsConnection;
  registry: NodeRegistry;
  indexes: ClusterIndexes;
  store: Snapshots;
}

let cluster: NatsCluster;
const nodes: Node[] = [];

const until = async (cond: () => boolean | Promise<boolean>, ms = 30_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 100));
  }
};

async function startNode(i: number): Promise<Node> {
  const id = `n${i}`;
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const registry = await NodeRegistry.join(
    nc,
    { id, url: `http://127.0.0.1:${9100 + i}`, startedAt: Date.now() },
    { heartbeatMs: 200, ttlMs: 2000 },
  );
  const store = await Snapshots.open(nc);
  // small thresholds so that a test-sized index snapshots and purges: a snapshot per 64 KiB read (or the shard's live bytes), looked at every 300 ms
  const indexes = await ClusterIndexes.open({
    nc,
    registry,
    dataDir: join(root, id),
    kernels,
    pool,
    snapshots: { store, minBytes: 64 << 10, checkMs: 300 },
  });
  return { id, nc, registry, indexes, store };
}

/** Round r of the overwrites: every id gets a new vector (deterministic). */
function round(r: number): Array<{ id: string; values: number[]; metadata: Record<string, unknown> }> {
  const rnd = fc.sample(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: DIM, maxLength: DIM }), {
    numRuns: IDS,
    seed: 100 + r,
  });
  return rnd.map((values, i) => ({ id: `v${i}`, values: values.map((x, j) => (j === 0 ? x + 0.001 : x)), metadata: { round: r, n: i } }));
}

/** Bytes on the log streams holding the index's shards (a new index spreads them over LOG_STREAMS streams). */
const streamBytes = async (nc: NatsConnection, r: ClusterIndexRecord) => {
  const jsm = await jetstreamManager(nc);
  let bytes = 0;
  for (const stream of indexStreams(r)) bytes += (await jsm.streams.info(stream)).state.bytes;
  return bytes;
};

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-retention");
  for (let i = 0; i < 2; i++) nodes.push(await startNode(i));
  await until(() => nodes.every((n) => n.registry.live.length === 2));
}, 60_000);

afterAll(async () => {
  for (const n of nodes) {
    await n.registry.leave().catch(() => undefined);
    await n.indexes.close().catch(() => undefined);
    await n.nc.close().catch(() => undefined);
  }
  await pool.close();
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("log retention", () => {
  let record: ClusterIndexRecord;
  const live = IDS * DIM * 4;

  it("keeps the stream at most 5x the live bytes under steady overwrites of the same ids (12x written)", async () => {
    await nodes[0]!.indexes.create(T, { name: "vecs", dimension: DIM, spec: { shards: 2 } });
    await until(() => nodes[0]!.indexes.shards.shards.length === 2);
    const incarnation = nodes[0]!.indexes.shards.shards[0]!.split(".")[2]!; // placement keys: <tenant>.<index>.<incarnation>.<shard>
    record = { tenant: T, name: "vecs", incarnation, shards: 2, replicas: 2, streams: LOG_STREAMS } as ClusterIndexRecord;
    let written = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const vs = round(r);
      for (let i = 0; i < vs.length; i += 100) {
        await nodes[r % 2]!.indexes.use(T, "vecs", (ix) => ix.upsert("", vs.slice(i, i + 100)));
        written += 100;
      }
    }
    expect(written).toBe(IDS * ROUNDS);
    // every shard has a snapshot, and the stream came down to the bound
    const subjects = [0, 1].map((s) => shardLogSubject(record, s));
    await until(async () => (await Promise.all(subjects.map((s) => nodes[0]!.store.list(s)))).every((l) => l.length === 2));
    // Sizing: what is left is the frames since the older snapshot, about 2T a shard (T: the live bytes) in WAL bytes, plus
    // NATS's per-message bytes and the writes of one snapshot check (300 ms here): 2.9-4.3x measured once it settles; the 12 rounds wrote 12x.
    await until(async () => (await streamBytes(nodes[0]!.nc, record)) <= 5 * live, 30_000).catch(async (e) => {
      console.log(
        `stream ${await streamBytes(nodes[0]!.nc, record)} bytes; snapshots`,
        JSON.stringify(await Promise.all(subjects.map((s) => nodes[0]!.store.list(s)))),
      );
      throw e;
    });
    const bytes = await streamBytes(nodes[0]!.nc, record);
    console.log(
      `retention: ${written} upserts over ${IDS} ids of ${DIM}-d: stream ${bytes} bytes, live ${live} bytes (${(bytes / live).toFixed(2)}x)`,
    );
    expect(bytes).toBeLessThanOrEqual(5 * live);
    const count = await nodes[1]!.indexes.use(T, "vecs", (ix) => ix.stats());
    expect(count.totalVectorCount).toBe(IDS);
  }, 180_000);

  it("a node added after the purge catches up from the snapshot and answers the same top-k", async () => {
    const t0 = Date.now();
    const key = (s: number) => `${T}.vecs.${record.incarnation}.${s}`;
    // the new node's id is one that owns a shard (rendezvous over 2 shards x 2 of 3 nodes leaves a given id none 1 time in 9)
    const i = Array.from({ length: 64 }, (_, j) => j + 2).find((j) =>
      [0, 1].some((s) => rank(["n0", "n1", `n${j}`], key(s)).indexOf(`n${j}`) < 2),
    )!;
    nodes.push(await startNode(i));
    await until(() => nodes.every((n) => n.registry.live.length === 3));
    const n2 = nodes[2]!;
    const owned = [0, 1].filter((s) => n2.registry.owners(key(s), 2).includes(n2.id));
    expect(owned.length).toBeGreaterThan(0);
    await until(() => owned.every((s) => n2.indexes.shards.replica(key(s)) !== undefined), 60_000);
    console.log(`retention: new node's ${owned.length} shard(s) open in ${Date.now() - t0} ms`);
    const last = round(ROUNDS - 1);
    for (const s of owned) {
      const c = n2.indexes.shards.replica(key(s))!;
      // the subject no longer starts at its first frame: this replica can only have come from the snapshot
      expect(c.recovery.frames).toBeLessThan((IDS * ROUNDS) / 100 / 2);
      const other = nodes.find((n) => n !== n2 && n.indexes.shards.replica(key(s)) !== undefined)!;
      const o = other.indexes.shards.replica(key(s))!;
      await c.settled();
      await o.settled();
      expect(c.count("")).toBe(o.count(""));
      for (const q of last.slice(0, 5)) {
        const req = { vector: q.values, topK: 10, exact: true, candidates: IDS, rescore: IDS, includeMetadata: true };
        const [a, b] = [await c.query("", req), await o.query("", req)];
        expect(a.matches.map((m) => [m.id, m.score])).toEqual(b.matches.map((m) => [m.id, m.score]));
      }
    }
    // and through every node, the same top-k (the last round's vectors are the live ones)
    for (const q of last.slice(0, 5)) {
      const answers = await Promise.all(
        nodes.map((n) => n.indexes.use(T, "vecs", (ix) => ix.query("", { vector: q.values, topK: 5, includeMetadata: true }))),
      );
      for (const a of answers) expect(a.matches.map((m) => m.id)).toEqual(answers[0]!.matches.map((m) => m.id));
      expect(answers[0]!.matches[0]!.id).toBe(q.id);
      expect(answers[0]!.matches[0]!.metadata).toEqual({ round: ROUNDS - 1, n: q.metadata.n });
    }
  }, 120_000);
});

describe("snapshots that do not check", () => {
  it("are never used, and nothing is purged while none reads", async () => {
    const nc = nodes[0]!.nc;
    const store = nodes[0]!.store;
    await ensureLogStream(nc, { stream: "svc_ret" });
    const jsm = await jetstreamManager(nc);
    const js = (await import("@nats-io/jetstream")).jetstream(nc);
    const subject = "svc_ret.x";
    const seqs: number[] = [];
    for (let i = 0; i < 20; i++) seqs.push((await js.publish(subject, new Uint8Array([i]))).seq);
    const files = [{ path: "state", data: new Uint8Array([1, 2, 3]) }];
    await store.write({ stream: "svc_ret", subject, seq: seqs[4]!, floor: seqs[4]! + 1, kind: "test", files });
    await store.write({ stream: "svc_ret", subject, seq: seqs[9]!, floor: seqs[7]!, kind: "test", files }); // a chunked frame from seqs[7] straddles it
    // the older slot now holds a snapshot cut short (its object complete, its contents not): listed, never used
    const os = await new Objm(nc).open(SNAPSHOT_BUCKET);
    const whole = encodeSnapshot({ stream: "svc_ret", subject, seq: seqs[14]!, floor: seqs[14]! + 1, kind: "test", files });
    const older = (await store.list(subject))[1]!;
    await os.putBlob(
      { name: older.name, metadata: { format: "1", seq: String(seqs[14]), floor: String(seqs[14]! + 1), kind: "test", stream: "svc_ret" } },
      whole.subarray(0, whole.length - 2),
    );
    await expect(store.read((await store.list(subject))[0]!)).rejects.toMatchObject({ code: "E_IO" });
    expect((await store.newest(subject))!.seq).toBe(seqs[9]);
    // a purge goes at most below the older listed snapshot's floor (seqs[7]), never past the one that reads
    expect(await store.purgeBelow("svc_ret", subject)).toBe(7);
    expect((await jsm.streams.getMessage("svc_ret", { seq: seqs[7]! }))?.seq).toBe(seqs[7]);
    // another format version in a slot: refused too; with no snapshot reading, nothing is purged
    const v2 = Buffer.from(encodeSnapshot({ stream: "svc_ret", subject, seq: seqs[19]!, floor: seqs[19]! + 1, kind: "test", files }));
    v2.write(JSON.stringify({ format: 2 }).slice(0, 11), 12, "utf8"); // '{"format":2' over '{"format":1'
    const newer = (await store.list(subject)).find((i) => i.seq === seqs[9])!;
    await os.putBlob(
      { name: newer.name, metadata: { format: "2", seq: String(seqs[19]), floor: String(seqs[19]! + 1), kind: "test", stream: "svc_ret" } },
      v2,
    );
    expect(await store.newest(subject)).toBeNull();
    expect(await store.purgeBelow("svc_ret", subject)).toBe(0);
    expect((await jsm.streams.info("svc_ret")).state.messages).toBe(13);
  }, 60_000);
});

describe("the wallet ledger", () => {
  it("snapshots its fold and purges below it; a node started later folds snapshot + tail into the same balances", async () => {
    const prices = parsePrices({ signupCredit: 1, requests: {}, defaultRequest: 0.000000003, per1kWritten: 0.000001, per1kScanned: 0 });
    const open = async () =>
      ClusterWallets.open(await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 }), prices, {
        snapshots: { store: nodes[0]!.store, every: 50 },
      });
    const [a, b] = [await open(), await open()];
    const tenants = ["t1", "t2", "t3", "t4"];
    for (let i = 0; i < 300; i++) {
      const w = i % 2 === 0 ? a : b;
      const t = tenants[i % tenants.length]!;
      if (i % 3 === 0) await w.credit(t, 0.001 * ((i % 7) + 1), "test");
      else await w.charge(t, "upsert", { written: (i % 11) * 10 });
    }
    const jsm = await jetstreamManager(nodes[0]!.nc);
    // a snapshot was written and the stream purged below the older one
    await until(async () => (await jsm.streams.info(LEDGER_STREAM)).state.first_seq > 100, 30_000);
    expect((await nodes[0]!.store.list(LEDGER_SUBJECTS)).length).toBe(2);
    for (let i = 0; i < 20; i++) await a.charge("t1", "upsert", { written: 5 });
    const c = await open();
    for (const w of [a, b, c]) await w.view("t1"); // each folded to the stream's end (view publishes nothing for a known tenant)
    await until(
      () => b.peek("t1")!.balanceUsd === a.peek("t1")!.balanceUsd && c.peek("t1")!.balanceUsd === a.peek("t1")!.balanceUsd,
      10_000,
    );
    for (const t of tenants) {
      expect(c.peek(t)).toEqual(a.peek(t));
      expect(b.peek(t)).toEqual(a.peek(t));
      expect(c.heldBy(t)).toBe(a.heldBy(t));
    }
    expect(c.tenants().sort()).toEqual(tenants);
    for (const w of [a, b, c]) await w.close();
  }, 120_000);
});
