/**
 * Follow mode (cluster/jetstream-log.ts `follow: true`): several Collections, each in its own
 * directory with its own NATS connection, follow one subject of a real 3-server JetStream cluster
 * and write to it concurrently. After settled() every replica holds the same state, and the state a
 * plain replay of the stream gives; settled() on one replica sees what another acknowledged; a
 * replica that only reads checkpoints; a replica closed and reopened resumes from its checkpoint; a new
 * one catches up from the stream; a frame whose chunks straddle a checkpoint is fetched back whole;
 * with a nats-server killed during the writes the tails resume and nothing acknowledged is lost.
 * Frames are chunked small (chunkBytes) so that writers interleave their chunks on the subject.
 */
import { encode } from "@msgpack/msgpack";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CHUNK_HEADER, ensureLogStream, jetStreamLog } from "../../src/cluster/jetstream-log.js";
import { loadCheckpoint } from "../../src/engine/collection-files.js";
import { Collection } from "../../src/engine/collection.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";
import { engineFixture } from "../engine/engine-fixture.js";

const STREAM = "svc_log_follow";
const DIM = 16;
/** Small chunks: most frames are split, so concurrent writers interleave chunks of their frames. */
const CHUNK = 200;
let cluster: NatsCluster;
/** One connection per replica, each to a different server first. */
let conns: NatsConnection[] = [];
const { kernels, pool, newDir } = engineFixture("svc-follow-");

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  conns = await Promise.all(cluster.urls.map((_, i) => cluster.connect(i)));
  // Right after start the servers may not all have joined JetStream yet ("no suitable peers for placement").
  for (let attempt = 0; ; attempt++) {
    try {
      await ensureLogStream(conns[0]!, { stream: STREAM, replicas: 3 });
      break;
    } catch (e) {
      if (attempt >= 50) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}, 60_000);

afterAll(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await cluster?.stop();
});

const vec = (i: number) => Float32Array.from({ length: DIM }, (_, j) => Math.sin(i * 7 + j) + (j === i % DIM ? 2 : 0));

/** A replica: replica i's connection, following `name`. */
const follower = (dir: string, name: string, i: number, extra: { quorumTimeoutMs?: number } = {}, checkpointBytes?: number) =>
  Collection.open(dir, {
    kernels,
    pool,
    dimension: DIM,
    checkpointBytes,
    openLog: jetStreamLog(conns[i % conns.length]!, { stream: STREAM, name, follow: true, chunkBytes: CHUNK, ...extra }),
  });

/** Everything a reader can see, per namespace: ids, fetched rows, stats and the top 5 of a few probes. */
async function state(c: Collection) {
  await c.settled();
  const out: Record<string, unknown> = { stats: c.stats() };
  for (const ns of ["a", "b"]) {
    const ids = c.ids(ns).sort();
    const rows = c.fetch(ns, ids).map((v) => ({ id: v.id, metadata: v.metadata, values: Array.from(v.values ?? []) }));
    const top = [];
    for (const q of [0, 5, 11]) top.push((await c.query(ns, { vector: vec(q), topK: 5 })).matches.map((m) => [m.id, m.score]));
    out[ns] = { ids, rows, top };
  }
  return out;
}

type Cmd =
  | { kind: "upsert"; ns: "a" | "b"; ids: number[]; salt: number }
  | { kind: "delete"; ns: "a" | "b"; ids: number[] }
  | { kind: "update"; ns: "a" | "b"; id: number; salt: number; values: boolean }
  | { kind: "deleteFilter"; ns: "a" | "b"; below: number }
  | { kind: "move"; from: "a" | "b" };

const nsArb = fc.constantFrom("a" as const, "b" as const);
const idsArb = fc.uniqueArray(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 5 });
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("upsert" as const), ns: nsArb, ids: idsArb, salt: fc.integer({ min: 0, max: 99 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), ns: nsArb, ids: idsArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("update" as const),
      ns: nsArb,
      id: fc.integer({ min: 0, max: 11 }),
      salt: fc.integer({ min: 0, max: 99 }),
      values: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deleteFilter" as const), ns: nsArb, below: fc.integer({ min: 0, max: 99 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("move" as const), from: nsArb }) },
);

async function run(c: Collection, cmd: Cmd): Promise<void> {
  switch (cmd.kind) {
    case "upsert":
      await c.upsert(
        cmd.ns,
        cmd.ids.map((i) => ({ id: `v${i}`, values: vec(i + cmd.salt), metadata: { salt: cmd.salt, n: i } })),
      );
      return;
    case "delete":
      await c.delete(cmd.ns, { ids: cmd.ids.map((i) => `v${i}`) });
      return;
    case "update":
      // Another replica may have deleted the id meanwhile: a 404 is a valid outcome here.
      await c
        .update(cmd.ns, { id: `v${cmd.id}`, setMetadata: { salt: cmd.salt }, ...(cmd.values ? { values: vec(100 + cmd.salt) } : {}) })
        .catch((e) => {
          if (e?.code !== "E_NOT_FOUND") throw e;
        });
      return;
    case "deleteFilter":
      await c.delete(cmd.ns, { filter: { salt: { $lt: cmd.below } } });
      return;
    case "move":
      await c.moveNamespace(cmd.from, cmd.from === "a" ? "b" : "a");
      return;
  }
}

