/**
 * Fencing of the JetStream log (cluster/jetstream-log.ts `fence`), against a real 3-server JetStream
 * cluster: a leader of a later term fences the subject, after which the deposed leader's appends are
 * refused (503 E_HOME_UNAVAILABLE) and never take effect; a frame of an old term that lands after a
 * fence anyway (the expected-sequence check is only a pre-check on nats-server 2.9, #4320) is dropped
 * by every reader; acknowledged frames before the fence are kept; the new leader reads what the old
 * one wrote while it was opening (the fence retries after the subject moved); and what the retry of
 * a publish whose ack was lost relies on (the server keeps one copy; next_by_subj finds it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { encode } from "@msgpack/msgpack";
import { ensureLogStream, jetStreamLog, TERM_HEADER } from "../../src/cluster/jetstream-log.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEMO_FILE, openDirectory } from "../../src/directory/import.js";
import { SvcError } from "../../src/errors.js";
import type { LogFrame } from "../../src/store/log.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const STREAM = "svc_fence_test";
let cluster: NatsCluster;
let nc: NatsConnection;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  nc = await cluster.connect();
  await ensureLogStream(nc, { stream: STREAM, replicas: 3 });
}, 60_000);

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await cluster?.stop();
});

/** Open `name` as the leader of `term` (fenced), or unfenced with term 0; the frames replayed. */
async function open(name: string, term: number) {
  const frames: LogFrame[] = [];
  const { log } = await jetStreamLog(nc, { stream: STREAM, name, ...(term > 0 ? { fence: term } : {}) })({
    onFrame: (f) => frames.push(f),
  });
  return { log, bodies: () => frames.map((f) => f.body) };
}

describe("a fenced JetStream log", () => {
  it("refuses the deposed leader's appends once a later term fenced the subject; nothing acknowledged is lost", async () => {
    const a = await open("s1", 1);
    await a.log.append(1, { v: "a1" });
    await a.log.append(1, { v: "a2" });
    const b = await open("s1", 2);
    expect(b.bodies()).toEqual([{ v: "a1" }, { v: "a2" }]);
    const refused = await a.log.append(1, { v: "a3" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(SvcError);
    expect((refused as SvcError).code).toBe("E_HOME_UNAVAILABLE");
    // every later append of the deposed log is refused at once
    expect(
      await a.log.append(1, { v: "a4" }).then(
        () => "ok",
        (e: SvcError) => e.code,
      ),
    ).toBe("E_HOME_UNAVAILABLE");
    await b.log.append(1, { v: "b1" });
    const c = await open("s1", 3);
    expect(c.bodies()).toEqual([{ v: "a1" }, { v: "a2" }, { v: "b1" }]);
    for (const x of [a, b, c]) await x.log.close();
  }, 60_000);

  it("a leader cannot open under a fence of a later term", async () => {
    const b = await open("s2", 5);
    await b.log.append(1, { v: "b" });
    const err = await open("s2", 4).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as SvcError)?.code).toBe("E_HOME_UNAVAILABLE");
    await b.log.close();
  }, 60_000);

  it("drops, on every reader, an old term's frame stored after the fence (a write past the pre-check)", async () => {
    const a = await open("s3", 1);
    await a.log.append(1, { v: "kept" });
    const b = await open("s3", 2);
    // What a deposed leader's publish that raced the fence past the server's pre-check leaves: a term-1 frame after the fence.
    const h = headers();
    h.set(TERM_HEADER, "1");
    await jetstream(nc).publish(`${STREAM}.s3`, encode({ type: 1, body: { v: "late" } }), { headers: h });
    await b.log.close();
    const c = await open("s3", 3);
    expect(c.bodies()).toEqual([{ v: "kept" }]);
    await a.log.close();
    await c.log.close();
  }, 60_000);

  it("what a retried publish relies on: a stored message's id is found right after the expected sequence (next_by_subj), and a retry of it is not stored twice", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const subject = `${STREAM}.s5`;
    const first = await js.publish(subject, new Uint8Array([1]), { msgID: "s5-a", expect: { lastSubjectSequence: 0 } });
    await js.publish(`${STREAM}.other`, new Uint8Array([9])); // another subject's message in between
    const retry = await js.publish(subject, new Uint8Array([1]), { msgID: "s5-a", expect: { lastSubjectSequence: 0 } }).then(
      (a) => ({ seq: a.seq, duplicate: a.duplicate }),
      (e: unknown) => ({ error: String(e) }),
    );
    // either the duplicate's ack (the first sequence) or a refusal; never a second copy
    if ("seq" in retry) expect(retry).toEqual({ seq: first.seq, duplicate: true });
    const info = await jsm.streams.info(STREAM, { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(1);
    const next = await jsm.streams.getMessage(STREAM, { next_by_subj: subject, seq: 1 } as never);
    expect(next?.seq).toBe(first.seq);
    expect(next?.header.get("Nats-Msg-Id")).toBe("s5-a");
  }, 60_000);

  it("an empty subject is fenced (expected last sequence 0), and a retried open with the same term reads on", async () => {
    const a = await open("s4", 7);
    await a.log.append(1, { v: 1 });
    await a.log.close();
    const again = await open("s4", 7);
    expect(again.bodies()).toEqual([{ v: 1 }]);
    await again.log.append(1, { v: 2 });
    await again.log.close();
    expect((await open("s4", 8)).bodies()).toEqual([{ v: 1 }, { v: 2 }]);
  }, 60_000);
});

describe("the directory on a fenced log (cluster mode's home store)", () => {
  it("its checkpoint records the stream position (the subject's last sequence); the next leader opens from it with every write, without seeding again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-fenced-dir-"));
    try {
      const subject = `${STREAM}.directory`;
      const openAs = (term: number) =>
        openDirectory(dir, {
          seed: fileURLToPath(DEMO_FILE),
          openLog: jetStreamLog(nc, { stream: STREAM, name: "directory", fence: term }),
        });
      const a = await openAs(1);
      expect(a.seeded?.created).toBe(300);
      const id = "foxglovewood-print-leicester"; // the demo file's first business
      await a.directory.claim(id, { name: "Ann Owner", email: "ann@example.com" });
      await a.directory.close();
      const cp = JSON.parse(readFileSync(join(dir, "directory", "directory.json"), "utf8")) as { wal: { segment: number; offset: number } };
      const last = (await (await jetstreamManager(nc)).streams.getMessage(STREAM, { last_by_subj: subject }))!.seq;
      expect(cp.wal).toEqual({ segment: 0, offset: last });
      const b = await openAs(2);
      expect(b.seeded).toBe(null);
      expect(b.directory.size).toBe(300);
      expect(JSON.stringify(b.directory.get(id))).toContain("ann@example.com");
      await b.directory.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
