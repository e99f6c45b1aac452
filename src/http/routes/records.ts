/** @module routes/records — /v1/records (namespaces) and /v1/records/{ns}: ingest, query, timeline, get, delete, forget, stats, export and import of .svc containers. */
import { CONTAINER_TYPE, exportContainer, importContainer, type HdServices } from "../../memory/container.js";
import type { RecordService, TimelineRequest } from "../../memory/records.js";
import { RECORD_OPS, splitList } from "../../tools/record-ops.js";
import { bodyOf, parseQuery } from "../input.js";
import { formPart } from "../multipart.js";
import { countIn, type RequestContext, type Route, type Schema } from "../route.js";
import { VERSION } from "../../version.js";
import { readOptions as read, seqHeaders } from "./indexes.js";

const stringArray: Schema = { type: "array", items: { type: "string" } };
const record: Schema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: "^rec_[0-9a-f]+$" },
    kind: { type: "string" },
    tags: stringArray,
    ts: { type: "integer" },
    text: { type: "string" },
    meta: { type: "object" },
    ttlDays: { type: "integer" },
    score: { type: "number" },
  },
};

/** `hd`: the tenant's knowledge graphs and causal models, which a schema 2 container carries. */
export function recordRoutes(records: RecordService, hd: HdServices): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const ns = (ctx: RequestContext) => ctx.params.ns!;
  return [
    {
      method: "get",
      path: "/v1/records",
      operationId: "records_namespaces",
      summary: "The tenant's record namespaces with their live record counts",
      tags: ["records"],
      auth: "tenant",
      meter: "records_namespaces",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            namespaces: {
              type: "array",
              items: { type: "object", properties: { namespace: { type: "string" }, count: { type: "integer" } } },
            },
          },
        },
        description: "Namespaces holding live records, sorted by name",
      },
      handle: async (ctx) => ({ body: { namespaces: await records.namespaces(tenant(ctx), read(ctx)) } }),
    },
    {
      method: "post",
      path: "/v1/records/{ns}",
      operationId: "records_ingest",
      summary: "Ingest typed records; text is embedded by the server (1024-d static encoder)",
      tags: ["records"],
      auth: "tenant",
      meter: "records_ingest",
      usageBound: (ctx) => ({ written: countIn(ctx.body, "items") }),
      input: RECORD_OPS.records_ingest,
      response: {
        status: 200,
        schema: { type: "object", properties: { ids: stringArray, count: { type: "integer" } } },
        description: "The new records' ids, in order",
      },
      async handle(ctx) {
        const { seq, ...res } = await records.ingest(tenant(ctx), ns(ctx), bodyOf(RECORD_OPS.records_ingest.body, ctx.body).items);
        ctx.usage.written = res.count;
        return { body: res, headers: seqHeaders({ seq }) };
      },
    },
    {
      method: "post",
      path: "/v1/records/{ns}/query",
      operationId: "records_query",
      summary: "Records by meaning (with text) or newest first (without), filtered by kind, tags and time",
      tags: ["records"],
      auth: "tenant",
      meter: "records_query",
      readOnly: true,
      input: RECORD_OPS.records_query,
      response: {
        status: 200,
        schema: { type: "object", properties: { records: { type: "array", items: record }, namespace: { type: "string" } } },
        description: "Best first (score = the cosine; with mode hybrid, the fused score), or newest first without text (no score)",
      },
      handle: async (ctx) => ({
        body: await records.query(tenant(ctx), ns(ctx), bodyOf(RECORD_OPS.records_query.body, ctx.body), ctx.usage, read(ctx)),
      }),
    },
    {
      method: "get",
      path: "/v1/records/{ns}/timeline",
      operationId: "records_timeline",
      summary: "Records newest first, a page at a time (pass nextCursor back as until)",
      tags: ["records"],
      auth: "tenant",
      meter: "records_timeline",
      input: RECORD_OPS.records_timeline,
      response: {
        status: 200,
        description: "One page, newest first (ts descending, then id descending)",
        schema: {
          type: "object",
          properties: {
            records: { type: "array", items: record },
            namespace: { type: "string" },
            nextCursor: {
              type: ["integer", "null"],
              description: "the oldest ts returned, to pass back as until for the next page; null on the last page",
            },
            nextAfter: {
              type: "string",
              description:
                "only when this page ends inside one group of more than limit records sharing the ts nextCursor: the id of the last record returned; pass it as after (with until = nextCursor) to continue inside that group (until alone goes on with the older ts)",
            },
          },
        },
      },
      handle: async (ctx) => ({ body: await records.timeline(tenant(ctx), ns(ctx), timelineRequest(ctx.query), read(ctx)) }),
    },
    {
      method: "get",
      path: "/v1/records/{ns}/stats",
      operationId: "records_stats",
      summary: "Count, count per kind, oldest and newest ts",
      tags: ["records"],
      auth: "tenant",
      meter: "records_stats",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            count: { type: "integer" },
            byKind: { type: "object", additionalProperties: { type: "integer" } },
            oldestTs: { type: ["integer", "null"] },
            newestTs: { type: ["integer", "null"] },
          },
        },
        description: "Statistics of the live records",
      },
      handle: async (ctx) => ({ body: await records.stats(tenant(ctx), ns(ctx), read(ctx)) }),
    },
    {
      method: "get",
      path: "/v1/records/{ns}/export",
      operationId: "records_export",
      summary:
        "The namespace as a .svc container (zip: manifest.json, records.nmm; schema 2 adds all of the tenant's kg/<name>.hdkg and scm/<name>.hdscm)",
      tags: ["records"],
      auth: "tenant",
      meter: "records_export",
      input: RECORD_OPS.records_export,
      response: { status: 200, description: `${CONTAINER_TYPE}, as attachment <ns>.svc` },
      async handle(ctx) {
        const { zip } = await exportContainer(records, hd, tenant(ctx), ns(ctx), exportSchema(ctx.query.get("schema")), `svc ${VERSION}`);
        return {
          raw: { contentType: CONTAINER_TYPE, data: zip },
          headers: { "content-disposition": `attachment; filename="${ns(ctx)}.svc"` },
        };
      },
    },
    {
      method: "post",
      path: "/v1/records/{ns}/import",
      operationId: "records_import",
      summary:
        "Load a .svc container (multipart part `file`): schema 1 replaces the namespace, schema 2 merges by id and replaces the graphs and models it carries",
      tags: ["records"],
      auth: "tenant",
      meter: "records_import",
      rawBody: "multipart/form-data",
      requestBody: {
        type: "object",
        properties: { file: { type: "string", contentEncoding: "binary" } },
        description: "multipart/form-data",
      },
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            imported: { type: "integer" },
            manifest: { type: "object" },
            graphs: { type: "integer", description: "knowledge graphs replaced (schema 2, when present)" },
            models: { type: "integer", description: "causal models replaced (schema 2, when present)" },
          },
        },
        description: "Imported",
      },
      async handle(ctx) {
        const res = await importContainer(records, hd, tenant(ctx), ns(ctx), formPart(ctx.contentType, ctx.body as Buffer, "file"));
        ctx.usage.written = res.imported;
        return { body: res };
      },
    },
    {
      method: "post",
      path: "/v1/records/{ns}/forget",
      operationId: "records_forget",
      summary: "Delete every record matching all given criteria",
      tags: ["records"],
      auth: "tenant",
      meter: "records_forget",
      input: RECORD_OPS.records_forget,
      response: {
        status: 200,
        schema: { type: "object", properties: { forgottenCount: { type: "integer" } } },
        description: "How many were deleted",
      },
      async handle(ctx) {
        const { seq, ...res } = await records.forget(tenant(ctx), ns(ctx), bodyOf(RECORD_OPS.records_forget.body, ctx.body), read(ctx));
        return { body: res, headers: seqHeaders({ seq }) };
      },
    },
    {
      method: "get",
      path: "/v1/records/{ns}/{id}",
      operationId: "records_get",
      summary: "One record, with text and meta",
      tags: ["records"],
      auth: "tenant",
      meter: "records_get",
      response: { status: 200, schema: record, description: "The record" },
      handle: async (ctx) => ({ body: await records.get(tenant(ctx), ns(ctx), ctx.params.id!, read(ctx)) }),
    },
    {
      method: "delete",
      path: "/v1/records/{ns}/{id}",
      operationId: "records_delete",
      summary: "Delete one record",
      tags: ["records"],
      auth: "tenant",
      meter: "records_delete",
      response: {
        status: 200,
        schema: { type: "object", properties: { deleted: { type: "boolean" } } },
        description: "deleted: false when there was no such live record",
      },
      async handle(ctx) {
        const { seq, ...res } = await records.delete(tenant(ctx), ns(ctx), ctx.params.id!, read(ctx));
        return { body: res, headers: seqHeaders({ seq }) };
      },
    },
  ];
}

/** The timeline's query string as a typed request (refused as the route's `input` refuses it); cross-field rules are the service's. */
export function timelineRequest(q: URLSearchParams): TimelineRequest {
  const { kind, tagsAny, tagsAll, ...rest } = parseQuery(RECORD_OPS.records_timeline.query, q);
  const list = (v: string[] | undefined) => (v === undefined || v.length === 0 ? undefined : v.flatMap(splitList));
  return { ...rest, kind: list(kind), tagsAny: list(tagsAny), tagsAll: list(tagsAll) };
}

/** The `schema` query parameter of an export (refused as the route's `input` refuses it): absent = 1. */
export function exportSchema(raw: string | null): 1 | 2 {
  const q = new URLSearchParams(raw === null ? [] : [["schema", raw]]);
  return (parseQuery(RECORD_OPS.records_export.query, q).schema ?? 1) as 1 | 2;
}
