/** @module search — the directory's in-memory word index: all-words matching with a partial fallback, category filter, ranking and paging. */
import { stem } from "../encoder/stem.js";
import type { Business } from "./identity.js";

/** A search request's limits: longest q and category (characters), page size (default and most), most results skipped. */
export const SEARCH_LIMITS = { q: 500, category: 200, defaultLimit: 20, maxLimit: 100, maxOffset: 1_000_000 } as const;

/** The fields whose words are searched. */
export const SEARCH_FIELDS = ["name", "category", "services", "industries", "areas", "description"] as const;
/** Query words that are dropped (they would make "plumber in bristol" a partial match). */
const STOP = new Set(["a", "an", "and", "at", "for", "in", "near", "of", "on", "or", "the", "to", "with"]);
/** Query words at least this long also match longer words they begin ("plumb" -> "plumbing"). */
const PREFIX_MIN = 3;

const ASCII = /^[\x00-\x7f]*$/;

/** Lowercase ASCII-folded words. */
export function words(text: string): string[] {
  const folded = ASCII.test(text)
    ? text.toLowerCase()
    : text
        .normalize("NFKD")
        .replace(/[\u0300-\u036f]/g, "")
        .toLowerCase();
  return folded.split(/[^\p{L}\p{N}]+/u).filter((w) => w !== "");
}

/**
 * The index terms of a word: the word and its Porter stem ("bakeries" and "bakery" -> "bakeri",
 * "plumbers" -> "plumber", "glass" stays). Query words go through the same function, so plurals
 * and other inflections fold; the word itself is kept so a typed prefix ("plumbi") still finds
 * the words it begins ("plumbing") although its stem ("plumb") would not start with it.
 */
export function terms(word: string): string[] {
  const s = stem(word);
  return s === word ? [word] : [word, s];
}

function fieldText(b: Business, f: (typeof SEARCH_FIELDS)[number]): string {
  const v = b.fields[f]?.value;
  return v === undefined ? "" : Array.isArray(v) ? v.join(" ") : String(v);
}

export interface SearchQuery {
  q?: string;
  category?: string;
  limit: number;
  offset: number;
}

export interface SearchHit {
  business: Business;
  /** "all": every query word matched; "partial": some did (only when no profile matched all). */
  match: "all" | "partial";
  /** Query words this profile matched. */
  matched: string[];
}

export interface SearchResult {
  /** Matching profiles in all (before paging). */
  total: number;
  /** "all" (also for an empty query), "partial" (fallback), or "none". */
  match: "all" | "partial" | "none";
  /** The query words used (lowercased, stop words dropped, one per stem). */
  words: string[];
  hits: SearchHit[];
}

type Postings = Map<string, number[]>;

/**
 * Built from all businesses in name order (so an empty query lists alphabetically and ties rank
 * alphabetically). A changed business can be applied with `upsert`: its old ordinal leaves the
 * listed bitset and it is appended (ranking after its ties) until the owner rebuilds the index.
 */
export class SearchIndex {
  private docs: Business[] = [];
  private readonly ordOf = new Map<string, number>();
  private all: Postings = new Map();
  private names: Postings = new Map();
  private sortedTerms: string[] = [];
  private sortedNameTerms: string[] = [];
  private categories = new Map<string, number[]>();
  /** Ordinals that are listed and current (a replaced ordinal's bit is cleared). */
  private listed = new Uint32Array(0);
  private words32 = 0;
  private counts: Array<{ category: string; count: number }> | null = null;
  /** Ordinals replaced by `upsert` since the build. */
  replaced = 0;

  constructor(businesses: Iterable<Business>) {
    const keyed = [...businesses].map((b) => ({ b, k: b.fields.name.value.toLowerCase() }));
    keyed.sort((x, y) => (x.k < y.k ? -1 : x.k > y.k ? 1 : x.b.id < y.b.id ? -1 : 1));
    this.docs = keyed.map((x) => x.b);
    this.words32 = (this.docs.length + 31) >>> 5;
    this.listed = new Uint32Array(this.words32);
    this.docs.forEach((b, o) => this.indexDoc(b, o, false));
    this.sortedTerms = [...this.all.keys()].sort();
    this.sortedNameTerms = [...this.names.keys()].sort();
  }

