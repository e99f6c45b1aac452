/** @module routes/hd-roles — /v1/hd/roles/bind and /read: role-filler binding into one hypervector and reading fillers back (stateless). */
import { bindRoles, MIN_COSINE, readRoles, ROLES_DIM } from "../../hd/roles.js";
import { HD_OPS } from "../../tools/hd-ops.js";
import { countIn, type Route, type Schema } from "../route.js";
import { bodyOf } from "../input.js";

const vector: Schema = { type: "string", contentEncoding: "base64", description: `the bound record: ${ROLES_DIM} bits, base64` };

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
      input: HD_OPS.hd_roles_bind,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: { vector, dimension: { type: "integer" }, pairs: { type: "integer" }, seed: { type: "integer" } },
        },
        description: "The bound record",
      },
      handle(ctx) {
        const b = bodyOf(HD_OPS.hd_roles_bind.body, ctx.body);
        return { body: bindRoles(b.pairs, b.seed ?? 0) };
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
      input: HD_OPS.hd_roles_read,
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
        const b = bodyOf(HD_OPS.hd_roles_read.body, ctx.body);
        const roles = readRoles(b.vector, b.roles, b.candidates, b.seed ?? 0);
        ctx.usage.scanned = roles.length * b.candidates.length;
        return { body: { roles } };
      },
    },
  ];
}
