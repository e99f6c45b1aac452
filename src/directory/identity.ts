/** @module identity — the canonical business identity: fields wrapped as {value, state, source}, field and claim states, and the checks on what goes in. */
import { SvcError } from "../errors.js";

/**
 * Field states (the provenance of one value):
 * - `sourced`: what the page at `source.url` (usually the company's website) said on `source.date`;
 *   a record of a claim made in public, not a confirmed fact. Set by imports.
 * - `owner_asserted`: the claimed owner stated it (admin edit on a claimed business) on `source.date`.
 * - `verified`: the operator checked the value (against documents or the owner) on `source.date`.
 * An import never overwrites an `owner_asserted` or `verified` value; an owner edit overwrites
 * `sourced` and `verified` values (the owner's word is newer; it is not verified until checked again).
 */
export const FIELD_STATES = ["sourced", "owner_asserted", "verified"] as const;
export type FieldState = (typeof FIELD_STATES)[number];

/** Claim states: `unclaimed` -> (admin claim) -> `claimed`; `claimed` -> (admin release) -> `unclaimed`, which turns booking off. */
export type ClaimState = "unclaimed" | "claimed";
/** Verification of a claimed business: `unverified` -> (admin verify) -> `verified`; a release resets it. */
export type VerificationState = "unverified" | "verified";

export interface Source {
  /** Where the value was read (sourced, verified); null when the owner asserted it on this service. */
  url: string | null;
  /** YYYY-MM-DD. */
  date: string;
  /** "website" (imported from the company's site), "owner", or "operator". */
  asserted_by: string;
}

export interface Field<T = unknown> {
  value: T;
  state: FieldState;
  source: Source;
}

export interface Address {
  street?: string;
  locality: string;
  region?: string;
  postal_code?: string;
  country: string;
}

/** Every field a business can carry, in display order. Searchable: name, category, services, industries, areas, description. */
export const FIELD_NAMES = [
  "name",
  "category",
  "description",
  "services",
  "industries",
  "areas",
  "website",
  "email",
  "phone",
  "address",
] as const;
export type FieldName = (typeof FIELD_NAMES)[number];
export interface FieldValues {
  name: string;
  category: string;
  description: string;
  services: string[];
  industries: string[];
  areas: string[];
  website: string;
  email: string;
  phone: string;
  address: Address;
}
export type Fields = { [K in FieldName]?: Field<FieldValues[K]> } & { name: Field<string>; category: Field<string> };

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface Question {
  text: string;
  required: boolean;
}

/** Booking settings of a claimed business. Times are local to `utc_offset` (a fixed offset; no daylight-saving rules). */
export interface Booking {
  utc_offset: string;
  /** Per weekday, opening intervals "HH:MM-HH:MM" (end after start, not overlapping). Missing days are closed. */
  hours: Partial<Record<Weekday, string[]>>;
  slot_minutes: number;
  questions: Question[];
}

export interface Business {
  id: string;
  /** Unlisted profiles stay readable by id but leave search and llms-full.txt. */
  listed: boolean;
  /** ISO timestamps. */
  created: string;
  updated: string;
  claim: { state: ClaimState; date?: string; owner?: { name: string; email: string } };
  verification: { state: VerificationState; date?: string };
  fields: Fields;
  booking: Booking | null;
}

export const LIMITS = { text: 200, description: 4000, listItems: 50, questions: 20, answer: 2000 } as const;

export const bad = (field: string, message: string): never => {
  throw new SvcError("E_BAD_REQUEST", `${field}: ${message}`, { field });
};

export const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const ID_RE = /^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$/;
const EMAIL_RE =
  /^[^\s@<>()"',;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const PHONE_RE = /^\+?[0-9][0-9 ().-]{4,30}$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

export function checkId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || !ID_RE.test(id)) bad(field, "must be 1-80 lowercase letters, digits and inner hyphens");
  return id as string;
}

/** A lowercase slug of `text` (ASCII letters and digits, hyphens between). */
export function slug(text: string): string {
  return (
    text
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 70)
      .replace(/-+$/, "") || "business"
  );
}

export function text(v: unknown, field: string, max: number = LIMITS.text): string {
  if (typeof v !== "string") bad(field, "must be a string");
  const s = (v as string).trim();
  if (s.length === 0) bad(field, "must not be empty");
  if (s.length > max) bad(field, `must be at most ${max} characters`);
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/.test(s))
    bad(field, "holds control or invisible characters");
  return s;
}

export function email(v: unknown, field: string): string {
  const s = text(v, field);
  if (!EMAIL_RE.test(s)) bad(field, "must be an email address like name@example.com");
  return s;
}

function list(v: unknown, field: string): string[] {
  if (!Array.isArray(v)) bad(field, "must be a list of strings");
  const a = v as unknown[];
  if (a.length > LIMITS.listItems) bad(field, `must have at most ${LIMITS.listItems} items`);
  const out = a.map((x, i) => text(x, `${field}[${i}]`));
  return [...new Set(out)];
}

function url(v: unknown, field: string): string {
  const s = text(v, field, 500);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return bad(field, "must be an absolute http(s) URL");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") bad(field, "must be an http(s) URL");
  return u.toString();
}

