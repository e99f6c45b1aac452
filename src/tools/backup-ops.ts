/**
 * @module tools/backup-ops — the request schema of each backup, restore and bulk-import operation (zod), the one source
 * of its rules: the route checks its body or query with it (http/input.ts), the OpenAPI document shows it, and the MCP
 * tools that are that operation take its fields (tools/backups.ts). Rules that depend on state (a backup Ready, an index
 * that exists, the import root, the queue) stay in memory/backups.ts and memory/imports.ts.
 */
import { z } from "zod";
import { DEFAULT_BACKUP_PAGE, MAX_BACKUP_PAGE, MAX_BACKUP_TEXT, MAX_IMPORT_PAGE, MAX_IMPORT_URI_CHARS } from "../input-rules.js";
import * as F from "./fields.js";

const page = (max: number, dflt: number, what: string) =>
  z.object({
    limit: z.number().int().min(1).max(max).optional().describe(`${what} per page (default ${dflt})`),
    paginationToken: z.string().optional().describe("pagination.next of the previous page"),
  });
const backupPage = page(MAX_BACKUP_PAGE, DEFAULT_BACKUP_PAGE, "backups");
const backupText = z.string().max(MAX_BACKUP_TEXT).nullish();
/** Pinecone's errorMode.onError, read in any case as the official client may send it. */
const lower = (v: unknown) => (typeof v === "string" ? v.toLowerCase() : v);

export const BACKUP_OPS = {
  create_backup: {
    body: z.object({ name: backupText.describe("the backup's name"), description: backupText }),
  },
  list_index_backups: { query: backupPage },
  list_backups: { query: backupPage },
  create_index_from_backup: {
    body: z.object({
      name: F.indexName.describe("the new index's name"),
      tags: F.indexTags.nullish().describe("the new index's tags; default the backup's"),
      deletion_protection: F.deletionProtection.optional(),
    }),
  },
  list_restore_jobs: { query: page(MAX_BACKUP_PAGE, DEFAULT_BACKUP_PAGE, "restore jobs") },
  start_import: {
    body: z.object({
      uri: z
        .string()
        .min(1)
        .max(MAX_IMPORT_URI_CHARS)
        .describe(
          "a path under the server's import root (absolute, relative to it, or file://), or an http(s) URL fetched under the outbound rules of /v1/ask",
        ),
      errorMode: z
        .object({ onError: z.preprocess(lower, z.enum(["abort", "continue"], { error: 'must be "abort" or "continue"' })) })
        .nullish()
        .describe("abort (default): any bad row fails the import and nothing is written; continue: bad rows are skipped and listed"),
      integrationId: z.string().nullish().describe("accepted and ignored (svc reads no cloud storage)"),
      namespace: F.namespace.optional().describe('svc: the namespace to write (default "")'),
    }),
  },
  list_imports: { query: page(MAX_IMPORT_PAGE, MAX_IMPORT_PAGE, "imports") },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
