/**
 * Backups and bulk imports end to end: the official Pinecone v8 client against the built `svc serve` (a child
 * process with an import root in its config.json), plain HTTP for what the client does not send (svc's namespace,
 * the error shapes), and `svc import --index` with its progress bar. Expected vectors are the ones the test wrote.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Pinecone } from "@pinecone-database/pinecone";
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newTenantKey } from "./client.js";
import { MAIN, startServerProcess, type ServerProcess } from "./server-process.js";

const run = promisify(execFile);
const DIM = 8;
const vec = (i: number) => Array.from({ length: DIM }, (_, j) => Math.sin(i * 7 + j) + (j === i % DIM ? 2 : 0));
const f32 = (v: number[]) => Array.from(Float32Array.from(v));

async function until<T>(what: string, f: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: not done in ${ms} ms (last: ${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("backups and bulk imports through the official client", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-e2e-bk-"));
  const importRoot = mkdtempSync(join(tmpdir(), "svc-e2e-in-"));
  let server: ServerProcess;
  let pc: Pinecone;

  beforeAll(async () => {
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ imports: { root: importRoot } }));
    server = await startServerProcess({ dataDir });
    pc = new Pinecone({ apiKey: server.adminKey!, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
    await pc.createIndex({
      name: "films",
      dimension: DIM,
      metric: "dotproduct",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
    });
  });
  afterAll(async () => {
    await server?.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(importRoot, { recursive: true, force: true });
  });

  it("imports a Parquet file (startImport, describeImport, listImports) with progress to 100%", async () => {
    const n = 2000;
    writeFileSync(
      join(importRoot, "films.parquet"),
      new Uint8Array(
        parquetWriteBuffer({
          schema: [
            { name: "root", num_children: 3 },
            { name: "id", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
            { name: "values", repetition_type: "REQUIRED", converted_type: "LIST", num_children: 1 },
            { name: "list", repetition_type: "REPEATED", num_children: 1 },
            { name: "element", type: "FLOAT", repetition_type: "REQUIRED" },
            { name: "metadata", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
          ],
          columnData: [
            { name: "id", data: Array.from({ length: n }, (_, i) => `f${i}`) },
            { name: "values", data: Array.from({ length: n }, (_, i) => vec(i)) },
            { name: "metadata", data: Array.from({ length: n }, (_, i) => JSON.stringify({ year: 1950 + (i % 70) })) },
          ],
        }),
      ),
    );
    const index = pc.index("films");
    const { id } = await index.startImport({ uri: "films.parquet", errorMode: "abort" });
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const seen: number[] = [];
    const job = await until(
      "import",
      () => index.describeImport(id!),
      (j) => (seen.push(j.percentComplete ?? -1), j.status !== "Pending" && j.status !== "InProgress"),
    );
    expect(job).toMatchObject({ id, status: "Completed", percentComplete: 100, recordsImported: n });
    expect(seen.every((p, i) => i === 0 || p >= seen[i - 1]!)).toBe(true); // progress never goes back
    expect((await index.describeIndexStats()).totalRecordCount).toBe(n);
    const fetched = await index.fetch({ ids: ["f42"] });
    expect(fetched.records.f42!.values).toEqual(f32(vec(42)));
    expect(fetched.records.f42!.metadata).toEqual({ year: 1950 + 42 });
    const listed = await index.listImports();
    expect(listed.data!.map((j) => j.id)).toEqual([id]);
  });

  it("refuses a wrong Parquet schema, a path outside the root and a private URL at start, with nothing written", async () => {
    writeFileSync(
      join(importRoot, "bad.parquet"),
      new Uint8Array(
        parquetWriteBuffer({
          columnData: [
            { name: "id", data: [1, 2], type: "INT32" },
            { name: "embedding", data: [1, 2], type: "INT32" },
          ],
        }),
      ),
    );
    const key = server.adminKey!;
    const before = (await pc.index("films").describeIndexStats()).totalRecordCount;
    const schema = await call(server.url, key, "POST", "/v1/indexes/films/bulk/imports", { uri: "bad.parquet" });
    expect(schema.status).toBe(400);
    expect(schema.body.error).toMatchObject({ code: "E_IMPORT_SCHEMA" });
    const outside = await call(server.url, key, "POST", "/v1/indexes/films/bulk/imports", { uri: "../../etc/passwd" });
    expect(outside.status).toBe(403);
    expect(outside.body.error).toMatchObject({ code: "E_IMPORT_PATH", field: "uri" });
    const ssrf = await call(server.url, key, "POST", "/v1/indexes/films/bulk/imports", { uri: "https://127.0.0.1:1/x.parquet" });
    expect(ssrf.status).toBe(400);
    expect(ssrf.body.error).toMatchObject({ code: "E_OUTBOUND_BLOCKED", field: "uri" });
    await expect(pc.index("films").startImport({ uri: "bad.parquet" })).rejects.toThrow(/E_IMPORT_SCHEMA|schema/i);
    expect((await pc.index("films").describeIndexStats()).totalRecordCount).toBe(before);
  });

  it("svc import --index follows an NDJSON import with a progress bar and lists bad rows by line", async () => {
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: `n${i}`, values: vec(i) }));
    lines.splice(120, 0, JSON.stringify({ id: "short", values: [1, 2] }));
    writeFileSync(join(importRoot, "rows.ndjson"), lines.join("\n"));
    const env = { ...process.env, SVC_PROGRESS: "1", SVC_API_KEY: server.adminKey! };
    const aborted = await run(
      process.execPath,
      [MAIN, "import", "--index", "films", "rows.ndjson", "--namespace", "cli", "--url", server.url],
      { env },
    ).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect((aborted as { code: number }).code).toBe(1);
    expect((aborted as { stdout: string }).stdout).toMatch(/Failed: 0 records imported/);
    expect((aborted as { stdout: string }).stdout).toMatch(/row 121: values: /);
    const ok = await run(
      process.execPath,
      [MAIN, "import", "--index", "films", "rows.ndjson", "--namespace", "cli", "--error-mode", "continue", "--url", server.url],
      { env },
    );
    expect(ok.stdout).toMatch(/Completed: 300 records imported into films/);
    expect(ok.stderr).toMatch(/import films \[#+\] 100%/);
    const stats = await pc.index("films").describeIndexStats();
    expect(stats.namespaces!.cli!.recordCount).toBe(300);
  });

  it("backs up an index (createBackup, describeBackup, listBackups), restores it (createIndexFromBackup) and deletes the backup", async () => {
    const source = await pc.index("films").describeIndexStats();
    const backup = await pc.createBackup({ indexName: "films", name: "before-cleanup", description: "e2e" });
    expect(backup).toMatchObject({ sourceIndexName: "films", name: "before-cleanup", dimension: DIM, metric: "dotproduct" });
    const ready = await until(
      "backup",
      () => pc.describeBackup(backup.backupId),
      (b) => b.status !== "Initializing",
    );
    expect(ready.status).toBe("Ready");
    expect(ready.recordCount).toBe(source.totalRecordCount);
    expect(ready.namespaceCount).toBe(2);
    expect(ready.sizeBytes).toBeGreaterThan(0);
    expect((await pc.listBackups({ indexName: "films" })).data!.map((b) => b.backupId)).toEqual([backup.backupId]);
    expect((await pc.listBackups({})).data!.map((b) => b.backupId)).toEqual([backup.backupId]);

    // Writes after the backup are not in the copy.
    await pc.index("films").upsert({ records: [{ id: "after-backup", values: vec(9999) }] });
    const restored = await pc.createIndexFromBackup({ backupId: backup.backupId, name: "films-restored" });
    expect(restored.indexId).toBe("films-restored");
    const job = await pc.describeRestoreJob(restored.restoreJobId);
    expect(job).toMatchObject({
      restoreJobId: restored.restoreJobId,
      backupId: backup.backupId,
      targetIndexName: "films-restored",
      status: "Completed",
      percentComplete: 100,
    });
    expect((await pc.listRestoreJobs({})).data.map((j) => j.restoreJobId)).toEqual([restored.restoreJobId]);
    const desc = await pc.describeIndex("films-restored");
    expect(desc).toMatchObject({ dimension: DIM, metric: "dotproduct" });
    const ix = pc.index("films-restored");
    expect((await ix.describeIndexStats()).totalRecordCount).toBe(source.totalRecordCount);
    expect((await ix.fetch({ ids: ["after-backup", "f7"] })).records).toEqual({
      f7: expect.objectContaining({ id: "f7", values: f32(vec(7)) }),
    });
    const q = await ix.query({ vector: vec(5), topK: 1 });
    expect(q.matches[0]!.id).toMatch(/^(f|n)\d+$/);

    // A second restore under a taken name is 409; a malformed id 400; the deleted backup 404.
    expect(
      (await call(server.url, server.adminKey!, "POST", `/v1/backups/${backup.backupId}/create-index`, { name: "films-restored" })).status,
    ).toBe(409);
    expect((await call(server.url, server.adminKey!, "GET", "/v1/backups/..%2f..%2fkeys.json")).status).toBe(400);
    await pc.deleteBackup(backup.backupId);
    await expect(pc.describeBackup(backup.backupId)).rejects.toThrow();
    expect((await call(server.url, server.adminKey!, "GET", `/v1/backups/${backup.backupId}`)).status).toBe(404);
  });

  it("MCP: the backups group (named in ?tools=) backs up and restores; a bad id is a tool error naming the field", async () => {
    const client = new Client({ name: "svc-e2e", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp?tools=backups`), {
        requestInit: { headers: { "api-key": server.adminKey! } },
      }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([
        "cancel_import",
        "create_backup",
        "create_index_from_backup",
        "delete_backup",
        "describe_backup",
        "describe_import",
        "list_backups",
        "list_imports",
        "start_import",
      ]);
      const created = (await client.callTool({ name: "create_backup", arguments: { name: "films" } })) as CallToolResult;
      expect(created.isError).toBeFalsy();
      const id = created.structuredContent!.backup_id as string;
      const ready = await until(
        "mcp backup",
        async () => (await client.callTool({ name: "describe_backup", arguments: { backup_id: id } })) as CallToolResult,
        (r) => r.structuredContent!.status !== "Initializing",
      );
      expect(ready.structuredContent).toMatchObject({ status: "Ready", source_index_name: "films" });
      const listed = (await client.callTool({ name: "list_backups", arguments: { index: "films" } })) as CallToolResult;
      expect((listed.structuredContent!.data as Array<{ backup_id: string }>).map((b) => b.backup_id)).toContain(id);
      const restored = (await client.callTool({
        name: "create_index_from_backup",
        arguments: { backup_id: id, name: "films-mcp" },
      })) as CallToolResult;
      expect(restored.structuredContent).toMatchObject({ index_id: "films-mcp" });
      expect((await pc.index("films-mcp").describeIndexStats()).totalRecordCount).toBe(ready.structuredContent!.record_count);
      const bad = (await client.callTool({ name: "describe_import", arguments: { index: "films", id: "../x" } })) as CallToolResult;
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(bad.content)).toMatch(/E_BAD_REQUEST/);
      expect((await client.callTool({ name: "delete_backup", arguments: { backup_id: id } })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it("meters a tenant's imports and backups like its upserts: the request, then the vectors written", async () => {
    const { key } = await newTenantKey(server);
    const t = new Pinecone({ apiKey: key, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
    await t.createIndex({
      name: "metered",
      dimension: DIM,
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
    });
    writeFileSync(
      join(importRoot, "m.ndjson"),
      Array.from({ length: 250 }, (_, i) => JSON.stringify({ id: `m${i}`, values: vec(i) })).join("\n"),
    );
    const { id } = await t.index("metered").startImport({ uri: "m.ndjson" });
    await until(
      "metered import",
      () => t.index("metered").describeImport(id!),
      (j) => j.status === "Completed",
    );
    const backup = await t.createBackup({ indexName: "metered" });
    await until(
      "metered backup",
      () => t.describeBackup(backup.backupId),
      (b) => b.status === "Ready",
    );
    await t.createIndexFromBackup({ backupId: backup.backupId, name: "metered-copy" });
    const wallet = await until(
      "charges",
      () => call(server.url, key, "GET", "/v1/wallet"),
      (w) => (w.body.recent as Array<{ op: string }>).some((e) => e.op === "create_index_from_backup"),
    );
    const recent = wallet.body.recent as Array<{ op: string; written: number; costUsd: number }>;
    const op = (name: string) => recent.find((e) => e.op === name);
    expect(op("start_import")).toMatchObject({ written: 0 });
    expect(op("import")).toMatchObject({ written: 250 });
    expect(op("import")!.costUsd).toBeGreaterThan(op("start_import")!.costUsd);
    expect(op("create_backup")).toBeDefined();
    expect(op("create_index_from_backup")).toMatchObject({ written: 250 });
    // The tenant sees its own backups only.
    expect((await t.listBackups({})).data!.map((b) => b.backupId)).toEqual([backup.backupId]);
  });

  it("a cancelled import stops and says what it wrote", async () => {
    await pc.createIndex({
      name: "big",
      dimension: DIM,
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
    });
    mkdirSync(join(importRoot, "sub"), { recursive: true });
    writeFileSync(
      join(importRoot, "sub", "big.ndjson"),
      Array.from({ length: 60_000 }, (_, i) => JSON.stringify({ id: `b${i}`, values: vec(i) })).join("\n"),
    );
    const index = pc.index("big");
    const { id } = await index.startImport({ uri: "sub/big.ndjson" });
    await index.cancelImport(id!);
    const job = await until(
      "cancel",
      () => index.describeImport(id!),
      (j) => j.status !== "Pending" && j.status !== "InProgress",
    );
    expect(job.status).toBe("Cancelled");
    expect(job.error).toMatch(/cancel/);
    expect((await index.describeIndexStats()).totalRecordCount).toBe(job.recordsImported);
  });
});
