import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { carryTombstones, copyLiveRows } from "../../src/engine/compaction.js";
import { Partition } from "../../src/engine/partition.js";
import { Kernels } from "../../src/kernels/abi.js";
import { randomBytes } from "../../src/kernels/random.js";

const root = mkdtempSync(join(tmpdir(), "svc-compaction-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const kernels = Kernels.create();
const shape = { dimension: 128, metric: "hamming" as const };
const part = (dir: string) => new Partition(kernels, root, shape, { namespace: "", dir, rows: 0, recordBytes: 0 });

describe("compaction", () => {
  it("keeps writes made between its chunks: a delete, a delete then re-upsert of a copied id, an upsert of a new id", async () => {
    const old = part("old");
    const n = 20_000;
    const bits = randomBytes(1, n * 16);
    old.append(
      null,
      Array.from({ length: n }, (_, i) => `v${i}`),
      bits,
      Array.from({ length: n }, (_, i) => (i % 3 === 0 ? { i } : null)),
    );
    old.remove(Array.from({ length: 5000 }, (_, i) => `v${10_000 + i}`));
    const fresh = part("fresh");
    const again = randomBytes(2, 16);
    const copying = copyLiveRows(old, fresh, null);
    // Runs after the first chunk (4,096 rows, which hold v1 and v2) was copied.
    setImmediate(() => {
      expect(fresh.rows).toBeGreaterThan(2);
      expect(fresh.rows).toBeLessThan(n - 5000);
      old.remove(["v1", "v2"]);
      old.append(null, ["v1", "extra"], new Uint8Array([...again, ...again]), [{ re: true }, null]);
    });
    const map = await copying;
    carryTombstones(old, fresh, map);

    expect(fresh.liveCount).toBe(old.liveCount);
    expect(fresh.rowOf("v2")).toBeUndefined();
    const v1 = fresh.rowOf("v1")!;
    expect(fresh.vector(v1)).toEqual(again);
    expect(fresh.metadata(v1)).toEqual({ re: true });
    expect(fresh.rowOf("extra")).toBeDefined();
    for (const id of ["v0", "v3", "v9999", "v15000", "v19999"]) {
      const r = fresh.rowOf(id)!;
      expect(fresh.vector(r)).toEqual(old.vector(old.rowOf(id)!));
      expect(fresh.metadata(r)).toEqual(old.metadata(old.rowOf(id)!));
    }
    expect(fresh.rowOf("v12345")).toBeUndefined();
    old.close();
    fresh.close();
  });
});

describe("compaction by dead fraction", () => {
  it("overwrites that leave over COMPACT_DEAD_FRACTION of the rows dead start a background compaction long before checkpointBytes of log", async () => {
    const { Collection, COMPACT_MIN_DEAD, COMPACT_DEAD_FRACTION } = await import("../../src/engine/collection.js");
    const { ScanPool } = await import("../../src/pool/scan-pool.js");
    const { readFileSync, existsSync } = await import("node:fs");
    const pool = new ScanPool(kernels, { threads: 1 });
    const dir = join(root, "coll");
    const c = await Collection.open(dir, { kernels, pool, dimension: 128, metric: "hamming", annMinRows: Infinity });
    try {
      const n = 2 * COMPACT_MIN_DEAD;
      const write = (seed: number, count: number) =>
        c.upsert(
          "",
          Array.from({ length: count }, (_, i) => ({ id: `v${i}`, bits: randomBytes(seed * 100_000 + i, 16), metadata: { seed } })),
        );
      await write(1, n);
      await write(2, n); // every row overwritten once: half the rows are dead (> 0.25, >= COMPACT_MIN_DEAD)
      expect(0.5).toBeGreaterThan(COMPACT_DEAD_FRACTION);
      const cp = () => (existsSync(join(dir, "checkpoint.json")) ? JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")) : null);
      // The compaction ends with a checkpoint naming the fresh generation: only live rows.
      for (let i = 0; i < 200 && cp()?.partitions[0]?.rows !== n; i++) await new Promise((r) => setTimeout(r, 25));
      expect(cp()?.partitions.map((p: { rows: number }) => p.rows)).toEqual([n]);
      expect(c.count("")).toBe(n);
      expect(c.fetch("", ["v7"])[0]!.metadata).toEqual({ seed: 2 });
    } finally {
      await c.close();
      await pool.close();
    }
  });
});
