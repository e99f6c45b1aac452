/** @module corruption.test — torn tails, checksum and header damage, missing segments, and repair of a WAL directory. */
import { readdir, readFile, stat, truncate, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { repairWal } from "../../src/store/repair.js";
import { FRAME_OVERHEAD, HEADER_SIZE, SYNC } from "../../src/store/segment.js";
import { Wal, type WalPosition } from "../../src/store/wal.js";
import { appendAll, flipByte, openCollect, overwrite, pattern, useTempDir } from "./helpers.js";

const tmp = useTempDir();

const seg = (id: number): string => join(tmp.dir, `${String(id).padStart(6, "0")}.seg`);
const sizeOf = async (p: string): Promise<number> => (await stat(p)).size;

/** Frames {i, pad} in one segment; returns their end positions (frame k starts at ends[k-1], or the header end). */
async function writeFrames(n: number, opts: { segmentBytes?: number } = {}): Promise<WalPosition[]> {
  const { wal } = await Wal.open(tmp.dir, opts);
  const ends = await appendAll(
    wal,
    Array.from({ length: n }, (_, i) => ({ i, pad: pattern(200, i) })),
  );
  await wal.close();
  return ends;
}
const startOf = (ends: WalPosition[], k: number): number =>
  k === 0 || ends[k - 1]!.segment !== ends[k]!.segment ? HEADER_SIZE : ends[k - 1]!.offset;
const ids = (frames: { body: unknown }[]): number[] => frames.map((f) => (f.body as { i: number }).i);

async function openError(opts: Parameters<typeof Wal.open>[1] = {}): Promise<SvcError> {
  try {
    const { wal } = await Wal.open(tmp.dir, opts);
    await wal.close();
  } catch (e) {
    expect(e).toBeInstanceOf(SvcError);
    return e as SvcError;
  }
  throw new Error("Wal.open succeeded on a corrupt log");
}

describe("WAL recovery", () => {
  it("truncated-tail-is-cut", async () => {
    const ends = await writeFrames(5);
    const file = seg(1);
    const full = await sizeOf(file);
    await truncate(file, full - 50); // the last frame lost its last 50 bytes: a crash mid-write
    const { wal, frames, report } = await openCollect(tmp.dir);
    expect(ids(frames)).toEqual([0, 1, 2, 3]);
    const cut = startOf(ends, 4);
    expect(report.tornTail).toEqual({
      file,
      offset: cut,
      bytes: full - 50 - cut,
      frames: 1,
      reason: expect.stringContaining("incomplete frame"),
    });
    expect(await sizeOf(file)).toBe(cut);
    expect(wal.position).toEqual({ segment: 1, offset: cut });
    const again = await wal.append(1, { i: 99, pad: pattern(1, 1) });
    await wal.close();
    const { wal: w2, frames: f2, report: r2 } = await openCollect(tmp.dir);
    expect(r2.tornTail).toBeNull();
    expect(ids(f2)).toEqual([0, 1, 2, 3, 99]);
    expect(f2[4]!.end).toEqual(again);
    await w2.close();
  });

  it("cuts a torn tail that is only part of a frame header, or zeros after the last frame", async () => {
    const ends = await writeFrames(3);
    const file = seg(1);
    await writeFile(file, Buffer.concat([await readFile(file), Buffer.from([0xf7, 0x5a, 0xd6])]), { flag: "w" });
    const { wal, report } = await openCollect(tmp.dir);
    expect(report.tornTail).toMatchObject({
      offset: ends[2]!.offset,
      bytes: 3,
      reason: expect.stringContaining("incomplete frame header"),
    });
    await wal.close();
    await writeFile(file, Buffer.concat([await readFile(file), Buffer.alloc(4096)]));
    const { wal: w2, frames, report: r2 } = await openCollect(tmp.dir);
    expect(r2.tornTail).toMatchObject({ offset: ends[2]!.offset, bytes: 4096, reason: "bad sync word" });
    expect(ids(frames)).toEqual([0, 1, 2]);
    await w2.close();
  });

  it("cuts a garbage length in the last frame of the last segment as a torn tail", async () => {
    const ends = await writeFrames(4);
    await overwrite(seg(1), startOf(ends, 3) + 4, Uint8Array.of(0xff, 0xff, 0xff, 0xff));
    const { wal, frames, report } = await openCollect(tmp.dir);
    expect(ids(frames)).toEqual([0, 1, 2]);
    expect(report.tornTail).toMatchObject({ offset: startOf(ends, 3), reason: "bad frame length 4294967295" });
    await wal.close();
  });

  it("checksum-mismatch-refuses-to-open", async () => {
    const ends = await writeFrames(6);
    const file = seg(1);
    const bad = startOf(ends, 2);
    await flipByte(file, bad + FRAME_OVERHEAD + 20); // inside frame 2's payload; frames 3..5 are intact
    const before = await readFile(file);
    const err = await openError();
    expect(err.code).toBe("E_WAL_CORRUPT");
    expect(err.message).toContain(file);
    expect(err.message).toContain(`offset ${bad}`);
    expect(err.message).toContain("checksum mismatch");
    expect(err.details).toEqual({ file, offset: bad });
    // Refusing never changes the file.
    expect((await readFile(file)).equals(before)).toBe(true);
  });

  it("refuses a garbage length before a valid frame", async () => {
    const ends = await writeFrames(4);
    await overwrite(seg(1), startOf(ends, 1) + 4, Uint8Array.of(0x00, 0x00, 0x00, 0x10)); // 256 MiB: allowed, but wrong
    const err = await openError();
    expect(err.code).toBe("E_WAL_CORRUPT");
    expect(err.details).toEqual({ file: seg(1), offset: startOf(ends, 1) });
  });

  it("refuses a flipped bit in a middle segment, even in its last frame", async () => {
    const ends = await writeFrames(20, { segmentBytes: 1024 });
    expect(ends[19]!.segment).toBeGreaterThanOrEqual(3);
    const lastOfTwo = ends.filter((e) => e.segment === 2);
    const k = ends.indexOf(lastOfTwo[lastOfTwo.length - 1]!);
    await flipByte(seg(2), startOf(ends, k) + FRAME_OVERHEAD + 5, 0x10);
    const err = await openError();
    expect(err.code).toBe("E_WAL_CORRUPT");
    expect(err.details).toEqual({ file: seg(2), offset: startOf(ends, k) });
    expect(err.message).toContain(seg(2));
    // Replaying from a later segment does not read segment 2.
    const { wal, frames } = await openCollect(tmp.dir, { from: { segment: 3, offset: 0 } });
    expect(ids(frames)).toEqual(
      ends
        .map((e, i) => [e, i] as const)
        .filter(([e]) => e.segment >= 3)
        .map(([, i]) => i),
    );
    await wal.close();
  });

  it("recreates a last segment whose header was torn during rollover", async () => {
    const ends = await writeFrames(6, { segmentBytes: 1024 });
    const last = ends[5]!.segment;
    await writeFile(seg(last + 1), Buffer.from("SVCWAL\r\n\x01\x00"));
    const { wal, frames, report } = await openCollect(tmp.dir);
    expect(ids(frames)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(report.tornTail).toEqual({
      file: seg(last + 1),
      offset: 0,
      bytes: 10,
      frames: 0,
      reason: expect.stringContaining("incomplete segment header"),
    });
    expect(await sizeOf(seg(last + 1))).toBe(HEADER_SIZE);
    expect(await wal.append(1, { i: 6, pad: pattern(1, 1) })).toEqual({ segment: last + 1, offset: expect.any(Number) });
    await wal.close();
    const { wal: w2, frames: f2, report: r2 } = await openCollect(tmp.dir);
    expect(ids(f2)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(r2.tornTail).toBeNull();
    await w2.close();
  });

  it("refuses a damaged header of a non-last segment and a header naming another segment", async () => {
    await writeFrames(12, { segmentBytes: 1024 });
    await flipByte(seg(1), 3);
    let err = await openError();
    expect(err).toMatchObject({ code: "E_WAL_CORRUPT", details: { file: seg(1), offset: 0 } });
    expect(err.message).toContain("bad segment magic");
    await flipByte(seg(1), 3);
    // Copy segment 3's header over segment 2's: valid CRC, wrong id.
    await overwrite(seg(2), 0, (await readFile(seg(3))).subarray(0, HEADER_SIZE));
    err = await openError();
    expect(err).toMatchObject({ code: "E_WAL_CORRUPT", details: { file: seg(2), offset: 0 } });
    expect(err.message).toContain("names segment 3");
  });

  it("salvage: skips a damaged last frame of a middle segment, a damaged middle frame and a bad middle header, reporting each and replaying the rest", async () => {
    const ends = await writeFrames(20, { segmentBytes: 1024 });
    const inSeg = (id: number) =>
      ends
        .map((e, i) => [e, i] as const)
        .filter(([e]) => e.segment === id)
        .map(([, i]) => i);
    const [two, three, four] = [inSeg(2), inSeg(3), inSeg(4)];
    expect(four.length).toBeGreaterThan(0);
    const lastOfTwo = two.at(-1)!;
    await flipByte(seg(2), startOf(ends, lastOfTwo) + FRAME_OVERHEAD + 5, 0x10); // runs to the end of segment 2
    await flipByte(seg(3), 3); // segment 3's header
    const midOfFour = four.length > 1 ? four[0]! : -1;
    if (midOfFour >= 0) await flipByte(seg(4), startOf(ends, midOfFour) + FRAME_OVERHEAD + 5, 0x10);
    const { wal, frames, report } = await openCollect(tmp.dir, { salvage: true, from: { segment: 2, offset: ends[two[0]!]!.offset } });
    const lost = new Set([two[0]!, lastOfTwo, ...three, midOfFour]); // two[0] ends at `from`: not delivered
    expect(ids(frames)).toEqual(ends.map((_, i) => i).filter((i) => ends[i]!.segment >= 2 && !lost.has(i)));
    expect(report.damaged).toEqual([
      {
        file: seg(2),
        offset: startOf(ends, lastOfTwo),
        bytes: ends[lastOfTwo]!.offset - startOf(ends, lastOfTwo),
        frames: 1,
        reason: "frame checksum mismatch",
        beforeFrom: false,
      },
      { file: seg(3), offset: 0, bytes: ends[three.at(-1)!]!.offset, frames: three.length, reason: "bad segment magic", beforeFrom: false },
      ...(midOfFour >= 0
        ? [
            {
              file: seg(4),
              offset: startOf(ends, midOfFour),
              bytes: ends[midOfFour]!.offset - startOf(ends, midOfFour),
              frames: 1,
              reason: "frame checksum mismatch",
              beforeFrom: false,
            },
          ]
        : []),
    ]);
    expect(report.tornTail).toBeNull();
    await wal.close();
  });

  it("refuses a missing segment in the middle of the sequence", async () => {
    const ends = await writeFrames(20, { segmentBytes: 1024 });
    expect(ends[19]!.segment).toBeGreaterThanOrEqual(4);
    await unlink(seg(2));
    const err = await openError();
    expect(err).toMatchObject({ code: "E_WAL_CORRUPT", details: { file: seg(2), offset: 0 } });
    expect(err.message).toContain("000002.seg");
    expect(err.message).toContain("missing");
  });

  it("refuses a replay position past the last segment", async () => {
    await writeFrames(2);
    const err = await openError({ from: { segment: 5, offset: 100 } });
    expect(err.code).toBe("E_WAL_CORRUPT");
  });

  it("continues in a new segment when a cut tail ends before `from`, so new positions stay after it", async () => {
    const ends = await writeFrames(5);
    await truncate(seg(1), startOf(ends, 4) + 7);
    const { wal, frames, report } = await openCollect(tmp.dir, { from: ends[4]! }); // the checkpoint saw frame 4; the disk did not
    expect(frames).toEqual([]);
    expect(report.tornTail).toMatchObject({ offset: startOf(ends, 4), bytes: 7 });
    expect(wal.position).toEqual({ segment: 2, offset: HEADER_SIZE });
    const p = await wal.append(1, { i: 5, pad: pattern(1, 1) });
    expect(p.segment).toBe(2);
    await wal.close();
    const { wal: w2, frames: f2 } = await openCollect(tmp.dir, { from: ends[4]! });
    expect(ids(f2)).toEqual([5]);
    await w2.close();
  });
});

describe("repairWal", () => {
  it("repair-salvages-later-frames", async () => {
    const ends = await writeFrames(30, { segmentBytes: 1536 });
    const segments = ends[29]!.segment;
    expect(segments).toBeGreaterThanOrEqual(4);
    const original = new Map<number, Buffer>();
    for (let id = 1; id <= segments; id++) original.set(id, await readFile(seg(id)));

    // Damage: a flipped payload byte in segment 1, a garbage length in segment 2, a torn tail in the last segment.
    const inFirst = ends
      .map((e, i) => [e, i] as const)
      .filter(([e]) => e.segment === 1)
      .map(([, i]) => i);
    const inSecond = ends
      .map((e, i) => [e, i] as const)
      .filter(([e]) => e.segment === 2)
      .map(([, i]) => i);
    const a = inFirst[1]!; // a middle frame of segment 1
    const b = inSecond[0]!; // the first frame of segment 2
    await flipByte(seg(1), startOf(ends, a) + 40);
    await overwrite(seg(2), startOf(ends, b) + 4, Uint8Array.of(0x12, 0x34, 0x56, 0x78));
    const lastStart = startOf(ends, 29);
    await truncate(seg(segments), lastStart + 30);
    const damagedFirst = await readFile(seg(1));
    expect((await openError()).code).toBe("E_WAL_CORRUPT");

    const report = await repairWal(tmp.dir);
    expect(report.missing).toEqual([]);
    expect(report.segments).toBe(segments);
    expect(report.files.map((f) => f.file)).toEqual([seg(1), seg(2), seg(segments)]);
    const [r1, r2, rl] = report.files;
    expect(r1!.header).toBeNull();
    expect(r1!.damaged).toEqual([
      { offset: startOf(ends, a), bytes: ends[a]!.offset - startOf(ends, a), reason: "frame checksum mismatch", action: "padded" },
    ]);
    expect(r1!.salvaged).toBe(inFirst.length - 2);
    expect(r1!.sacrificed).toBe(0);
    expect(r2!.damaged).toEqual([
      {
        offset: startOf(ends, b),
        bytes: ends[b]!.offset - startOf(ends, b),
        reason: expect.stringContaining("bad frame length"),
        action: "padded",
      },
    ]);
    expect(r2!.salvaged).toBe(inSecond.length - 1);
    expect(rl!.damaged).toEqual([
      { offset: lastStart, bytes: 30, reason: expect.stringContaining("incomplete frame"), action: "truncated" },
    ]);
    expect(rl!.salvaged).toBe(0);
    // The copies hold the damaged bytes and are never taken for segments.
    expect((await readFile(r1!.backup)).equals(damagedFirst)).toBe(true);
    expect(r1!.backup).toBe(`${seg(1)}.damaged-1`);
    expect((await readdir(tmp.dir)).filter((n) => n.includes(".damaged-")).length).toBe(3);

    // Offsets of every surviving frame are unchanged; padded regions keep the file sizes.
    expect(await sizeOf(seg(1))).toBe(original.get(1)!.length);
    expect(await sizeOf(seg(2))).toBe(original.get(2)!.length);
    const { wal, frames, report: rec } = await openCollect(tmp.dir);
    expect(rec.tornTail).toBeNull();
    const lost = new Set([a, b, 29]);
    expect(ids(frames)).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((i) => !lost.has(i)));
    for (const f of frames) expect(f.end).toEqual(ends[(f.body as { i: number }).i]);
    // The bytes around the padding are the original frames.
    const repaired = await readFile(seg(1));
    expect(repaired.compare(original.get(1)!, ends[a]!.offset, undefined, ends[a]!.offset)).toBe(0);
    expect(repaired.readUInt32LE(startOf(ends, a))).toBe(SYNC);
    expect(repaired[startOf(ends, a) + FRAME_OVERHEAD]).toBe(0); // type 0: padding
    await wal.close();

    // A second repair finds nothing to do.
    const clean = await repairWal(tmp.dir);
    expect(clean.files).toEqual([]);
    expect(clean.frames).toBe(30 - 1 /* cut tail */);
  });

  it("rewrites a damaged header from the file name and keeps the frames", async () => {
    const ends = await writeFrames(12, { segmentBytes: 1024 });
    await overwrite(seg(2), 16, Uint8Array.of(9)); // segment id byte: CRC mismatch
    expect((await openError()).code).toBe("E_WAL_CORRUPT");
    const report = await repairWal(tmp.dir);
    expect(report.files).toHaveLength(1);
    expect(report.files[0]).toMatchObject({ file: seg(2), header: "segment header checksum mismatch", damaged: [] });
    const { wal, frames } = await openCollect(tmp.dir);
    expect(ids(frames)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(frames.map((f) => f.end)).toEqual(ends);
    await wal.close();
  });

  it("pads a damaged region spanning several frames up to the next valid frame", async () => {
    const ends = await writeFrames(8);
    const from = startOf(ends, 2);
    const to = ends[4]!.offset; // frames 2, 3 and 4 overwritten with junk
    await overwrite(seg(1), from, pattern(to - from, 77));
    const report = await repairWal(tmp.dir);
    expect(report.files[0]!.damaged).toEqual([{ offset: from, bytes: to - from, reason: "bad sync word", action: "padded" }]);
    expect(report.files[0]!.salvaged).toBe(3);
    const { wal, frames } = await openCollect(tmp.dir);
    expect(ids(frames)).toEqual([0, 1, 5, 6, 7]);
    await wal.close();
  });

  it("reports a missing middle segment it cannot recreate", async () => {
    await writeFrames(20, { segmentBytes: 1024 });
    await unlink(seg(2));
    const report = await repairWal(tmp.dir);
    expect(report.missing).toEqual([2]);
    expect(report.files).toEqual([]);
  });
});
