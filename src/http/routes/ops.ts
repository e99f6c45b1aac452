/** @module routes/ops — liveness, Prometheus metrics, the OpenAPI document and the tenant's wallet. */
import type { Wallets } from "../../account/wallet.js";
import { SvcError } from "../../errors.js";
import type { HttpMetrics } from "../metrics.js";
import { openApiDocument } from "../openapi.js";
import type { Route } from "../route.js";

export const VERSION = "0.1.0";

export function opsRoutes(deps: { wallets: Wallets; metrics: HttpMetrics; routes: () => readonly Route[] }): Route[] {
  const started = Date.now();
  let openapi: string | null = null;
  return [
    {
      method: "get", path: "/v1/health", operationId: "health", summary: "Liveness", tags: ["ops"], auth: "none",
      response: { status: 200, schema: { type: "object", properties: { status: { const: "ok" }, version: { type: "string" }, uptimeSeconds: { type: "number" } } }, description: "The process is serving" },
      handle: () => ({ body: { status: "ok", version: VERSION, uptimeSeconds: Math.round((Date.now() - started) / 1000) } }),
    },
    {
      method: "get", path: "/metrics", operationId: "metrics", summary: "Prometheus metrics (text exposition format)", tags: ["ops"], auth: "none",
      response: { status: 200, description: "text/plain; version=0.0.4" },
      handle: async () => ({ raw: { contentType: deps.metrics.registry.contentType, data: await deps.metrics.text() } }),
    },
    {
      method: "get", path: "/v1/openapi.json", operationId: "openapi", summary: "This API as an OpenAPI 3.1 document", tags: ["ops"], auth: "none",
      response: { status: 200, schema: { type: "object" }, description: "The document" },
      handle: () => ({ raw: { contentType: "application/json", data: (openapi ??= JSON.stringify(openApiDocument(deps.routes(), VERSION))) } }),
    },
    {
      method: "get", path: "/v1/wallet", operationId: "wallet", summary: "The tenant's balance, totals and recent usage (USD)", tags: ["account"], auth: "tenant",
      queryParams: [{ name: "limit", schema: { type: "integer", minimum: 1, maximum: 100 }, description: "Recent entries to show (default 20)" }],
      response: {
        status: 200,
        description: "The wallet",
        schema: {
          type: "object",
          properties: {
            tenant: { type: "string" }, balanceUsd: { type: "number" }, creditedUsd: { type: "number" }, spentUsd: { type: "number" }, unmetered: { type: "boolean" },
            recent: { type: "array", items: { type: "object", properties: { ts: { type: "integer" }, op: { type: "string" }, costUsd: { type: "number" }, written: { type: "integer" }, scanned: { type: "integer" } } } },
          },
        },
      },
      async handle(ctx) {
        const raw = ctx.query.get("limit");
        const limit = raw === null ? 20 : Number(raw);
        if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new SvcError("E_BAD_REQUEST", "limit must be an integer in [1, 100]", { field: "limit" });
        return { body: { ...(await deps.wallets.view(ctx.principal.tenant, limit)), unmetered: ctx.principal.admin } };
      },
    },
  ];
}
