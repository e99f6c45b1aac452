/**
 * Block checksums of a partition's files: a flipped byte in values.f32 or records.bin is found on
 * open, the rows of the damaged block are never served as wrong values, rows whose frames are
 * still in the log are rebuilt exactly, the rest are dropped and reported by row and id, and the
 * partition is rewritten so the files check clean again.
 */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { SUM_BLOCK } from "../../src/engine/block-sums.js";
import { KeptReports } from "../../src/store/reporter.js";
import { engineFixture } from "./engine-fixture.js";

const { root, kernels, pool } = engineFixture("svc-sums-");

const DIM = 8;
const ROWS_PER_BLOCK = SUM_BLOCK / (DIM * 4); // values.f32 rows per block
const vec = (i: number) => Float32Array.from({ length: DIM }, (_, j) => Math.sin(i * DIM + j + 1));
const id = (i: number) => `v${String(i).padStart(4, "0")}`;
/** What the opens report (read back with reporter.reports()); nothing is logged. */
const reporter = new KeptReports({ damage: () => {}, background: () => {} });
const opts = () => ({ kernels, pool, segmentBytes: 4096, annMinRows: Infinity, reporter });

/** 3 batches of 100 rows, a checkpoint (which drops the segments of batches 0 and 1: each frame has a segment of its own), then a clean close. */
async function build(name: string): Promise<{ dir: string; part: string }> {
  const dir = join(root, name);
  const c = await Collection.open(dir, { ...opts(), dimension: DIM });
  for (let b = 0; b < 3; b++) {
    await c.upsert(
      "ns",
      Array.from({ length: 100 }, (_, i) => ({ id: id(b * 100 + i), values: vec(b * 100 + i), metadata: { b, i } })),
    );
    await c.checkpoint();
  }
  await c.close();
  const cp = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8"));
  expect(cp.version).toBe(2);
  expect(cp.partitions[0].sums).toMatch(/^sums-\d+\.bin$/);
  expect(readdirSync(join(dir, "wal")).filter((f) => f.endsWith(".seg"))).toHaveLength(1); // only batch 2's frame is left
  return { dir, part: join(dir, "parts", cp.partitions[0].dir) };
}

function flip(file: string, at: number): void {
  const b = readFileSync(file);
  b[at] = b[at]! ^ 0x5a;
  writeFileSync(file, b);
}

async function waitClean(c: Collection, dir: string): Promise<void> {
  // The rewrite of the damaged partition ends with a checkpoint naming a new generation.
  const first = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).partitions[0].dir;
  for (let i = 0; i < 200 && JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).partitions[0].dir === first; i++)
    await new Promise((r) => setTimeout(r, 25));
  expect(JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).partitions[0].dir).not.toBe(first);
  void c;
}

