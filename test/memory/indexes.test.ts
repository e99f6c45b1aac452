/**
 * @module indexes.test — IndexService expiry (no HTTP): a real Collection in a temp dir and a clock
 * the test moves. Vectors whose svc_expires_at has passed are left out of queries and fetches at
 * once and deleted by the sweep; a namespace without expiring vectors keeps its filter as given.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { EXPIRES_AT, IndexService } from "../../src/memory/indexes.js";
import { CollectionIndex, liveFilter, type VectorIndex } from "../../src/memory/vector-index.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const T0 = 1_700_000_000_000;
const root = mkdtempSync(join(tmpdir(), "svc-indexes-svc-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
const clock = { now: T0 };
const svc = new IndexService(root, { kernels, pool, durability: "none", now: () => clock.now });

afterAll(async () => {
  await svc.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

describe("vector expiry (svc_expires_at)", () => {
  it("hides expired vectors from queries and fetches at once; the sweep deletes them", async () => {
    await svc.create("t", { name: "turns", dimension: 4 });
    const ix: VectorIndex = await svc.use("t", "turns", (ix) => ix);
    const c = (ix as CollectionIndex).collection;
    await c.upsert("n", [
      { id: "soon", values: [1, 0, 0, 0], metadata: { kind: "x", [EXPIRES_AT]: T0 + 1_000 } },
      { id: "never", values: [0.9, 0.1, 0, 0], metadata: { kind: "x" } },
      { id: "later", values: [0.8, 0.2, 0, 0], metadata: { kind: "y", [EXPIRES_AT]: T0 + 5_000 } },
    ]);
    await c.upsert("plain", [{ id: "p", values: [1, 0, 0, 0], metadata: { kind: "x" } }]);
    await c.settled();
    const ids = async (filter?: unknown) =>
      (await ix.query("n", { vector: [1, 0, 0, 0], topK: 10, filter })).matches.map((m) => m.id).sort();
    const fetched = async () => (await ix.fetch("n", ["soon", "never", "later"])).map((v) => v.id).sort();

    expect(await ids()).toEqual(["later", "never", "soon"]);
    clock.now = T0 + 1_000; // expiry is inclusive: at svc_expires_at the vector is gone
    expect(await ids()).toEqual(["later", "never"]);
    expect(await ids({ kind: "x" })).toEqual(["never"]);
    expect(await ids({ $and: [{ kind: { $in: ["x", "y"] } }] })).toEqual(["later", "never"]);
    expect(await fetched()).toEqual(["later", "never"]);
    expect(c.count("n")).toBe(3); // hidden, not yet deleted

    expect(await svc.sweep()).toBe(1);
    await c.settled();
    expect(c.count("n")).toBe(2);
    clock.now = T0 + 10_000;
    expect(await ids()).toEqual(["never"]);
    expect(await svc.sweep()).toBe(1);
    await c.settled();
    expect(c.count("n")).toBe(1);
    expect(await svc.sweep()).toBe(0);

    // A namespace without expiring vectors: the filter is passed through untouched (same plan as before).
    const f = { kind: "x" };
    expect(liveFilter(c, "plain", f, clock.now)).toBe(f);
    expect(liveFilter(c, "plain", undefined, clock.now)).toBeUndefined();
    // A malformed filter still fails with the user's own field path.
    await expect(ix.query("n", { vector: [1, 0, 0, 0], topK: 1, filter: { kind: { $bogus: 1 } } })).rejects.toMatchObject({
      code: "E_FILTER",
      field: "filter.kind.$bogus",
    });
  });
});