let names = 0;

describe("Collections following one JetStream subject", () => {
  it("converge to one state under concurrent writes through every replica, the state a plain replay of the stream gives", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.array(cmdArb, { minLength: 1, maxLength: 8 }), fc.array(cmdArb, { maxLength: 8 }), fc.array(cmdArb, { maxLength: 8 })),
        async (perReplica) => {
          const name = `prop${++names}`;
          const replicas = await Promise.all([0, 1, 2].map((i) => follower(newDir(), name, i)));
          try {
            await Promise.all(
              replicas.map(async (c, i) => {
                for (const cmd of perReplica[i]!) await run(c, cmd);
              }),
            );
            // Frames were chunked (so writers' chunks could interleave on the subject).
            const written = replicas
              .map((c) => c.walStats)
              .reduce((n, w) => ({ frames: n.frames + w.frames, writes: n.writes + w.writes }), { frames: 0, writes: 0 });
            expect(written.writes).toBeGreaterThan(written.frames);
            const states = await Promise.all(replicas.map(state));
            expect(states[1]).toEqual(states[0]);
            expect(states[2]).toEqual(states[0]);
            // Every replica applied the subject up to the same frame, and its own last append is at or before it.
            const applied = replicas.map((c) => c.applied.offset);
            expect(new Set(applied).size).toBe(1);
            for (const c of replicas) expect(c.logPosition.offset).toBeLessThanOrEqual(applied[0]!);
            // Replaying the stream in one go (no follow) gives the same state.
            const plain = await Collection.open(newDir(), {
              kernels,
              pool,
              dimension: DIM,
              openLog: jetStreamLog(conns[0]!, { stream: STREAM, name }),
            });
            expect(await state(plain)).toEqual(states[0]);
            await plain.close();
          } finally {
            await Promise.all(replicas.map((c) => c.close()));
          }
        },
      ),
      { seed: 20231126, numRuns: 6 },
    );
  }, 60_000);

  it("update, delete-by-filter and moveNamespace on one replica see what another acknowledged just before", async () => {
    const [a, b] = await Promise.all([follower(newDir(), "rw", 0), follower(newDir(), "rw", 1)]);
    await a.upsert("a", [
      { id: "x", values: vec(1), metadata: { k: 1 } },
      { id: "y", values: vec(2), metadata: { k: 2 } },
    ]);
    // No wait between a's acknowledgement and b's calls: b's settled() asks the stream how far it goes.
    await b.update("a", { id: "x", setMetadata: { k: 3 } });
    expect(await b.delete("a", { filter: { k: { $gte: 2 } } })).toEqual({ deleted: 2 });
    await a.upsert("a", [{ id: "z", values: vec(3) }]);
    expect(await b.moveNamespace("a", "b")).toEqual({ moved: 1 });
    const token = b.logPosition;
    await a.whenVisible(token);
    expect(a.ids("a")).toEqual([]);
    expect(a.ids("b")).toEqual(["z"]);
    expect(await state(a)).toEqual(await state(b));
    await Promise.all([a.close(), b.close()]);
  }, 30_000);

  it("a replica closed and reopened resumes from its checkpoint, and a new replica catches up from the stream", async () => {
    const dirA = newDir();
    const dirB = newDir();
    const a = await follower(dirA, "resume", 0);
    let b = await follower(dirB, "resume", 1);
    for (let i = 0; i < 6; i++) {
      await Promise.all([
        a.upsert("a", [{ id: `x${i}`, values: vec(i), metadata: { i } }]),
        b.upsert("a", [{ id: `y${i}`, values: vec(i + 50), metadata: { i } }]),
      ]);
    }
    await b.settled();
    await b.close();
    const checkpointed = b.applied.offset;
    // Written while b is down, through a.
    await a.delete("a", { ids: ["x0", "y0"] });
    await a.update("a", { id: "y1", setMetadata: { late: true } });
    await a.upsert("b", [{ id: "z", values: vec(99) }]);
    b = await follower(dirB, "resume", 1);
    // b replayed only what came after its checkpoint: the three frames written meanwhile.
    expect(b.recovery.frames).toBe(3);
    expect(b.applied.offset).toBeGreaterThan(checkpointed);
    expect(await state(b)).toEqual(await state(a));
    // Both go on writing; b sees its own and a's writes after settled().
    await Promise.all([a.upsert("a", [{ id: "after-a", values: vec(7) }]), b.delete("a", { ids: ["x5"] })]);
    await b.settled();
    expect(b.ids("a")).toContain("after-a");
    expect(b.ids("a")).not.toContain("x5");
    // A brand-new replica replays the whole stream.
    const c = await follower(newDir(), "resume", 2);
    expect(c.recovery.frames).toBe(6 * 2 + 3 + 2);
    const expected = await state(a);
    expect(await state(b)).toEqual(expected);
    expect(await state(c)).toEqual(expected);
    await Promise.all([a.close(), b.close(), c.close()]);
  }, 30_000);

  it("a replica that only reads checkpoints on the bytes its tail applied", async () => {
    const writer = await follower(newDir(), "reader", 0);
    const dir = newDir();
    const reader = await follower(dir, "reader", 1, {}, 1);
    for (let i = 0; i < 5; i++) await writer.upsert("a", [{ id: `w${i}`, values: vec(i) }]);
    await reader.settled();
    // It appended nothing, yet its tail's bytes started a checkpoint (in the background) before any close.
    expect(reader.walStats.frames).toBe(0);
    await vi.waitFor(() => expect(loadCheckpoint(dir)?.wal.offset ?? 0).toBeGreaterThan(0), { timeout: 10_000, interval: 50 });
    expect(loadCheckpoint(dir)!.wal.offset).toBeLessThanOrEqual(reader.applied.offset);
    await reader.close();
    expect(loadCheckpoint(dir)!.wal.offset).toBe(reader.applied.offset);
    const again = await follower(dir, "reader", 1);
    expect(again.recovery.frames).toBe(0);
    expect(await state(again)).toEqual(await state(writer));
    await Promise.all([writer.close(), again.close()]);
  }, 30_000);

  it("a frame whose first chunk lies before a replica's checkpoint is fetched back whole when the replica reopens", async () => {
    const js = jetstream(conns[0]!);
    const subject = `${STREAM}.straddle`;
    // A frame of another writer, in two chunks; its first chunk goes out now, its second later.
    const bytes = encode({
      type: 1,
      body: { ns: "a", ids: ["s0", "s1"], v: new Uint8Array(Float32Array.from([...vec(1), ...vec(2)]).buffer), m: [null, { half: 2 }] },
    });
    const cut = Math.floor(bytes.length / 2);
    const h0 = headers();
    h0.set(CHUNK_HEADER, "0/2");
    const first = await js.publish(subject, bytes.subarray(0, cut), { headers: h0, msgID: `${subject}:otherwriter:1:0` });
    // a opens with the frame half written: not torn, it is in flight, and a's tail completes it later.
    const a = await follower(newDir(), "straddle", 0);
    expect(a.recovery.tornTail).toBeNull();
    await a.upsert("a", [{ id: "mine", values: vec(3) }]);
    const dir = newDir();
    let r = await follower(dir, "straddle", 1);
    await r.settled();
    await r.close();
    // r's checkpoint lies after the first chunk and before the second.
    expect(r.applied.offset).toBeGreaterThan(first.seq);
    const h1 = headers();
    h1.set(CHUNK_HEADER, `1/2/${first.seq}`);
    await js.publish(subject, bytes.subarray(cut), { headers: h1, msgID: `${subject}:otherwriter:1:1` });
    r = await follower(dir, "straddle", 1);
    expect(r.recovery.frames).toBe(1);
    expect(r.recovery.damaged).toEqual([]);
    expect(r.ids("a").sort()).toEqual(["mine", "s0", "s1"]);
    expect(r.fetch("a", ["s1"])[0]!.metadata).toEqual({ half: 2 });
    // a, following all along, applied it from its tail.
    expect(await state(a)).toEqual(await state(r));
    await Promise.all([a.close(), r.close()]);
  }, 30_000);

  it("with a nats-server killed during the writes, the tails resume: replicas converge and nothing acknowledged is lost", async () => {
    const jsm = await jetstreamManager(conns[0]!);
    const leader = (await jsm.streams.info(STREAM)).cluster?.leader;
    // Kill a server that is not the stream's leader (no election to wait for), with a replica connected to it.
    const victim = [0, 1, 2].find((i) => `n${i}` !== leader)!;
    const replicas = await Promise.all([0, 1, 2].map((i) => follower(newDir(), "failover", i, { quorumTimeoutMs: 12_000 })));
    const acked: string[] = [];
    let killed = false;
    await Promise.all(
      replicas.map(async (c, r) => {
        for (let i = 0; i < 25; i++) {
          if (r === 0 && i === 8) {
            cluster.kill(victim);
            killed = true;
          }
          const id = `r${r}-${i}`;
          await c.upsert("a", [{ id, values: vec(i + r), metadata: { r, i } }]);
          acked.push(id);
        }
      }),
    );
    expect(killed).toBe(true);
    const states = await Promise.all(replicas.map(state));
    expect(states[1]).toEqual(states[0]);
    expect(states[2]).toEqual(states[0]);
    const ids = new Set(replicas[0]!.ids("a"));
    for (const id of acked) expect(ids.has(id), id).toBe(true);
    expect(ids.size).toBe(acked.length);
    cluster.start(victim);
    await cluster.ready(30_000);
    await Promise.all(replicas.map((c) => c.close()));
  }, 60_000);
});
