/** @module routes/backups — Pinecone's backup API over /v1: back up an index, list/describe/delete backups, create an index from one (one node's, or the cluster's: cluster/backups.ts). */
import { DEFAULT_BACKUP_PAGE } from "../../input-rules.js";
import type { BackupRecord, Backups, RestoreJob } from "../../memory/backups.js";
import { BACKUP_OPS } from "../../tools/backup-ops.js";
import { bodyOf, parseQuery } from "../input.js";
import type { RequestContext, Route, Schema } from "../route.js";

const backupModel: Schema = {
  type: "object",
  required: ["backup_id", "source_index_name", "status"],
  properties: {
    backup_id: { type: "string", description: "a UUID" },
    source_index_name: { type: "string" },
    source_index_id: { type: "string", description: "svc: the source index's name (indexes have no other id)" },
    name: { type: ["string", "null"] },
    description: { type: ["string", "null"] },
    status: { type: "string", enum: ["Initializing", "Ready", "Failed"] },
    error: { type: "string", description: "svc: why a backup Failed" },
    cloud: { type: "string" },
    region: { type: "string" },
    dimension: { type: "integer" },
    metric: { type: "string" },
    record_count: { type: "integer", description: "live vectors in the copy (once Ready)" },
    namespace_count: { type: "integer" },
    size_bytes: { type: "integer", description: "bytes of the copy's files" },
    tags: { type: ["object", "null"], additionalProperties: { type: "string" } },
    created_at: { type: "string", format: "date-time" },
  },
};
const restoreJobModel: Schema = {
  type: "object",
  required: ["restore_job_id", "backup_id", "target_index_name", "status", "created_at"],
  properties: {
    restore_job_id: { type: "string" },
    backup_id: { type: "string" },
    target_index_name: { type: "string" },
    target_index_id: { type: "string", description: "svc: the new index's name" },
    status: { type: "string", enum: ["Completed"] },
    created_at: { type: "string", format: "date-time" },
    completed_at: { type: "string", format: "date-time" },
    percent_complete: { type: "number" },
  },
};
const backupList: Schema = {
  type: "object",
  properties: { data: { type: "array", items: backupModel }, pagination: { type: "object", properties: { next: { type: "string" } } } },
};
/** A page request as the route's `input.query` checked it. */
const pageOf = (ctx: RequestContext) => {
  const { limit = DEFAULT_BACKUP_PAGE, paginationToken } = parseQuery(BACKUP_OPS.list_backups.query, ctx.query);
  return { limit, after: paginationToken === undefined || paginationToken === "" ? undefined : paginationToken };
};

