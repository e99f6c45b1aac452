/** @module routes/hd-causal — /v1/hd/causal (list) and /v1/hd/causal/{name}: upload/append worlds, observation and intervention queries, delete, .hdscm export/import. */
import { SvcError } from "../../errors.js";
import { HDSCM_TYPE } from "../../hd/causal/format.js";
import type { CausalService } from "../../hd/causal/service.js";
import { HD_OPS } from "../../tools/hd-ops.js";
import { countIn, type RequestContext, type Route, type Schema } from "../route.js";
import { bodyOf } from "../input.js";

const ints: Schema = { type: "array", items: { type: "integer", minimum: 0 } };
const worldsReply: Schema = {
  type: "object",
  properties: {
    name: { type: "string" },
    n_vars: { type: "integer" },
    vocab_per_var: ints,
    has_graph: { type: "boolean" },
    seed: { type: "integer" },
    rows_added: { type: "integer" },
    rows_total: { type: "integer" },
    created: { type: "boolean" },
  },
};
const queryReply: Schema = {
  type: "object",
  properties: {
    query_type: { type: "string", enum: ["observation", "intervention"] },
    probability: { type: ["number", "null"], description: "P(Y=y | X=x) or P(Y=y | do(X=x)); null when no world can answer" },
    support: {
      type: "object",
      properties: {
        rows_total: { type: "integer" },
        rows_matching_condition: { type: "integer" },
        rows_matching_both: { type: "integer" },
        strata_total: { type: "integer" },
        strata_used: { type: "integer" },
        strata_empty: { type: "integer" },
        skipped_weight: { type: "number", description: "population share of strata without X=x worlds (skipped)" },
      },
    },
    adjustment_set: ints,
    adjusted_for: { type: "string", enum: ["none", "parents", "all_other_variables"] },
    warnings: { type: "array", items: { type: "string" } },
  },
};

export function causalRoutes(causal: CausalService): Route[] {
  const tenant = (ctx: RequestContext) => ctx.principal.tenant;
  const name = (ctx: RequestContext) => ctx.params.name!;
  return [
    {
      method: "get",
      path: "/v1/hd/causal",
      operationId: "hd_causal_list",
      summary: "The tenant's causal models with their shape and row counts",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_list",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            models: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  name: { type: "string" },
                  n_vars: { type: "integer" },
                  vocab_per_var: ints,
                  rows_total: { type: "integer" },
                  has_graph: { type: "boolean" },
                },
              },
            },
          },
        },
        description: "Models sorted by name",
      },
      async handle(ctx) {
        const models = [];
        for (const n of await causal.names(tenant(ctx))) {
          try {
            models.push({ name: n, ...(await causal.describe(tenant(ctx), n)) });
          } catch (err) {
            if (err instanceof SvcError && err.code === "E_NOT_FOUND") continue; // deleted since it was listed
            if (err instanceof SvcError && err.code === "E_STORE_OFFLINE") continue; // damaged: GET /v1/health names it
            throw err;
          }
        }
        return { body: { models } };
      },
    },
    {
      method: "post",
      path: "/v1/hd/causal/{name}/worlds",
      operationId: "hd_causal_worlds",
      summary: "Upload worlds (rows of categorical variables) to a causal model, creating it or appending",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_worlds",
      usageBound: (ctx) => ({ written: countIn(ctx.body, "worlds") }),
      input: HD_OPS.hd_causal_worlds,
      response: { status: 200, schema: worldsReply, description: "The model after the upload" },
      async handle(ctx) {
        const res = await causal.uploadWorlds(tenant(ctx), name(ctx), bodyOf(HD_OPS.hd_causal_worlds.body, ctx.body));
        ctx.usage.written = res.rows_added;
        return { body: res };
      },
    },
    {
      method: "post",
      path: "/v1/hd/causal/{name}/query",
      operationId: "hd_causal_query",
      summary: "Observation P(Y=y | X=x) or intervention P(Y=y | do(X=x)) by back-door adjustment",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_query",
      readOnly: true,
      usageBound: async (ctx) => ({ scanned: (await causal.describe(tenant(ctx), name(ctx))).rows_total }),
      input: HD_OPS.hd_causal_query,
      response: {
        status: 200,
        schema: queryReply,
        description: "Probability, support counts, adjustment set and warnings (no graph, positivity)",
      },
      async handle(ctx) {
        const res = await causal.query(tenant(ctx), name(ctx), bodyOf(HD_OPS.hd_causal_query.body, ctx.body));
        ctx.usage.scanned = res.support.rows_total;
        return { body: res };
      },
    },
    {
      method: "get",
      path: "/v1/hd/causal/{name}/export",
      operationId: "hd_causal_export",
      summary: "The model as a .hdscm file (docs/FORMAT.md)",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_export",
      response: { status: 200, description: `${HDSCM_TYPE}, as attachment <name>.hdscm` },
      async handle(ctx) {
        const data = await causal.exportModel(tenant(ctx), name(ctx));
        return { raw: { contentType: HDSCM_TYPE, data }, headers: { "content-disposition": `attachment; filename="${name(ctx)}.hdscm"` } };
      },
    },
    {
      method: "post",
      path: "/v1/hd/causal/{name}/import",
      operationId: "hd_causal_import",
      summary: "Replace (or create) the model from a .hdscm file sent as application/octet-stream",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_import",
      rawBody: "application/octet-stream",
      requestBody: { type: "string", contentEncoding: "binary", description: "application/octet-stream: the .hdscm bytes" },
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            name: { type: "string" },
            imported: { type: "integer" },
            n_vars: { type: "integer" },
            vocab_per_var: ints,
            has_graph: { type: "boolean" },
          },
        },
        description: "Imported (rows)",
      },
      async handle(ctx) {
        const type = ctx.contentType.split(";")[0]!.trim().toLowerCase();
        if (type !== "" && type !== HDSCM_TYPE)
          throw new SvcError("E_MEDIA_TYPE", `send the .hdscm bytes as ${HDSCM_TYPE}, not '${ctx.contentType}'`, { field: "content-type" });
        const res = await causal.importModel(tenant(ctx), name(ctx), (ctx.body as Buffer) ?? Buffer.alloc(0));
        ctx.usage.written = res.imported;
        return { body: res };
      },
    },
    {
      method: "delete",
      path: "/v1/hd/causal/{name}",
      operationId: "hd_causal_delete",
      summary: "Delete a causal model",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_causal_delete",
      response: {
        status: 200,
        schema: { type: "object", properties: { deleted: { type: "boolean" } } },
        description: "Deleted; an unknown model is 404",
      },
      handle: async (ctx) => ({ body: await causal.deleteModel(tenant(ctx), name(ctx)) }),
    },
  ];
}
