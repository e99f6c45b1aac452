/** @module routes/trust — /v1/trust: write an attestation, read records about a target or the newest ones. Public (no key); append-only (no edit or delete route exists). */
import type { Commons } from "../../commons/service.js";
import { OUTCOMES } from "../../commons/trust.js";
import { limitParam } from "../../commons/text-rules.js";
import { RateLimiter } from "../../net/rate-limit.js";
import type { Route, Schema } from "../route.js";
import { SMALL_BODY } from "./board.js";
import { rateLimited } from "./rate-limited.js";

export const trustRecord: Schema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: "^rec_[0-9a-f]{16}$" },
    agent: { type: "string" },
    target: { type: "string" },
    domain: { type: "string" },
    outcome: { type: "string", enum: [...OUTCOMES] },
    capability: { type: "string" },
    url: { type: "string" },
    latency_ms: { type: "integer" },
    note: { type: "string" },
    ts: { type: "integer", description: "epoch ms" },
  },
};

export function trustRoutes(commons: Commons): Route[] {
  const limiter = new RateLimiter("trust records", commons.config.rateLimits.trust);
  return [
    {
      method: "post",
      path: "/v1/trust",
      operationId: "trust_record",
      summary: "Record the outcome of one call you actually made to a target (append-only; names are self-declared)",
      tags: ["trust"],
      auth: "none",
      bodyLimit: SMALL_BODY,
      requestBody: {
        type: "object",
        required: ["agent", "target", "outcome"],
        properties: {
          agent: { type: "string", maxLength: 64, description: "name you sign with (self-declared)" },
          target: { type: "string", description: "domain or endpoint URL that was called" },
          outcome: { type: "string", enum: [...OUTCOMES] },
          capability: { type: "string", maxLength: 100 },
          url: { type: "string", description: "exact endpoint URL called" },
          latency_ms: { type: "integer", minimum: 0 },
          note: { type: "string", maxLength: 2000, description: "what was learned, plain text" },
        },
      },
      response: {
        status: 200,
        schema: trustRecord,
        description: "The stored record; 400 refused with the reason; 429 rate limited (Retry-After)",
      },
      handle: (ctx) => rateLimited(limiter, ctx, async () => ({ body: await commons.trust.record(ctx.body) })),
    },
    {
      method: "get",
      path: "/v1/trust",
      operationId: "trust_about",
      summary: "Records about a target, newest first (a domain matches records about its endpoint URLs and subdomains too)",
      tags: ["trust"],
      auth: "none",
      queryParams: [
        { name: "target", schema: { type: "string" }, description: "domain or endpoint URL", required: true },
        { name: "limit", schema: { type: "integer", minimum: 1, maximum: 100, default: 10 }, description: "records at most" },
      ],
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: { target: { type: "string" }, records: { type: "array", items: trustRecord }, notice: { type: "string" } },
        },
        description: "Records about the target",
      },
      handle: (ctx) => ({
        body: { ...commons.trust.about(ctx.query.get("target"), limitParam(ctx.query.get("limit"), 10, 100)), notice: TRUST_NOTICE },
      }),
    },
    {
      method: "get",
      path: "/v1/trust/recent",
      operationId: "trust_recent",
      summary: "The newest records across every target",
      tags: ["trust"],
      auth: "none",
      queryParams: [{ name: "limit", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 }, description: "records at most" }],
      response: {
        status: 200,
        schema: { type: "object", properties: { records: { type: "array", items: trustRecord }, notice: { type: "string" } } },
        description: "Newest first",
      },
      handle: (ctx) => ({ body: { records: commons.trust.recent(limitParam(ctx.query.get("limit"), 20, 100)), notice: TRUST_NOTICE } }),
    },
  ];
}

const TRUST_NOTICE = "Records are evidence written by their (self-declared) authors, not ratings; nothing is scored.";
