/** @module wal.test — round trips, replay from a position, rollover, dropBefore, group commit and durability modes of the WAL. */
import { existsSync, readlinkSync, statSync } from "node:fs";
import { open, readdir, readFile, stat, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { Encoder } from "@msgpack/msgpack";
import { Wal, type WalPosition } from "../../src/store/wal.js";
import { FrameEncoder, ZERO_COPY_MIN } from "../../src/store/frame-encoder.js";
import { HEADER_SIZE, FRAME_OVERHEAD } from "../../src/store/segment.js";
import { appendAll, openCollect, pattern, useTempDir } from "./helpers.js";

const tmp = useTempDir();

const segFiles = async (d: string): Promise<string[]> => (await readdir(d)).filter((n) => n.endsWith(".seg")).sort();

describe("Wal round trip", () => {
  it("replays frames of several types and sizes, in order, with the positions append returned", async () => {
    const values = new Float32Array(512_000); // 2 MB of float32, the engine's batch shape
    for (let i = 0; i < values.length; i++) values[i] = Math.sin(i) * 0.1;
    const small = pattern(300, 7);
    const bodies: Array<[number, unknown]> = [
      [1, { op: "put", id: "a", meta: { tags: ["x", "y"], n: 3 } }],
      [2, "plain string"],
      [255, [1, 2.5, -7, null, true, false]],
      [3, { ids: [10, 11], values }],
      [1, small],
      [4, null],
      [5, { big: pattern(ZERO_COPY_MIN, 3), tail: pattern(ZERO_COPY_MIN + 1, 4), mid: 42 }],
    ];
    const { wal, report } = await Wal.open(tmp.dir);
    expect(report).toEqual({ segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] });
    expect(wal.position).toEqual({ segment: 1, offset: HEADER_SIZE });
    const ends: WalPosition[] = [];
    for (const [t, b] of bodies) ends.push(await wal.append(t, b));
    expect(wal.position).toEqual(ends[ends.length - 1]);
    await wal.close();

    const { wal: again, frames, report: r2 } = await openCollect(tmp.dir);
    expect(r2.frames).toBe(bodies.length);
    expect(r2.segments).toBe(1);
    expect(r2.tornTail).toBeNull();
    expect(r2.bytes).toBe((await stat(join(tmp.dir, "000001.seg"))).size);
    expect(frames.map((f) => f.type)).toEqual(bodies.map(([t]) => t));
    expect(frames.map((f) => f.end)).toEqual(ends);
    let prev: WalPosition = { segment: 1, offset: HEADER_SIZE };
    for (const f of frames) {
      expect(f.start).toEqual(prev);
      prev = f.end;
    }
    expect(frames[0]!.body).toEqual(bodies[0]![1]);
    expect(frames[1]!.body).toBe("plain string");
    expect(frames[2]!.body).toEqual([1, 2.5, -7, null, true, false]);
    const batch = frames[3]!.body as { ids: number[]; values: Uint8Array };
    expect(batch.ids).toEqual([10, 11]);
    expect(batch.values).toBeInstanceOf(Uint8Array);
    expect(batch.values.byteLength).toBe(values.byteLength);
    expect(Buffer.from(batch.values).equals(Buffer.from(values.buffer))).toBe(true);
    expect(Buffer.from(frames[4]!.body as Uint8Array).equals(Buffer.from(small))).toBe(true);
    expect(frames[5]!.body).toBeNull();
    const mixed = frames[6]!.body as { big: Uint8Array; tail: Uint8Array; mid: number };
    expect(Buffer.from(mixed.big).equals(Buffer.from(pattern(ZERO_COPY_MIN, 3)))).toBe(true);
    expect(Buffer.from(mixed.tail).equals(Buffer.from(pattern(ZERO_COPY_MIN + 1, 4)))).toBe(true);
    expect(mixed.mid).toBe(42);

    // Appending after a reopen continues at the old end.
    const next = await again.append(9, "after reopen");
    expect(next.segment).toBe(1);
    expect(next.offset).toBeGreaterThan(ends[ends.length - 1]!.offset);
    await again.close();
    const { wal: third, frames: all } = await openCollect(tmp.dir);
    expect(all.map((f) => f.type)).toEqual([...bodies.map(([t]) => t), 9]);
    expect(all[all.length - 1]!.body).toBe("after reopen");
    await third.close();
  });

  it("writes large binaries by reference with the same bytes a plain msgpack Encoder produces", () => {
    const enc = new FrameEncoder();
    expect(enc.zeroCopy).toBe(true);
    const body = { a: pattern(ZERO_COPY_MIN * 2, 1), b: [pattern(10, 2), new Float32Array([1, 2, 3])], c: pattern(ZERO_COPY_MIN + 5, 9) };
    const frame = enc.encode(3, body);
    expect(frame.parts.length).toBeGreaterThan(1);
    expect(frame.parts.some((p) => p.buffer === body.a.buffer && p.byteOffset === 0 && p.byteLength === body.a.byteLength)).toBe(true); // referenced, not copied
    const flat = Buffer.concat(frame.parts);
    expect(flat.length).toBe(frame.size);
    expect(flat[FRAME_OVERHEAD]).toBe(3);
    expect(flat.subarray(FRAME_OVERHEAD + 1).equals(new Encoder().encode(body))).toBe(true);
  });

  it("replays only frames at or after `from`", async () => {
    const { wal } = await Wal.open(tmp.dir);
    const ends = await appendAll(
      wal,
      Array.from({ length: 10 }, (_, i) => ({ i })),
    );
    await wal.close();
    const { wal: w1, frames } = await openCollect(tmp.dir, { from: ends[5]! });
    expect(frames.map((f) => (f.body as { i: number }).i)).toEqual([6, 7, 8, 9]);
    expect(frames[0]!.start).toEqual(ends[5]);
    await w1.close();
    const { wal: w2, frames: none } = await openCollect(tmp.dir, { from: ends[9]! });
    expect(none).toEqual([]);
    await w2.close();
    const { wal: w3, frames: all } = await openCollect(tmp.dir, { from: { segment: 1, offset: 0 } });
    expect(all).toHaveLength(10);
    await w3.close();
  });

  it("refuses a `from` inside a frame with E_BAD_REQUEST", async () => {
    const { wal } = await Wal.open(tmp.dir);
    const ends = await appendAll(wal, ["a", "b", "c"]);
    await wal.close();
    await expect(Wal.open(tmp.dir, { from: { segment: 1, offset: ends[0]!.offset + 3 } })).rejects.toMatchObject({ code: "E_BAD_REQUEST" });
  });

  it("rolls over into new segments, keeps order across them, and fits a frame larger than segmentBytes", async () => {
    const { wal } = await Wal.open(tmp.dir, { segmentBytes: 4096 });
    const bodies = Array.from({ length: 40 }, (_, i) => ({ i, pad: pattern(900, i) }));
    const ends = await Promise.all(bodies.map((b) => wal.append(1, b))); // concurrent appends cross rollovers
    const huge = await wal.append(2, pattern(20_000, 5));
    await wal.close();
    for (let k = 1; k < ends.length; k++) {
      const [a, b] = [ends[k - 1]!, ends[k]!];
      expect(b.segment > a.segment || (b.segment === a.segment && b.offset > a.offset)).toBe(true);
    }
    const files = await segFiles(tmp.dir);
    expect(files.length).toBeGreaterThanOrEqual(8);
    expect(files[0]).toBe("000001.seg");
    expect(files[files.length - 1]).toBe(`${String(huge.segment).padStart(6, "0")}.seg`);
    for (const f of files.slice(0, -1)) {
      const size = (await stat(join(tmp.dir, f))).size;
      expect(size).toBeGreaterThanOrEqual(4096);
      expect(size).toBeLessThan(4096 + 1000);
    }
    expect((await stat(join(tmp.dir, files[files.length - 1]!))).size).toBeGreaterThan(20_000);

    const { wal: again, frames, report } = await openCollect(tmp.dir);
    expect(report.segments).toBe(files.length);
    expect(frames.map((f) => (f.type === 1 ? (f.body as { i: number }).i : -1))).toEqual([...bodies.map((b) => b.i), -1]);
    expect(frames.map((f) => f.end)).toEqual([...ends, huge]);
    for (const f of frames) if (f.start.segment !== f.end.segment) throw new Error("frame spans segments");
    expect(frames.filter((f) => f.start.offset === HEADER_SIZE).length).toBe(files.length);
    await again.close();
  });

  it("rolls after the old segment's last fdatasync, with the new header's fdatasync and the directory fsync side by side, before any frame", async () => {
    // Every fdatasync/fsync of a file handle, with the file it is on, and at its end the new segment's size.
    const probe = await open(join(tmp.dir, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as Record<"datasync" | "sync", (this: FileHandle) => Promise<void>>;
    await probe.close();
    const seg2 = join(tmp.dir, "000002.seg");
    const events: string[] = [];
    const spies = (["datasync", "sync"] as const).map((m) => {
      const orig = proto[m];
      return vi.spyOn(proto, m).mockImplementation(async function (this: FileHandle) {
        const target = readlinkSync(`/proc/self/fd/${this.fd}`);
        const what = target === tmp.dir ? "dir" : target.slice(tmp.dir.length + 1);
        events.push(`${what} start`);
        await orig.call(this);
        events.push(`${what} end${existsSync(seg2) ? ` seg2=${statSync(seg2).size}` : ""}`);
      });
    });
    try {
      const { wal } = await Wal.open(tmp.dir, { segmentBytes: 4096, durability: "batch" });
      events.length = 0;
      await wal.append(1, pattern(5000, 1)); // segment 1 is full
      await wal.append(1, pattern(100, 2)); // starts segment 2
      await wal.close();
    } finally {
      for (const s of spies) s.mockRestore();
    }
    const at = (e: string) => {
      const i = events.findIndex((x) => x.startsWith(e));
      expect(i, `${e} in ${events.join(", ")}`).toBeGreaterThanOrEqual(0);
      return i;
    };
    // Segment 1's last fdatasync ended before segment 2 existed (a torn tail is accepted only in the last segment).
    at("000001.seg end");
    expect(events.filter((e) => e.startsWith("000001.seg end"))).toEqual(events.filter((e) => e === "000001.seg end"));
    // Segment 2's header fdatasync and the directory fsync overlapped, and no frame was in segment 2 when either ended.
    expect(at("dir start")).toBeLessThan(at("000002.seg end"));
    expect(at("000002.seg start")).toBeLessThan(at("dir end"));
    expect(events[at("000002.seg end")]).toBe(`000002.seg end seg2=${HEADER_SIZE}`);
    expect(events[at("dir end")]).toBe(`dir end seg2=${HEADER_SIZE}`);
  });

  it("dropBefore deletes only whole segments that end at or before the position, never the active one", async () => {
    const { wal } = await Wal.open(tmp.dir, { segmentBytes: 2048 });
    const ends = await appendAll(
      wal,
      Array.from({ length: 30 }, (_, i) => ({ i, pad: pattern(500, i) })),
    );
    const before = await segFiles(tmp.dir);
    expect(before.length).toBeGreaterThanOrEqual(5);
    // A position inside segment 3 (not its end) drops segments 1 and 2 only.
    const inThird = ends.find((e) => e.segment === 3)!;
    expect(await wal.dropBefore(inThird)).toBe(2);
    expect((await segFiles(tmp.dir))[0]).toBe("000003.seg");
    // The exact end of segment 3's last frame drops segment 3 as well.
    const endOfThird = [...ends].reverse().find((e) => e.segment === 3)!;
    expect(await wal.dropBefore(endOfThird)).toBe(1);
    expect(await wal.dropBefore(endOfThird)).toBe(0);
    // Everything: all but the active segment.
    const last = wal.position;
    expect(await wal.dropBefore(last)).toBe(before.length - 4);
    expect(await segFiles(tmp.dir)).toEqual([`${String(last.segment).padStart(6, "0")}.seg`]);
    const more = await wal.append(1, { i: 30 });
    await wal.close();

    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => (f.body as { i: number }).i)).toEqual(
      ends
        .map((e, i) => [e, i] as const)
        .filter(([e]) => e.segment === last.segment)
        .map(([, i]) => i)
        .concat([30]),
    );
    expect(frames[frames.length - 1]!.end).toEqual(more);
    await again.close();
  });

  it("replay from a position in a dropped segment starts at the next existing segment", async () => {
    const { wal } = await Wal.open(tmp.dir, { segmentBytes: 2048 });
    const ends = await appendAll(
      wal,
      Array.from({ length: 20 }, (_, i) => ({ i, pad: pattern(500, i) })),
    );
    const endOfSecond = [...ends].reverse().find((e) => e.segment === 2)!;
    expect(await wal.dropBefore(endOfSecond)).toBe(2);
    await wal.close();
    const { wal: again, frames, report } = await openCollect(tmp.dir, { from: endOfSecond });
    const firstLater = ends.findIndex((e) => e.segment === 3);
    expect(frames.map((f) => (f.body as { i: number }).i)).toEqual(Array.from({ length: 20 - firstLater }, (_, k) => firstLater + k));
    expect(report.segments).toBe((await segFiles(tmp.dir)).length);
    await again.close();
  });

  it("rejects appends after close with E_CLOSED and bad frame types with E_BAD_REQUEST", async () => {
    const { wal } = await Wal.open(tmp.dir);
    await expect(wal.append(0, "padding is reserved")).rejects.toMatchObject({ code: "E_BAD_REQUEST" });
    await expect(wal.append(256, "x")).rejects.toMatchObject({ code: "E_BAD_REQUEST" });
    await expect(wal.append(1.5, "x")).rejects.toMatchObject({ code: "E_BAD_REQUEST" });
    const p = wal.append(1, "queued before close");
    await wal.close();
    await expect(p).resolves.toMatchObject({ segment: 1 });
    await expect(wal.append(1, "late")).rejects.toMatchObject({ code: "E_CLOSED" });
    await wal.close(); // idempotent
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual(["queued before close"]);
    await again.close();
  });
});

