/** @module routes/directory — the business directory: public search, profiles, trust, actions, availability, consultation requests, pages, llms-full.txt, /health; admin claim, edits, verification, booking. */
import type { Directory } from "../../directory/service.js";
import { llmsFull, renderProfile, renderSearch } from "../../directory/page.js";
import { SEARCH_LIMITS } from "../../directory/search.js";
import { actionsView, profileView, searchView, servicesView, trustView } from "../../directory/views.js";
import { RateLimiter, type RateLimit } from "../../net/rate-limit.js";
import { DIRECTORY_OPS } from "../../tools/directory-ops.js";
import type { RequestContext, Route, Schema } from "../route.js";
import { bodyOf } from "../input.js";
import { limitedBy } from "./rate-limited.js";

const TAGS = ["directory"];
const HTML = "text/html; charset=utf-8";

const source: Schema = {
  type: "object",
  properties: { url: { type: ["string", "null"] }, date: { type: "string", format: "date" }, asserted_by: { type: "string" } },
};
const field: Schema = {
  type: "object",
  description: "{value, state, source}",
  properties: { value: {}, state: { enum: ["sourced", "owner_asserted", "verified"] }, source },
};
/** A fact the directory records itself: {value, state: "verified", source: {url: null, date, asserted_by: "operator"}}. */
const fact = (value: Schema, description: string): Schema => ({
  type: "object",
  description: `${description}; {value, state, source} recorded by the operator`,
  properties: { value, state: { const: "verified" }, source },
});
const claim = fact({ enum: ["unclaimed", "claimed"] }, "Claim state");
const verification = fact({ enum: ["unverified", "verified"] }, "Verification of a claimed business");
const bookable = fact({ type: "boolean" }, "Whether it takes consultation requests (claimed, booking on)");
/** The rule for which members are wrapped, stated where clients read the schema. */
const WRAP_RULE =
  "Every fact about the business (its fields, and listed, claim, verification, bookable, updated) is {value, state, source: {url, date, asserted_by}}; `id` and `page` are the service's own handles for the record (its key and its link), not facts about the business, so they are bare strings";
const profile: Schema = {
  type: "object",
  description: WRAP_RULE,
  properties: {
    id: { type: "string", description: "The record's id (a handle of this service, not wrapped)" },
    page: { type: "string", description: "Path of the profile page (a handle of this service, not wrapped)" },
    listed: fact({ type: "boolean" }, "Whether search and llms-full.txt show it"),
    claim,
    verification,
    bookable,
    updated: fact({ type: "string", format: "date-time" }, "Last change of the record"),
    name: field,
    category: field,
    description: field,
    services: field,
    industries: field,
    areas: field,
    website: field,
    email: field,
    phone: field,
    address: field,
  },
};
const searchResult: Schema = {
  type: "object",
  properties: {
    q: { type: "string" },
    category: { type: ["string", "null"] },
    match: { enum: ["all", "partial", "none"] },
    words: { type: "array", items: { type: "string" } },
    total: { type: "integer" },
    limit: { type: "integer" },
    offset: { type: "integer" },
    next: { type: ["string", "null"], description: "Path of the next page; null on the last" },
    results: {
      type: "array",
      items: {
        type: "object",
        description: WRAP_RULE,
        properties: {
          id: { type: "string" },
          page: { type: "string" },
          match: { enum: ["all", "partial"] },
          matched: { type: "array", items: { type: "string" } },
          claim,
          bookable,
          name: field,
          category: field,
          areas: field,
          description: field,
        },
      },
    },
  },
};
const slot: Schema = {
  type: "object",
  properties: { start: { type: "string", format: "date-time" }, end: { type: "string", format: "date-time" } },
};
const consultation: Schema = {
  type: "object",
  properties: {
    id: { type: "string", pattern: "^req_[0-9a-f]{16}$" },
    business: { type: "string" },
    start: { type: "string" },
    end: { type: "string" },
    customer: { type: "object", properties: { name: { type: "string" }, email: { type: "string" } } },
    company: { type: "string" },
    answers: { type: "object", additionalProperties: { type: "string" } },
    customer_confirmed: { const: true },
    agent: { type: "object", properties: { name: { type: "string" } } },
    status: { const: "requested" },
    created: { type: "string" },
  },
};
const idParam = (ctx: RequestContext) => ctx.params.id ?? "";

/** An integer query parameter the route's input schema has checked; `dflt` when absent or blank. */
function intParam(ctx: RequestContext, name: string, dflt: number): number {
  const raw = ctx.query.get(name);
  return raw === null || raw.trim() === "" ? dflt : Number(raw);
}

/** The search request, as DIRECTORY_OPS.directory_search checked it. */
function searchParams(ctx: RequestContext): { q: string; category: string; limit: number; offset: number } {
  return {
    q: ctx.query.get("q") ?? "",
    category: ctx.query.get("category") ?? "",
    limit: intParam(ctx, "limit", SEARCH_LIMITS.defaultLimit),
    offset: intParam(ctx, "offset", 0),
  };
}

