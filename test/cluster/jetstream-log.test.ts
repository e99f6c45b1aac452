/**
 * The JetStream-backed log (cluster/jetstream-log.ts) under a real Collection, against a real 3-server
 * JetStream cluster on loopback: the same ops give the same state as on the WAL; reopening from the
 * stream (with and without a checkpoint), and a second node replaying the stream, give that state;
 * frames above max_payload are chunked and come back whole (a frame cut off by its writer is reported,
 * another writer's frames in between do not cut it); one server down, appends go on; two
 * down, they reject with E_NO_QUORUM; servers back, appends resume; nothing acknowledged is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import {
  CHUNK_HEADER,
  DEADLINE_HEADER,
  ensureLogStream,
  FRAME_HEADER,
  jetStreamLog,
  withDeadline,
} from "../../src/cluster/jetstream-log.js";
import { Collection } from "../../src/engine/collection.js";
import type { Log } from "../../src/store/log.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";
import { engineFixture } from "../engine/engine-fixture.js";

const STREAM = "svc_log_test";
const DIM = 16;
let cluster: NatsCluster;
let nc: NatsConnection;
const { kernels, pool, newDir } = engineFixture("svc-jslog-");

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  nc = await cluster.connect();
  await ensureLogStream(nc, { stream: STREAM, replicas: 3 });
}, 60_000);

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await cluster?.stop();
});

const vec = (i: number, dim = DIM) => Float32Array.from({ length: dim }, (_, j) => Math.sin(i * 7 + j) + (j === i % dim ? 2 : 0));
const open = (dir: string, name: string, extra: Parameters<typeof jetStreamLog>[1] extends infer O ? Partial<O> : never = {}) =>
  Collection.open(dir, { kernels, pool, dimension: DIM, openLog: jetStreamLog(nc, { stream: STREAM, name, ...extra }) });
const logOf = (c: Collection) => (c as unknown as { s: { log: Log } }).s.log;

/** Everything a query can see: ids, metadata, and the top 5 of a few probe vectors. */
async function state(c: Collection) {
  await c.settled();
  const ids = c.ids("ns").sort();
  const fetched = c.fetch("ns", ids).map((v) => ({ id: v.id, metadata: v.metadata, values: Array.from(v.values ?? []) }));
  const queries = [];
  for (const i of [0, 3, 17, 29]) queries.push((await c.query("ns", { vector: vec(i), topK: 5 })).matches.map((m) => [m.id, m.score]));
  return { ids, fetched, queries };
}

/** The same mixed ops on any collection. */
async function workload(c: Collection) {
  for (let b = 0; b < 4; b++)
    await c.upsert(
      "ns",
      Array.from({ length: 10 }, (_, k) => ({ id: `v${b * 10 + k}`, values: vec(b * 10 + k), metadata: { b, k } })),
    );
  await c.delete("ns", { ids: ["v3", "v11", "v27"] });
  await c.update("ns", { id: "v0", setMetadata: { tag: "x" } });
  await c.update("ns", { id: "v5", values: vec(100) });
  await Promise.all([
    c.upsert("ns", [{ id: "v40", values: vec(40) }]),
    c.delete("ns", { ids: ["v40"] }),
    c.upsert("ns", [{ id: "v41", values: vec(41) }]),
  ]);
}

