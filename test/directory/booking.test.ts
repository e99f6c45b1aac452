/**
 * The directory service on a real data dir (WAL + checkpoint): claim/booking states, availability
 * ranges (offsets, span limit, bad input), consultation requests (double booking, unconfirmed
 * customer, answers, past and misaligned slots), and what survives a restart. The write limit is the HTTP
 * route's (test/http/rate-limit.test.ts, test/http/directory.test.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { checkInput } from "../../src/http/input.js";
import { refuseUnknownFields } from "../../src/http/invoke.js";
import type { Route } from "../../src/http/route.js";
import { DIRECTORY_OPS } from "../../src/tools/directory-ops.js";
import { checkImport } from "../../src/directory/identity.js";
import { Directory } from "../../src/directory/service.js";
import { actionsView, profileView, trustView } from "../../src/directory/views.js";

/** 2026-06-01 is a Monday. */
const MONDAY = Date.parse("2026-06-01T00:00:00Z");
const BOOKING = {
  utc_offset: "+02:00",
  hours: { mon: ["09:00-12:00"], tue: ["09:00-10:00"] },
  slot_minutes: 30,
  questions: [{ text: "What is the project?", required: true }, "Anything else?"],
};
const OWNER = { name: "Owner Example", email: "owner@oak.example" };

async function code(p: Promise<unknown> | (() => unknown)): Promise<{ code: string; field?: string; status: number }> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    if (err instanceof SvcError) return { code: err.code, field: err.field, status: err.status };
    throw err;
  }
  throw new Error("expected an error");
}