  /** Ordinals in all, replaced ones included. */
  get size(): number {
    return this.docs.length;
  }

  /** Apply a new or changed business without a rebuild. */
  upsert(b: Business): void {
    const old = this.ordOf.get(b.id);
    if (old !== undefined) {
      this.listed[old >>> 5]! &= ~(1 << (old & 31));
      this.replaced++;
    }
    const o = this.docs.length;
    this.docs.push(b);
    this.words32 = (this.docs.length + 31) >>> 5;
    if (this.listed.length < this.words32) {
      const grown = new Uint32Array(this.words32);
      grown.set(this.listed);
      this.listed = grown;
    }
    this.indexDoc(b, o, true);
    this.counts = null;
  }

  private indexDoc(b: Business, o: number, keepSorted: boolean): void {
    this.ordOf.set(b.id, o);
    if (b.listed) this.listed[o >>> 5]! |= 1 << (o & 31);
    const add = (m: Postings, w: string, sorted: string[] | null) => {
      const p = m.get(w);
      if (p === undefined) {
        m.set(w, [o]);
        if (sorted) sorted.splice(lowerBound(sorted, w), 0, w);
      } else if (p[p.length - 1] !== o) p.push(o);
    };
    for (const f of SEARCH_FIELDS)
      for (const w of words(fieldText(b, f))) for (const t of terms(w)) add(this.all, t, keepSorted ? this.sortedTerms : null);
    for (const w of words(b.fields.name.value)) for (const t of terms(w)) add(this.names, t, keepSorted ? this.sortedNameTerms : null);
    add(this.categories, b.fields.category.value.toLowerCase(), null);
  }

  private isListed(o: number): boolean {
    return (this.listed[o >>> 5]! & (1 << (o & 31))) !== 0;
  }

  /** Category labels of listed profiles with their counts, most common first. */
  categoryCounts(): Array<{ category: string; count: number }> {
    if (this.counts) return this.counts;
    const out: Array<{ category: string; count: number }> = [];
    for (const ords of this.categories.values()) {
      const live = ords.filter((o) => this.isListed(o));
      if (live.length > 0) out.push({ category: this.docs[live[0]!]!.fields.category.value, count: live.length });
    }
    return (this.counts = out.sort((a, b) => b.count - a.count || a.category.localeCompare(b.category)));
  }

  /** Bitset of profiles holding one of the word's terms (or, for terms of PREFIX_MIN+ letters, a term starting with it). */
  private bits(word: string, m: Postings, sorted: string[]): Uint32Array {
    const out = new Uint32Array(this.words32);
    const mark = (p: number[]) => {
      for (const o of p) out[o >>> 5]! |= 1 << (o & 31);
    };
    for (const t of terms(word)) {
      if (t.length < PREFIX_MIN) {
        const p = m.get(t);
        if (p) mark(p);
        continue;
      }
      for (let i = lowerBound(sorted, t); i < sorted.length && sorted[i]!.startsWith(t); i++) mark(m.get(sorted[i]!)!);
    }
    return out;
  }

