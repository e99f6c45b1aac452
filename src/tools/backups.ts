/** @module tools/backups — backups of vector indexes and bulk imports into them, as MCP tools over the REST operations. */
import { z } from "zod";
import { BACKUP_OPS } from "./backup-ops.js";
import { DESTROY, json, op, out, READ, WRITE } from "./define.js";
import type { Tool } from "./tool.js";

// A tool that is one operation takes that operation's fields (backup-ops.ts) plus the path parameters it names.

const backupId = z.string().describe("a backup id (UUID) from create_backup or list_backups");
const importId = z.string().describe("an import id (UUID) from start_import");
const index = z.string().min(1).describe("index name");
const backupModel = out({ backup_id: z.string(), source_index_name: z.string(), status: z.string() });
const importModel = out({ id: z.string(), status: z.string() });

const createBackup = op("create_backup", {
  name: "create_backup",
  title: "Back up an index",
  annotations: WRITE,
  description:
    "Take a consistent copy of a vector index while writes go on. Answers at once with status Initializing; describe_backup shows Ready (with record_count, size_bytes) or Failed.",
  // the body's `name` (the backup's) is not an argument: `name` is the index, the path parameter
  input: z.object({ name: index, description: BACKUP_OPS.create_backup.body.shape.description }),
  output: backupModel,
});
const listBackups: Tool = {
  name: "list_backups",
  title: "List backups",
  access: "tenant",
  annotations: READ,
  operations: ["list_backups", "list_index_backups"],
  description: "The tenant's backups, newest first; give index to list only that index's.",
  input: z.object({ index: index.optional(), ...BACKUP_OPS.list_backups.query.shape }),
  output: out({ data: z.array(backupModel) }),
  run: async ({ index: name, ...rest }, api) =>
    json(
      await api.call(name === undefined ? "list_backups" : "list_index_backups", {
        args: { ...(name === undefined ? {} : { name }), ...rest },
      }),
    ),
};
const describeBackup = op("describe_backup", {
  name: "describe_backup",
  title: "Describe a backup",
  annotations: READ,
  description: "A backup's status (Initializing, Ready, Failed), record count, namespace count, size and creation time.",
  input: z.object({ backup_id: backupId }),
  output: backupModel,
});
const deleteBackup = op("delete_backup", {
  name: "delete_backup",
  title: "Delete a backup",
  annotations: DESTROY,
  description: "Delete a backup (not the index it was taken from).",
  input: z.object({ backup_id: backupId }),
  output: out({}),
});
const restoreBackup = op("create_index_from_backup", {
  name: "create_index_from_backup",
  title: "Create an index from a backup",
  annotations: WRITE,
  description: "Create a new index holding exactly what a Ready backup holds (its files are checked against their SHA-256 first).",
  input: z.object({ backup_id: backupId, ...BACKUP_OPS.create_index_from_backup.body.shape }),
  output: out({ restore_job_id: z.string(), index_id: z.string() }),
});

const startImport = op("start_import", {
  name: "start_import",
  title: "Import a file into an index",
  annotations: WRITE,
  rename: { index: "name" },
  description:
    "Import vectors from a Parquet file (columns id, values, sparse_values, metadata) or NDJSON (one {id, values, metadata} per line): a path under the server's import root or an https URL. Every row is checked before anything is written; errorMode abort (default) writes nothing when a row is bad, continue skips bad rows. Poll describe_import for progress.",
  input: z.object({ index, ...BACKUP_OPS.start_import.body.shape }),
  output: out({ id: z.string() }),
});
const listImports = op("list_imports", {
  name: "list_imports",
  title: "List imports",
  annotations: READ,
  rename: { index: "name" },
  description: "An index's imports (kept in memory since the server started), newest first.",
  input: z.object({ index, ...BACKUP_OPS.list_imports.query.shape }),
  output: out({ data: z.array(importModel) }),
});
const describeImport = op("describe_import", {
  name: "describe_import",
  title: "Describe an import",
  annotations: READ,
  rename: { index: "name" },
  description: "An import's status, percentComplete, recordsImported and the bad rows (with their line or row number).",
  input: z.object({ index, id: importId }),
  output: importModel,
});
const cancelImport = op("cancel_import", {
  name: "cancel_import",
  title: "Cancel an import",
  annotations: DESTROY,
  rename: { index: "name" },
  description: "Stop an import before its next batch; what it wrote stays and describe_import reports it.",
  input: z.object({ index, id: importId }),
  output: out({}),
});

export const backupTools: Tool[] = [
  createBackup,
  listBackups,
  describeBackup,
  deleteBackup,
  restoreBackup,
  startImport,
  listImports,
  describeImport,
  cancelImport,
];