describe("Wal errors", () => {
  it("passes an error thrown by onFrame through unchanged and leaves the log openable", async () => {
    const { wal } = await Wal.open(tmp.dir);
    await appendAll(wal, ["a", "b", "c"]);
    await wal.close();
    const boom = new Error("engine rejected frame");
    let seen = 0;
    await expect(
      Wal.open(tmp.dir, {
        onFrame: () => {
          if (++seen === 2) throw boom;
        },
      }),
    ).rejects.toBe(boom);
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual(["a", "b", "c"]);
    await again.close();
  });

  it("rejects a body msgpack cannot encode with E_BAD_REQUEST and keeps appending", async () => {
    const { wal } = await Wal.open(tmp.dir);
    await expect(wal.append(1, { n: 10n })).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "body" });
    const p = await wal.append(1, { n: 10 });
    expect(p).toEqual(wal.position);
    await wal.close();
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual([{ n: 10 }]);
    await again.close();
  });

  it("refuses bad options with E_BAD_REQUEST", async () => {
    await expect(Wal.open(tmp.dir, { segmentBytes: 0 })).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "segmentBytes" });
    await expect(Wal.open(tmp.dir, { durability: "always" as never })).rejects.toMatchObject({
      code: "E_BAD_REQUEST",
      field: "durability",
    });
    await expect(Wal.open(tmp.dir, { from: { segment: -1, offset: 0 } })).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "from" });
  });
});

