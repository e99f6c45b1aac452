/** @module routes/imports — Pinecone's bulk import API on an index's data plane: start, list, describe, cancel imports of Parquet or NDJSON files. */
import { MAX_IMPORT_PAGE } from "../../input-rules.js";
import type { ImportJob, ImportService } from "../../memory/imports.js";
import { BACKUP_OPS } from "../../tools/backup-ops.js";
import { bodyOf, parseQuery } from "../input.js";
import type { RequestContext, Route, Schema } from "../route.js";

const importModel: Schema = {
  type: "object",
  required: ["id", "uri", "status"],
  properties: {
    id: { type: "string" },
    uri: { type: "string" },
    status: { type: "string", enum: ["Pending", "InProgress", "Completed", "Failed", "Cancelled"] },
    createdAt: { type: "string", format: "date-time" },
    finishedAt: { type: "string", format: "date-time" },
    percentComplete: {
      type: "number",
      description: "rows the write pass went through, of the file's rows (0 while rows are being checked)",
    },
    recordsImported: { type: "integer" },
    error: { type: "string", description: "why it failed or stopped, with what was written; or the bad rows skipped" },
    namespace: { type: "string", description: "svc: the namespace written" },
    format: { type: "string", enum: ["parquet", "ndjson"], description: "svc" },
    phase: {
      type: ["string", "null"],
      enum: ["checking", "writing", null],
      description: "svc: InProgress is checking every row first, then writing",
    },
    rowsTotal: { type: ["integer", "null"], description: "svc" },
    badRowCount: { type: "integer", description: "svc: rows that could not be imported" },
    badRows: {
      type: "array",
      items: {
        type: "object",
        properties: { row: { type: "integer", description: "1-based NDJSON line or Parquet row" }, error: { type: "string" } },
      },
      description: "svc: the first 100 bad rows",
    },
  },
};

export function importRoutes(imports: ImportService): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const base = "/v1/indexes/{name}/bulk/imports";
  return [
    {
      method: "post",
      path: base,
      operationId: "start_import",
      summary: "Start importing a Parquet or NDJSON file (a path under the import root, or an http(s) URL) into the index",
      tags: ["imports"],
      auth: "tenant",
      meter: "start_import",
      input: BACKUP_OPS.start_import,
      response: {
        status: 200,
        schema: { type: "object", properties: { id: { type: "string" } } },
        description: "Started: the file is readable and (Parquet) of the right schema; rows are checked and written in the background",
      },
      async handle(ctx) {
        const b = bodyOf(BACKUP_OPS.start_import.body, ctx.body);
        const job = await imports.start(tenant(ctx), ctx.params.name!, {
          uri: b.uri,
          errorMode: b.errorMode,
          namespace: b.namespace,
          metered: !ctx.principal.admin,
        });
        return { body: { id: job.id } };
      },
    },
    {
      method: "get",
      path: base,
      operationId: "list_imports",
      summary: "List the index's imports, newest first",
      tags: ["imports"],
      auth: "tenant",
      input: BACKUP_OPS.list_imports,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            data: { type: "array", items: importModel },
            pagination: { type: "object", properties: { next: { type: "string" } } },
          },
        },
        description: "A page of imports",
      },
      handle(ctx) {
        const { limit = MAX_IMPORT_PAGE, paginationToken: token } = parseQuery(BACKUP_OPS.list_imports.query, ctx.query);
        const p = imports.list(tenant(ctx), ctx.params.name!, { limit, after: token === undefined || token === "" ? undefined : token });
        return { body: { data: p.data.map(model), ...(p.next === undefined ? {} : { pagination: { next: p.next } }) } };
      },
    },
    {
      method: "get",
      path: `${base}/{id}`,
      operationId: "describe_import",
      summary: "An import's status and progress (percent, records imported, bad rows)",
      tags: ["imports"],
      auth: "tenant",
      response: { status: 200, schema: importModel, description: "The import" },
      handle: (ctx) => ({ body: model(imports.describe(tenant(ctx), ctx.params.name!, ctx.params.id!)) }),
    },
    {
      method: "delete",
      path: `${base}/{id}`,
      operationId: "cancel_import",
      summary: "Cancel an import (it stops before its next batch; what was written stays and is reported)",
      tags: ["imports"],
      auth: "tenant",
      response: { status: 200, schema: { type: "object" }, description: "Cancelled: {} (the official client reads a JSON body)" },
      handle(ctx) {
        imports.cancel(tenant(ctx), ctx.params.name!, ctx.params.id!);
        return { body: {} };
      },
    },
  ];
}

/** Pinecone's ImportModel (camelCase, as the data plane is) with svc's extensions. */
function model(j: ImportJob): Record<string, unknown> {
  const pct =
    j.status === "Completed" ? 100 : j.rowsTotal === null || j.rowsTotal === 0 ? 0 : Math.min(100, (100 * j.rowsDone) / j.rowsTotal);
  return {
    id: j.id,
    uri: j.uri,
    status: j.status,
    createdAt: new Date(j.createdAt).toISOString(),
    ...(j.finishedAt === null ? {} : { finishedAt: new Date(j.finishedAt).toISOString() }),
    percentComplete: Math.round(pct * 10) / 10,
    recordsImported: j.recordsImported,
    ...(j.error === null ? {} : { error: j.error }),
    namespace: j.namespace,
    format: j.format,
    phase: j.phase,
    rowsTotal: j.rowsTotal,
    badRowCount: j.badRowCount,
    badRows: j.badRows,
  };
}
