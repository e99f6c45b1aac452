/**
 * Bulk imports over a real IndexService (no HTTP): the import root (symlinks resolved, outside refused without
 * probing), Parquet and NDJSON rows with their numbers, a wrong Parquet schema refused at start, errorMode abort
 * (nothing written) and continue (bad rows skipped and listed), cancel; hostile paths and hostile NDJSON lines
 * (fast-check, fixed seeds).
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { openSource } from "../../src/memory/import-source.js";
import { ImportService, MAX_QUEUED, resolveImportPath, type ImportJob } from "../../src/memory/imports.js";
import { IndexService } from "../../src/memory/indexes.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { checkInput } from "../../src/http/input.js";
import type { Route } from "../../src/http/route.js";
import { BACKUP_OPS } from "../../src/tools/backup-ops.js";

const root = mkdtempSync(join(tmpdir(), "svc-imports-"));
const importRoot = join(root, "in");
const outside = join(root, "outside");
mkdirSync(importRoot);
mkdirSync(outside);
writeFileSync(join(outside, "secret.ndjson"), '{"id":"s","values":[1,2,3,4]}\n');
symlinkSync(outside, join(importRoot, "escape"));
symlinkSync(join(outside, "secret.ndjson"), join(importRoot, "link.ndjson"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const indexes = new IndexService(join(root, "data"), { kernels, pool, durability: "none" });
const imports = new ImportService({ indexes, config: { root: importRoot, maxUrlBytes: 1 << 20 }, fetchUrl: async () => Buffer.from("") });

afterAll(async () => {
  await imports.close();
  await indexes.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

const DIM = 4;
const vec = (i: number) => [1 + (i % 5), 2, -1 - (i % 3), 0.25 * (i + 1)];
const codeOf = (f: () => unknown): string => {
  try {
    f();
    return "ok";
  } catch (err) {
    return err instanceof SvcError ? err.code : `not an SvcError: ${String(err)}`;
  }
};

async function finished(tenant: string, index: string, id: string): Promise<ImportJob> {
  for (let i = 0; i < 800; i++) {
    const j = imports.describe(tenant, index, id);
    if (j.status !== "Pending" && j.status !== "InProgress") return j;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("import did not finish in 20 s");
}

const PARQUET_SCHEMA = [
  { name: "root", num_children: 3 },
  { name: "id", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
  { name: "values", repetition_type: "REQUIRED", converted_type: "LIST", num_children: 1 },
  { name: "list", repetition_type: "REPEATED", num_children: 1 },
  { name: "element", type: "FLOAT", repetition_type: "REQUIRED" },
  { name: "metadata", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
] as const;

describe("the import root", () => {
  it("resolves paths inside it, refuses outside ones (also through symlinks) and names missing files only inside", () => {
    writeFileSync(join(importRoot, "ok.ndjson"), "");
    const real = realpathSync(importRoot);
    expect(resolveImportPath(importRoot, "ok.ndjson").path).toBe(join(real, "ok.ndjson"));
    expect(resolveImportPath(importRoot, join(importRoot, "ok.ndjson")).path).toBe(join(real, "ok.ndjson"));
    expect(resolveImportPath(importRoot, `file://${join(importRoot, "ok.ndjson")}`).path).toBe(join(real, "ok.ndjson"));
    expect(codeOf(() => resolveImportPath(importRoot, "../outside/secret.ndjson"))).toBe("E_IMPORT_PATH");
    expect(codeOf(() => resolveImportPath(importRoot, "escape/secret.ndjson"))).toBe("E_IMPORT_PATH");
    expect(codeOf(() => resolveImportPath(importRoot, "link.ndjson"))).toBe("E_IMPORT_PATH");
    expect(codeOf(() => resolveImportPath(importRoot, "/etc/does-not-exist"))).toBe("E_IMPORT_PATH"); // not 404: no probing outside
    expect(codeOf(() => resolveImportPath(importRoot, "missing.ndjson"))).toBe("E_NOT_FOUND");
    expect(codeOf(() => resolveImportPath(importRoot, "."))).toBe("E_BAD_REQUEST"); // a directory
    expect(codeOf(() => resolveImportPath(null, "ok.ndjson"))).toBe("E_IMPORT_PATH");
  });

  it("no hostile path resolves outside the root (fast-check)", () => {
    const real = realpathSync(importRoot);
    const piece = fc.constantFrom(
      "..",
      ".",
      "escape",
      "link.ndjson",
      "ok.ndjson",
      "in",
      "outside",
      "secret.ndjson",
      "",
      "%2e%2e",
      "\\",
      "~",
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(piece, fc.string({ maxLength: 8 })), { maxLength: 8 }), fc.boolean(), (parts, absolute) => {
        const p = (absolute ? "/" : "") + parts.join("/");
        try {
          const r = resolveImportPath(importRoot, p);
          expect(r.path.startsWith(real + "/")).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(SvcError);
          expect(["E_IMPORT_PATH", "E_NOT_FOUND", "E_BAD_REQUEST"]).toContain((err as SvcError).code);
        }
      }),
      { seed: 3305, numRuns: 500 },
    );
  });
});

describe("import files", () => {
  it("numbers NDJSON rows by line and says what is wrong with each bad one", async () => {
    const lines = [
      JSON.stringify({ id: "a", values: vec(1), metadata: { k: "x" } }),
      "",
      JSON.stringify({ id: "b", values: [1, 2, 3] }),
      "{not json",
      JSON.stringify({ id: "", values: vec(2) }),
      JSON.stringify({ id: "c", values: vec(3), metadata: { nested: { no: 1 } } }),
      JSON.stringify({ id: "d", values: [0, 0, 0, 0] }),
      JSON.stringify({ id: "e", values: vec(4), sparseValues: { indices: [3, 1], values: [1, 2] } }),
      JSON.stringify({ id: "f", values: vec(5), extra: 1 }),
      JSON.stringify({ id: "g", values: vec(6), sparseValues: { indices: [1, 3], values: [1, 2] } }),
    ];
    const src = await openSource({ buffer: Buffer.from(lines.join("\n")) });
    expect(src.format).toBe("ndjson");
    const rows = [];
    for await (const b of src.batches(DIM)) rows.push(...b);
    expect(rows.map((r) => [r.row, "vector" in r])).toEqual([
      [1, true],
      [3, false],
      [4, false],
      [5, false],
      [6, false],
      [7, false],
      [8, false],
      [9, false],
      [10, true],
    ]);
    const errors = Object.fromEntries(rows.filter((r) => "error" in r).map((r) => [r.row, (r as { error: string }).error]));
    expect(errors[3]).toMatch(/values.*3 values.*dimension 4/);
    expect(errors[4]).toMatch(/not JSON/);
    expect(errors[5]).toMatch(/^id: /);
    expect(errors[6]).toMatch(/metadata/);
    expect(errors[7]).toMatch(/all zeros/);
    expect(errors[8]).toMatch(/sparse_values/);
    expect(errors[9]).toMatch(/unknown field 'extra'/);
  });

  it("reads Parquet rows (id, values, metadata as JSON) and refuses a wrong schema before any row", async () => {
    const buf = Buffer.from(
      parquetWriteBuffer({
        schema: [...PARQUET_SCHEMA],
        columnData: [
          { name: "id", data: ["p1", "p2", "p3"] },
          { name: "values", data: [vec(1), [1, 2], vec(3)] },
          { name: "metadata", data: ['{"genre":"drama"}', null, "not json"] },
        ],
      }),
    );
    const src = await openSource({ buffer: buf });
    expect(src).toMatchObject({ format: "parquet", rows: 3 });
    const rows = [];
    for await (const b of src.batches(DIM)) rows.push(...b);
    expect(rows[0]).toMatchObject({ row: 1, vector: { id: "p1", metadata: { genre: "drama" } } });
    expect(rows[1]).toMatchObject({ row: 2, error: expect.stringMatching(/dimension 4/) });
    expect(rows[2]).toMatchObject({ row: 3, error: expect.stringMatching(/metadata is not JSON/) });

    const wrong = [
      {
        schema: [
          { name: "root", num_children: 2 },
          { name: "id", type: "INT32", repetition_type: "REQUIRED" },
          ...PARQUET_SCHEMA.slice(2, 5),
        ],
        columnData: [
          { name: "id", data: [1] },
          { name: "values", data: [vec(1)] },
        ],
        field: "id",
      },
      { schema: [{ name: "root", num_children: 1 }, PARQUET_SCHEMA[1]], columnData: [{ name: "id", data: ["a"] }], field: "values" },
      {
        schema: [
          { name: "root", num_children: 2 },
          PARQUET_SCHEMA[1],
          { name: "values", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
        ],
        columnData: [
          { name: "id", data: ["a"] },
          { name: "values", data: ["[1,2,3,4]"] },
        ],
        field: "values",
      },
      {
        schema: [
          { name: "root", num_children: 3 },
          ...PARQUET_SCHEMA.slice(1, 5),
          { name: "vector", type: "INT32", repetition_type: "REQUIRED" },
        ],
        columnData: [
          { name: "id", data: ["a"] },
          { name: "values", data: [vec(1)] },
          { name: "vector", data: [1] },
        ],
        field: "vector",
      },
    ];
    for (const w of wrong) {
      const file = Buffer.from(parquetWriteBuffer({ schema: w.schema as never, columnData: w.columnData }));
      await expect(openSource({ buffer: file })).rejects.toMatchObject({ code: "E_IMPORT_SCHEMA", field: w.field });
    }
    await expect(openSource({ buffer: Buffer.concat([Buffer.from("PAR1"), Buffer.alloc(20)]) })).rejects.toMatchObject({
      code: "E_IMPORT_SCHEMA",
    });
  });
});

describe("ImportService", () => {
  it("abort: one bad row fails the import and nothing is written; continue: the rest is written and the bad rows listed", async () => {
    await indexes.create("t", { name: "imp", dimension: DIM });
    const good = Array.from({ length: 1200 }, (_, i) => JSON.stringify({ id: `v${i}`, values: vec(i), metadata: { i } }));
    const lines = [...good.slice(0, 700), JSON.stringify({ id: "bad", values: [1] }), ...good.slice(700)];
    writeFileSync(join(importRoot, "mixed.ndjson"), lines.join("\n") + "\n");
    const aborted = await finished("t", "imp", (await imports.start("t", "imp", { uri: "mixed.ndjson", metered: false })).id);
    expect(aborted).toMatchObject({ status: "Failed", recordsImported: 0, badRowCount: 1, badRows: [{ row: 701 }], errorMode: "abort" });
    expect(aborted.error).toMatch(/row 701.*nothing was written/);
    expect((await indexes.use("t", "imp", (ix) => ix.stats())).totalVectorCount).toBe(0);

    const cont = await finished(
      "t",
      "imp",
      (await imports.start("t", "imp", { uri: "mixed.ndjson", errorMode: { onError: "continue" }, namespace: "n1", metered: false })).id,
    );
    expect(cont).toMatchObject({ status: "Completed", recordsImported: 1200, badRowCount: 1, rowsTotal: 1201, rowsDone: 1201 });
    expect(cont.badRows[0]!.row).toBe(701);
    const stats = await indexes.use("t", "imp", (ix) => ix.stats());
    expect(stats.namespaces.n1?.vectorCount).toBe(1200);
    const [v5] = await indexes.use("t", "imp", (ix) => ix.fetch("n1", ["v5"]));
    expect(v5!.metadata).toEqual({ i: 5 });

    const listed = imports.list("t", "imp", { limit: 1 });
    expect(listed.data.map((j) => j.id)).toEqual([cont.id]);
    expect(imports.list("t", "imp", { limit: 1, after: listed.next }).data.map((j) => j.id)).toEqual([aborted.id]);
    expect(imports.list("u", "imp", { limit: 10 }).data).toEqual([]); // another tenant sees none
  });

  it("imports a Parquet file; a wrong schema, a missing index, an outside path and a bad errorMode are refused at start", async () => {
    await indexes.create("t", { name: "pq", dimension: DIM });
    writeFileSync(
      join(importRoot, "v.parquet"),
      new Uint8Array(
        parquetWriteBuffer({
          schema: [...PARQUET_SCHEMA],
          columnData: [
            { name: "id", data: Array.from({ length: 1500 }, (_, i) => `p${i}`) },
            { name: "values", data: Array.from({ length: 1500 }, (_, i) => vec(i)) },
            { name: "metadata", data: Array.from({ length: 1500 }, (_, i) => JSON.stringify({ i })) },
          ],
        }),
      ),
    );
    const done = await finished("t", "pq", (await imports.start("t", "pq", { uri: "v.parquet", metered: false })).id);
    expect(done).toMatchObject({ status: "Completed", format: "parquet", recordsImported: 1500, badRowCount: 0 });
    expect((await indexes.use("t", "pq", (ix) => ix.stats())).totalVectorCount).toBe(1500);

    writeFileSync(
      join(importRoot, "wrong.parquet"),
      new Uint8Array(parquetWriteBuffer({ columnData: [{ name: "id", data: [1, 2], type: "INT32" }] })),
    );
    await expect(imports.start("t", "pq", { uri: "wrong.parquet", metered: false })).rejects.toMatchObject({ code: "E_IMPORT_SCHEMA" });
    await expect(imports.start("t", "nope", { uri: "v.parquet", metered: false })).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(imports.start("t", "pq", { uri: "../outside/secret.ndjson", metered: false })).rejects.toMatchObject({
      code: "E_IMPORT_PATH",
    });
    await expect(imports.start("t", "pq", { uri: "s3://bucket/x.parquet", metered: false })).rejects.toMatchObject({
      code: "E_BAD_REQUEST",
      field: "uri",
    });
    // a bad errorMode is the route's schema's to refuse (tools/backup-ops.ts), before the service is called
    const route = { input: BACKUP_OPS.start_import } as unknown as Route;
    const body = { uri: "v.parquet", errorMode: { onError: "ignore" } };
    expect(() => checkInput(route, { body, query: new URLSearchParams() })).toThrow(/^errorMode\.onError: /);
    expect(imports.list("t", "pq", { limit: 10 }).data).toHaveLength(1);
  });

  it("cancel stops the job and says what was written", async () => {
    await indexes.create("t", { name: "cx", dimension: DIM });
    const N = 100_000;
    writeFileSync(
      join(importRoot, "big.ndjson"),
      Array.from({ length: N }, (_, i) => JSON.stringify({ id: `c${i}`, values: vec(i) })).join("\n"),
    );
    // Cancelled while queued: nothing written.
    await imports.start("t", "cx", { uri: "big.ndjson", metered: false }).then((j) => imports.cancel("t", "cx", j.id));
    // Cancelled while writing: it stops at a batch boundary and says how far it got.
    const job = await imports.start("t", "cx", { uri: "big.ndjson", metered: false });
    for (let i = 0; i < 2000; i++) {
      const d = imports.describe("t", "cx", job.id);
      if ((d.phase === "writing" && d.recordsImported > 0) || d.finishedAt !== null) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    imports.cancel("t", "cx", job.id);
    const j = await finished("t", "cx", job.id);
    expect(j.status).toBe("Cancelled");
    expect(j.recordsImported).toBeGreaterThan(0);
    expect(j.recordsImported).toBeLessThan(N);
    expect(j.recordsImported % 500).toBe(0); // whole batches
    const stored = (await indexes.use("t", "cx", (ix) => ix.stats())).totalVectorCount;
    expect(stored).toBe(j.recordsImported);
    expect(j.error).toBe(`cancelled: ${j.recordsImported} records were written (rows 1..${j.recordsImported} of ${N})`);
    expect(imports.list("t", "cx", { limit: 10 }).data.map((x) => x.status)).toEqual(["Cancelled", "Cancelled"]);
    expect(codeOf(() => imports.describe("t", "cx", "not-an-id"))).toBe("E_BAD_REQUEST");
    expect(codeOf(() => imports.describe("t", "cx", "00000000-0000-4000-8000-000000000000"))).toBe("E_NOT_FOUND");
    expect(codeOf(() => imports.describe("t", "pq", job.id))).toBe("E_NOT_FOUND"); // another index's job
  });

  it("at most MAX_QUEUED jobs wait or run at once (each may hold a fetched file); the next start is 409", async () => {
    await indexes.create("t", { name: "q", dimension: DIM });
    const started = [];
    for (let i = 0; i < MAX_QUEUED; i++) started.push(await imports.start("t", "q", { uri: "big.ndjson", metered: false }));
    await expect(imports.start("t", "q", { uri: "big.ndjson", metered: false })).rejects.toMatchObject({ code: "E_CONFLICT" });
    for (const j of started) imports.cancel("t", "q", j.id);
    for (const j of started) expect((await finished("t", "q", j.id)).status).toBe("Cancelled");
    const again = await imports.start("t", "q", { uri: "ok.ndjson", metered: false });
    expect((await finished("t", "q", again.id)).status).toBe("Completed");
  });

  it("an index deleted while it is written ends the job Failed, saying what was written", async () => {
    await indexes.create("t", { name: "gone", dimension: DIM });
    const job = await imports.start("t", "gone", { uri: "big.ndjson", metered: false });
    for (let i = 0; i < 2000; i++) {
      const d = imports.describe("t", "gone", job.id);
      if ((d.phase === "writing" && d.recordsImported > 0) || d.finishedAt !== null) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    await indexes.delete("t", "gone");
    const j = await finished("t", "gone", job.id);
    expect(j.status).toBe("Failed");
    expect(j.error).toMatch(
      new RegExp(`^stopped: no index 'gone'; ${j.recordsImported} records were written \\(rows 1\\.\\.\\d+ of 100000\\)$`),
    );
  });

  it("an index that cannot be described when the job runs fails it with that reason, not as 'no longer exists'", async () => {
    await indexes.create("t", { name: "flaky", dimension: DIM });
    writeFileSync(
      join(importRoot, "three.ndjson"),
      [0, 1, 2].map((i) => JSON.stringify({ id: `f${i}`, values: vec(i) })).join("\n") + "\n",
    );
    // the catalog answers at start, then cannot (cluster mode: no JetStream quorum); unreadable is not absent
    let calls = 0;
    const catalog = new Proxy(indexes, {
      get(target, prop) {
        if (prop === "describe")
          return (tenant: string, name: string) => {
            if (++calls > 1) throw new SvcError("E_NO_QUORUM", "JetStream did not answer");
            return target.describe(tenant, name);
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const flaky = new ImportService({
      indexes: catalog,
      config: { root: importRoot, maxUrlBytes: 1 << 20 },
      fetchUrl: async () => Buffer.from(""),
    });
    try {
      const job = await flaky.start("t", "flaky", { uri: "three.ndjson", metered: false });
      let j = flaky.describe("t", "flaky", job.id);
      for (let i = 0; i < 800 && (j.status === "Pending" || j.status === "InProgress"); i++) {
        await new Promise((r) => setTimeout(r, 25));
        j = flaky.describe("t", "flaky", job.id);
      }
      expect(j).toMatchObject({ status: "Failed", recordsImported: 0, error: "JetStream did not answer; nothing was written" });
      expect((await indexes.use("t", "flaky", (ix) => ix.stats())).totalVectorCount).toBe(0);
    } finally {
      await flaky.close();
    }
  });

  it("hostile NDJSON lines never break a job: continue writes exactly the rows it did not list as bad (fast-check)", async () => {
    await indexes.create("t", { name: "fz", dimension: DIM });
    const goodLine = fc
      .record({
        id: fc.string({ minLength: 1, maxLength: 20 }),
        values: fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: DIM, maxLength: DIM }),
      })
      .map((o) => JSON.stringify(o));
    const hostile = fc.oneof(
      goodLine,
      fc.string({ maxLength: 40 }),
      fc.json({ maxDepth: 3 }),
      fc.constantFrom(
        '{"__proto__":{"x":1},"id":"p","values":[1,2,3,4]}',
        '{"id":"m","values":[1,2,3,4],"metadata":{"constructor":1}}',
        '{"id":"x","values":[1e300,1,1,1]}',
        '{"id":"y","values":"AAAA"}',
        "[]",
        "null",
        '{"id":"z","values":[1,2,3,4],"sparseValues":{"indices":[1,1],"values":[1,2]}}',
      ),
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 30 }), async (lines) => {
        const file = `fz${n++}.ndjson`;
        writeFileSync(join(importRoot, file), lines.join("\n"));
        const before = (await indexes.use("t", "fz", (ix) => ix.stats())).namespaces[file]?.vectorCount ?? 0;
        expect(before).toBe(0);
        const j = await finished(
          "t",
          "fz",
          (await imports.start("t", "fz", { uri: file, namespace: file, errorMode: { onError: "continue" }, metered: false })).id,
        );
        expect(j.status).toBe("Completed");
        // every bad row is a line of the file; good + bad = the lines read
        for (const b of j.badRows) expect(b.row).toBeGreaterThanOrEqual(1);
        expect(j.recordsImported + j.badRowCount).toBe(j.rowsTotal);
        if (!lines.some((l) => /[\r\u2028\u2029]/.test(l)))
          expect(j.rowsTotal).toBe(
            lines
              .join("\n")
              .split("\n")
              .filter((l) => l.trim() !== "").length,
          );
        const stored = (await indexes.use("t", "fz", (ix) => ix.stats())).namespaces[file]?.vectorCount ?? 0;
        const distinctGood = new Set<string>();
        const bad = new Set(j.badRows.map((b) => b.row));
        const allLines = lines.join("\n").split(/\r?\n/);
        allLines.forEach((l, i) => {
          if (l.trim() !== "" && !bad.has(i + 1)) distinctGood.add((JSON.parse(l) as { id: string }).id);
        });
        expect(stored).toBe(distinctGood.size);
      }),
      { seed: 3306, numRuns: 40 },
    );
  });
});
