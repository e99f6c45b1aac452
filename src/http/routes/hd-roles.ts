/** @module routes/hd-roles — /v1/hd/roles/bind and /read: role-filler binding into one hypervector and reading fillers back (stateless). */
import { SvcError } from "../../errors.js";
import { bindRoles, MAX_CANDIDATES, MAX_PAIRS, MIN_COSINE, parseSeed, readRoles, ROLES_DIM } from "../../hd/roles.js";
import { countIn, type RequestContext, type Route, type Schema } from "../route.js";

const seed: Schema = {
  type: "integer",
  minimum: 0,
  maximum: 4294967295,
  default: 0,
  description: "atom seed; atoms are deterministic in (seed, name)",
};
const vector: Schema = { type: "string", contentEncoding: "base64", description: `the bound record: ${ROLES_DIM} bits, base64` };

function body(ctx: RequestContext): Record<string, unknown> {
  const b = ctx.body ?? {};
  if (typeof b !== "object" || b === null || Array.isArray(b))
    throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
  return b as Record<string, unknown>;
}

export function hdRolesRoutes(): Route[] {
  return [
    {
      method: "post",
      path: "/v1/hd/roles/bind",
      operationId: "hd_roles_bind",
      summary: `Bind {role: filler} pairs into one ${ROLES_DIM}-bit hypervector (majority of role XOR filler)`,
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_roles_bind",
      readOnly: true,
      requestBody: {
        type: "object",
        required: ["pairs"],
        properties: {
          pairs: {
            type: "object",
            additionalProperties: { type: "string" },
            maxProperties: MAX_PAIRS,
            description: "role name -> filler name",
          },
          seed,
        },
      },
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: { vector, dimension: { type: "integer" }, pairs: { type: "integer" }, seed: { type: "integer" } },
        },
        description: "The bound record",
      },
      handle(ctx) {
        const b = body(ctx);
        return { body: bindRoles(b.pairs, parseSeed(b.seed)) };
      },
    },
    {
      method: "post",
      path: "/v1/hd/roles/read",
      operationId: "hd_roles_read",
      summary: "For each role, the candidate filler nearest to role XOR record, with its cosine and margin over the runner-up",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_roles_read",
      readOnly: true,
      usageBound: (ctx) => ({ scanned: countIn(ctx.body, "roles") * countIn(ctx.body, "candidates") }),
      requestBody: {
        type: "object",
        required: ["vector", "roles", "candidates"],
        properties: {
          vector,
          roles: { type: "array", items: { type: "string" }, maxItems: MAX_PAIRS },
          candidates: {
            type: "array",
            items: { type: "string" },
            maxItems: MAX_CANDIDATES,
            description: "the fillers to clean up against",
          },
          seed,
        },
      },
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            roles: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  role: { type: "string" },
                  filler: { type: ["string", "null"], description: `null below cosine ${MIN_COSINE}` },
                  cosine: { type: "number" },
                  runnerUp: { type: ["string", "null"] },
                  margin: { type: "number" },
                },
              },
            },
          },
        },
        description: "One reading per role, in order",
      },
      handle(ctx) {
        const b = body(ctx);
        const roles = readRoles(b.vector, b.roles, b.candidates, parseSeed(b.seed));
        ctx.usage.scanned = roles.length * (b.candidates as unknown[]).length;
        return { body: { roles } };
      },
    },
  ];
}
