/** @module format-v1.test — the committed v1 fixture (scripts/make-wal-fixture.ts) still opens with the exact frames and documented bytes. */
import { copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { crc32c } from "@node-rs/crc32";
import { openCollect, useTempDir } from "./helpers.js";

const FIXTURE = join(fileURLToPath(new URL(".", import.meta.url)), "..", "fixtures", "wal-v1", "000001.seg");

const tmp = useTempDir((dir) => copyFile(FIXTURE, join(dir, "000001.seg")));

describe("WAL format v1 fixture", () => {
  it("header bytes follow the documented layout", async () => {
    const b = await readFile(FIXTURE);
    expect(b.subarray(0, 8).toString("latin1")).toBe("SVCWAL\r\n");
    expect(b.readUInt32LE(8)).toBe(1); // format version
    expect(b.readUInt32LE(12)).toBe(0); // flags
    expect(b.readBigUInt64LE(16)).toBe(1n); // segment id
    expect(b.readUInt32LE(24)).toBe(0); // reserved
    expect(b.readUInt32LE(28)).toBe(crc32c(b.subarray(0, 28)));
  });

  it("frames follow the documented layout: sync, length, crc over length + type + payload", async () => {
    const b = await readFile(FIXTURE);
    const starts = [32, 61, 107, 127, 151];
    const types = [1, 2, 0, 7, 255];
    let p = 32;
    for (let k = 0; k < starts.length; k++) {
      expect(p).toBe(starts[k]);
      expect([...b.subarray(p, p + 4)]).toEqual([0xf7, 0x5a, 0xd6, 0x1c]);
      const length = b.readUInt32LE(p + 4);
      expect(b[p + 12]).toBe(types[k]);
      expect(b.readUInt32LE(p + 8)).toBe(crc32c(b.subarray(p + 12, p + 12 + length), crc32c(b.subarray(p + 4, p + 8))));
      p += 12 + length;
    }
    expect(p).toBe(b.length);
    expect(b.length).toBe(188);
  });

  it("opens with the current code and replays the exact frames (padding skipped)", async () => {
    const { wal, frames, report } = await openCollect(tmp.dir);
    expect(report).toEqual({ segments: 1, frames: 4, bytes: 188, tornTail: null, damaged: [] });
    expect(frames).toEqual([
      { type: 1, body: { op: "put", id: "a", n: 1 }, start: { segment: 1, offset: 32 }, end: { segment: 1, offset: 61 } },
      {
        type: 2,
        body: { ids: [7, 8], values: new Uint8Array(new Float32Array([1, -1, 0.5, 0.25]).buffer) },
        start: { segment: 1, offset: 61 },
        end: { segment: 1, offset: 107 },
      },
      { type: 7, body: "hello, wal", start: { segment: 1, offset: 127 }, end: { segment: 1, offset: 151 } },
      { type: 255, body: [1, 2.5, null, true, { nested: ["x"] }], start: { segment: 1, offset: 151 }, end: { segment: 1, offset: 188 } },
    ]);
    const values = (frames[1]!.body as { values: Uint8Array }).values;
    expect(values).toBeInstanceOf(Uint8Array);
    expect([...new Float32Array(values.slice().buffer)]).toEqual([1, -1, 0.5, 0.25]);
    expect(wal.position).toEqual({ segment: 1, offset: 188 });
    await wal.close();
  });
});
