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
    old.append(null, Array.from({ length: n }, (_, i) => `v${i}`), bits, Array.from({ length: n }, (_, i) => (i % 3 === 0 ? { i } : null)));
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