function address(v: unknown, field: string): Address {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    return bad(field, "must be an object {street?, locality, region?, postal_code?, country}");
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!["street", "locality", "region", "postal_code", "country"].includes(k)) bad(`${field}.${k}`, "is not an address part");
  const a: Address = { locality: text(o.locality, `${field}.locality`), country: text(o.country, `${field}.country`) };
  for (const k of ["street", "region", "postal_code"] as const)
    if (o[k] !== undefined && o[k] !== null && o[k] !== "") a[k] = text(o[k], `${field}.${k}`);
  return a;
}

/** Checks one field value; `field` names it in errors. */
export function checkValue<K extends FieldName>(name: K, v: unknown, field: string = name): FieldValues[K] {
  switch (name) {
    case "name":
    case "category":
      return text(v, field) as FieldValues[K];
    case "description":
      return text(v, field, LIMITS.description) as FieldValues[K];
    case "services":
    case "industries":
    case "areas":
      return list(v, field) as FieldValues[K];
    case "website":
      return url(v, field) as FieldValues[K];
    case "email":
      return email(v, field) as FieldValues[K];
    case "phone": {
      const s = text(v, field, 40);
      if (!PHONE_RE.test(s)) bad(field, "must be a phone number (digits, spaces, + ( ) . -)");
      return s as FieldValues[K];
    }
    case "address":
      return address(v, field) as FieldValues[K];
    default:
      return bad(field, "is not a business field");
  }
}

/** One business as an import line gives it: flat field values plus provenance and optional claim/booking. */
export interface ImportRecord {
  id?: string;
  values: Partial<FieldValues> & { name: string; category: string };
  source: Source;
  listed: boolean;
  owner?: { name: string; email: string };
  booking?: unknown;
}

const IMPORT_KEYS = new Set<string>([...FIELD_NAMES, "id", "source_url", "source_date", "listed", "owner", "booking"]);

/** Validates one import line (an object); `at` prefixes error fields (e.g. "line 3"). */
export function checkImport(raw: unknown, today: string, at = ""): ImportRecord {
  const p = at === "" ? "" : `${at}: `;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return bad(`${p}record`, "must be an object");
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!IMPORT_KEYS.has(k)) bad(`${p}${k}`, `is not an import field (fields: ${[...IMPORT_KEYS].join(", ")})`);
  const values: Partial<FieldValues> = {};
  for (const name of FIELD_NAMES) {
    const v = o[name];
    if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) continue;
    (values as Record<string, unknown>)[name] = checkValue(name, v, `${p}${name}`);
  }
  if (values.name === undefined) bad(`${p}name`, "is required");
  if (values.category === undefined) bad(`${p}category`, "is required");
  let date = today;
  if (o.source_date !== undefined && o.source_date !== null && o.source_date !== "") {
    if (typeof o.source_date !== "string" || !DATE_RE.test(o.source_date) || Number.isNaN(Date.parse(o.source_date)))
      bad(`${p}source_date`, "must be a date YYYY-MM-DD");
    date = o.source_date as string;
  }
  const sourceUrl =
    o.source_url === undefined || o.source_url === null || o.source_url === ""
      ? (values.website ?? null)
      : url(o.source_url, `${p}source_url`);
  if (o.listed !== undefined && typeof o.listed !== "boolean") bad(`${p}listed`, "must be true or false");
  const rec: ImportRecord = {
    values: values as ImportRecord["values"],
    source: { url: sourceUrl, date, asserted_by: "website" },
    listed: o.listed !== false,
  };
  if (o.id !== undefined && o.id !== null && o.id !== "") rec.id = checkId(o.id, `${p}id`);
  if (o.owner !== undefined) rec.owner = checkOwner(o.owner, `${p}owner`);
  if (o.booking !== undefined) {
    if (rec.owner === undefined) bad(`${p}booking`, "needs an owner: only claimed businesses take bookings");
    rec.booking = o.booking;
  }
  return rec;
}

export function checkOwner(v: unknown, field: string): { name: string; email: string } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return bad(field, "must be an object {name, email}");
  const o = v as Record<string, unknown>;
  return { name: text(o.name, `${field}.name`), email: email(o.email, `${field}.email`) };
}

/** Merge an import into a business (new or existing): sourced values replace sourced ones only. */
export function applyImport(existing: Business | undefined, id: string, rec: ImportRecord, nowIso: string): Business {
  const b: Business = existing
    ? { ...existing, fields: { ...existing.fields }, listed: rec.listed, updated: nowIso }
    : {
        id,
        listed: rec.listed,
        created: nowIso,
        updated: nowIso,
        claim: { state: "unclaimed" },
        verification: { state: "unverified" },
        fields: {} as Fields,
        booking: null,
      };
  const fields = b.fields as Record<string, Field>;
  for (const name of FIELD_NAMES) {
    const v = rec.values[name];
    if (v === undefined) continue;
    const old = fields[name];
    if (old && old.state !== "sourced") continue;
    fields[name] = { value: v, state: "sourced", source: { ...rec.source } };
  }
  return b;
}

/** The value of a field, or undefined. */
export function valueOf<K extends FieldName>(b: Business, name: K): FieldValues[K] | undefined {
  return (b.fields as unknown as Record<string, Field<FieldValues[K]> | undefined>)[name]?.value;
}

/** Whether the business lists a bookable action: claimed with booking turned on. */
export function bookable(b: Business): boolean {
  return b.claim.state === "claimed" && b.booking !== null;
}

/** The newest source date of any field (the page's dateModified), or the update date. */
export function dateModified(b: Business): string {
  let d = "";
  for (const f of Object.values(b.fields) as Field[]) if (f.source.date > d) d = f.source.date;
  return d || b.updated.slice(0, 10);
}