describe("directory service: claim, booking, availability, consultation requests", () => {
  let dir: string;
  let now: number;
  let d: Directory;
  const open = () => Directory.open(dir, { clock: () => now, durability: "none" });
  const request = (start: string, extra: Record<string, unknown> = {}) =>
    d.requestConsultation("oak", {
      start,
      customer: { name: "Ana Customer", email: "ana@customer.example" },
      customer_confirmed: true,
      answers: { "What is the project?": "A new bathroom" },
      agent: { name: "test-agent" },
      ...extra,
    });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-directory-"));
    now = MONDAY;
    d = await open();
    await d.importRecords([
      checkImport(
        { id: "oak", name: "Oak Plumbing", category: "Plumber", website: "https://oak.example/", areas: ["Bristol"] },
        "2026-05-01",
      ),
      checkImport({ id: "cedar", name: "Cedar Dental", category: "Dentist" }, "2026-05-01"),
    ]);
  });
  afterEach(async () => {
    await d.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("unclaimed and claimed-without-booking profiles list no actions and have no availability (409 not_available)", async () => {
    const range = ["2026-06-01T00:00:00+02:00", "2026-06-02T00:00:00+02:00"] as const;
    expect(actionsView(d.get("oak")).actions).toEqual([]);
    expect(await code(() => d.availability("oak", ...range))).toEqual({ code: "not_available", field: "id", status: 409 });
    expect(await code(() => d.availability("oak", "not a date", undefined))).toMatchObject({ code: "not_available" }); // no booking: 409 whatever the range
    expect(await code(request("2026-06-01T09:00:00+02:00"))).toMatchObject({ code: "not_available", status: 409 });
    expect(await code(d.setBooking("oak", BOOKING))).toMatchObject({ code: "E_CONFLICT" }); // booking needs a claim
    await d.claim("oak", OWNER);
    expect(d.get("oak").claim).toMatchObject({ state: "claimed", date: "2026-06-01" });
    expect(actionsView(d.get("oak")).actions).toEqual([]);
    expect(await code(() => d.availability("oak", ...range))).toMatchObject({ code: "not_available" });
    await d.setBooking("oak", BOOKING);
    expect(actionsView(d.get("oak")).actions).toHaveLength(1);
    expect(actionsView(d.get("oak")).actions[0]).toMatchObject({ type: "consultation_request", slot_minutes: 30 });
    // another owner cannot claim it; a release turns booking off
    expect(await code(d.claim("oak", { name: "Someone", email: "else@x.example" }))).toMatchObject({ code: "E_CONFLICT" });
    await d.release("oak");
    expect(actionsView(d.get("oak")).actions).toEqual([]);
    expect(d.get("oak").booking).toBeNull();
    expect(await code(() => d.get("nope"))).toMatchObject({ code: "E_NOT_FOUND", field: "id", status: 404 });
  });

  describe("with booking on", () => {
    beforeEach(async () => {
      await d.claim("oak", OWNER);
      await d.setBooking("oak", BOOKING);
    });

    it("lists the slots of the opening hours at the business's offset; any offset names the same instants", () => {
      const a = d.availability("oak", "2026-06-01T00:00:00+02:00", "2026-06-03T00:00:00+02:00");
      expect(a.slots.map((s) => s.start)).toEqual([
        "2026-06-01T09:00:00+02:00",
        "2026-06-01T09:30:00+02:00",
        "2026-06-01T10:00:00+02:00",
        "2026-06-01T10:30:00+02:00",
        "2026-06-01T11:00:00+02:00",
        "2026-06-01T11:30:00+02:00",
        "2026-06-02T09:00:00+02:00",
        "2026-06-02T09:30:00+02:00",
      ]);
      expect(a.slots[0]!.end).toBe("2026-06-01T09:30:00+02:00");
      expect(a).toMatchObject({ utc_offset: "+02:00", slot_minutes: 30, start: "2026-06-01T00:00:00+02:00" });
      // the same range in UTC
      expect(d.availability("oak", "2026-05-31T22:00:00Z", "2026-06-02T22:00:00Z").slots).toEqual(a.slots);
      // a range in +09:00 covering 07:00Z-08:00Z holds exactly the first two slots; a slot must fit inside the range
      expect(d.availability("oak", "2026-06-01T16:00:00+09:00", "2026-06-01T17:00:00+09:00").slots.map((s) => s.start)).toEqual([
        "2026-06-01T09:00:00+02:00",
        "2026-06-01T09:30:00+02:00",
      ]);
      expect(d.availability("oak", "2026-06-01T16:00:00+09:00", "2026-06-01T16:59:00+09:00").slots).toHaveLength(1);
      // fractional seconds and negative offsets parse
      expect(d.availability("oak", "2026-06-01T03:00:00.000-04:00", "2026-06-01T03:30:00-04:00").slots.map((s) => s.start)).toEqual([
        "2026-06-01T09:00:00+02:00",
      ]);
      // closed days: nothing on Wednesday
      expect(d.availability("oak", "2026-06-03T00:00:00+02:00", "2026-06-04T00:00:00+02:00").slots).toEqual([]);
    });

    it("refuses bad ranges with 400 naming start or end: no offset, not a date, end before start, span over 14 days", async () => {
      const cases: Array<[unknown, unknown, string]> = [
        ["2026-06-01T09:00:00", "2026-06-02T09:00:00Z", "start"], // no offset
        ["2026-06-01", "2026-06-02T09:00:00Z", "start"], // a date, not a date-time
        [null, "2026-06-02T09:00:00Z", "start"],
        ["2026-06-01T09:00:00Z", undefined, "end"],
        ["2026-02-30T09:00:00Z", "2026-03-02T09:00:00Z", "start"], // no such day
        ["2026-06-01T09:00:00+15:00", "2026-06-02T09:00:00Z", "start"], // offset out of range
        ["2026-06-02T09:00:00Z", "2026-06-01T09:00:00Z", "end"], // end before start
        ["2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", "end"], // empty range
        ["2026-06-01T00:00:00Z", "2026-06-15T00:00:01Z", "end"], // 14 days and a second
        ["2026-06-01T00:00:00+02:00", "2026-06-15T00:00:00+00:00", "end"], // 14 days and 2 hours across offsets
      ];
      for (const [s, e, field] of cases)
        expect(await code(() => d.availability("oak", s, e)), `${s} .. ${e}`).toEqual({ code: "E_BAD_REQUEST", field, status: 400 });
      // exactly 14 days is allowed
      expect(d.availability("oak", "2026-06-01T00:00:00Z", "2026-06-15T00:00:00Z").slots).toHaveLength(16);
    });

    it("books a free slot once: a second request for the same instant (any offset) is 409, and the slot leaves the availability", async () => {
      const r = await request("2026-06-01T09:30:00+02:00");
      expect(r).toMatchObject({
        business: "oak",
        start: "2026-06-01T09:30:00+02:00",
        end: "2026-06-01T10:00:00+02:00",
        customer: { name: "Ana Customer", email: "ana@customer.example" },
        customer_confirmed: true,
        status: "requested",
        agent: { name: "test-agent" },
      });
      expect(r.id).toMatch(/^req_[0-9a-f]{16}$/);
      expect(r).not.toHaveProperty("company"); // nothing invented
      expect(await code(request("2026-06-01T07:30:00Z"))).toEqual({ code: "E_CONFLICT", field: "start", status: 409 });
      // concurrent requests for one slot: exactly one wins
      const both = await Promise.allSettled([request("2026-06-01T10:00:00+02:00"), request("2026-06-01T08:00:00Z")]);
      expect(both.filter((x) => x.status === "fulfilled")).toHaveLength(1);
      const free = d.availability("oak", "2026-06-01T00:00:00+02:00", "2026-06-02T00:00:00+02:00").slots.map((s) => s.start);
      expect(free).toEqual([
        "2026-06-01T09:00:00+02:00",
        "2026-06-01T10:30:00+02:00",
        "2026-06-01T11:00:00+02:00",
        "2026-06-01T11:30:00+02:00",
      ]);
      expect(d.requests("oak")).toHaveLength(2);
    });

    it("refuses requests unless the customer confirmed, gave name and email, answered the required questions, and start is a future slot", async () => {
      const at = "2026-06-01T10:00:00+02:00";
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ customer_confirmed: false }, "customer_confirmed"],
        [{ customer_confirmed: "true" }, "customer_confirmed"],
        [{ customer_confirmed: undefined }, "customer_confirmed"],
        [{ customer: undefined }, "customer"],
        [{ customer: { name: "Ana" } }, "customer.email"],
        [{ customer: { email: "ana@customer.example" } }, "customer.name"],
        [{ customer: { name: "Ana", email: "not an email" } }, "customer.email"],
        [{ customer: { name: "Ana", email: "ana@customer.example", phone: "+44 1" } }, "customer.phone"],
        [{ answers: {} }, "answers"], // the required question
        [{ answers: { "What is the project?": "x", "Unknown question?": "y" } }, "answers"],
        [{ start: "2026-06-01T10:10:00+02:00" }, "start"], // not a slot start
        [{ start: "2026-06-03T10:00:00+02:00" }, "start"], // closed on Wednesday
        [{ start: "2026-06-01T10:00:00" }, "start"], // no offset
        [{ surprise: 1 }, "surprise"],
      ];
      for (const [extra, field] of cases) {
        const body: Record<string, unknown> = {
          start: at,
          customer: { name: "Ana Customer", email: "ana@customer.example" },
          customer_confirmed: true,
          answers: { "What is the project?": "A new bathroom" },
          ...extra,
        };
        for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
        // as the route judges it: its members and their types by the operation's schema, then the service
        const route = { input: DIRECTORY_OPS.directory_consultation_request } as unknown as Route;
        const judged = async () => {
          refuseUnknownFields(route, body);
          checkInput(route, { body, query: new URLSearchParams() });
          await d.requestConsultation("oak", body as never);
        };
        expect(await code(judged), JSON.stringify(extra)).toEqual({
          code: "E_BAD_REQUEST",
          field,
          status: 400,
        });
      }
      expect(d.requests("oak")).toEqual([]);
      // a past slot is refused and not offered
      now = Date.parse("2026-06-01T07:10:00Z");
      expect(await code(request("2026-06-01T09:00:00+02:00"))).toEqual({ code: "E_BAD_REQUEST", field: "start", status: 400 });
      expect(d.availability("oak", "2026-06-01T00:00:00+02:00", "2026-06-01T10:00:00+02:00").slots.map((s) => s.start)).toEqual([
        "2026-06-01T09:30:00+02:00",
      ]);
      // optional fields as given
      const ok = await request(at, { company: "Ana's Bakery", answers: { "What is the project?": "Sink", "Anything else?": "No" } });
      expect(ok).toMatchObject({ company: "Ana's Bakery", answers: { "What is the project?": "Sink", "Anything else?": "No" } });
    });

    it("keeps businesses, claims, booking and booked slots across a restart (WAL replay, then checkpoint)", async () => {
      await request("2026-06-01T09:00:00+02:00");
      await d.assertFields("oak", { phone: "+44 20 7946 0000", description: "Plumbers since 1990." });
      await d.close();
      d = await open(); // replays the log (close checkpointed; reopen reads the checkpoint)
      expect(d.get("oak").claim.state).toBe("claimed");
      expect(d.get("oak").fields.phone).toEqual({
        value: "+44 20 7946 0000",
        state: "owner_asserted",
        source: { url: null, date: "2026-06-01", asserted_by: "owner" },
      });
      expect(await code(request("2026-06-01T09:00:00+02:00"))).toMatchObject({ code: "E_CONFLICT" });
      expect(d.requests("oak")).toHaveLength(1);
      expect(d.search({ q: "plumbers 1990", limit: 5, offset: 0 }).hits.map((h) => h.business.id)).toEqual(["oak"]);
    });
  });

  it("field states: imports are sourced and never overwrite owner-asserted or verified values; verification is per field", async () => {
    await d.claim("oak", OWNER);
    await d.assertFields("oak", { description: "Owner's words." });
    now += 86_400_000;
    await d.verify("oak", ["website"]);
    await d.importRecords([
      checkImport(
        { id: "oak", name: "Oak Plumbing Ltd", category: "Plumber", description: "Website words.", website: "https://oak-new.example/" },
        "2026-06-02",
      ),
    ]);
    const t = trustView(d.get("oak")) as {
      claim: unknown;
      verification: unknown;
      fields: Record<string, { state: string; source: Record<string, unknown> }>;
    };
    expect(t.claim).toEqual({ value: "claimed", state: "verified", source: { url: null, date: "2026-06-01", asserted_by: "operator" } });
    expect(t.verification).toEqual({
      value: "verified",
      state: "verified",
      source: { url: null, date: "2026-06-02", asserted_by: "operator" },
    });
    expect(t.fields.name).toEqual({
      state: "sourced",
      source: { url: "https://oak-new.example/", date: "2026-06-02", asserted_by: "website" },
    });
    expect(t.fields.description!.state).toBe("owner_asserted");
    expect(t.fields.website).toEqual({
      state: "verified",
      source: { url: "https://oak.example/", date: "2026-06-02", asserted_by: "operator" },
    });
    const p = profileView(d.get("oak")) as Record<string, { value: unknown }>;
    expect(p.name!.value).toBe("Oak Plumbing Ltd");
    expect(p.description!.value).toBe("Owner's words.");
    expect(p.website!.value).toBe("https://oak.example/");
    // an owner edit of a verified value makes it owner_asserted again; bad edits name the field
    await d.assertFields("oak", { website: "https://oak.example/new" });
    expect(d.get("oak").fields.website!.state).toBe("owner_asserted");
    expect(await code(d.assertFields("oak", { email: "nope" }))).toEqual({ code: "E_BAD_REQUEST", field: "fields.email", status: 400 });
    expect(await code(d.assertFields("oak", { color: "red" }))).toEqual({ code: "E_BAD_REQUEST", field: "fields.color", status: 400 });
    expect(await code(d.assertFields("cedar", { description: "x" }))).toMatchObject({ code: "E_CONFLICT" }); // unclaimed
    // names an object inherits are not fields (a fuzz run found "toString" answering 500)
    for (const name of ["toString", "constructor", "hasOwnProperty"])
      expect(await code(d.verify("oak", [name]))).toEqual({ code: "E_BAD_REQUEST", field: "fields[0]", status: 400 });
    expect(await code(d.assertFields("oak", { toString: "x" }))).toMatchObject({ code: "E_BAD_REQUEST", status: 400 });
  });
});
