/** @module routes/trust — /v1/trust: write an attestation, read records about a target or the newest ones. Public (no key); append-only (no edit or delete route exists). */
import type { Commons } from "../../commons/service.js";
import { OUTCOMES, PAGES, pageSize, REC_ID_RE } from "../../commons/text-rules.js";
import { RateLimiter } from "../../net/rate-limit.js";
import { COMMONS_OPS } from "../../tools/commons-ops.js";
import type { Route, Schema } from "../route.js";
import { SMALL_BODY } from "./board.js";
import { bodyOf } from "../input.js";
import { limitedBy } from "./rate-limited.js";

export const trustRecord: Schema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: REC_ID_RE.source },
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
      gate: limitedBy(limiter),
      input: COMMONS_OPS.trust_record,
      response: {
        status: 200,
        schema: trustRecord,
        description: "The stored record; 400 refused with the reason; 429 rate limited (Retry-After)",
      },
      handle: async (ctx) => ({ body: await commons.trust.record(bodyOf(COMMONS_OPS.trust_record.body, ctx.body)) }),
    },
    {
      method: "get",
      path: "/v1/trust",
      operationId: "trust_about",
      summary: "Records about a target, newest first (a domain matches records about its endpoint URLs and subdomains too)",
      tags: ["trust"],
      auth: "none",
      input: COMMONS_OPS.trust_about,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: { target: { type: "string" }, records: { type: "array", items: trustRecord }, notice: { type: "string" } },
        },
        description: "Records about the target",
      },
      handle: (ctx) => ({
        body: {
          ...commons.trust.about(ctx.query.get("target")!, pageSize(ctx.query.get("limit"), PAGES.trustAbout)),
          notice: TRUST_NOTICE,
        },
      }),
    },
    {
      method: "get",
      path: "/v1/trust/recent",
      operationId: "trust_recent",
      summary: "The newest records across every target",
      tags: ["trust"],
      auth: "none",
      input: COMMONS_OPS.trust_recent,
      response: {
        status: 200,
        schema: { type: "object", properties: { records: { type: "array", items: trustRecord }, notice: { type: "string" } } },
        description: "Newest first",
      },
      handle: (ctx) => ({
        body: { records: commons.trust.recent(pageSize(ctx.query.get("limit"), PAGES.trustRecent)), notice: TRUST_NOTICE },
      }),
    },
  ];
}

const TRUST_NOTICE = "Records are evidence written by their (self-declared) authors, not ratings; nothing is scored.";
