/**
 * A StreamTail must never hand on a message past one of its subject it did not hand on (issue 31,
 * the nemesis's lost frames): 3 nats-servers, one R3 stream, a writer publishing to two subjects in
 * turn, tails of one subject (and of the whole stream) reading through connections to each server,
 * while the server they are all connected to is killed (-9) and restarted, repeatedly. At the end every tail's
 * handled sequences are compared with a scan of the stream answered by its leader (non-direct
 * STREAM.MSG.GET next_by_subj): every sequence of the subject, in order, none missing.
 * Rounds: SVC_TAIL_GAP_ROUNDS (default 6).
 */
import { jetstream, jetstreamManager, type MsgRequest } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { StreamTail } from "../../src/cluster/stream-tail.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const STREAM = "svc_tail_gap";
const ROUNDS = Number(process.env.SVC_TAIL_GAP_ROUNDS ?? 6);
let cluster: NatsCluster;
let conns: NatsConnection[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  // like the nemesis's worst runs: every reader (and the writer) on one server, the one killed
  conns = await Promise.all(cluster.urls.map(() => cluster.connect(0)));
  const jsm = await jetstreamManager(conns[0]!);
  for (let attempt = 0; ; attempt++) {
    try {
      await jsm.streams.add({ name: STREAM, subjects: [`${STREAM}.>`], num_replicas: 3 });
      break;
    } catch (e) {
      if (attempt >= 50) throw e;
      await sleep(200);
    }
  }
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

it("hands on every sequence of its subject, in order, through kill -9 and restarts of the servers", async () => {
  const seen: Record<string, number[]> = {};
  const tails: StreamTail[] = [];
  for (const [i, nc] of conns.entries())
    for (const subject of [`${STREAM}.a`, undefined]) {
      const key = `${i}:${subject ?? "*"}`;
      seen[key] = [];
      tails.push(new StreamTail(nc, { stream: STREAM, subject, what: key, onMessage: (m) => void seen[key]!.push(m.seq) }));
    }
  // the writer: its own connection (reconnecting to any server), a.b.a.b... publishes, retried until acknowledged
  const wc = await cluster.connect(0);
  const js = jetstream(wc, { timeout: 2000 });
  let stop = false;
  let acked = 0;
  const writer = (async () => {
    for (let n = 0; !stop; n++) {
      const subject = `${STREAM}.${n % 3 === 0 ? "a" : "b"}`;
      for (;;) {
        try {
          // no Nats-Msg-Id, as svc publishes: nats-server 2.9 deduplicates them per replica, and replicas whose windows
          // differ store different messages (jetstream-log.ts FRAME_HEADER); a retry may store a message twice, which is fine here
          await js.publish(subject, new TextEncoder().encode(String(n)));
          acked++;
          break;
        } catch {
          if (stop) return;
          await sleep(50);
        }
      }
      await sleep(2);
    }
  })();
  for (let r = 0; r < ROUNDS; r++) {
    // the server the readers are connected to now (they moved on at the last kill)
    const victim = Number((conns[0]!.info?.server_name ?? `n${r % 3}`).slice(1));
    await sleep(1500);
    if (r % 2 === 1) {
      // the nemesis's other fault before its losses: the stream leader frozen (SIGSTOP) past an election
      const leader = Number(
        (
          (
            await jetstreamManager(wc, { timeout: 5000 })
              .then((m) => m.streams.info(STREAM))
              .catch(() => null)
          )?.cluster?.leader ?? "n1"
        ).slice(1),
      );
      cluster.pause(leader);
      await sleep(4000);
      cluster.resume(leader);
      await sleep(500);
    }
    cluster.kill(victim);
    await sleep(1000 + (r % 2) * 1500);
    cluster.start(victim);
  }
  await sleep(3000);
  stop = true;
  await writer;
  // the authoritative scan: the stream leader's answers, subject by subject
  // right after the last restart the servers may still elect their meta leader ("JetStream system temporarily unavailable")
  let jsm: Awaited<ReturnType<typeof jetstreamManager>> | undefined;
  for (let attempt = 0; jsm === undefined; attempt++) {
    jsm = await jetstreamManager(wc, { timeout: 5000 }).catch((e: unknown) => {
      if (attempt >= 50) throw e;
      return sleep(200).then(() => undefined);
    });
  }
  const scan = async (subject: string): Promise<number[]> => {
    const out: number[] = [];
    for (let seq = 1; ;) {
      let m;
      for (let attempt = 0; ; attempt++) {
        try {
          m = await jsm.streams.getMessage(STREAM, { next_by_subj: subject, seq } as unknown as MsgRequest);
          break;
        } catch (e) {
          if (attempt >= 50) throw e; // no leader for 10+ s
          await sleep(200);
        }
      }
      if (m === null) return out;
      out.push(m.seq);
      seq = m.seq + 1;
    }
  };
  const want = { a: await scan(`${STREAM}.a`), all: await scan(`${STREAM}.>`) };
  expect(want.all.length).toBeGreaterThanOrEqual(acked);
  await Promise.race([Promise.all(tails.map((t) => t.reached(want.all.at(-1)!))), sleep(20_000)]).catch(() => undefined);
  const missing: Record<string, number[]> = {};
  for (const [key, got] of Object.entries(seen)) {
    const expected = key.endsWith(":*") ? want.all : want.a;
    const have = new Set(got);
    const lost = expected.filter((s) => !have.has(s) && s <= (got.at(-1) ?? 0));
    if (lost.length > 0 || got.length !== new Set(got).size || got.some((s, j) => j > 0 && s <= got[j - 1]!)) missing[key] = lost;
    expect(got.at(-1), `${key} caught up`).toBe(expected.at(-1));
  }
  console.log(
    `stream-tail-gap: ${tails.reduce((n, t) => n + t.gapsFilled, 0)} skipped messages filled from the leader; ${acked} acked, subject a ${want.a.length}, tails handled ${Object.entries(
      seen,
    )
      .map(([k, v]) => `${k}=${v.length}`)
      .join(" ")}`,
  );
  expect(missing).toEqual({});
  for (const t of tails) await t.stop();
}, 240_000);