describe("a Collection on the JetStream log", () => {
  it("gives the WAL's state, again after a reopen from checkpoint + tail, and on a second node replaying the stream", async () => {
    const wal = await Collection.open(newDir(), { kernels, pool, dimension: DIM });
    await workload(wal);
    const expected = await state(wal);
    await wal.close();

    const dir = newDir();
    const a = await open(dir, "same");
    await workload(a);
    expect(await state(a)).toEqual(expected);
    const log = logOf(a);
    expect(log.position.segment).toBe(0);
    expect(log.stats.frames).toBe(10);
    await a.close();
    await expect(log.append(1, {})).rejects.toMatchObject({ code: "E_CLOSED" });

    // Reopen from the checkpoint (the stream keeps its frames: purge is off), then write a tail and reopen without closing.
    const b = await open(dir, "same");
    expect(b.recovery.frames).toBe(0);
    expect(await state(b)).toEqual(expected);
    await b.upsert("ns", [{ id: "t1", values: vec(1) }]);
    await b.delete("ns", { ids: ["v41"] });
    const tail = await state(b);
    const c = await open(dir, "same");
    expect(c.recovery.frames).toBe(2);
    expect(await state(c)).toEqual(tail);

    // A second node: its own directory, the whole stream from the start.
    const replica = await open(newDir(), "same");
    expect(replica.recovery.frames).toBe(12);
    expect(await state(replica)).toEqual(tail);
    await b.close();
    await c.close();
    await replica.close();
  }, 30_000);

  it("with purge, a checkpoint removes the frames it holds from the subject and a reopen still has everything", async () => {
    const dir = newDir();
    const a = await open(dir, "purged", { purge: true });
    await workload(a);
    const expected = await state(a);
    await a.close();
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(STREAM, { subjects_filter: `${STREAM}.purged` });
    expect(info.state.subjects?.[`${STREAM}.purged`] ?? 0).toBe(0);
    const b = await open(dir, "purged", { purge: true });
    expect(await state(b)).toEqual(expected);
    await b.close();
  }, 20_000);

  it("chunks a frame above max_payload (1000 x 1024 floats, ~4 MiB) and replays it whole", async () => {
    const big = (i: number) => vec(i, 1024);
    const a = await Collection.open(newDir(), {
      kernels,
      pool,
      dimension: 1024,
      openLog: jetStreamLog(nc, { stream: STREAM, name: "big" }),
    });
    await a.upsert(
      "ns",
      Array.from({ length: 1000 }, (_, i) => ({ id: `b${i}`, values: big(i), metadata: { i } })),
    );
    await a.upsert("ns", [{ id: "small", values: big(5000) }]);
    const log = logOf(a);
    expect(nc.info!.max_payload).toBeLessThan(log.stats.bytes);
    expect(log.stats.writes).toBeGreaterThan(log.stats.frames);
    const replica = await Collection.open(newDir(), {
      kernels,
      pool,
      openLog: jetStreamLog(nc, { stream: STREAM, name: "big" }),
      dimension: 1024,
    });
    expect(replica.recovery.frames).toBe(2);
    expect(replica.ids("ns").length).toBe(1001);
    for (const i of [0, 511, 999]) expect(replica.fetch("ns", [`b${i}`])[0]!.values).toEqual(a.fetch("ns", [`b${i}`])[0]!.values);
    expect(replica.fetch("ns", ["small"])[0]!.values).toEqual(big(5000));
    await Promise.all([a.close(), replica.close()]);
  }, 30_000);

  it("cuts a chunked frame whose writer stopped mid-frame, as a torn tail, and keeps the frames before it", async () => {
    const dir = newDir();
    const a = await open(dir, "torn");
    await a.upsert("ns", [{ id: "kept", values: vec(1) }]);
    await a.close();
    const h = headers();
    h.set(CHUNK_HEADER, "0/2");
    const half = await jetstream(nc).publish(`${STREAM}.torn`, new Uint8Array([0x82]), { headers: h, msgID: "torn-0" });
    const b = await open(newDir(), "torn");
    expect(b.recovery.frames).toBe(1);
    expect(b.recovery.tornTail).toMatchObject({ file: `${STREAM}.torn`, offset: half.seq, frames: 1 });
    expect(b.ids("ns")).toEqual(["kept"]);
    await b.upsert("ns", [{ id: "after", values: vec(2) }]);
    await b.close();
    // Another writer's frame after it does not cut it (writers interleave their chunks): it stays the torn tail.
    const c = await open(newDir(), "torn");
    expect(c.recovery.damaged).toEqual([]);
    expect(c.recovery.tornTail).toMatchObject({ offset: half.seq, frames: 1 });
    expect(c.ids("ns").sort()).toEqual(["after", "kept"]);
    await c.close();
    // A chunk that continues no frame is skipped and reported, never applied.
    h.set(CHUNK_HEADER, "1/2");
    const stray = await jetstream(nc).publish(`${STREAM}.torn`, new Uint8Array([0x82]), { headers: h, msgID: "torn-stray" });
    const d = await open(newDir(), "torn");
    expect(d.recovery.damaged).toMatchObject([{ offset: stray.seq, frames: 1 }]);
    expect(d.recovery.tornTail).toMatchObject({ offset: half.seq });
    expect(d.recovery.frames).toBe(2);
    await d.close();
  }, 20_000);

  it("drops a frame the stream stored after its deadline, on every replica and on replay; copies of one request (one id) are one frame", async () => {
    const subject = `${STREAM}.deadline`;
    const a = await open(newDir(), "deadline", { follow: true });
    const b = await open(newDir(), "deadline", { follow: true });
    await withDeadline(Date.now() + 10_000, () => a.upsert("ns", [{ id: "kept", values: vec(1) }]));
    // A frame stored after its deadline: a real upsert's bytes (written to a scratch subject) published late, as a stalled server would deliver it.
    const scratch = await open(newDir(), "deadline-scratch");
    await scratch.upsert("ns", [{ id: "late", values: vec(2) }]);
    await scratch.close();
    const jsm = await jetstreamManager(nc);
    const bytes = (await jsm.streams.getMessage(STREAM, { last_by_subj: `${STREAM}.deadline-scratch` }))!.data;
    const h = headers();
    h.set(DEADLINE_HEADER, String(Date.now() - 2000));
    h.set(FRAME_HEADER, `${subject}:late:1`);
    await jetstream(nc).publish(subject, bytes, { headers: h });
    // an append past its deadline is refused before it is published
    await expect(withDeadline(Date.now() - 1, () => a.upsert("ns", [{ id: "refused", values: vec(3) }]))).rejects.toMatchObject({
      code: "E_NO_QUORUM",
    });
    // two copies of one request, run by two replicas: one frame
    const deadline = Date.now() + 10_000;
    await Promise.all([
      withDeadline(deadline, () => a.upsert("ns", [{ id: "dup", values: vec(4) }]), "req-1"),
      withDeadline(deadline, () => b.upsert("ns", [{ id: "dup", values: vec(4) }]), "req-1"),
    ]);
    await a.upsert("ns", [{ id: "after", values: vec(5) }]);
    const c = await open(newDir(), "deadline", { follow: true });
    for (const r of [a, b, c]) {
      await r.settled();
      expect(r.ids("ns").sort()).toEqual(["after", "dup", "kept"]);
    }
    // replayed: kept, dup (once), after; the late frame is skipped
    expect(c.recovery.frames).toBe(3);
    await Promise.all([a.close(), b.close(), c.close()]);
  }, 60_000);

  it("drops a repeat of a frame stored after a later write (a publish retried after its ack was lost) on every reader: live, replaying, and reopening from a checkpoint between them", async () => {
    const subject = `${STREAM}.repeat`;
    const a = await open(newDir(), "repeat", { follow: true });
    const deadline = Date.now() + 20_000;
    await withDeadline(deadline, () => a.upsert("ns", [{ id: "x", values: vec(1), metadata: { v: 1 } }]), "req-r");
    const jsm = await jetstreamManager(nc);
    const first = (await jsm.streams.getMessage(STREAM, { last_by_subj: subject }))!;
    expect(first.header.get(FRAME_HEADER)).toBe(`${subject}:req-r:1`);
    await a.upsert("ns", [{ id: "x", values: vec(2), metadata: { v: 2 } }]);
    // a reader that checkpoints past both writes, before the repeat is stored
    const dDir = newDir();
    const d = await open(dDir, "repeat", { follow: true });
    await d.settled();
    await d.close();
    // the first publish's copy, stored late (still before its deadline), with its frame id
    const h = headers();
    h.set(DEADLINE_HEADER, String(deadline));
    h.set(FRAME_HEADER, `${subject}:req-r:1`);
    await jetstream(nc).publish(subject, first.data, { headers: h });
    const b = await open(newDir(), "repeat", { follow: true });
    const d2 = await open(dDir, "repeat", { follow: true });
    for (const r of [a, b, d2]) {
      await r.settled();
      expect(r.fetch("ns", ["x"])[0]?.metadata).toEqual({ v: 2 });
    }
    await Promise.all([a.close(), b.close(), d2.close()]);
  }, 60_000);

  it("decides every frame from the log alone: a reader reopening after a dropped (late) copy of a frame keeps a later copy, as a reader that went through both does", async () => {
    const subject = `${STREAM}.refold`;
    const a = await open(newDir(), "refold", { follow: true });
    await a.upsert("ns", [{ id: "first", values: vec(1) }]);
    const scratch = await open(newDir(), "refold-scratch");
    await scratch.upsert("ns", [{ id: "x", values: vec(2) }]);
    await scratch.close();
    const jsm = await jetstreamManager(nc);
    const bytes = (await jsm.streams.getMessage(STREAM, { last_by_subj: `${STREAM}.refold-scratch` }))!.data;
    const copy = (deadline: number) => {
      const h = headers();
      h.set(DEADLINE_HEADER, String(deadline));
      h.set(FRAME_HEADER, `${subject}:req-z:1`);
      return jetstream(nc).publish(subject, bytes, { headers: h });
    };
    // a copy stored after its deadline: dropped by every reader, so it is no first copy of the frame
    await copy(Date.now() - 2000);
    await a.upsert("ns", [{ id: "between", values: vec(3) }]);
    // a reader that checkpoints past the dropped copy
    const dDir = newDir();
    const d = await open(dDir, "refold", { follow: true });
    await d.settled();
    await d.close();
    // a copy of the same frame id stored by its deadline: the first one kept
    await copy(Date.now() + 20_000);
    const b = await open(newDir(), "refold", { follow: true });
    const d2 = await open(dDir, "refold", { follow: true });
    for (const r of [a, b, d2]) {
      await r.settled();
      expect(r.ids("ns").sort()).toEqual(["between", "first", "x"]);
    }
    await Promise.all([a.close(), b.close(), d2.close()]);
  }, 60_000);

  it("refuses a log on a stream that does not exist with E_NOT_FOUND, at once", async () => {
    await expect(
      Collection.open(newDir(), { kernels, pool, dimension: DIM, openLog: jetStreamLog(nc, { stream: "svc_no_such_stream", name: "x" }) }),
    ).rejects.toMatchObject({
      code: "E_NOT_FOUND",
      field: "stream",
    });
    expect(() => jetStreamLog(nc, { stream: STREAM, name: "a.*" })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "name" }),
    );
  });

  it("goes on with one server killed, rejects with E_NO_QUORUM with two, resumes when they return, and loses nothing acknowledged", async () => {
    // quorumTimeoutMs covers a leader election (nats-server 2.9: up to ~9 s after the leader dies).
    const a = await open(newDir(), "failover", { ackTimeoutMs: 1000, quorumTimeoutMs: 12_000 });
    const acked: string[] = [];
    const leader = Number((await streamLeader(5000)).slice(1));
    const other = [0, 1, 2].find((i) => i !== leader)!;
    for (let i = 0; i < 30; i++) {
      if (i === 5) cluster.kill(leader);
      await a.upsert("ns", [{ id: `f${i}`, values: vec(i) }]);
      acked.push(`f${i}`);
    }
    cluster.kill(other);
    const t0 = Date.now();
    await expect(a.upsert("ns", [{ id: "nq", values: vec(99) }])).rejects.toMatchObject({ code: "E_NO_QUORUM" });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(11_000); // it retried until quorumTimeoutMs, not failed on the first timeout
    cluster.start(leader);
    cluster.start(other);
    await cluster.ready(30_000);
    await streamLeader(30_000);
    for (let i = 30; i < 35; i++) {
      await a.upsert("ns", [{ id: `f${i}`, values: vec(i) }]);
      acked.push(`f${i}`);
    }
    const replica = await open(newDir(), "failover");
    const ids = new Set(replica.ids("ns"));
    for (const id of acked) expect(ids.has(id), id).toBe(true);
    // Retried publishes were deduplicated: one frame per acknowledged upsert, plus at most the one whose outcome is unknown.
    expect(replica.recovery.frames - acked.length).toBeGreaterThanOrEqual(0);
    expect(replica.recovery.frames - acked.length).toBeLessThanOrEqual(1);
    await Promise.all([a.close(), replica.close()]);
  }, 90_000);
});

/** The stream leader's server name, once the stream has one (after servers restart, its replicas elect one). */
async function streamLeader(timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await jetstreamManager(nc, { timeout: 1000 })
      .then((jsm) => jsm.streams.info(STREAM))
      .catch(() => null);
    if (info?.cluster?.leader) return info.cluster.leader;
    if (Date.now() > deadline) throw new Error(`stream ${STREAM} has no leader after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
