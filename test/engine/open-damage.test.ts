/**
 * A collection whose files keep it from opening, in process (issue 29 item 9): it is offline
 * (E_STORE_OFFLINE, an offline damage entry) instead of a bare E_IO; the salvage open `svc repair`
 * uses rebuilds what the log holds and names what it cannot, and leaves a checkpoint it cannot
 * rebuild (the log lost its first segments) untouched.
 */
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { KeptReports } from "../../src/store/reporter.js";
import { engineFixture } from "./engine-fixture.js";

const { root, kernels, pool } = engineFixture("svc-open-damage-");
const DIM = 8;
const vec = (i: number) => Float32Array.from({ length: DIM }, (_, j) => Math.sin(i * DIM + j + 1));
const id = (i: number) => `v${String(i).padStart(4, "0")}`;
/** What the opens report (read back with reporter.reports()); nothing is logged. */
const reporter = new KeptReports({ damage: () => {}, background: () => {} });
const opts = () => ({ kernels, pool, segmentBytes: 4096, annMinRows: Infinity, reporter });

/** 3 batches of 100 rows with a checkpoint after each: the log keeps only batch 2's frame (rows 200..299). */
async function build(name: string): Promise<{ dir: string; part: string }> {
  const dir = join(root, name);
  const c = await Collection.open(dir, { ...opts(), dimension: DIM });
  for (let b = 0; b < 3; b++) {
    await c.upsert(
      "ns",
      Array.from({ length: 100 }, (_, i) => ({ id: id(b * 100 + i), values: vec(b * 100 + i), metadata: { i: b * 100 + i } })),
    );
    await c.checkpoint();
  }
  await c.close();
  expect(existsSync(join(dir, "wal", "000001.seg"))).toBe(false);
  return { dir, part: join(dir, "parts", JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")).partitions[0].dir) };
}

describe("a collection that cannot open", () => {
  it("values.f32 cut short: offline (E_STORE_OFFLINE, named) until a salvage open rebuilds the rows past the cut from the log", async () => {
    const { dir, part } = await build("short");
    const values = join(part, "values.f32");
    truncateSync(values, statSync(values).size - 1000); // rows 269..299 (32 bytes a row) lose bytes
    reporter.cleared(`collection:${dir}`);
    await expect(Collection.open(dir, opts())).rejects.toMatchObject({ code: "E_STORE_OFFLINE" });
    expect(reporter.reports().filter((r) => r.store === `collection:${dir}`)).toEqual([
      expect.objectContaining({ kind: "unopenable", offline: true, file: expect.stringMatching(/values\.f32$/) }),
    ]);
    reporter.cleared(`collection:${dir}`);
    const c = await Collection.open(dir, { ...opts(), salvage: true });
    try {
      const found = c.fetch(
        "ns",
        Array.from({ length: 300 }, (_, i) => id(i)),
      );
      expect(found).toHaveLength(300); // every row past the cut is batch 2's: in the log
      for (const v of found) expect(Array.from(v.values)).toEqual(Array.from(vec(Number(v.id.slice(1)))));
      const [r] = reporter.reports().filter((x) => x.store === `collection:${dir}`);
      expect(r).toMatchObject({ kind: "bad-checksum", dropped: 0, offline: false });
    } finally {
      await c.close();
    }
  });

  it("tombstones file lost while the log no longer holds the first batches: the ids it holds are rebuilt, the others dropped and named", async () => {
    const { dir, part } = await build("tombs");
    const tomb = readdirSync(part).find((f) => f.startsWith("tombstones-"))!;
    writeFileSync(join(part, tomb), "not a bitmap");
    reporter.cleared(`collection:${dir}`);
    await expect(Collection.open(dir, opts())).rejects.toMatchObject({ code: "E_STORE_OFFLINE" });
    reporter.cleared(`collection:${dir}`);
    const c = await Collection.open(dir, { ...opts(), salvage: true });
    try {
      expect(c.count("ns")).toBe(100);
      expect(c.fetch("ns", [id(0), id(250)]).map((v) => v.id)).toEqual([id(250)]);
      const [r] = reporter.reports().filter((x) => x.store === `collection:${dir}`);
      expect(r).toMatchObject({ kind: "unreadable", dropped: 200, file: expect.stringContaining(tomb) });
      expect(r!.detail).toContain(
        `100 rebuilt from the log, 200 dropped (not in the log: deleted, or written before its first segment) (${id(0)}, ${id(1)}`,
      );
    } finally {
      await c.close();
    }
  });

  it("checkpoint.json unreadable and the log's first segment gone: the salvage open refuses and touches nothing", async () => {
    const { dir } = await build("cp");
    const path = join(dir, "checkpoint.json");
    const text = readFileSync(path, "utf8");
    writeFileSync(path, text.slice(0, text.length >> 1));
    await expect(Collection.open(dir, opts())).rejects.toMatchObject({ code: "E_STORE_OFFLINE" });
    const err = await Collection.open(dir, { ...opts(), salvage: true }).catch((e: Error) => e);
    expect(err).toMatchObject({ code: "E_STORE_OFFLINE" });
    expect(String((err as Error).message)).toContain("restore checkpoint.json from a backup");
    expect(readFileSync(path, "utf8")).toBe(text.slice(0, text.length >> 1));
    expect(readdirSync(dir).filter((f) => f.includes("damaged"))).toEqual([]);
  });
});