/** Public business writes (consultation requests) per client address; every attempt counts, refused ones too. Admin operations are not limited. */
export const DIRECTORY_WRITE_LIMIT: RateLimit = { count: 10, windowSeconds: 10 * 60 };

export function directoryRoutes(dir: Directory, writeLimiter = new RateLimiter("business writes", DIRECTORY_WRITE_LIMIT)): Route[] {
  /** The business the path names exists (404 before its body is judged, as the service answers). */
  const exists = (ctx: RequestContext) => void dir.get(idParam(ctx));
  const admin = (
    path: string,
    method: Route["method"],
    operationId: string,
    summary: string,
    input: Route["input"],
    handle: (ctx: RequestContext) => Promise<unknown>,
  ): Route => ({
    method,
    path: `/api/admin/businesses/{id}${path}`,
    operationId,
    summary,
    tags: TAGS,
    auth: "admin",
    ...(input ? { input, gate: exists } : {}),
    response: { status: 200, schema: profile, description: "The business as it now is" },
    handle: async (ctx) => ({ body: await handle(ctx) }),
  });
  const routes: Route[] = [
    // Admin operations first and the release last: a walk over the table in order (test/http/ops.test.ts) claims, books, reads, then releases.
    admin(
      "/claim",
      "post",
      "directory_claim",
      "Admin: mark the business claimed by its owner {owner: {name, email}}",
      DIRECTORY_OPS.directory_claim,
      async (ctx) => profileView(await dir.claim(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_claim.body, ctx.body).owner)),
    ),
    admin(
      "/fields",
      "patch",
      "directory_assert_fields",
      "Admin: the owner's values {fields: {name: value|null}} become owner_asserted",
      DIRECTORY_OPS.directory_assert_fields,
      async (ctx) => profileView(await dir.assertFields(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_assert_fields.body, ctx.body).fields)),
    ),
    admin(
      "/verify",
      "post",
      "directory_verify",
      "Admin: mark fields verified {fields?: [names]} (all when omitted)",
      DIRECTORY_OPS.directory_verify,
      async (ctx) => profileView(await dir.verify(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_verify.body, ctx.body).fields)),
    ),
    admin(
      "/booking",
      "post",
      "directory_set_booking",
      "Admin: turn booking on {booking: {utc_offset, hours, slot_minutes, questions}} or off {booking: null}",
      DIRECTORY_OPS.directory_set_booking,
      async (ctx) => profileView(await dir.setBooking(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_set_booking.body, ctx.body).booking)),
    ),
    admin(
      "/listing",
      "post",
      "directory_set_listed",
      "Admin: list or unlist the profile {listed: boolean}",
      DIRECTORY_OPS.directory_set_listed,
      async (ctx) => profileView(await dir.setListed(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_set_listed.body, ctx.body).listed)),
    ),
    {
      method: "get",
      path: "/api/admin/businesses/{id}/requests",
      operationId: "directory_requests",
      summary: "Admin: the consultation requests made to a business",
      tags: TAGS,
      auth: "admin",
      response: {
        status: 200,
        schema: { type: "object", properties: { id: { type: "string" }, requests: { type: "array", items: consultation } } },
        description: "Requests, oldest first",
      },
      handle: (ctx) => ({ body: { id: idParam(ctx), requests: dir.requests(idParam(ctx)) } }),
    },
    {
      method: "get",
      path: "/health",
      operationId: "directory_health",
      summary: "Liveness of the directory front",
      tags: TAGS,
      auth: "none",
      response: { status: 200, schema: { type: "object", properties: { ok: { const: true } } }, description: "Up" },
      handle: () => ({ body: { ok: true } }),
    },
    {
      method: "get",
      path: "/api/businesses",
      operationId: "directory_search",
      summary: "Search businesses (all words must match; partial fallback)",
      tags: TAGS,
      auth: "none",
      input: DIRECTORY_OPS.directory_search,
      response: { status: 200, schema: searchResult, description: "One page of matches with total, limit, offset and next" },
      handle: (ctx) => {
        const p = searchParams(ctx);
        return { body: searchView(dir.search(p), p) };
      },
    },
    {
      method: "get",
      path: "/api/businesses/{id}",
      operationId: "directory_get",
      summary: "A business's whole identity, every field as {value, state, source}",
      tags: TAGS,
      auth: "none",
      response: { status: 200, schema: profile, description: "The identity" },
      handle: (ctx) => ({ body: profileView(dir.get(idParam(ctx))) }),
    },
    {
      method: "get",
      path: "/api/businesses/{id}/services",
      operationId: "directory_services",
      summary: "A business's services",
      tags: TAGS,
      auth: "none",
      response: {
        status: 200,
        schema: { type: "object", properties: { id: { type: "string" }, services: { anyOf: [field, { type: "null" }] } } },
        description: "The services field (null when unknown)",
      },
      handle: (ctx) => ({ body: servicesView(dir.get(idParam(ctx))) }),
    },
    {
      method: "get",
      path: "/api/businesses/{id}/trust",
      operationId: "directory_trust",
      summary: "Claim and verification state, and each field's state and source",
      tags: TAGS,
      auth: "none",
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            id: { type: "string" },
            claim,
            verification,
            fields: { type: "object", additionalProperties: { type: "object", properties: { state: { type: "string" }, source } } },
            states: { type: "object" },
          },
        },
        description: "Trust view",
      },
      handle: (ctx) => ({ body: trustView(dir.get(idParam(ctx))) }),
    },
    {
      method: "get",
      path: "/api/businesses/{id}/actions",
      operationId: "directory_actions",
      summary: "What can be done with the business (empty unless claimed with booking on)",
      tags: TAGS,
      auth: "none",
      response: {
        status: 200,
        schema: { type: "object", properties: { id: { type: "string" }, actions: { type: "array", items: { type: "object" } } } },
        description: "Actions",
      },
      handle: (ctx) => ({ body: actionsView(dir.get(idParam(ctx))) }),
    },
    {
      method: "get",
      path: "/api/businesses/{id}/availability",
      operationId: "directory_availability",
      summary: "Free consultation slots between start and end (ISO 8601 with offset, up to 14 days)",
      tags: TAGS,
      auth: "none",
      // no booking: 409 not_available whatever the range (judged before the range is)
      gate: (ctx) => dir.assertBookable(idParam(ctx)),
      input: DIRECTORY_OPS.directory_availability,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            id: { type: "string" },
            start: { type: "string" },
            end: { type: "string" },
            utc_offset: { type: "string" },
            slot_minutes: { type: "integer" },
            slots: { type: "array", items: slot },
          },
        },
        description: "Free slots; 409 not_available without a bookable action",
      },
      handle: (ctx) => ({ body: dir.availability(idParam(ctx), ctx.query.get("start")!, ctx.query.get("end")!) }),
    },
    {
      method: "post",
      path: "/api/businesses/{id}/consultation-request",
      operationId: "directory_consultation_request",
      summary: "Request a consultation in a free slot (customer_confirmed must be true; 10 writes per 10 minutes per client address)",
      tags: TAGS,
      auth: "none",
      // every attempt counts against the write limit (refused ones too); then 404 / 409 not_available before the body is judged
      gate: (ctx) => {
        writeLimiter.take(ctx.remoteAddress);
        dir.assertBookable(idParam(ctx));
      },
      input: DIRECTORY_OPS.directory_consultation_request,
      response: {
        status: 201,
        schema: consultation,
        description: "The request, sent to the business; 429 rate_limited past the write limit",
      },
      handle: async (ctx) => ({
        status: 201,
        body: await dir.requestConsultation(idParam(ctx), bodyOf(DIRECTORY_OPS.directory_consultation_request.body, ctx.body)),
      }),
    },
    {
      method: "get",
      path: "/llms-full.txt",
      operationId: "directory_llms_full",
      summary: "Every listed profile, one line each (text/plain)",
      tags: TAGS,
      auth: "none",
      response: { status: 200, description: "text/plain; one '- [name](page): ...' line per listed profile" },
      handle: (ctx) => ({ raw: { contentType: "text/plain; charset=utf-8", data: llmsFull(dir.listed(), ctx.baseUrl) } }),
    },
    {
      method: "get",
      path: "/businesses",
      operationId: "directory_page_search",
      summary: "HTML: search the directory",
      tags: TAGS,
      auth: "none",
      input: DIRECTORY_OPS.directory_search,
      response: { status: 200, description: "text/html" },
      handle: (ctx) => {
        const p = searchParams(ctx);
        return { raw: { contentType: HTML, data: renderSearch(dir.search(p), p.q, p.category, p.limit, p.offset, dir.categories()) } };
      },
    },
    {
      method: "get",
      path: "/businesses/{id}",
      operationId: "directory_page",
      summary: "HTML profile page with schema.org JSON-LD (svc:state:<field> properties, isBasedOn, dateModified)",
      tags: TAGS,
      auth: "none",
      response: { status: 200, description: "text/html" },
      handle: (ctx) => ({ raw: { contentType: HTML, data: renderProfile(dir.get(idParam(ctx)), ctx.baseUrl) } }),
    },
    admin("/release", "post", "directory_release", "Admin: release a claim (booking off, verification reset)", undefined, async (ctx) =>
      profileView(await dir.release(idParam(ctx))),
    ),
  ];
  // A directory whose checkpoint is unreadable is offline: every one of its routes answers 503 E_STORE_OFFLINE (before its input is judged).
  return routes.map((r) => ({
    ...r,
    gate: (ctx: RequestContext) => (dir.assertOnline(), r.gate?.(ctx)),
    handle: (ctx: RequestContext) => (dir.assertOnline(), r.handle(ctx)),
  }));
}
