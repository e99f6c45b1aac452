/** @module routes/ops — liveness, Prometheus metrics, the OpenAPI document and the tenant's wallet and usage series. */
import { USAGE_MAX_BUCKETS, type UsageGrain, type WalletBook } from "../../account/wallet-book.js";
import { SvcError } from "../../errors.js";
import type { DamageReport } from "../../store/damage.js";
import { VERSION } from "../../version.js";
import type { HttpMetrics } from "../metrics.js";
import { openApiDocument } from "../openapi.js";
import type { Route } from "../route.js";
import { parseQuery } from "../input.js";
import { USAGE_DEFAULT_BUCKETS, WALLET_OPS, WALLET_RECENT } from "../../tools/wallet-ops.js";

/** Where the start-up opening of the stores is: `failed` names stores that could not be opened (they answer 5xx on use). */
export interface Readiness {
  ready: boolean;
  opened: number;
  failed: string[];
}

/** Cluster mode: this node's id, the leader's and the live nodes' (as this node sees them). */
export interface ClusterView {
  node: string;
  /** The leader of the replicated home stores (directory, commons, knowledge graphs, causal models) and its term; null while none holds the lease. */
  leader: string | null;
  term: number;
  live: readonly string[];
}

export function opsRoutes(deps: {
  wallets: WalletBook;
  metrics: HttpMetrics;
  routes: () => readonly Route[];
  readiness: () => Readiness;
  /** The storage damage findings kept so far (store/reporter.ts KeptReports.reports). */
  damage: () => DamageReport[];
  cluster?: () => ClusterView;
}): Route[] {
  const started = Date.now();
  let openapi: string | null = null;
  return [
    {
      method: "get",
      path: "/v1/health",
      operationId: "health",
      summary: "Liveness",
      tags: ["ops"],
      auth: "none",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            status: { enum: ["ok", "degraded"] },
            version: { type: "string" },
            uptimeSeconds: { type: "number" },
            damage: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  store: { type: "string" },
                  file: { type: "string" },
                  kind: { type: "string" },
                  detail: { type: "string" },
                  dropped: { type: "integer" },
                  offline: { type: "boolean" },
                  at: { type: "integer" },
                },
              },
            },
            cluster: {
              type: "object",
              description: "cluster mode only",
              properties: {
                node: { type: "string", description: "this node's id" },
                leader: {
                  type: ["string", "null"],
                  description:
                    "the node leading the replicated home stores: the directory, the commons, the knowledge graphs and the causal models (null while none holds the lease)",
                },
                term: { type: "integer", description: "the leader's term (grows with each new leader)" },
                live: { type: "array", items: { type: "string" }, description: "the live nodes' ids" },
              },
            },
          },
        },
        description:
          'The process is serving; "degraded" with `damage` lists stores found damaged (the rest serves); in cluster mode `cluster` names this node, the leader of the home stores and the live nodes',
      },
      handle: () => {
        const damage = deps.damage();
        const up = {
          version: VERSION,
          uptimeSeconds: Math.round((Date.now() - started) / 1000),
          ...(deps.cluster ? { cluster: deps.cluster() } : {}),
        };
        return { body: damage.length === 0 ? { status: "ok", ...up } : { status: "degraded", ...up, damage } };
      },
    },
    {
      method: "get",
      path: "/v1/ready",
      operationId: "ready",
      summary: "Readiness: 200 once every store on disk is open (write-ahead logs replayed), 503 E_NOT_READY before",
      tags: ["ops"],
      auth: "none",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            status: { const: "ready" },
            opened: { type: "integer" },
            failed: {
              type: "array",
              items: { type: "string" },
              description: "stores that could not be opened (they answer 5xx; /v1/health lists damage)",
            },
          },
        },
        description: "Every store is open; route traffic here",
      },
      handle: () => {
        const r = deps.readiness();
        if (!r.ready)
          throw new SvcError(
            "E_NOT_READY",
            `opening the stores: ${r.opened} open so far; /v1/health answers meanwhile, data requests wait for the store they touch`,
            { details: { opened: r.opened } },
          );
        return { body: { status: "ready", opened: r.opened, failed: r.failed } };
      },
    },
    {
      method: "get",
      path: "/metrics",
      operationId: "metrics",
      summary: "Prometheus metrics (text exposition format)",
      tags: ["ops"],
      auth: "none",
      response: { status: 200, description: "text/plain; version=0.0.4" },
      handle: async () => ({ raw: { contentType: deps.metrics.registry.contentType, data: await deps.metrics.text() } }),
    },
    {
      method: "get",
      path: "/v1/openapi.json",
      operationId: "openapi",
      summary: "This API as an OpenAPI 3.1 document",
      tags: ["ops"],
      auth: "none",
      response: { status: 200, schema: { type: "object" }, description: "The document" },
      handle: () => ({
        raw: { contentType: "application/json", data: (openapi ??= JSON.stringify(openApiDocument(deps.routes(), VERSION))) },
      }),
    },
    {
      method: "get",
      path: "/v1/wallet",
      operationId: "wallet",
      summary: "The tenant's balance, totals and recent usage (USD)",
      tags: ["account"],
      auth: "tenant",
      input: WALLET_OPS.wallet,
      response: {
        status: 200,
        description: "The wallet",
        schema: {
          type: "object",
          properties: {
            tenant: { type: "string" },
            balanceUsd: { type: "number" },
            creditedUsd: { type: "number" },
            spentUsd: { type: "number" },
            unmetered: { type: "boolean" },
            recent: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  ts: { type: "integer" },
                  op: { type: "string" },
                  costUsd: { type: "number" },
                  written: { type: "integer" },
                  scanned: { type: "integer" },
                },
              },
            },
          },
        },
      },
      async handle(ctx) {
        const limit = parseQuery(WALLET_OPS.wallet.query, ctx.query).limit ?? WALLET_RECENT.default;
        return { body: { ...(await deps.wallets.view(ctx.principal.tenant, limit)), unmetered: ctx.principal.admin } };
      },
    },
    {
      method: "get",
      path: "/v1/wallet/usage",
      operationId: "wallet_usage",
      summary: "The tenant's charges over time by operation (USD and calls per minute, hour or UTC day)",
      tags: ["account"],
      auth: "tenant",
      input: WALLET_OPS.wallet_usage,
      response: {
        status: 200,
        description: "Consecutive buckets, oldest first, empty ones included",
        schema: {
          type: "object",
          properties: {
            tenant: { type: "string" },
            grain: { type: "string" },
            ops: { type: "array", items: { type: "string" }, description: "operations in the series, most expensive first" },
            buckets: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  start: { type: "integer", description: "epoch ms" },
                  ops: {
                    type: "object",
                    additionalProperties: { type: "object", properties: { costUsd: { type: "number" }, calls: { type: "integer" } } },
                  },
                },
              },
            },
          },
        },
      },
      handle(ctx) {
        const q = parseQuery(WALLET_OPS.wallet_usage.query, ctx.query);
        const grain: UsageGrain = q.grain ?? "hour";
        const count = q.buckets ?? USAGE_DEFAULT_BUCKETS[grain];
        const max = USAGE_MAX_BUCKETS[grain]; // the schema bounds buckets by the widest grain's most; this grain's here
        if (count > max)
          throw new SvcError("E_BAD_REQUEST", `buckets must be an integer in [1, ${max}] for grain ${grain}`, { field: "buckets" });
        return { body: { tenant: ctx.principal.tenant, ...deps.wallets.usage(ctx.principal.tenant, grain, count) } };
      },
    },
  ];
}
