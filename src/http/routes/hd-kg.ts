/** @module routes/hd-kg — /v1/hd/kg (list) and /v1/hd/kg/{name}: add, delete_fact, query, stats, export/import (.hdkg) and drop of a knowledge graph. */
import { SvcError } from "../../errors.js";
import { HDKG_CONTENT_TYPE } from "../../hd/kg/hdkg-file.js";
import type { KnowledgeGraphs } from "../../hd/kg/service.js";
import { HD_OPS } from "../../tools/hd-ops.js";
import { countIn, type RequestContext, type Route, type Schema } from "../route.js";
import { bodyOf } from "../input.js";

const shard: Schema = {
  type: "object",
  properties: {
    relation: { type: "string" },
    facts: { type: "integer" },
    objects: { type: "integer", description: "distinct objects: the clean-up candidates" },
    expectedAccuracy: { type: "number", description: "theoretical top-1 accuracy at this load" },
    capacityLeft: { type: "integer", description: "facts that can be added before the theoretical accuracy falls below 0.99" },
    capacity: { type: "integer", description: "the most facts the shard holds at >= 0.99 theoretical accuracy with its current objects" },
    load: { type: "number", description: "facts / capacity; above 1 the shard is past capacity" },
    overloaded: { type: "boolean", description: "load > 1: answers are less accurate, and their confidence (null below 0.05) says so" },
  },
};

export function kgRoutes(kg: KnowledgeGraphs): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const graph = (ctx: RequestContext) => ctx.params.name!;
  return [
    {
      method: "get",
      path: "/v1/hd/kg",
      operationId: "hd_kg_list",
      summary: "The tenant's knowledge graph names",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_list",
      response: {
        status: 200,
        schema: { type: "object", properties: { graphs: { type: "array", items: { type: "string" } } } },
        description: "Graph names, sorted",
      },
      handle: async (ctx) => ({ body: { graphs: await kg.names(tenant(ctx)) } }),
    },
    {
      method: "post",
      path: "/v1/hd/kg/{name}/facts",
      operationId: "hd_kg_add",
      summary: "Add (subject, relation, object) facts; the graph is created by its first facts; present facts are skipped",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_add",
      usageBound: (ctx) => ({ written: countIn(ctx.body, "facts") }),
      input: HD_OPS.hd_kg_add,
      response: {
        status: 200,
        schema: { type: "object", properties: { added: { type: "integer" }, relations: { type: "array", items: { type: "string" } } } },
        description: "Facts added and the relations the request touched",
      },
      async handle(ctx) {
        const res = await kg.addFacts(tenant(ctx), graph(ctx), bodyOf(HD_OPS.hd_kg_add.body, ctx.body));
        ctx.usage.written = res.added;
        return { body: res };
      },
    },
    {
      method: "post",
      path: "/v1/hd/kg/{name}/facts/delete",
      operationId: "hd_kg_delete_fact",
      summary: "Delete facts: each present fact is subtracted exactly from its relation's bundle",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_delete_fact",
      input: HD_OPS.hd_kg_delete_fact,
      response: {
        status: 200,
        schema: { type: "object", properties: { deleted: { type: "integer" } } },
        description: "How many facts were present and removed",
      },
      handle: async (ctx) => ({ body: await kg.deleteFacts(tenant(ctx), graph(ctx), bodyOf(HD_OPS.hd_kg_delete_fact.body, ctx.body)) }),
    },
    {
      method: "post",
      path: "/v1/hd/kg/{name}/query",
      operationId: "hd_kg_query",
      summary: "The object of (subject, relation), with a calibrated confidence; object null below 0.05",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_query",
      readOnly: true,
      input: HD_OPS.hd_kg_query,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: { object: { type: ["string", "null"] }, confidence: { type: "number", minimum: 0, maximum: 1 } },
        },
        description: "The answer; confidence is the probability it is right",
      },
      handle: async (ctx) => ({ body: await kg.query(tenant(ctx), graph(ctx), bodyOf(HD_OPS.hd_kg_query.body, ctx.body)) }),
    },
    {
      method: "get",
      path: "/v1/hd/kg/{name}/stats",
      operationId: "hd_kg_stats",
      summary: "Relations (shards), facts per shard, entities and estimated capacity left",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_stats",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            name: { type: "string" },
            relations: { type: "array", items: shard },
            facts: { type: "integer" },
            entities: { type: "integer" },
          },
        },
        description: "Graph statistics",
      },
      handle: async (ctx) => ({ body: await kg.stats(tenant(ctx), graph(ctx)) }),
    },
    {
      method: "get",
      path: "/v1/hd/kg/{name}/export",
      operationId: "hd_kg_export",
      summary: "The graph as a .hdkg file (docs/FORMAT.md)",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_export",
      response: { status: 200, description: `${HDKG_CONTENT_TYPE}, as attachment <name>.hdkg` },
      async handle(ctx) {
        const data = await kg.export(tenant(ctx), graph(ctx));
        return {
          raw: { contentType: HDKG_CONTENT_TYPE, data },
          headers: { "content-disposition": `attachment; filename="${graph(ctx)}.hdkg"` },
        };
      },
    },
    {
      method: "post",
      path: "/v1/hd/kg/{name}/import",
      operationId: "hd_kg_import",
      summary: "Replace the graph by a .hdkg file sent as the raw body (application/octet-stream)",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_import",
      rawBody: "application/octet-stream",
      requestBody: { type: "string", contentEncoding: "binary", description: "the .hdkg bytes" },
      response: {
        status: 200,
        schema: { type: "object", properties: { imported: { type: "integer" }, relations: { type: "integer" } } },
        description: "Facts and relations imported",
      },
      async handle(ctx) {
        if (!/^application\/octet-stream\b/i.test(ctx.contentType)) {
          throw new SvcError("E_MEDIA_TYPE", `send the .hdkg bytes as application/octet-stream, not '${ctx.contentType}'`, {
            field: "content-type",
          });
        }
        const res = await kg.import(tenant(ctx), graph(ctx), ctx.body as Buffer);
        ctx.usage.written = res.imported;
        return { body: res };
      },
    },
    {
      method: "delete",
      path: "/v1/hd/kg/{name}",
      operationId: "hd_kg_delete",
      summary: "Drop the graph",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_kg_delete",
      response: { status: 200, schema: { type: "object", properties: { deleted: { type: "boolean" } } }, description: "Dropped" },
      handle: async (ctx) => ({ body: await kg.delete(tenant(ctx), graph(ctx)) }),
    },
  ];
}