/** `backups`: one node's (memory/backups.ts) or, in cluster mode, the cluster's (cluster/backups.ts); the same wire shape and errors. */
export function backupRoutes(backups: Backups): Route[] {
  const svc = (): Backups => backups;
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const page = async (ctx: RequestContext, indexName?: string) => {
    const p = await svc().list(tenant(ctx), { indexName, ...pageOf(ctx) });
    return { body: { data: p.data.map(model), ...(p.next === undefined ? {} : { pagination: { next: p.next } }) } };
  };
  return [
    {
      method: "post",
      path: "/v1/indexes/{name}/backups",
      operationId: "create_backup",
      summary: "Back up an index: a consistent copy taken while writes go on (status Initializing, then Ready)",
      tags: ["backups"],
      auth: "tenant",
      meter: "create_backup",
      input: BACKUP_OPS.create_backup,
      response: { status: 201, schema: backupModel, description: "The backup, being taken" },
      async handle(ctx) {
        const b = bodyOf(BACKUP_OPS.create_backup.body, ctx.body);
        return {
          status: 201,
          body: model(await svc().create(tenant(ctx), ctx.params.name!, { name: b.name, description: b.description })),
        };
      },
    },
    {
      method: "get",
      path: "/v1/indexes/{name}/backups",
      operationId: "list_index_backups",
      summary: "List the backups of one index, newest first",
      tags: ["backups"],
      auth: "tenant",
      input: BACKUP_OPS.list_index_backups,
      response: { status: 200, schema: backupList, description: "A page of backups" },
      handle: (ctx) => page(ctx, ctx.params.name!),
    },
    {
      method: "get",
      path: "/v1/backups",
      operationId: "list_backups",
      summary: "List the tenant's backups, newest first",
      tags: ["backups"],
      auth: "tenant",
      input: BACKUP_OPS.list_backups,
      response: { status: 200, schema: backupList, description: "A page of backups" },
      handle: (ctx) => page(ctx),
    },
    {
      method: "get",
      path: "/v1/backups/{backup_id}",
      operationId: "describe_backup",
      summary: "Describe a backup: status, record count, size, created",
      tags: ["backups"],
      auth: "tenant",
      response: { status: 200, schema: backupModel, description: "The backup" },
      handle: async (ctx) => ({ body: model(await svc().describe(tenant(ctx), ctx.params.backup_id!)) }),
    },
    {
      method: "delete",
      path: "/v1/backups/{backup_id}",
      operationId: "delete_backup",
      summary: "Delete a backup",
      tags: ["backups"],
      auth: "tenant",
      response: { status: 202, description: "Deleted (empty body)" },
      async handle(ctx) {
        await svc().delete(tenant(ctx), ctx.params.backup_id!);
        return { status: 202 };
      },
    },
    {
      method: "post",
      path: "/v1/backups/{backup_id}/create-index",
      operationId: "create_index_from_backup",
      summary: "Create a new index from a Ready backup (its files checked against their SHA-256 first)",
      tags: ["backups"],
      auth: "tenant",
      meter: "create_index_from_backup",
      // A restore writes the backup's records: metered as writing them, like an upsert.
      usageBound: async (ctx) => {
        try {
          return { written: (await svc().describe(ctx.principal.tenant, ctx.params.backup_id!)).recordCount ?? 0 };
        } catch {
          return {}; // the handler names the error
        }
      },
      input: BACKUP_OPS.create_index_from_backup,
      response: {
        status: 202,
        schema: { type: "object", properties: { restore_job_id: { type: "string" }, index_id: { type: "string" } } },
        description: "The index exists and serves the backup's vectors when this answers",
      },
      async handle(ctx) {
        const b = bodyOf(BACKUP_OPS.create_index_from_backup.body, ctx.body);
        const { backup, index, job } = await svc().restore(tenant(ctx), ctx.params.backup_id!, {
          name: b.name,
          tags: b.tags,
          deletionProtection: b.deletion_protection,
        });
        ctx.usage.written = backup.recordCount ?? 0;
        return { status: 202, body: { restore_job_id: job.restoreJobId, index_id: index.name } };
      },
    },
    {
      method: "get",
      path: "/v1/restore-jobs",
      operationId: "list_restore_jobs",
      summary:
        "List the tenant's restores since the server started, newest first (each Completed: a restore ends before create-index answers)",
      tags: ["backups"],
      auth: "tenant",
      input: BACKUP_OPS.list_restore_jobs,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            data: { type: "array", items: restoreJobModel },
            pagination: { type: "object", properties: { next: { type: "string" } } },
          },
        },
        description: "A page of restore jobs",
      },
      handle(ctx) {
        const p = svc().restoreJobs(tenant(ctx), pageOf(ctx));
        return { body: { data: p.data.map(restoreModel), ...(p.next === undefined ? {} : { pagination: { next: p.next } }) } };
      },
    },
    {
      method: "get",
      path: "/v1/restore-jobs/{job_id}",
      operationId: "describe_restore_job",
      summary: "Describe a restore job",
      tags: ["backups"],
      auth: "tenant",
      response: { status: 200, schema: restoreJobModel, description: "The restore job" },
      handle: (ctx) => ({ body: restoreModel(svc().restoreJob(tenant(ctx), ctx.params.job_id!)) }),
    },
  ];
}

function restoreModel(j: RestoreJob): Record<string, unknown> {
  return {
    restore_job_id: j.restoreJobId,
    backup_id: j.backupId,
    target_index_name: j.targetIndexName,
    target_index_id: j.targetIndexName,
    status: "Completed",
    created_at: new Date(j.createdAt).toISOString(),
    completed_at: new Date(j.completedAt).toISOString(),
    percent_complete: 100,
  };
}

/** Pinecone's BackupModel, snake_case. */
function model(b: BackupRecord): Record<string, unknown> {
  const serverless = (b.index.spec.serverless ?? {}) as { cloud?: unknown; region?: unknown };
  return {
    backup_id: b.backupId,
    source_index_name: b.index.name,
    source_index_id: b.index.name,
    name: b.name,
    description: b.description,
    status: b.status,
    ...(b.error === undefined ? {} : { error: b.error }),
    cloud: typeof serverless.cloud === "string" ? serverless.cloud : "local",
    region: typeof serverless.region === "string" ? serverless.region : "local",
    dimension: b.index.dimension,
    metric: b.index.metric,
    ...(b.recordCount === undefined ? {} : { record_count: b.recordCount, namespace_count: b.namespaceCount, size_bytes: b.sizeBytes }),
    tags: b.index.tags,
    created_at: new Date(b.createdAt).toISOString(),
  };
}