describe("block checksums of values.f32 and records.bin", () => {
  it("a flipped byte in values.f32: the block's rows are not served; those the log still has are rebuilt exactly, the others dropped and reported", async () => {
    const { dir, part } = await build("values");
    flip(join(part, "values.f32"), 5 * DIM * 4 + 3); // row 5: block 0 = rows 0..127, whose frames were dropped
    flip(join(part, "values.f32"), 2 * SUM_BLOCK + 1); // block 2 = rows 256..299: batch 2, still in the log
    reporter.cleared(`collection:${dir}`);
    const c = await Collection.open(dir, opts());
    try {
      const got = (i: number) => c.fetch("ns", [id(i)]).map((v) => [v.id, Array.from(v.values)]);
      expect(got(5)).toEqual([]); // dropped, not a wrong value
      expect(got(127)).toEqual([]);
      expect(got(128)).toEqual([[id(128), Array.from(vec(128))]]); // block 1: untouched
      expect(got(260)).toEqual([[id(260), Array.from(vec(260))]]); // rebuilt from the log
      expect(c.fetch("ns", [id(299)])[0]!.metadata).toEqual({ b: 2, i: 99 });
      expect(c.count("ns")).toBe(300 - ROWS_PER_BLOCK);
      const q = await c.query("ns", { vector: vec(5), topK: 1 });
      expect(q.matches[0]!.id).not.toBe(id(5));
      const reports = reporter.reports().filter((r) => r.store === `collection:${dir}`);
      expect(reports).toEqual([
        expect.objectContaining({
          kind: "bad-checksum",
          file: expect.stringMatching(/^parts\/p\d+\/values\.f32$/),
          dropped: ROWS_PER_BLOCK,
          offline: false,
          detail: expect.stringContaining(`${ROWS_PER_BLOCK + 44} row(s) in blocks that failed their checksum`),
        }),
      ]);
      expect(reports[0]!.detail).toContain(`44 rebuilt from the log, ${ROWS_PER_BLOCK} dropped (${id(0)}, ${id(1)}`);
      await waitClean(c, dir);
    } finally {
      await c.close();
    }
    // Rewritten without the damaged rows: the next open finds nothing.
    reporter.cleared(`collection:${dir}`);
    const again = await Collection.open(dir, opts());
    expect(reporter.reports().filter((r) => r.store === `collection:${dir}`)).toEqual([]);
    expect(again.count("ns")).toBe(300 - ROWS_PER_BLOCK);
    await again.close();
  });

  it("flipped bytes in records.bin: a damaged head resumes the walk at the next block's first record (rows between dropped, named by row); a damaged body with readable heads keeps the ids, so its block's rows are rebuilt from the log", async () => {
    const { dir, part } = await build("records");
    const file = join(part, "records.bin");
    const records = readFileSync(file);
    expect(records.length).toBeGreaterThan(SUM_BLOCK); // two blocks
    const at250 = records.indexOf(Buffer.from(id(250)));
    expect(Math.floor(at250 / SUM_BLOCK)).toBe(1);
    flip(file, 0); // the first record's id length: nothing in block 0 can be trusted
    flip(file, at250 + 5 + 4 + 1); // inside row 250's metadata
    reporter.cleared(`collection:${dir}`);
    const c = await Collection.open(dir, opts());
    try {
      const live = c.count("ns");
      const all = Array.from({ length: 300 }, (_, i) => id(i));
      const found = c.fetch("ns", all);
      expect(found).toHaveLength(live);
      expect(found[0]!.id > id(150)).toBe(true); // block 0's rows (from row 0 on) are gone
      for (const v of found) {
        const i = Number(v.id.slice(1));
        expect(Array.from(v.values)).toEqual(Array.from(vec(i)));
        expect(v.metadata).toEqual({ b: Math.floor(i / 100), i: i % 100 });
      }
      expect(found.map((v) => v.id)).toContain(id(250)); // rebuilt with its exact metadata (checked above)
      expect(found.map((v) => v.id)).toEqual(all.slice(300 - live)); // exactly block 0's rows are lost
      expect(found.map((v) => v.id)).toContain(id(299));
      const [r] = reporter.reports().filter((x) => x.store === `collection:${dir}`);
      expect(r).toMatchObject({ kind: "bad-checksum", file: expect.stringMatching(/records\.bin$/), dropped: 300 - live });
      expect(r!.detail).toMatch(/ dropped \(\d+ of rows 0\.\.\d+ \(ids unreadable\)\)/); // block 0's rows, less those the log's ids stand for
      expect(r!.detail).toContain("the log's ids for the"); // block 0's last rows are batch 2's: in the log
      expect(r!.detail).toContain(`${live} rebuilt from the log, ${300 - live} dropped`); // every row of block 1 is batch 2's, still logged
      expect(r!.detail).toContain("300 row(s) in blocks that failed their checksum");
    } finally {
      await c.close();
    }
  });

  it("a flipped byte in row 200's id length (records.bin block 0 unreadable) while the log holds every row: all of them are rebuilt, nothing dropped", async () => {
    const dir = join(root, "id-length");
    const c0 = await Collection.open(dir, { kernels, pool, annMinRows: Infinity, dimension: DIM });
    await c0.upsert(
      "ns",
      Array.from({ length: 300 }, (_, i) => ({ id: id(i), values: vec(i), metadata: { i } })),
    );
    await c0.close(); // a checkpoint; the log's one segment keeps every frame
    const cp = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8"));
    const file = join(dir, "parts", cp.partitions[0].dir, "records.bin");
    const at200 = readFileSync(file).indexOf(Buffer.from(id(200))) - 4; // row 200's u32 id length
    expect(at200).toBeGreaterThan(0);
    expect(Math.floor(at200 / SUM_BLOCK)).toBe(0);
    const block0 =
      readFileSync(file)
        .subarray(0, SUM_BLOCK)
        .toString("latin1")
        .split(/v\d{4}/).length - 1; // records starting in block 0 (a record reaching into block 1 counts too)
    flip(file, at200);
    reporter.cleared(`collection:${dir}`);
    const c = await Collection.open(dir, opts());
    try {
      const found = c.fetch(
        "ns",
        Array.from({ length: 300 }, (_, i) => id(i)),
      );
      expect(found).toHaveLength(300);
      for (const v of found) {
        const i = Number(v.id.slice(1));
        expect(Array.from(v.values)).toEqual(Array.from(vec(i)));
        expect(v.metadata).toEqual({ i });
      }
      const [r, ...more] = reporter.reports().filter((x) => x.store === `collection:${dir}`);
      expect(more).toEqual([]);
      expect(r).toMatchObject({ kind: "bad-checksum", file: expect.stringMatching(/records\.bin$/), dropped: 0 });
      expect(r!.detail).toMatch(new RegExp(`^(${block0}|${block0 + 1}) row\\(s\\) in blocks that failed their checksum`));
      expect(r!.detail).toMatch(
        /: (\d+) rebuilt from the log, 0 dropped, 0 already dead; the log's ids for the \1 row\(s\) with unreadable ids: v0000, v0001/,
      );
    } finally {
      await c.close();
    }
  });

  it("a version 1 checkpoint (no sums) opens unchecked and the next checkpoint writes sums", async () => {
    const { dir } = await build("v1");
    const path = join(dir, "checkpoint.json");
    const cp = JSON.parse(readFileSync(path, "utf8"));
    cp.version = 1;
    delete cp.partitions[0].sums;
    writeFileSync(path, JSON.stringify(cp));
    const c = await Collection.open(dir, opts());
    expect(c.count("ns")).toBe(300);
    await c.close();
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ version: 2, partitions: [{ sums: expect.stringMatching(/^sums-/) }] });
  });
});
