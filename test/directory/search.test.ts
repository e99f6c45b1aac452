/** Search semantics: all words must match (prefixes, plurals, stop words), partial fallback, category filter, ranking, paging and the next link. */
import { describe, expect, it } from "vitest";
import { applyImport, checkImport, type Business } from "../../src/directory/identity.js";
import { SearchIndex } from "../../src/directory/search.js";
import { searchView } from "../../src/directory/views.js";

const TODAY = "2026-06-01";
function biz(raw: Record<string, unknown>): Business {
  const rec = checkImport(raw, TODAY);
  return applyImport(undefined, rec.id!, rec, "2026-06-01T00:00:00.000Z");
}

const BUSINESSES = [
  biz({
    id: "oak-plumbing",
    name: "Oak Plumbing",
    category: "Plumber",
    services: ["boiler repair", "leak detection"],
    areas: ["Bristol"],
    description: "Emergency callouts day and night.",
  }),
  biz({
    id: "river-plumbing",
    name: "River Plumbing & Heating",
    category: "Plumber",
    services: ["bathroom installation"],
    areas: ["Bath"],
  }),
  biz({ id: "cedar-dental", name: "Cedar Dental", category: "Dentist", services: ["implants"], areas: ["Bristol"] }),
  biz({
    id: "summit-accountants",
    name: "Summit Accountants",
    category: "Accountant",
    services: ["bookkeeping", "payroll"],
    industries: ["startups"],
    areas: ["Leeds"],
  }),
  biz({ id: "bristol-bookkeeping", name: "Bristol Bookkeeping Co", category: "Accountant", services: ["bookkeeping"], areas: ["Bristol"] }),
  biz({ id: "glass-works", name: "Glass Works", category: "Glazier", services: ["window repair"], areas: ["Bath"] }),
  biz({ id: "hidden-plumbing", name: "Hidden Plumbing", category: "Plumber", areas: ["Bristol"], listed: false }),
];
const index = new SearchIndex(BUSINESSES);
const ids = (q: string, category?: string, limit = 20, offset = 0) =>
  index.search({ q, category, limit, offset }).hits.map((h) => h.business.id);

