/** @module page — HTML generated from one identity (profile page with schema.org JSON-LD, search page) and the llms-full.txt lines. */
import {
  bookable,
  dateModified,
  FIELD_NAMES,
  valueOf,
  WEEKDAYS,
  type Business,
  type Field,
  type FieldName,
  type FieldValues,
} from "./identity.js";
import type { SearchResult } from "./search.js";
import { FIELD_STATE_MEANING, profilePath } from "./views.js";

const ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESC[c]!);
/** One line: whitespace runs (newlines included) become one space. */
const oneLine = (s: string): string => s.replace(/\s+/g, " ").trim();

/** schema.org types by a word of the category (first match wins); LocalBusiness otherwise. */
const TYPES: Array<[RegExp, string]> = [
  [/plumb/i, "Plumber"],
  [/electric/i, "Electrician"],
  [/dent/i, "Dentist"],
  [/account|bookkeep|tax/i, "AccountingService"],
  [/law|legal|notary|solicitor/i, "LegalService"],
  [/hair|barber/i, "HairSalon"],
  [/beauty|nail/i, "BeautySalon"],
  [/auto|car repair|garage|mechanic/i, "AutoRepair"],
  [/bakery/i, "Bakery"],
  [/cafe|coffee/i, "CafeOrCoffeeShop"],
  [/restaurant|bistro/i, "Restaurant"],
  [/vet/i, "VeterinaryCare"],
  [/physio/i, "Physiotherapy"],
  [/locksmith/i, "Locksmith"],
  [/roof/i, "RoofingContractor"],
  [/paint/i, "HousePainter"],
  [/florist/i, "Florist"],
  [/fitness|gym|yoga/i, "ExerciseGym"],
  [/real estate|estate agent/i, "RealEstateAgent"],
  [/insurance/i, "InsuranceAgency"],
  [/moving|removal/i, "MovingCompany"],
  [/optician/i, "Optician"],
  [/pharmac/i, "Pharmacy"],
  [/clean/i, "HomeAndConstructionBusiness"],
  [/landscap|garden|builder|construction|carpent|joiner/i, "HomeAndConstructionBusiness"],
  [/travel/i, "TravelAgency"],
  [/photo/i, "ProfessionalService"],
  [/architect|consult|agency|studio|design|support|translation|marketing|print/i, "ProfessionalService"],
];

export function schemaType(category: string): string {
  for (const [re, t] of TYPES) if (re.test(category)) return t;
  return "LocalBusiness";
}

const display = (v: unknown): string => {
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "object" && v !== null) {
    const a = v as Record<string, string>;
    return [a.street, a.postal_code && a.locality ? `${a.postal_code} ${a.locality}` : a.locality, a.region, a.country]
      .filter(Boolean)
      .join(", ");
  }
  return String(v);
};

/** The schema.org JSON-LD object of a profile: the values, plus additionalProperty `svc:state:<field>` for each field, isBasedOn and dateModified. */
export function jsonLd(b: Business, baseUrl: string): Record<string, unknown> {
  const f = b.fields;
  const v = <K extends FieldName>(k: K): FieldValues[K] | undefined => valueOf(b, k);
  const sources = [...new Set((Object.values(f) as Field[]).map((x) => x.source.url).filter((u): u is string => u !== null))];
  const addr = v("address");
  const ld: Record<string, unknown> = {
    "@context": "https://schema.org",
    "@type": schemaType(f.category.value),
    "@id": `${baseUrl}${profilePath(b.id)}#business`,
    identifier: b.id,
    name: f.name.value,
    ...(v("description") ? { description: v("description") } : {}),
    ...(v("website") ? { url: v("website") } : {}),
    ...(v("email") ? { email: v("email") } : {}),
    ...(v("phone") ? { telephone: v("phone") } : {}),
    ...(addr
      ? {
          address: {
            "@type": "PostalAddress",
            ...(addr.street ? { streetAddress: addr.street } : {}),
            addressLocality: addr.locality,
            ...(addr.region ? { addressRegion: addr.region } : {}),
            ...(addr.postal_code ? { postalCode: addr.postal_code } : {}),
            addressCountry: addr.country,
          },
        }
      : {}),
    ...(v("areas") ? { areaServed: v("areas") } : {}),
    ...(v("industries") ? { knowsAbout: v("industries") } : {}),
    ...(v("services")
      ? { makesOffer: v("services")!.map((s) => ({ "@type": "Offer", itemOffered: { "@type": "Service", name: s } })) }
      : {}),
    isBasedOn: sources,
    dateModified: dateModified(b),
    additionalProperty: [
      ...FIELD_NAMES.filter((n) => f[n] !== undefined).map((n) => {
        const x = f[n]!;
        return {
          "@type": "PropertyValue",
          name: `svc:state:${n}`,
          value: x.state,
          description: `asserted by ${x.source.asserted_by} on ${x.source.date}${x.source.url ? ` (${x.source.url})` : ""}`,
        };
      }),
      { "@type": "PropertyValue", name: "svc:claim", value: b.claim.state },
      { "@type": "PropertyValue", name: "svc:verification", value: b.verification.state },
    ],
  };
  return ld;
}

