/** @module routes/records — /v1/records (namespaces) and /v1/records/{ns}: ingest, query, timeline, get, delete, forget, stats, export and import of .svc containers. */
import { SvcError } from "../../errors.js";
import { CONTAINER_TYPE, exportContainer, exportSchema, importContainer, type HdServices } from "../../memory/container.js";
import type { RecordService, TimelineRequest } from "../../memory/records.js";
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
const predicate = {
  kind: { ...stringArray, description: "any of these kinds" },
  tagsAny: { ...stringArray, description: "holds at least one of these tags" },
  tagsAll: { ...stringArray, description: "holds every one of these tags" },
  tsGte: { type: "integer", description: "ts >= this (epoch ms)" },
  tsLt: { type: "integer", description: "ts < this (epoch ms)" },
};
const listParam = (name: string, description: string) => ({
  name,
  schema: { type: "string" },
  description: `${description}, comma-separated`,
});

/** `hd`: the tenant's knowledge graphs and causal models, which a schema 2 container carries. */
export function recordRoutes(records: RecordService, hd: HdServices): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const ns = (ctx: RequestContext) => ctx.params.ns!;
  const body = (ctx: RequestContext) => {
    const b = ctx.body ?? {};
    if (typeof b !== "object" || b === null || Array.isArray(b))
      throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
    return b as Record<string, unknown>;
  };
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
      requestBody: {
        type: "object",
        required: ["items"],
        properties: {
          items: {
            type: "array",
            maxItems: 1000,
            items: {
              type: "object",
              required: ["kind", "text"],
              properties: {
                kind: { type: "string" },
                text: { type: "string" },
                tags: stringArray,
                ts: { type: "integer", description: "epoch ms; default now" },
                meta: { type: "object" },
                ttlDays: { type: "integer", minimum: 1, description: "expires this many days after ingest" },
              },
            },
          },
        },
      },
      response: {
        status: 200,
        schema: { type: "object", properties: { ids: stringArray, count: { type: "integer" } } },
        description: "The new records' ids, in order",
      },
      async handle(ctx) {
        const { seq, ...res } = await records.ingest(tenant(ctx), ns(ctx), body(ctx).items);
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
      requestBody: {
        type: "object",
        properties: {
          text: { type: "string" },
          topK: { type: "integer", minimum: 1, maximum: 1000, default: 10 },
          ...predicate,
          includeText: { type: "boolean" },
          includeMeta: { type: "boolean" },
          mode: {
            type: "string",
            enum: ["vector", "hybrid"],
            default: "vector",
            description:
              "with text: vector (the default) ranks by cosine similarity and score is the cosine; hybrid is reciprocal rank fusion (k = 60) of the cosine and BM25 rankings and score is the fused score, the sum over the two rankings of 1/(60 + rank), rank from 1 (at most 2/61 ≈ 0.0328)",
          },
        },
      },
      response: {
        status: 200,
        schema: { type: "object", properties: { records: { type: "array", items: record }, namespace: { type: "string" } } },
        description: "Best first (score = the cosine; with mode hybrid, the fused score), or newest first without text (no score)",
      },
      handle: async (ctx) => ({ body: await records.query(tenant(ctx), ns(ctx), body(ctx), ctx.usage, read(ctx)) }),
    },
    {
      method: "get",
      path: "/v1/records/{ns}/timeline",
      operationId: "records_timeline",
      summary: "Records newest first, a page at a time (pass nextCursor back as until)",
      tags: ["records"],
      auth: "tenant",
      meter: "records_timeline",
      queryParams: [
        { name: "since", schema: { type: "integer" }, description: "ts >= since (epoch ms)" },
        { name: "until", schema: { type: "integer" }, description: "ts < until (epoch ms): the previous page's nextCursor, to page back" },
        {
          name: "after",
          schema: { type: "string" },
          description:
            "with until: the previous page's nextAfter (given only when one group of records sharing a ts is larger than limit); the page goes on inside the group at ts until, right after that record",
        },
        listParam("kind", "any of these kinds"),
        listParam("tagsAny", "at least one of these tags"),
        listParam("tagsAll", "all of these tags"),
        {
          name: "limit",
          schema: { type: "integer", minimum: 1, maximum: 500, default: 50 },
          description:
            "page size, a hard cap; a page ends between two ts values (records sharing the ts at the cut move to the next page together), unless one ts group alone is larger than limit",
        },
      ],
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
      queryParams: [
        {
          name: "schema",
          schema: { type: "integer", enum: [1, 2], default: 1 },
          description:
            "container schema version; 2 also carries all of the tenant's knowledge graphs and causal models (tenant-scoped, not per namespace)",
        },
      ],
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
      requestBody: { type: "object", properties: { ...predicate, ids: stringArray } },
      response: {
        status: 200,
        schema: { type: "object", properties: { forgottenCount: { type: "integer" } } },
        description: "How many were deleted",
      },
      async handle(ctx) {
        const { seq, ...res } = await records.forget(tenant(ctx), ns(ctx), body(ctx), read(ctx));
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

/** The timeline's query string as a typed request (E_BAD_REQUEST naming the parameter); ranges and cross-field rules are the service's. */
export function timelineRequest(q: URLSearchParams): TimelineRequest {
  const limit = queryInt(q, "limit");
  const until = queryInt(q, "until");
  const after = q.get("after") ?? undefined;
  if (after !== undefined && (after === "" || after.length > 256))
    throw new SvcError("E_BAD_REQUEST", "after must be a record id: the nextAfter of the previous page", { field: "after" });
  return {
    limit,
    until,
    after,
    kind: list(q, "kind"),
    tagsAny: list(q, "tagsAny"),
    tagsAll: list(q, "tagsAll"),
    since: queryInt(q, "since"),
  };
}

/** An integer query parameter, or undefined when absent; "12x" is an error naming the parameter. */
function queryInt(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const n = Number(raw);
  if (!/^-?\d{1,16}$/.test(raw) || !Number.isSafeInteger(n))
    throw new SvcError("E_BAD_REQUEST", `${name} must be an integer`, { field: name });
  return n;
}

/** A comma-separated query parameter as a list, or undefined when absent. */
function list(params: URLSearchParams, name: string): string[] | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const items = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (items.length === 0) throw new SvcError("E_BAD_REQUEST", `${name} must list at least one value`, { field: name });
  return items;
}