describe("Wal group commit and durability modes", () => {
  it("batch: 100 concurrent appends resolve in order and share a handful of fdatasyncs", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "batch" });
    const ends = await Promise.all(Array.from({ length: 100 }, (_, i) => wal.append(1 + (i % 3), { i, v: pattern(1000, i) })));
    for (let k = 1; k < ends.length; k++) expect(ends[k]!.offset).toBeGreaterThan(ends[k - 1]!.offset);
    const s = wal.stats;
    expect(s.frames).toBe(100);
    expect(s.syncs).toBeGreaterThanOrEqual(1);
    expect(s.syncs).toBeLessThan(10); // the first append flushes alone, the other 99 queue behind it
    expect(s.writes).toBeLessThan(10);
    expect(s.bytes).toBe(ends[99]!.offset - HEADER_SIZE);
    await wal.close();
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => (f.body as { i: number }).i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    await again.close();
  });

  it("appendMany writes the same bytes as one append per body, in one write and one fdatasync", async () => {
    const bodies = Array.from({ length: 50 }, (_, i) => ({ t: `tenant-${i % 3}`, op: "query", n: 1000 + i, ts: i }));
    const { wal: one } = await Wal.open(join(tmp.dir, "one"), { durability: "batch" });
    for (const b of bodies) await one.append(2, b);
    await one.close();
    const { wal } = await Wal.open(join(tmp.dir, "many"), { durability: "batch" });
    await wal.append(1, { first: true });
    const s0 = wal.stats;
    const end = await wal.appendMany(2, bodies);
    const s = wal.stats;
    expect(s.frames - s0.frames).toBe(50);
    expect(s.writes - s0.writes).toBe(1);
    expect(s.syncs - s0.syncs).toBe(1);
    expect(end).toEqual(wal.position);
    expect(await wal.appendMany(2, [])).toEqual(end);
    await wal.close();
    const a = await readFile(join(tmp.dir, "one", "000001.seg"));
    const b = await readFile(join(tmp.dir, "many", "000001.seg"));
    const firstFrame = FRAME_OVERHEAD + 1 + new Encoder().encode({ first: true }).length;
    expect(b.subarray(HEADER_SIZE + firstFrame).equals(a.subarray(HEADER_SIZE))).toBe(true);
    const { wal: again, frames } = await openCollect(join(tmp.dir, "many"));
    expect(frames.map((f) => f.body)).toEqual([{ first: true }, ...bodies]);
    await again.close();
  });

  it("batch: every sequential append is fdatasync'ed before it resolves", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "batch" });
    await appendAll(wal, ["a", "b", "c"]);
    expect(wal.stats.syncs).toBe(3);
    // each found the writer idle; a small frame is sealed before its writev: one write each, no CRC pwrite
    // (a metered request's wallet charge is such a frame: the pwrite was a thread-pool round trip before its reply)
    expect(wal.stats.writes).toBe(3);
    await wal.close();
  });

  it("a small append is written in this thread: with durability none it resolves within the microtask queue", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "none" });
    let resolved = false;
    void wal.append(1, { charge: 42 }).then(() => (resolved = true));
    // A thread-pool write could only report back in a later turn of the event loop, never between microtasks.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(resolved).toBe(true);
    expect(statSync(join(tmp.dir, "000001.seg")).size).toBe(wal.position.offset);
    let big = false;
    void wal.append(1, pattern(100_000, 3)).then(() => (big = true)); // past SYNC_WRITE_MAX: written on the pool
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(big).toBe(false);
    await wal.close();
    expect(big).toBe(true);
  });

  it("batch: a large frame on an idle writer is written while its CRC is computed, then sealed with a pwrite", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "batch" });
    await appendAll(wal, [pattern(100_000, 1), pattern(100_000, 2)]);
    expect(wal.stats.syncs).toBe(2);
    expect(wal.stats.writes).toBe(4); // writev, then the CRC stored after its overlapped computation
    await wal.close();
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual([pattern(100_000, 1), pattern(100_000, 2)]);
    await again.close();
  });

  it("none: appends resolve after the write, fdatasync only on sync() and close()", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "none" });
    const ends = await appendAll(
      wal,
      Array.from({ length: 20 }, (_, i) => i),
    );
    expect(wal.stats).toMatchObject({ frames: 20, syncs: 0 });
    expect(wal.stats.writes).toBeGreaterThanOrEqual(20); // each append resolved (was written) before the next
    // resolved means written: the bytes are in the file already
    expect((await stat(join(tmp.dir, "000001.seg"))).size).toBe(ends[19]!.offset);
    await wal.sync();
    expect(wal.stats.syncs).toBe(1);
    await wal.sync(); // nothing new to sync
    expect(wal.stats.syncs).toBe(1);
    await wal.append(1, 20);
    await wal.close();
    expect(wal.stats.syncs).toBe(2);
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual(Array.from({ length: 21 }, (_, i) => i));
    await again.close();
  });

  it("none: rollover fsyncs the finished segment", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "none", segmentBytes: 256 });
    await appendAll(wal, [pattern(300, 1), pattern(300, 2)]);
    expect(wal.position.segment).toBe(2);
    expect(wal.stats.syncs).toBe(2); // segment 1's data, then segment 2's header
    await wal.close();
  });

  it("interval: appends resolve after the write and a timer fdatasyncs them", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "interval", intervalMs: 5 });
    await Promise.all(Array.from({ length: 50 }, (_, i) => wal.append(1, i)));
    await appendAll(wal, [50, 51]);
    expect(wal.stats.frames).toBe(52);
    while (wal.stats.syncs === 0) await new Promise((r) => setTimeout(r, 5));
    expect(wal.stats.syncs).toBeLessThan(wal.stats.writes + 1);
    await wal.close();
    const { wal: again, frames } = await openCollect(tmp.dir);
    expect(frames.map((f) => f.body)).toEqual(Array.from({ length: 52 }, (_, i) => i));
    await again.close();
  });

  it("sync() resolves after every earlier append is durable", async () => {
    const { wal } = await Wal.open(tmp.dir, { durability: "none" });
    const pending = Array.from({ length: 10 }, (_, i) => wal.append(1, i));
    await wal.sync();
    const ends = await Promise.all(pending);
    expect(wal.stats.syncs).toBe(1);
    expect((await readFile(join(tmp.dir, "000001.seg"))).length).toBe(ends[9]!.offset);
    await wal.close();
  });
});
