/**
 * BackupService over a real IndexService (no HTTP): a backup taken while writes go on is Ready with its record count and
 * restores into a new index holding exactly what it counted; an index being deleted cannot be backed up (409); a backup
 * folder copied to another data dir restores there (the other-node path); a damaged copy is refused with nothing created;
 * hostile backup ids (fast-check, fixed seed) are 400 or 404, never anything else.
 */
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { BackupService, type BackupRecord } from "../../src/memory/backups.js";
import { IndexService } from "../../src/memory/indexes.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const root = mkdtempSync(join(tmpdir(), "svc-backups-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const dataA = join(root, "a");
const dataB = join(root, "b");
const indexes = new IndexService(dataA, { kernels, pool, durability: "none" });
const backups = new BackupService(indexes, dataA);
const indexesB = new IndexService(dataB, { kernels, pool, durability: "none" });
const backupsB = new BackupService(indexesB, dataB);

afterAll(async () => {
  await backups.close();
  await indexes.close();
  await indexesB.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

const vec = (i: number) => [1 + (i % 7), 2 + (i % 3), -1 - (i % 5), 0.5 + i / 1000];

async function ready(svc: BackupService, tenant: string, id: string): Promise<BackupRecord> {
  for (let i = 0; i < 400; i++) {
    const b = svc.describe(tenant, id);
    if (b.status !== "Initializing") return b;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("backup did not finish in 10 s");
}

describe("BackupService", () => {
  it("backs up while writes go on and restores exactly the counted records into a new index", async () => {
    await indexes.create("t", { name: "src", dimension: 4, metric: "euclidean", tags: { team: "x" } });
    await indexes.use("t", "src", (ix) =>
      ix.upsert(
        "",
        Array.from({ length: 300 }, (_, i) => ({ id: `a${i}`, values: vec(i), metadata: { i } })),
      ),
    );
    await indexes.use("t", "src", (ix) => ix.upsert("ns2", [{ id: "z", values: vec(1) }]));
    let stop = false;
    const writer = (async () => {
      for (let b = 0; !stop && b < 100; b++)
        await indexes.use("t", "src", (ix) =>
          ix.upsert(
            "",
            Array.from({ length: 10 }, (_, j) => ({ id: `w${b}-${j}`, values: vec(b + j) })),
          ),
        );
    })();
    const started = backups.create("t", "src", { name: "nightly", description: "before the migration" });
    expect(started.status).toBe("Initializing");
    const b = await ready(backups, "t", started.backupId);
    stop = true;
    await writer;
    expect(b.status).toBe("Ready");
    expect(b.recordCount).toBeGreaterThanOrEqual(301);
    expect((b.recordCount! - 301) % 10).toBe(0); // whole batches only
    expect(b.namespaceCount).toBe(2);
    expect(b.sizeBytes).toBeGreaterThan(0);
    expect(b.name).toBe("nightly");
    expect(backups.list("t", { limit: 10 }).data.map((x) => x.backupId)).toEqual([b.backupId]);
    expect(backups.list("t", { indexName: "other", limit: 10 }).data).toEqual([]);
    expect(backups.list("u", { limit: 10 }).data).toEqual([]); // another tenant sees none

    const { index } = await backups.restore("t", b.backupId, { name: "copy" });
    expect(index).toMatchObject({ name: "copy", dimension: 4, metric: "euclidean", tags: { team: "x" } });
    const stats = await indexes.use("t", "copy", (ix) => ix.stats());
    expect(stats.totalVectorCount).toBe(b.recordCount);
    expect(stats.metric).toBe("euclidean");
    const [a5] = await indexes.use("t", "copy", (ix) => ix.fetch("", ["a5"]));
    expect(Array.from(a5!.values!)).toEqual(Array.from(Float32Array.from(vec(5))));
    expect(a5!.metadata).toEqual({ i: 5 });
    // The copy is an index of its own: writes to it do not touch the source, and a second restore needs a new name.
    await indexes.use("t", "copy", (ix) => ix.upsert("", [{ id: "only-in-copy", values: vec(3) }]));
    expect(await indexes.use("t", "src", (ix) => ix.fetch("", ["only-in-copy"]))).toEqual([]);
    await expect(backups.restore("t", b.backupId, { name: "copy" })).rejects.toMatchObject({ code: "E_CONFLICT" });

    // Another node: the backup folder copied into that node's data dir restores there.
    cpSync(join(dataA, "tenants", "t", "backups", b.backupId), join(dataB, "tenants", "t", "backups", b.backupId), { recursive: true });
    expect(backupsB.list("t", { limit: 10 }).data.map((x) => x.backupId)).toEqual([b.backupId]);
    await backupsB.restore("t", b.backupId, { name: "moved" });
    expect((await indexesB.use("t", "moved", (ix) => ix.stats())).totalVectorCount).toBe(b.recordCount);

    await backups.delete("t", b.backupId);
    expect(() => backups.describe("t", b.backupId)).toThrow(expect.objectContaining({ code: "E_NOT_FOUND" }));
  });

  it("refuses a damaged backup with nothing created", async () => {
    await indexes.create("t", { name: "dmg", dimension: 4 });
    await indexes.use("t", "dmg", (ix) => ix.upsert("", [{ id: "a", values: vec(1) }]));
    const b = await ready(backups, "t", backups.create("t", "dmg", {}).backupId);
    const dir = join(dataA, "tenants", "t", "backups", b.backupId);
    const f = b.files!.find((x) => x.path.endsWith("records.bin"))!;
    const bytes = readFileSync(join(dir, "data", f.path));
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(join(dir, "data", f.path), bytes);
    await expect(backups.restore("t", b.backupId, { name: "dmg-copy" })).rejects.toMatchObject({ code: "E_BACKUP_DAMAGED" });
    expect(indexes.list("t").map((r) => r.name)).not.toContain("dmg-copy");
    expect(readdirSync(join(dataA, "tenants", "t", "indexes")).filter((n) => n.includes("dmg-copy"))).toEqual([]);
  });

  it("a backup of an index being deleted is 409; of a missing one 404", async () => {
    await indexes.create("t", { name: "going", dimension: 4 });
    await indexes.use("t", "going", (ix) => ix.upsert("", [{ id: "a", values: vec(1) }]));
    // Hold the index in use so its delete waits (as it waits for any request in flight).
    let release!: () => void;
    const held = indexes.use("t", "going", () => new Promise<void>((r) => (release = r)));
    const deleting = indexes.delete("t", "going");
    await new Promise((r) => setTimeout(r, 20));
    expect(() => backups.create("t", "going", {})).toThrow(expect.objectContaining({ code: "E_CONFLICT", field: "index_name" }));
    release();
    await held;
    await deleting;
    expect(() => backups.create("t", "going", {})).toThrow(expect.objectContaining({ code: "E_NOT_FOUND" }));
  });

  it("hostile backup ids are 400 (malformed) or 404 (well-formed, unknown), never a path on disk", async () => {
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const codeOf = async (f: () => unknown) => {
      try {
        await f();
        return "ok";
      } catch (err) {
        return err instanceof SvcError ? err.code : `not an SvcError: ${String(err)}`;
      }
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.constantFrom(
            "..",
            "../../etc/passwd",
            "/etc/passwd",
            "%2e%2e",
            ".creating-x",
            "\0",
            "00000000-0000-0000-0000-000000000000/..",
          ),
          fc.uuid(),
        ),
        async (id) => {
          const want = UUID.test(id) ? "E_NOT_FOUND" : "E_BAD_REQUEST";
          expect(await codeOf(() => backups.describe("t", id))).toBe(want);
          expect(await codeOf(() => backups.delete("t", id))).toBe(want);
          expect(await codeOf(() => backups.restore("t", id, { name: "never" }))).toBe(want);
        },
      ),
      { seed: 3303, numRuns: 300 },
    );
    expect(indexes.list("t").map((r) => r.name)).not.toContain("never");
  });
});