describe("directory search", () => {
  it.each([
    // [query, category, expected ids in rank order, match]
    ["plumber bristol", undefined, ["oak-plumbing"], "all"],
    ["Plumbers in Bristol", undefined, ["oak-plumbing"], "all"], // stop word dropped, plural folded, case ignored
    ["plumb", undefined, ["oak-plumbing", "river-plumbing"], "all"], // prefix of "plumbing"/"plumber"
    ["plumbi", undefined, ["oak-plumbing", "river-plumbing"], "all"], // a typed prefix whose stem is shorter still matches
    ["repairs", undefined, ["glass-works", "oak-plumbing"], "all"], // plural -> stem
    ["installations", undefined, ["river-plumbing"], "all"], // "installations" and "installation" share a stem
    ["implant", undefined, ["cedar-dental"], "all"], // singular query, plural in the profile
    ["bookkeeping", undefined, ["bristol-bookkeeping", "summit-accountants"], "all"], // the name hit ranks first
    ["bookkeeping bristol", undefined, ["bristol-bookkeeping"], "all"],
    ["startups payroll", undefined, ["summit-accountants"], "all"], // industries and services both searched
    ["emergency", undefined, ["oak-plumbing"], "all"], // description
    ["glass", undefined, ["glass-works"], "all"], // "glass" is not folded to "glas"
    ["bath", "plumber", ["river-plumbing"], "all"], // category filter is case-insensitive
    ["bristol", "Dentist", ["cedar-dental"], "all"],
    ["", "Accountant", ["bristol-bookkeeping", "summit-accountants"], "all"], // empty query lists alphabetically
    ["hidden", undefined, [], "none"], // unlisted profiles never come back
    ["zzz", undefined, [], "none"],
    ["plumber", "Dentist", [], "none"],
  ] as const)("q=%j category=%j -> %j (%s)", (q, category, expected, match) => {
    const r = index.search({ q, category, limit: 20, offset: 0 });
    expect(r.hits.map((h) => h.business.id)).toEqual(expected);
    expect(r.total).toBe(expected.length);
    expect(r.match).toBe(match);
    for (const h of r.hits) expect(h.match).toBe("all");
  });

  it("folds plurals and inflections through the Porter stemmer, in profiles and queries alike", () => {
    const bakeries = new SearchIndex([
      biz({ id: "sunrise-bakery", name: "Sunrise Bakery", category: "Bakery", services: ["wedding cakes"], areas: ["Leeds"] }),
      biz({ id: "corner-bakeries", name: "Corner Bakeries", category: "Cafe", services: ["catering"], areas: ["York"] }),
      biz({ id: "city-cafe", name: "City Cafe", category: "Cafe", services: ["cake baking"], areas: ["York"] }),
    ]);
    const found = (q: string) =>
      bakeries
        .search({ q, limit: 20, offset: 0 })
        .hits.map((h) => h.business.id)
        .sort();
    expect(found("bakery")).toEqual(["corner-bakeries", "sunrise-bakery"]);
    expect(found("bakeries")).toEqual(["corner-bakeries", "sunrise-bakery"]);
    expect(found("cake")).toEqual(["city-cafe", "sunrise-bakery"]);
    expect(found("caterer catering")).toEqual(["corner-bakeries"]);
    expect(bakeries.search({ q: "Bakeries bakery", limit: 20, offset: 0 }).words).toEqual(["bakeries"]); // one word per stem
  });

  it("falls back to profiles matching some words, marked partial, ranked by words matched", () => {
    const r = index.search({ q: "dentist leeds bookkeeping", limit: 20, offset: 0 });
    expect(r.match).toBe("partial");
    // summit matches leeds + bookkeeping (2 words); then 1-word matches: bristol-bookkeeping (name hit), cedar-dental
    expect(r.hits.map((h) => [h.business.id, h.match, h.matched])).toEqual([
      ["summit-accountants", "partial", ["leeds", "bookkeeping"]],
      ["bristol-bookkeeping", "partial", ["bookkeeping"]],
      ["cedar-dental", "partial", ["dentist"]],
    ]);
    expect(r.total).toBe(3);
  });

  it("a single word never falls back; the partial fallback respects the category", () => {
    expect(index.search({ q: "dentist leeds", category: "Dentist", limit: 20, offset: 0 }).hits.map((h) => h.business.id)).toEqual([
      "cedar-dental",
    ]);
    expect(index.search({ q: "dentist leeds", category: "Dentist", limit: 20, offset: 0 }).match).toBe("partial");
  });

  it("pages with total, limit, offset and a next link that ends on the last page", () => {
    const all = ids("");
    expect(all).toHaveLength(6);
    const pages: string[] = [];
    let p = { q: "", category: "", limit: 4, offset: 0 };
    const links: Array<string | null> = [];
    for (;;) {
      const view = searchView(index.search(p), p) as {
        total: number;
        limit: number;
        offset: number;
        next: string | null;
        results: Array<{ id: string }>;
      };
      expect(view.total).toBe(6);
      expect(view.limit).toBe(4);
      expect(view.offset).toBe(p.offset);
      pages.push(...view.results.map((x) => x.id));
      links.push(view.next);
      if (view.next === null) break;
      const u = new URL(view.next, "http://x");
      expect(u.pathname).toBe("/api/businesses");
      p = {
        q: u.searchParams.get("q") ?? "",
        category: u.searchParams.get("category") ?? "",
        limit: Number(u.searchParams.get("limit")),
        offset: Number(u.searchParams.get("offset")),
      };
    }
    expect(links).toEqual(["/api/businesses?limit=4&offset=4", null]);
    expect(pages).toEqual(all);
    // the next link keeps q and category
    const withQ = searchView(index.search({ q: "bristol", category: "", limit: 1, offset: 0 }), {
      q: "bristol",
      category: "",
      limit: 1,
      offset: 0,
    }) as { next: string; total: number };
    expect(withQ.total).toBe(3);
    expect(withQ.next).toBe("/api/businesses?q=bristol&limit=1&offset=1");
    // an offset past the end is an empty page, not an error
    expect(ids("", undefined, 10, 50)).toEqual([]);
  });

  it("result fields come wrapped as {value, state, source}", () => {
    const view = searchView(index.search({ q: "oak", limit: 1, offset: 0 }), { q: "oak", category: "", limit: 1, offset: 0 }) as {
      results: Array<Record<string, any>>;
    };
    expect(view.results[0]!.name).toEqual({
      value: "Oak Plumbing",
      state: "sourced",
      source: { url: null, date: TODAY, asserted_by: "website" },
    });
    expect(view.results[0]!.page).toBe("/businesses/oak-plumbing");
  });
});

describe("SearchIndex.upsert (in-place changes for big directories)", () => {
  it("a changed profile is found by its new words only, a new one is found, an unlisted one is gone; counts follow", () => {
    const ix = new SearchIndex(BUSINESSES);
    const q = (text: string, category?: string) => ix.search({ q: text, category, limit: 20, offset: 0 }).hits.map((h) => h.business.id);
    expect(q("emergency")).toEqual(["oak-plumbing"]);
    const oak = biz({
      id: "oak-plumbing",
      name: "Oak Plumbing",
      category: "Plumber",
      services: ["underfloor heating"],
      areas: ["Bristol"],
    });
    ix.upsert(oak);
    expect(q("emergency")).toEqual([]);
    expect(q("underfloor")).toEqual(["oak-plumbing"]);
    expect(q("plumb")).toEqual(["river-plumbing", "oak-plumbing"]); // the changed profile ranks after its ties until a rebuild
    ix.upsert(biz({ id: "zeta-zymurgy", name: "Zeta Zymurgy", category: "Brewer", areas: ["Bath"] })); // new term "zymurgy" enters the sorted term list
    expect(q("zymu")).toEqual(["zeta-zymurgy"]);
    expect(q("", "brewer")).toEqual(["zeta-zymurgy"]);
    ix.upsert(biz({ id: "cedar-dental", name: "Cedar Dental", category: "Dentist", listed: false }));
    expect(q("cedar")).toEqual([]);
    expect(ix.categoryCounts().find((c) => c.category === "Dentist")).toBeUndefined();
    expect(ix.categoryCounts().find((c) => c.category === "Plumber")!.count).toBe(2);
    expect(ix.search({ q: "", limit: 100, offset: 0 }).total).toBe(6);
    expect(ix.replaced).toBe(2);
  });
});
