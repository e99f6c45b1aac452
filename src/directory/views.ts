/** @module views — the JSON bodies generated from one identity: profile, services, trust, actions, search page. */
import { bookable, FIELD_NAMES, FIELD_STATES, type Business, type Field } from "./identity.js";
import type { SearchResult } from "./search.js";

export const FIELD_STATE_MEANING: Record<(typeof FIELD_STATES)[number], string> = {
  sourced: "what the page at source.url (usually the company's website) said on source.date; not a confirmed fact",
  owner_asserted: "stated by the business's claimed owner on source.date",
  verified: "checked by the directory operator on source.date",
};

export const profilePath = (id: string) => `/businesses/${encodeURIComponent(id)}`;
export const apiPath = (id: string) => `/api/businesses/${encodeURIComponent(id)}`;

/**
 * A fact about the business that this directory records itself (listing, claim, verification,
 * booking, last change), wrapped like every other field: the operator's record, so state
 * `verified` and source `{url: null, date, asserted_by: "operator"}`. `id` and `page` are not
 * facts about the business but the service's handles for the record (its key and its link), so
 * they stay bare strings.
 */
export function recordedFact<T>(value: T, date: string): Field<T> {
  return { value, state: "verified", source: { url: null, date: date.slice(0, 10), asserted_by: "operator" } };
}

/** The directory's own facts about `b`, each as {value, state, source}. */
export function statusFacts(b: Business) {
  const created = b.created.slice(0, 10);
  const claimDate = b.claim.date ?? created;
  return {
    listed: recordedFact(b.listed, b.updated),
    claim: recordedFact(b.claim.state, claimDate),
    verification: recordedFact(b.verification.state, b.verification.date ?? claimDate),
    bookable: recordedFact(bookable(b), b.updated),
    updated: recordedFact(b.updated, b.updated),
  };
}

/** The whole identity: id and page (bare: the service's handles), then every fact about the business as {value, state, source}. */
export function profileView(b: Business): Record<string, unknown> {
  const out: Record<string, unknown> = { id: b.id, page: profilePath(b.id), ...statusFacts(b) };
  for (const name of FIELD_NAMES) {
    const f = b.fields[name];
    if (f !== undefined) out[name] = f;
  }
  return out;
}

export function servicesView(b: Business): { id: string; services: Field<string[]> | null } {
  return { id: b.id, services: b.fields.services ?? null };
}

export function trustView(b: Business): Record<string, unknown> {
  const fields: Record<string, { state: string; source: Field["source"] }> = {};
  for (const name of FIELD_NAMES) {
    const f = b.fields[name];
    if (f !== undefined) fields[name] = { state: f.state, source: f.source };
  }
  const { claim, verification } = statusFacts(b);
  return {
    id: b.id,
    claim,
    verification,
    fields,
    states: FIELD_STATE_MEANING,
  };
}

/** Unclaimed profiles, and claimed ones without booking, list no actions. */
export function actionsView(b: Business): { id: string; actions: Array<Record<string, unknown>> } {
  if (!bookable(b)) return { id: b.id, actions: [] };
  const bk = b.booking!;
  return {
    id: b.id,
    actions: [
      {
        type: "consultation_request",
        name: `Request a ${bk.slot_minutes}-minute consultation`,
        availability: { method: "GET", path: `${apiPath(b.id)}/availability`, query: ["start", "end"] },
        request: {
          method: "POST",
          path: `${apiPath(b.id)}/consultation-request`,
          required: ["start", "customer.name", "customer.email", "customer_confirmed"],
        },
        slot_minutes: bk.slot_minutes,
        utc_offset: bk.utc_offset,
        opening_hours: bk.hours,
        questions: bk.questions,
      },
    ],
  };
}

export interface SearchParams {
  q: string;
  category: string;
  limit: number;
  offset: number;
}

/** GET /api/businesses body: total, limit, offset, next (a path, null on the last page) and the page of results. */
export function searchView(r: SearchResult, p: SearchParams): Record<string, unknown> {
  const nextOffset = p.offset + p.limit;
  let next: string | null = null;
  if (nextOffset < r.total) {
    const qs = new URLSearchParams();
    if (p.q !== "") qs.set("q", p.q);
    if (p.category !== "") qs.set("category", p.category);
    qs.set("limit", String(p.limit));
    qs.set("offset", String(nextOffset));
    next = `/api/businesses?${qs.toString()}`;
  }
  return {
    q: p.q,
    category: p.category === "" ? null : p.category,
    match: r.match,
    words: r.words,
    total: r.total,
    limit: p.limit,
    offset: p.offset,
    next,
    results: r.hits.map((h) => {
      const b = h.business;
      const { claim, bookable } = statusFacts(b);
      return {
        id: b.id,
        page: profilePath(b.id),
        match: h.match,
        matched: h.matched,
        claim,
        bookable,
        name: b.fields.name,
        category: b.fields.category,
        ...(b.fields.areas ? { areas: b.fields.areas } : {}),
        ...(b.fields.description ? { description: b.fields.description } : {}),
      };
    }),
  };
}
