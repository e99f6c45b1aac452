/**
 * A StreamTail hands on the stream as committed, whatever its consumer's server holds (the nemesis's
 * divergent replica, seed 31): on nats-server 2.9.10 a stream leader frozen (SIGSTOP) or killed with
 * publishes in flight kept them at sequences where the new leader committed others, and an R1
 * consumer placed on that server delivered them. Traced in the nemesis (every node's handed frames
 * logged): at sequences 151-153 of one shard's subject, a replica that reopened read three messages
 * stored ~0.5 s before the committed ones (two frames that the committed stream holds later, once
 * each, instead of two acknowledged upserts), applied them and lacked the two upserts while its
 * applied position was past them; 2 of 5 runs showed such a range.
 *
 * Deterministic: JetStream is replaced by a model (fast-check, fixed seed): a committed stream that
 * only the leader's non-direct STREAM.MSG.GET answers from, and a consumer whose server's copy
 * differs from it (a range replaced by other messages, messages missing, messages past the
 * committed end). Every tail, of one subject and of the whole stream, must hand on exactly the
 * committed messages (sequence, subject, data), in order.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";

interface Stored {
  seq: number;
  subject: string;
  data: Uint8Array;
  /** ms since the epoch */
  at: number;
}

/** The model the mocked client reads: `committed` through the leader, `replica` through consumers. */
const model = vi.hoisted(() => ({ committed: [] as Stored[], replica: [] as Stored[] }));

vi.mock("@nats-io/jetstream", async (importOriginal) => {
  const real = await importOriginal<typeof import("@nats-io/jetstream")>();
  const matches = (filter: string, subject: string) => filter === ">" || filter.endsWith(".>") || filter === subject;
  const stored = (m: Stored) => ({
    seq: m.seq,
    subject: m.subject,
    data: m.data,
    header: undefined,
    time: new Date(m.at),
    timestamp: new Date(m.at).toISOString(),
  });
  const jsm = {
    streams: {
      // the leader: the committed stream
      getMessage: async (_stream: string, q: { next_by_subj?: string; seq?: number; last_by_subj?: string }) => {
        if (q.last_by_subj !== undefined) {
          const last = model.committed.filter((m) => matches(q.last_by_subj!, m.subject)).at(-1);
          return last === undefined ? null : stored(last);
        }
        const next =
          q.next_by_subj === undefined
            ? model.committed.find((m) => m.seq === q.seq) // a get by sequence
            : model.committed.find((m) => m.seq >= (q.seq ?? 0) && matches(q.next_by_subj!, m.subject));
        return next === undefined ? null : stored(next);
      },
      info: async () => ({ state: { last_seq: model.committed.at(-1)?.seq ?? 0 } }),
    },
  };
  const js = {
    jetstreamManager: async () => jsm,
    consumers: {
      // an R1 consumer on the divergent server: its copy of the stream, from opt_start_seq, then idle until stopped
      get: async (_stream: string, o: { filter_subjects: string; opt_start_seq?: number }) => ({
        consume: async () => {
          let stop: () => void = () => undefined;
          const stopped = new Promise<void>((r) => (stop = r));
          let done = false;
          const view = model.replica.filter((m) => m.seq >= (o.opt_start_seq ?? 1) && matches(o.filter_subjects, m.subject));
          return {
            stop: () => {
              done = true;
              stop();
            },
            status: async function* () {
              await stopped;
            },
            [Symbol.asyncIterator]: async function* () {
              for (const [i, m] of view.entries()) {
                if (done) return;
                await Promise.resolve();
                yield {
                  seq: m.seq,
                  subject: m.subject,
                  data: m.data,
                  headers: undefined,
                  time: new Date(m.at),
                  info: { streamSequence: m.seq, timestampNanos: m.at * 1e6, pending: view.length - i - 1 },
                };
              }
              await stopped;
            },
          };
        },
      }),
    },
  };
  return { ...real, jetstream: () => js };
});

const { StreamTail } = await import("../../src/cluster/stream-tail.js");

const STREAM = "svc_model";
const nc = {
  status: () => {
    let stop: () => void = () => undefined;
    const stopped = new Promise<void>((r) => (stop = r));
    return {
      stop,
      [Symbol.asyncIterator]: async function* () {
        await stopped;
      },
    };
  },
} as unknown as import("@nats-io/transport-node").NatsConnection;

const text = new TextEncoder();
const seen = (m: { seq: number; subject: string; data: Uint8Array }) => `${m.seq} ${m.subject} ${new TextDecoder().decode(m.data)}`;

/** A committed stream of `subjects` (a or b), and the divergent server's copy of it. */
const scenario = fc
  .record({
    subjects: fc.array(fc.constantFrom("a", "b"), { minLength: 3, maxLength: 40 }),
    // a range of sequences where the server holds other messages (the old leader's publishes in flight)
    from: fc.nat(),
    length: fc.integer({ min: 1, max: 6 }),
    stale: fc.array(fc.constantFrom("a", "b"), { minLength: 6, maxLength: 6 }),
    // committed messages the server lacks, and messages it holds past the committed end
    missing: fc.array(fc.nat(), { maxLength: 3 }),
    extra: fc.array(fc.constantFrom("a", "b"), { maxLength: 2 }),
  })
  .map(({ subjects, from, length, stale, missing, extra }) => {
    const committed: Stored[] = subjects.map((s, i) => ({
      seq: i + 1,
      subject: `${STREAM}.${s}`,
      data: text.encode(`committed-${i + 1}`),
      at: 1_000_000 + i * 10,
    }));
    const start = (from % committed.length) + 1;
    const lacks = new Set(missing.map((k) => (k % committed.length) + 1));
    const replica: Stored[] = committed
      .map((m) =>
        m.seq >= start && m.seq < start + length
          ? { seq: m.seq, subject: `${STREAM}.${stale[m.seq - start]!}`, data: text.encode(`stale-${m.seq}`), at: m.at - 5 }
          : m,
      )
      .filter((m) => !lacks.has(m.seq));
    extra.forEach((s, k) =>
      replica.push({
        seq: committed.length + k + 1,
        subject: `${STREAM}.${s}`,
        data: text.encode(`stale-${committed.length + k + 1}`),
        at: 2_000_000,
      }),
    );
    return { committed, replica };
  });

describe("StreamTail on a server whose copy of the stream diverged from the committed one", () => {
  it("hands on exactly the committed messages, in order, for a one-subject and a whole-stream tail", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ committed, replica }) => {
        model.committed = committed;
        model.replica = replica;
        for (const subject of [`${STREAM}.a`, undefined]) {
          const want = committed.filter((m) => subject === undefined || m.subject === subject);
          const got: string[] = [];
          const tail = new StreamTail(nc, { stream: STREAM, subject, what: "model", onMessage: (m) => void got.push(seen(m)) });
          // a consumer that never delivers the last committed message: the idle check (2 s) has the tail read it from the leader
          await Promise.race([tail.reached(want.at(-1)?.seq ?? 0), new Promise((r) => setTimeout(r, 4000))]);
          await tail.stop();
          expect(got).toEqual(want.map(seen));
        }
      }),
      { seed: 3131, numRuns: 40 },
    );
  }, 120_000);
});
