/**
 * The log seam (store/log.ts): a collection takes its log only through `openLog`, so a log that is
 * not the WAL (here a stream-shaped one in memory: segment 0, offset = sequence, msgpack bodies)
 * carries writes, checkpoints and replay after a restart.
 */
import { encode } from "@msgpack/msgpack";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { safeDecoder } from "../../src/safe-values.js";
import { atOrBefore, type Log, type LogPosition, type OpenLog } from "../../src/store/log.js";
import { engineFixture } from "./engine-fixture.js";

/** What a stream server keeps: the messages not yet dropped, and the last sequence number. */
interface Stream {
  messages: Array<{ seq: number; type: number; bytes: Uint8Array }>;
  last: number;
  appends: number;
  dropped: number;
}

function streamLog(stream: Stream): OpenLog {
  return async ({ from, prefix, onFrame }) => {
    const decoder = safeDecoder();
    let frames = 0;
    for (const m of stream.messages) {
      const end = { segment: 0, offset: m.seq };
      if (from !== undefined && atOrBefore(end, from) && !prefix) continue;
      frames++;
      onFrame({ type: m.type, body: decoder.decode(m.bytes), start: { segment: 0, offset: m.seq - 1 }, end });
    }
    let closed = false;
    const log: Log = {
      async append(type: number, body: unknown): Promise<LogPosition> {
        if (closed) throw new Error("closed");
        const seq = ++stream.last;
        stream.messages.push({ seq, type, bytes: encode(body) });
        stream.appends++;
        return { segment: 0, offset: seq };
      },
      get position() {
        return { segment: 0, offset: stream.last };
      },
      get stats() {
        return { frames: stream.appends, bytes: stream.messages.reduce((n, m) => n + m.bytes.length, 0), syncs: 0, writes: 0 };
      },
      async sync() {},
      async dropBefore(pos: LogPosition) {
        const before = stream.messages.length;
        stream.messages = stream.messages.filter((m) => !atOrBefore({ segment: 0, offset: m.seq }, pos));
        stream.dropped += before - stream.messages.length;
        return before - stream.messages.length;
      },
      async close() {
        closed = true;
      },
    };
    return { log, report: { segments: 0, frames, bytes: 0, tornTail: null, damaged: [] } };
  };
}

const { root, kernels, pool } = engineFixture("svc-log-seam-");

const vec = (i: number) => Float32Array.from({ length: 16 }, (_, j) => Math.sin(i * 7 + j) + (j === i % 16 ? 2 : 0));

describe("a collection over a log that is not the WAL", () => {
  it("writes, checkpoints at a stream position, drops what the checkpoint holds and replays the rest after a restart", async () => {
    const dir = join(root, "c");
    const stream: Stream = { messages: [], last: 0, appends: 0, dropped: 0 };
    const c1 = await Collection.open(dir, { kernels, pool, dimension: 16, openLog: streamLog(stream) });
    await c1.upsert(
      "ns",
      [0, 1, 2].map((i) => ({ id: `v${i}`, values: vec(i), metadata: { i } })),
    );
    await c1.delete("ns", { ids: ["v1"] });
    await c1.settled();
    expect((await c1.query("ns", { vector: vec(2), topK: 1 })).matches[0]!.id).toBe("v2");
    await c1.close();
    // Nothing went to a WAL; the checkpoint names the stream position it holds, and the stream dropped those frames.
    expect(existsSync(join(dir, "wal"))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).wal).toEqual({ segment: 0, offset: 2 });
    expect(stream).toMatchObject({ appends: 2, dropped: 2, messages: [] });

    const c2 = await Collection.open(dir, { kernels, pool, openLog: streamLog(stream) });
    expect(c2.ids("ns")).toEqual(["v0", "v2"]);
    await c2.upsert("ns", [{ id: "v3", values: vec(3), metadata: { i: 3 } }]);
    await c2.update("ns", { id: "v0", setMetadata: { tag: "x" } });
    // A restart without close: the frames after the checkpoint are replayed from the stream.
    const c3 = await Collection.open(dir, { kernels, pool, openLog: streamLog(stream) });
    expect(c3.recovery.frames).toBe(2);
    expect(c3.ids("ns").sort()).toEqual(["v0", "v2", "v3"]);
    expect(c3.fetch("ns", ["v0"])[0]!.metadata).toEqual({ i: 0, tag: "x" });
    await c3.upsert("ns", [{ id: "v4", values: vec(4) }]);
    await c3.close();
    expect(JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).wal).toEqual({ segment: 0, offset: 5 });
    expect(stream.messages).toEqual([]);
  });
});
