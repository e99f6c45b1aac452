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
export const FIELD_STATES = ["sourced", "owner_asserted", "verified"];
/** Every field a business can carry, in display order. Searchable: name, category, services, industries, areas, description. */
export const FIELD_NAMES = ["name", "category", "description", "services", "industries", "areas", "website", "email", "phone", "address"];
export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
export const LIMITS = { text: 200, description: 4000, listItems: 50, questions: 20, answer: 2000 };
export const bad = (field, message) => {
    throw new SvcError("E_BAD_REQUEST", `${field}: ${message}`, { field });
};
export const isoDate = (ms) => new Date(ms).toISOString().slice(0, 10);
const ID_RE = /^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$/;
const EMAIL_RE = /^[^\s@<>()"',;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const PHONE_RE = /^\+?[0-9][0-9 ().-]{4,30}$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
export function checkId(id, field = "id") {
    if (typeof id !== "string" || !ID_RE.test(id))
        bad(field, "must be 1-80 lowercase letters, digits and inner hyphens");
    return id;
}
/** A lowercase slug of `text` (ASCII letters and digits, hyphens between). */
export function slug(text) {
    return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 70).replace(/-+$/, "") || "business";
}
export function text(v, field, max = LIMITS.text) {
    if (typeof v !== "string")
        bad(field, "must be a string");
    const s = v.trim();
    if (s.length === 0)
        bad(field, "must not be empty");
    if (s.length > max)
        bad(field, `must be at most ${max} characters`);
    if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/.test(s))
        bad(field, "holds control or invisible characters");
    return s;
}
export function email(v, field) {
    const s = text(v, field);
    if (!EMAIL_RE.test(s))
        bad(field, "must be an email address like name@example.com");
    return s;
}
function list(v, field) {
    if (!Array.isArray(v))
        bad(field, "must be a list of strings");
    const a = v;
    if (a.length > LIMITS.listItems)
        bad(field, `must have at most ${LIMITS.listItems} items`);
    const out = a.map((x, i) => text(x, `${field}[${i}]`));
    return [...new Set(out)];
}
function url(v, field) {
    const s = text(v, field, 500);
    let u;
    try {
        u = new URL(s);
    }
    catch {
        return bad(field, "must be an absolute http(s) URL");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:")
        bad(field, "must be an http(s) URL");
    return u.toString();
}
function address(v, field) {
    if (typeof v !== "object" || v === null || Array.isArray(v))
        return bad(field, "must be an object {street?, locality, region?, postal_code?, country}");
    const o = v;
    for (const k of Object.keys(o))
        if (!["street", "locality", "region", "postal_code", "country"].includes(k))
            bad(`${field}.${k}`, "is not an address part");
    const a = { locality: text(o.locality, `${field}.locality`), country: text(o.country, `${field}.country`) };
    for (const k of ["street", "region", "postal_code"])
        if (o[k] !== undefined && o[k] !== null && o[k] !== "")
            a[k] = text(o[k], `${field}.${k}`);
    return a;
}
/** Checks one field value; `field` names it in errors. */
export function checkValue(name, v, field = name) {
    switch (name) {
        case "name":
        case "category":
            return text(v, field);
        case "description":
            return text(v, field, LIMITS.description);
        case "services":
        case "industries":
        case "areas":
            return list(v, field);
        case "website":
            return url(v, field);
        case "email":
            return email(v, field);
        case "phone": {
            const s = text(v, field, 40);
            if (!PHONE_RE.test(s))
                bad(field, "must be a phone number (digits, spaces, + ( ) . -)");
            return s;
        }
        case "address":
            return address(v, field);
        default:
            return bad(field, "is not a business field");
    }
}
const IMPORT_KEYS = new Set([...FIELD_NAMES, "id", "source_url", "source_date", "listed", "owner", "booking"]);
/** Validates one import line (an object); `at` prefixes error fields (e.g. "line 3"). */
export function checkImport(raw, today, at = "") {
    const p = at === "" ? "" : `${at}: `;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
        return bad(`${p}record`, "must be an object");
    const o = raw;
    for (const k of Object.keys(o))
        if (!IMPORT_KEYS.has(k))
            bad(`${p}${k}`, `is not an import field (fields: ${[...IMPORT_KEYS].join(", ")})`);
    const values = {};
    for (const name of FIELD_NAMES) {
        const v = o[name];
        if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0))
            continue;
        values[name] = checkValue(name, v, `${p}${name}`);
    }
    if (values.name === undefined)
        bad(`${p}name`, "is required");
    if (values.category === undefined)
        bad(`${p}category`, "is required");
    let date = today;
    if (o.source_date !== undefined && o.source_date !== null && o.source_date !== "") {
        if (typeof o.source_date !== "string" || !DATE_RE.test(o.source_date) || Number.isNaN(Date.parse(o.source_date)))
            bad(`${p}source_date`, "must be a date YYYY-MM-DD");
        date = o.source_date;
    }
    const sourceUrl = o.source_url === undefined || o.source_url === null || o.source_url === "" ? (values.website ?? null) : url(o.source_url, `${p}source_url`);
    if (o.listed !== undefined && typeof o.listed !== "boolean")
        bad(`${p}listed`, "must be true or false");
    const rec = { values: values, source: { url: sourceUrl, date, asserted_by: "website" }, listed: o.listed !== false };
    if (o.id !== undefined && o.id !== null && o.id !== "")
        rec.id = checkId(o.id, `${p}id`);
    if (o.owner !== undefined)
        rec.owner = checkOwner(o.owner, `${p}owner`);
    if (o.booking !== undefined) {
        if (rec.owner === undefined)
            bad(`${p}booking`, "needs an owner: only claimed businesses take bookings");
        rec.booking = o.booking;
    }
    return rec;
}
export function checkOwner(v, field) {
    if (typeof v !== "object" || v === null || Array.isArray(v))
        return bad(field, "must be an object {name, email}");
    const o = v;
    return { name: text(o.name, `${field}.name`), email: email(o.email, `${field}.email`) };
}
/** Merge an import into a business (new or existing): sourced values replace sourced ones only. */
export function applyImport(existing, id, rec, nowIso) {
    const b = existing
        ? { ...existing, fields: { ...existing.fields }, listed: rec.listed, updated: nowIso }
        : {
            id,
            listed: rec.listed,
            created: nowIso,
            updated: nowIso,
            claim: { state: "unclaimed" },
            verification: { state: "unverified" },
            fields: {},
            booking: null,
        };
    const fields = b.fields;
    for (const name of FIELD_NAMES) {
        const v = rec.values[name];
        if (v === undefined)
            continue;
        const old = fields[name];
        if (old && old.state !== "sourced")
            continue;
        fields[name] = { value: v, state: "sourced", source: { ...rec.source } };
    }
    return b;
}
/** The value of a field, or undefined. */
export function valueOf(b, name) {
    return b.fields[name]?.value;
}
/** Whether the business lists a bookable action: claimed with booking turned on. */
export function bookable(b) {
    return b.claim.state === "claimed" && b.booking !== null;
}
/** The newest source date of any field (the page's dateModified), or the update date. */
export function dateModified(b) {
    let d = "";
    for (const f of Object.values(b.fields))
        if (f.source.date > d)
            d = f.source.date;
    return d || b.updated.slice(0, 10);
}
//# sourceMappingURL=identity.js.map