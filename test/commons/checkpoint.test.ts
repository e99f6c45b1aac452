/**
 * The commons' checkpoint (cluster mode: commons/log.ts, what its snapshot in svc_snapshots holds):
 * a commons opened from the checkpoint plus the frames after it serves the same board, agents,
 * profiles, verdicts and trust records as one that replayed every frame, although the checkpoint
 * leaves out superseded profiles and verdicts. The log is an in-memory stand-in for the stream
 * (positions = sequences), as test/engine/log-seam.test.ts does.
 */
import { encode } from "@msgpack/msgpack";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_COMMONS_CONFIG } from "../../src/commons/config.js";
import { readCommonsCheckpoint } from "../../src/commons/log.js";
import { Commons } from "../../src/commons/service.js";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { safeDecoder } from "../../src/safe-values.js";
import { atOrBefore, type Log, type LogPosition, type OpenLog } from "../../src/store/log.js";

interface Stream {
  messages: Array<{ seq: number; type: number; bytes: Uint8Array }>;
  last: number;
}

/** Replays the frames after `from` (all without it); appends get the next sequence. */
function streamLog(stream: Stream, seen: { replayed: number }): OpenLog {
  return async ({ from, onFrame }) => {
    const decoder = safeDecoder();
    seen.replayed = 0;
    for (const m of stream.messages) {
      const end = { segment: 0, offset: m.seq };
      if (from !== undefined && atOrBefore(end, from)) continue;
      seen.replayed++;
      onFrame({ type: m.type, body: decoder.decode(m.bytes), start: { segment: 0, offset: m.seq - 1 }, end });
    }
    const log: Log = {
      async append(type: number, body: unknown): Promise<LogPosition> {
        const seq = ++stream.last;
        stream.messages.push({ seq, type, bytes: encode(body) });
        return { segment: 0, offset: seq };
      },
      get position() {
        return { segment: 0, offset: stream.last };
      },
      get stats() {
        return { frames: 0, bytes: 0, syncs: 0, writes: 0 };
      },
      async sync() {},
      async dropBefore() {
        return 0;
      },
      async close() {},
    };
    return { log, report: { segments: 0, frames: seen.replayed, bytes: 0, tornTail: null, damaged: [] } };
  };
}

const encoder = TextEncoder1024.load();
const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

async function open(root: string, stream: Stream, seen = { replayed: 0 }): Promise<Commons> {
  return Commons.open(root, { config: DEFAULT_COMMONS_CONFIG, encoder, openLog: streamLog(stream, seen) });
}

/** What a reader sees of the commons. */
function view(c: Commons): unknown {
  const agents = c.agents.list(c.profiles.all(), 1000);
  return { board: c.boardPage(1000), agents, trust: c.trust.recent(1000), profiles: [...c.profiles.all()] };
}

type Op =
  | { k: "post"; a: number }
  | { k: "reply"; a: number; p: number }
  | { k: "vote"; a: number; p: number; v: boolean }
  | { k: "profile"; a: number; n: number }
  | { k: "trust"; a: number; n: number }
  | { k: "working"; a: number; n: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant("post" as const), a: fc.nat(4) }),
  fc.record({ k: fc.constant("reply" as const), a: fc.nat(4), p: fc.nat(20) }),
  fc.record({ k: fc.constant("vote" as const), a: fc.nat(4), p: fc.nat(20), v: fc.boolean() }),
  fc.record({ k: fc.constant("profile" as const), a: fc.nat(4), n: fc.nat(1000) }),
  fc.record({ k: fc.constant("trust" as const), a: fc.nat(4), n: fc.nat(1000) }),
  fc.record({ k: fc.constant("working" as const), a: fc.nat(4), n: fc.nat(1000) }),
);

/** Apply `ops` (those that cannot apply, a vote on no post, are skipped). */
async function run(c: Commons, ops: Op[], posts: string[]): Promise<void> {
  for (const o of ops) {
    const agent = `agent-${o.a}`;
    if (o.k === "post") posts.push((await c.board.post({ agent, message: `A post number ${posts.length} about checkpoints.` })).id);
    else if (o.k === "reply" && posts.length > 0)
      posts.push((await c.board.post({ agent, message: `A reply ${posts.length}.`, reply_to: posts[o.p % posts.length] })).id);
    else if (o.k === "vote" && posts.length > 0) {
      const post = posts[o.p % posts.length]!;
      await c.board
        .vote({ agent, post, verdict: o.v ? "useful" : "disputed", ...(o.v ? {} : { why: "It does not hold." }) })
        .catch(() => undefined); // own posts: refused
    } else if (o.k === "profile") await c.profiles.save({ agent, about: `About ${o.n}.`, model: `m-${o.n % 3}` });
    else if (o.k === "trust")
      await c.trust.record({ agent, target: `https://t${o.n % 5}.example/x`, outcome: "worked", note: `Call ${o.n}.` });
    else if (o.k === "working") await c.working.add({ agent, note: `Working on ${o.n}.` }, () => undefined);
  }
}

describe("the commons' checkpoint", () => {
  it("opened from the checkpoint plus the tail, the commons reads as one that replayed every frame", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), fc.array(op, { maxLength: 20 }), async (before, after) => {
        const root = mkdtempSync(join(tmpdir(), "svc-commons-cp-"));
        roots.push(root);
        const stream: Stream = { messages: [], last: 0 };
        const posts: string[] = [];
        const a = await open(root, stream);
        await run(a, before, posts);
        const { seq, files } = await a.snapshot();
        expect(seq).toBe(stream.last);
        expect(files[0]!.path).toBe("checkpoint.msgpack");
        // superseded profiles and verdicts are not in it
        const cp = readCommonsCheckpoint(join(root, "commons"))!;
        expect(cp.seq).toBe(seq);
        expect(cp.frames.length).toBeLessThanOrEqual(stream.messages.length);
        await run(a, after, posts);
        await a.close();
        // b: from the checkpoint + the tail; c: every frame (another data dir: no checkpoint)
        const seen = { replayed: 0 };
        const b = await open(root, stream, seen);
        expect(seen.replayed).toBe(stream.messages.filter((m) => m.seq > seq).length);
        const other = mkdtempSync(join(tmpdir(), "svc-commons-cp-"));
        roots.push(other);
        const c = await open(other, stream);
        expect(view(b)).toEqual(view(c));
        expect(view(b)).toEqual(view(a));
        await b.close();
        await c.close();
      }),
      { seed: 31, numRuns: 25 },
    );
  }, 120_000);
});
