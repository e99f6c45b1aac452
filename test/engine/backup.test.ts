/** Collection.backup: a copy taken while writes go on opens as a collection holding at least every write acknowledged before it, never a torn one; verifyCopy catches a changed file. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyCopy } from "../../src/engine/backup.js";
import { Collection } from "../../src/engine/collection.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { engineFixture } from "./engine-fixture.js";

const fx = engineFixture("svc-backup-");
const DIM = 16;
const next = mulberry32(33);
const vec = () => Array.from({ length: DIM }, () => next() / 4294967296 - 0.5);

describe("Collection.backup", () => {
  it("copies a consistent point in time while upserts and deletes go on; the copy opens with its own fresh log", async () => {
    const c = await Collection.open(fx.newDir(), { kernels: fx.kernels, pool: fx.pool, dimension: DIM });
    const written = new Map<string, number[]>();
    for (let i = 0; i < 500; i++) written.set(`a${i}`, vec());
    await c.upsert(
      "",
      [...written].map(([id, values]) => ({ id, values, metadata: { i: Number(id.slice(1)) } })),
    );
    await c.upsert("other", [{ id: "x", values: vec() }]);
    await c.delete("", { ids: ["a0", "a1"] });
    await c.settled();
    // Writes keep going while the backup runs.
    let stop = false;
    let during = 0;
    const writer = (async () => {
      for (let b = 0; !stop && b < 200; b++) {
        await c.upsert(
          "",
          Array.from({ length: 20 }, (_, j) => ({ id: `w${b}-${j}`, values: vec() })),
        );
        during++;
      }
    })();
    const dest = join(fx.root, "copy1");
    const copy = await c.backup(dest);
    stop = true;
    await writer;
    expect(copy.records).toBeGreaterThanOrEqual(499);
    expect((copy.records - 499) % 20).toBe(0); // 498 + "other"'s 1 + whole batches of 20 written during the copy
    expect(copy.namespaces).toBe(2);
    expect(copy.files.map((f) => f.path)).toContain("checkpoint.json");
    expect(copy.bytes).toBe(copy.files.reduce((n, f) => n + f.bytes, 0));
    await verifyCopy(dest, copy.files);

    const r = await Collection.open(dest, { kernels: fx.kernels, pool: fx.pool });
    expect(r.stats().totalVectorCount).toBe(copy.records);
    expect(r.fetch("", ["a0", "a1"])).toEqual([]);
    const a7 = r.fetch("", ["a7"])[0]!;
    expect(Array.from(a7.values!)).toEqual(Array.from(Float32Array.from(written.get("a7")!)));
    expect(a7.metadata).toEqual({ i: 7 });
    // Batches written during the copy are in it whole or not at all.
    const wIds = r.ids("").filter((id) => id.startsWith("w"));
    const batches = new Map<string, number>();
    for (const id of wIds) batches.set(id.split("-")[0]!, (batches.get(id.split("-")[0]!) ?? 0) + 1);
    for (const n of batches.values()) expect(n).toBe(20);
    // The restored collection takes writes on its own log and keeps them over a reopen.
    await r.upsert("", [{ id: "after", values: vec() }]);
    await r.close();
    const again = await Collection.open(dest, { kernels: fx.kernels, pool: fx.pool });
    expect(again.fetch("", ["after"]).length).toBe(1);
    expect(again.stats().totalVectorCount).toBe(copy.records + 1);
    await again.close();
    // The source lost nothing.
    await c.settled();
    expect(c.stats().totalVectorCount).toBe(498 + 1 + during * 20);
    await c.close();
    expect(during).toBeGreaterThan(0);
  });

  it("verifyCopy names a file whose bytes changed", async () => {
    const c = await Collection.open(fx.newDir(), { kernels: fx.kernels, pool: fx.pool, dimension: DIM });
    await c.upsert("", [{ id: "a", values: vec() }]);
    const dest = join(fx.root, "copy2");
    const copy = await c.backup(dest);
    await c.close();
    const f = copy.files.find((x) => x.path.endsWith("records.bin"))!;
    const bytes = readFileSync(join(dest, f.path));
    bytes[0] = bytes[0]! ^ 1;
    writeFileSync(join(dest, f.path), bytes);
    await expect(verifyCopy(dest, copy.files)).rejects.toMatchObject({
      code: "E_BACKUP_DAMAGED",
      message: expect.stringContaining(f.path),
    });
  });
});