/** JSON that is safe inside <script>: no "<" (so no "</script>"), no line or paragraph separators. */
export function scriptJson(x: unknown): string {
  return JSON.stringify(x)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
a{color:#0b57d0}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
.state{font-size:.8rem;padding:.1rem .4rem;border-radius:.3rem;background:#eee;white-space:nowrap}.verified{background:#d7f5dd}.owner_asserted{background:#dde8ff}
.note{color:#555;font-size:.9rem}form{margin:1rem 0}input{font:inherit;padding:.3rem}li{margin:.4rem 0}`;

function shell(title: string, head: string, body: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><style>${STYLE}</style>${head}</head><body>${body}</body></html>\n`;
}

/** GET /businesses/{id}: readable HTML with the JSON-LD in the head. */
export function renderProfile(b: Business, baseUrl: string): string {
  const f = b.fields;
  const rows = FIELD_NAMES.filter((n) => f[n] !== undefined).map((n) => {
    const x = f[n]!;
    const val = n === "website" ? `<a href="${esc(String(x.value))}" rel="nofollow">${esc(String(x.value))}</a>` : esc(display(x.value));
    const src = x.source.url ? `<a href="${esc(x.source.url)}" rel="nofollow">${esc(x.source.asserted_by)}</a>` : esc(x.source.asserted_by);
    return `<tr><th>${esc(n.replace("_", " "))}</th><td>${val}</td><td><span class="state ${x.state}" title="${esc(FIELD_STATE_MEANING[x.state])}">${x.state.replace("_", " ")}</span></td><td>${src}, ${esc(x.source.date)}</td></tr>`;
  });
  let booking = "<p>This business takes no bookings through this directory.</p>";
  if (bookable(b)) {
    const bk = b.booking!;
    const hours = WEEKDAYS.filter((d) => bk.hours[d])
      .map((d) => `${d} ${bk.hours[d]!.join(", ")}`)
      .join("; ");
    booking =
      `<p>Consultations of ${bk.slot_minutes} minutes (times at UTC${esc(bk.utc_offset)}: ${esc(hours)}). Free slots: <code>GET /api/businesses/${esc(b.id)}/availability?start=…&amp;end=…</code>; request one with <code>POST /api/businesses/${esc(b.id)}/consultation-request</code>.</p>` +
      (bk.questions.length
        ? `<p>Questions asked:</p><ul>${bk.questions.map((q) => `<li>${esc(q.text)}${q.required ? " (required)" : ""}</li>`).join("")}</ul>`
        : "");
  }
  const body = `<p><a href="/businesses">← all businesses</a></p>
<h1>${esc(f.name.value)}</h1>
<p>${esc(f.category.value)} · ${b.claim.state === "claimed" ? "claimed by its owner" : "unclaimed"}${b.verification.state === "verified" ? " · verified" : ""}</p>
${f.description ? `<p>${esc(f.description.value)}</p>` : ""}
<table><thead><tr><th>field</th><th>value</th><th>state</th><th>source</th></tr></thead><tbody>${rows.join("")}</tbody></table>
<p class="note">Sourced facts are what the company's website said on the date shown, not confirmed facts.</p>
<h2>Booking</h2>${booking}
<p class="note">Machine-readable: <a href="/api/businesses/${esc(encodeURIComponent(b.id))}">JSON</a> · <a href="/api/businesses/${esc(encodeURIComponent(b.id))}/trust">trust</a> · <a href="/llms-full.txt">llms-full.txt</a></p>`;
  const head = `<link rel="canonical" href="${esc(baseUrl + profilePath(b.id))}"><meta name="description" content="${esc(oneLine(f.description?.value ?? `${f.name.value}, ${f.category.value}`).slice(0, 300))}"><script type="application/ld+json">${scriptJson(jsonLd(b, baseUrl))}</script>`;
  return shell(`${f.name.value} — ${f.category.value}`, head, body);
}

/** GET /businesses: a search form and one page of results. */
export function renderSearch(
  r: SearchResult,
  q: string,
  category: string,
  limit: number,
  offset: number,
  categories: Array<{ category: string; count: number }>,
): string {
  const link = (o: number) =>
    `/businesses?${new URLSearchParams({ ...(q ? { q } : {}), ...(category ? { category } : {}), limit: String(limit), offset: String(o) }).toString()}`;
  const items = r.hits.map((h) => {
    const b = h.business;
    return `<li><a href="${esc(profilePath(b.id))}">${esc(b.fields.name.value)}</a> — ${esc(b.fields.category.value)}${b.fields.areas ? `, ${esc(b.fields.areas.value.join(", "))}` : ""}${bookable(b) ? " · <strong>books consultations</strong>" : ""}${h.match === "partial" ? ` <span class="note">(matches ${esc(h.matched.join(", "))})</span>` : ""}</li>`;
  });
  const cats = categories
    .slice(0, 40)
    .map((c) => `<a href="/businesses?category=${esc(encodeURIComponent(c.category))}">${esc(c.category)}</a> (${c.count})`)
    .join(" · ");
  const nav = [
    offset > 0 ? `<a href="${esc(link(Math.max(0, offset - limit)))}">← previous</a>` : "",
    offset + limit < r.total ? `<a href="${esc(link(offset + limit))}">next →</a>` : "",
  ]
    .filter(Boolean)
    .join(" · ");
  const body = `<h1>Business directory</h1>
<form action="/businesses"><input name="q" value="${esc(q)}" placeholder="plumber bristol" size="40"> ${category ? `<input type="hidden" name="category" value="${esc(category)}">` : ""}<button>Search</button></form>
<p class="note">${r.total} ${r.match === "partial" ? "profiles match some of the words (none matched all)" : "profiles"}${category ? ` in ${esc(category)} (<a href="/businesses${q ? `?q=${esc(encodeURIComponent(q))}` : ""}">any category</a>)` : ""}.</p>
<ol start="${offset + 1}">${items.join("")}</ol><p>${nav}</p><p class="note">Categories: ${cats}</p>`;
  return shell("Business directory", "", body);
}

/** One llms-full.txt line for a listed profile. */
export function llmsLine(b: Business, baseUrl: string): string {
  const f = b.fields;
  const parts = [`${f.category.value}`];
  if (f.areas) parts.push(`areas: ${f.areas.value.join(", ")}`);
  if (f.services) parts.push(`services: ${f.services.value.join(", ")}`);
  if (f.industries) parts.push(`industries: ${f.industries.value.join(", ")}`);
  if (f.description) parts.push(f.description.value);
  parts.push(`${b.claim.state}${bookable(b) ? ", books consultations" : ""}; facts as of ${dateModified(b)}`);
  return oneLine(`- [${f.name.value}](${baseUrl}${profilePath(b.id)}): ${parts.join("; ")}`);
}

export function llmsFull(bs: Business[], baseUrl: string): string {
  const head =
    "# Business directory (llms-full.txt)\n\n> Every listed profile, one line each. Sourced facts are what the company's website said on a date, not confirmed facts. JSON: /api/businesses/{id}.\n\n";
  return head + bs.map((b) => llmsLine(b, baseUrl)).join("\n") + "\n";
}
