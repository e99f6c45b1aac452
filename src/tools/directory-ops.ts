/**
 * @module tools/directory-ops — the request schema of each business-directory operation with input (zod), the one source
 * of its rules: the route checks its body or query with it (http/input.ts), the OpenAPI document shows it, and the MCP
 * tool that is the operation takes it as its input, with the business `id` of the path (tools/directory.ts). Types,
 * required members and sizes are refused here (400 E_BAD_REQUEST naming the field). The value rules shared with imports
 * (directory/identity.ts `text`, `email`, `checkValue`, `checkOwner`; booking.ts `parseInstant`, `checkBooking`) and
 * what depends on the business (its questions, slots, claim state, the fields it has) stay in the service.
 */
import { z } from "zod";
import { FIELD_NAMES, WEEKDAYS } from "../directory/identity.js";
import { MAX_SPAN_DAYS, SLOT_MINUTES } from "../directory/booking.js";
import { SEARCH_LIMITS } from "../directory/search.js";

/** "" in a query is the parameter left out. */
const blank = (v: unknown) => (v === "" ? undefined : v);
const instant = (description: string) =>
  z.string().min(1, { error: "is required: an ISO 8601 date-time with an offset" }).meta({ format: "date-time" }).describe(description);

const search = z.object({
  q: z
    .string()
    .max(SEARCH_LIMITS.q)
    .optional()
    .describe(
      "Words; every word must match across name, category, services, industries, areas, description (else partial matches come back with match: partial)",
    ),
  category: z.string().max(SEARCH_LIMITS.category).optional().describe("Exact category (case-insensitive)"),
  limit: z
    .preprocess(blank, z.number().int().min(1).max(SEARCH_LIMITS.maxLimit).optional())
    .describe(`Page size (default ${SEARCH_LIMITS.defaultLimit})`),
  offset: z.preprocess(blank, z.number().int().min(0).max(SEARCH_LIMITS.maxOffset).optional()).describe("Results to skip (default 0)"),
});

const person = { name: z.string(), email: z.string() };
/** The customer: name and email only, another member refused naming it (`customer.phone`). */
const customer = z
  .looseObject(person)
  .superRefine((c, ctx) => {
    for (const k of Object.keys(c))
      if (!Object.hasOwn(person, k)) ctx.addIssue({ code: "custom", path: [k], message: "is not a customer field (name, email)" });
  })
  .meta({ additionalProperties: false });

export const DIRECTORY_OPS = {
  /** GET /api/businesses and the HTML search page /businesses. */
  directory_search: { query: search },
  directory_availability: {
    query: z.object({
      start: instant("Range start, with offset"),
      end: instant(`Range end, with offset; at most ${MAX_SPAN_DAYS} days after start`),
    }),
  },
  directory_consultation_request: {
    body: z.object({
      start: instant("a free slot's start, ISO 8601 with offset"),
      customer: customer.describe("the person's own name and email (never invented)"),
      company: z.string().nullish().describe("the customer's company"),
      answers: z.record(z.string(), z.string()).nullish().describe("answers to the business's consultation questions, by question text"),
      customer_confirmed: z
        .literal(true, { error: "must be true: set it only after the person said yes to this business and this time" })
        .describe("true only when the customer confirmed this request"),
      agent: z.object({ name: z.string() }).nullish().describe("the calling assistant"),
    }),
  },
  directory_claim: { body: z.object({ owner: z.object(person).describe("the owner claiming it") }) },
  directory_assert_fields: {
    body: z.object({
      fields: z
        .record(z.string(), z.unknown())
        .describe(`the owner's values by field name (${FIELD_NAMES.join(", ")}); null removes an optional one`),
    }),
  },
  directory_verify: {
    body: z.object({ fields: z.array(z.string()).min(1).nullish().describe("names of the fields checked; all present ones when omitted") }),
  },
  directory_set_booking: {
    body: z.object({
      // the values (offset range, weekdays, intervals, slot length, questions) are checkBooking's, shared with imports
      booking: z
        .object({
          utc_offset: z.string().describe("±HH:MM, within ±14:00"),
          hours: z.record(z.string(), z.array(z.string())).describe(`weekday (${WEEKDAYS.join(", ")}) -> ["09:00-12:00", ...]`),
          slot_minutes: z.number().int().describe(`${SLOT_MINUTES.min} to ${SLOT_MINUTES.max}`),
          questions: z.array(z.union([z.string(), z.object({ text: z.string(), required: z.boolean().optional() })])).optional(),
        })
        .nullable()
        .describe("the settings, or null to turn booking off"),
    }),
  },
  directory_set_listed: { body: z.object({ listed: z.boolean() }) },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
