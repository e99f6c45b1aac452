/**
 * @module tools/admin-ops — the request schema of each /v1/admin operation with a body (zod), the one source of its
 * rules: the route checks its body with it (http/input.ts), the OpenAPI document shows it, the MCP tool admin_credit
 * takes its fields (tools/commons.ts). Whether a tenant exists, and a key revoking itself, the route decides.
 */
import { z } from "zod";
import { MAX_CREDIT_USD, MAX_KEY_NAME, TENANT_RE } from "../input-rules.js";

/** A tenant id (1-64 lowercase letters, digits, '_' and '-', starting with a letter or digit). */
export const tenantId = z.string().regex(TENANT_RE, "must be 1-64 lowercase letters, digits, '_' and '-', starting with a letter or digit");

export const ADMIN_OPS = {
  admin_create_key: {
    body: z.object({
      tenant: tenantId.or(z.literal("")).optional().describe("an existing or new tenant id; omitted (or empty): a new tenant t_<hex>"),
      name: z.string().max(MAX_KEY_NAME).optional().describe("a label for the key"),
      admin: z.boolean().optional().describe("admin keys are unmetered and may manage keys (default false)"),
    }),
  },
  admin_credit: {
    body: z.object({ usd: z.number().gt(0).max(MAX_CREDIT_USD).describe("USD to add") }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