  search(query: SearchQuery): SearchResult {
    // One query word per stem ("bakery bakeries" is one word), as the user typed it.
    const byStem = new Map<string, string>();
    for (const w of words(query.q ?? "")) if (!STOP.has(w) && !byStem.has(stem(w))) byStem.set(stem(w), w);
    const qWords = [...byStem.values()];
    const n32 = this.words32;
    const scope = this.listed.slice();
    if (query.category !== undefined && query.category.trim() !== "") {
      const c = new Uint32Array(n32);
      for (const o of this.categories.get(query.category.trim().toLowerCase()) ?? []) c[o >>> 5]! |= 1 << (o & 31);
      for (let i = 0; i < n32; i++) scope[i]! &= c[i]!;
    }
    const page = (ranked: number[][], match: SearchResult["match"], matchedOf: (o: number) => string[]): SearchResult => {
      let total = 0;
      for (const r of ranked) total += r.length;
      const hits: SearchHit[] = [];
      let skip = query.offset;
      for (let i = ranked.length - 1; i >= 0 && hits.length < query.limit; i--) {
        const r = ranked[i]!;
        if (skip >= r.length) {
          skip -= r.length;
          continue;
        }
        for (let j = skip; j < r.length && hits.length < query.limit; j++) {
          hits.push({ business: this.docs[r[j]!]!, match: match === "partial" ? "partial" : "all", matched: matchedOf(r[j]!) });
        }
        skip = 0;
      }
      return { total, match: total === 0 ? "none" : match, words: qWords, hits };
    };
    if (qWords.length === 0) {
      // No words: the scope in name order, paged by counting bits instead of listing them all.
      const total = popcount(scope);
      const hits = ordinals(scope, query.offset, query.limit).map((o): SearchHit => ({
        business: this.docs[o]!,
        match: "all",
        matched: [],
      }));
      return { total, match: total === 0 ? "none" : "all", words: qWords, hits };
    }

    const w = qWords.map((x) => this.bits(x, this.all, this.sortedTerms));
    const nm = qWords.map((x) => this.bits(x, this.names, this.sortedNameTerms));
    const has = (b: Uint32Array, o: number) => (b[o >>> 5]! & (1 << (o & 31))) !== 0;
    const matchedOf = (o: number) => qWords.filter((_, i) => has(w[i]!, o));
    const nameHits = (o: number) => {
      let h = 0;
      for (const b of nm) if (has(b, o)) h++;
      return h;
    };
    // All words: rank by how many query words hit the name (bucket index), then name order.
    const full = scope.slice();
    for (const b of w) for (let i = 0; i < n32; i++) full[i]! &= b[i]!;
    const fullOrds = ordinals(full);
    if (fullOrds.length > 0) {
      const buckets: number[][] = Array.from({ length: qWords.length + 1 }, () => []);
      for (const o of fullOrds) buckets[nameHits(o)]!.push(o);
      return page(buckets, "all", matchedOf);
    }
    if (qWords.length === 1) return page([], "none", matchedOf);
    // Partial: rank by words matched, then name hits, then name order.
    const K = qWords.length + 1;
    const buckets: number[][] = Array.from({ length: K * K }, () => []);
    const any = new Uint32Array(n32);
    for (const b of w) for (let i = 0; i < n32; i++) any[i]! |= b[i]!;
    for (let i = 0; i < n32; i++) any[i]! &= scope[i]!;
    for (const o of ordinals(any)) {
      let c = 0;
      for (const b of w) if (has(b, o)) c++;
      buckets[c * K + nameHits(o)]!.push(o);
    }
    return page(buckets, "partial", matchedOf);
  }
}

/** First index of `sorted` whose string is >= `x`. */
function lowerBound(sorted: string[], x: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Set bits of a bitset, ascending; `skip` set bits are passed over (whole words by popcount) and at most `max` returned. */
function ordinals(bits: Uint32Array, skip = 0, max = Infinity): number[] {
  const out: number[] = [];
  for (let i = 0; i < bits.length && out.length < max; i++) {
    let x = bits[i]!;
    if (skip > 0) {
      const c = popcount32(x);
      if (c <= skip) {
        skip -= c;
        continue;
      }
    }
    while (x !== 0 && out.length < max) {
      const t = x & -x;
      if (skip > 0) skip--;
      else out.push((i << 5) + 31 - Math.clz32(t));
      x ^= t;
    }
  }
  return out;
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

function popcount(bits: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) n += popcount32(bits[i]!);
  return n;
}
