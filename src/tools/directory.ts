/** @module tools/directory — the business directory: public search, profiles, trust, actions, availability and consultation requests; admin claim, edits, verification, booking. */
import { z } from "zod";
import { DESTROY, op, out, READ, UPSERT, WRITE } from "./define.js";
import { DIRECTORY_OPS } from "./directory-ops.js";
import type { Tool } from "./tool.js";

const id = z.string().min(1).describe("a business id from directory_search");
const wrapped = out({
  value: z.unknown(),
  state: z.string(),
  source: out({ url: z.string().nullable(), date: z.string(), asserted_by: z.string() }),
});
const field = wrapped.nullable();
/** id and page are the service's handles (bare); every fact about the business is {value, state, source}. */
const profile = out({
  id: z.string(),
  page: z.string(),
  listed: wrapped,
  claim: wrapped,
  verification: wrapped,
  bookable: wrapped,
  updated: wrapped,
});
const PUBLIC = { access: "public" as const };

const search = op("directory_search", {
  ...PUBLIC,
  name: "directory_search",
  title: "Search businesses",
  annotations: READ,
  description:
    "Find businesses: every word of q must match across name, category, services, industries, areas and description; when none match all words, those matching some come back with match: partial. Paged (limit, offset; `next` is the next page's path).",
  input: DIRECTORY_OPS.directory_search.query,
  output: out({
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
    next: z.string().nullable(),
    results: z.array(out({ id: z.string(), match: z.string(), claim: wrapped, bookable: wrapped })),
  }),
});
const get = op("directory_get", {
  ...PUBLIC,
  name: "directory_get",
  title: "Business profile",
  annotations: READ,
  description:
    "A business's whole identity: every fact about it (its fields, and listed, claim, verification, bookable, updated) as {value, state, source: {url, date, asserted_by}}; state says where it comes from (sourced from its website, owner_asserted, verified). id and page are this service's handles, bare strings.",
  input: z.object({ id }),
  output: profile,
});
const services = op("directory_services", {
  ...PUBLIC,
  name: "directory_services",
  title: "Business services",
  annotations: READ,
  description: "What a business offers (the services field with its state and source).",
  input: z.object({ id }),
  output: out({ id: z.string(), services: field }),
});
const trust = op("directory_trust", {
  ...PUBLIC,
  name: "directory_trust",
  title: "Business trust",
  annotations: READ,
  description: "Whether the business is claimed and verified, and each field's state and source: check before relying on a field.",
  input: z.object({ id }),
  output: out({ id: z.string(), claim: wrapped, verification: wrapped }),
});
const actions = op("directory_actions", {
  ...PUBLIC,
  name: "directory_actions",
  title: "Business actions",
  annotations: READ,
  description: "What can be done with the business now (e.g. book a consultation); empty unless it is claimed with booking on.",
  input: z.object({ id }),
  output: out({ id: z.string(), actions: z.array(z.unknown()) }),
});
const availability = op("directory_availability", {
  ...PUBLIC,
  name: "directory_availability",
  title: "Free consultation slots",
  annotations: READ,
  description:
    "Free consultation slots between start and end (ISO 8601 with offset, e.g. 2026-12-01T09:00:00+01:00; at most 14 days). Fails with not_available when the business takes no bookings.",
  input: DIRECTORY_OPS.directory_availability.query.extend({ id }),
  output: out({ id: z.string(), slots: z.array(out({ start: z.string(), end: z.string() })) }),
});
const consultation = op("directory_consultation_request", {
  ...PUBLIC,
  name: "directory_consultation_request",
  title: "Request a consultation",
  annotations: WRITE,
  description:
    "Ask a business for a consultation in one of its free slots. Only with the customer's own name and email and their explicit confirmation (customer_confirmed: true); never invent contact details. 10 requests per 10 minutes per client.",
  input: DIRECTORY_OPS.directory_consultation_request.body.extend({ id }),
  output: out({ id: z.string(), business: z.string(), start: z.string(), status: z.string() }),
});
const llmsFull: Tool = {
  ...PUBLIC,
  name: "directory_llms_full",
  title: "Directory as text",
  annotations: READ,
  operations: ["directory_llms_full"],
  description:
    "Every listed business, one line each (name, page, category, areas, summary): the llms-full.txt view for reading the whole directory at once.",
  input: z.object({}),
  output: out({ text: z.string() }),
  run: async (_args, api) => ({ text: (await api.call("directory_llms_full")).raw?.data.toString("utf8") ?? "" }),
};

/** Admin operations (an admin key): the operation's body schema (DIRECTORY_OPS) with the business id of its path. */
const admin = (
  operationId: string,
  name: string,
  title: string,
  description: string,
  body: z.ZodObject = z.object({}),
  annotations = UPSERT,
) => op(operationId, { name, title, description: `Admin: ${description}`, annotations, input: body.extend({ id }), output: profile });
const adminTools: Tool[] = [
  admin(
    "directory_claim",
    "directory_claim",
    "Claim a business",
    "mark a business claimed by its owner.",
    DIRECTORY_OPS.directory_claim.body,
  ),
  admin(
    "directory_release",
    "directory_release",
    "Release a claim",
    "release a claim (booking off, verification reset).",
    undefined,
    DESTROY,
  ),
  admin(
    "directory_assert_fields",
    "directory_assert_fields",
    "Owner-asserted fields",
    "set fields to the owner's values (state owner_asserted); null removes one.",
    DIRECTORY_OPS.directory_assert_fields.body,
  ),
  admin(
    "directory_verify",
    "directory_verify",
    "Verify fields",
    "mark fields verified (all when fields is omitted).",
    DIRECTORY_OPS.directory_verify.body,
  ),
  admin(
    "directory_set_booking",
    "directory_set_booking",
    "Booking settings",
    "turn booking on (utc_offset, weekday hours, slot_minutes, questions) or off (booking: null).",
    DIRECTORY_OPS.directory_set_booking.body,
  ),
  admin(
    "directory_set_listed",
    "directory_set_listed",
    "List or unlist",
    "list or unlist a business.",
    DIRECTORY_OPS.directory_set_listed.body,
  ),
  op("directory_requests", {
    name: "directory_requests",
    title: "Consultation requests",
    annotations: READ,
    description: "Admin: the consultation requests made to a business, oldest first.",
    input: z.object({ id }),
    output: out({ id: z.string(), requests: z.array(z.unknown()) }),
  }),
];

export const directoryTools: Tool[] = [search, get, services, trust, actions, availability, consultation, llmsFull];
/** Admin keys only: claims, verification, listing, booking, the requests made. */
export const directoryAdminTools: Tool[] = adminTools;
