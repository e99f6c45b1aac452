/** @module bm25 — a small in-memory BM25 index (Okapi, k1 = 1.2, b = 0.75) over the shared term pipeline (tokenize + Porter stem). */
import { SvcError } from "../errors.js";
import { terms as defaultTerms } from "./terms.js";

export interface Bm25Options {
  k1?: number;
  b?: number;
  /** text -> terms; defaults to the encoder's pipeline (src/encoder/terms.ts). */
  terms?: (text: string) => string[];
}

export interface Bm25Hit {
  id: string;
  score: number;
}

/**
 * The statistics a score depends on: documents, their total length (terms) and, per query term, the
 * documents holding it. Summed over the parts of a corpus split in several indexes (shards), and passed
 * to each part's `search`, they score every document as one index over the whole corpus would.
 */
export interface Bm25Stats {
  n: number;
  totalLength: number;
  df: Record<string, number>;
}

interface Doc {
  id: string;
  /** dense slot in insertion order: a larger slot is a later-added document, so ties in score rank the smaller slot first */
  slot: number;
  length: number;
  /** its distinct terms in order of first occurrence and their frequencies (arrays, not a Map: 0.6 KB less a document, ~590 MB of RSS at 1M) */
  terms: string[];
  counts: number[];
}

/** Touched documents a search samples to estimate how many can still enter the top K (a cost estimate only). */
const SAMPLE = 1024;

/** Term frequencies told apart by a term's score bound (Postings.minLength); larger ones are bounded as the largest seen. */
const TF_STEPS = 8;

/** A posting's tf or document length this large (or larger) is kept in Postings.big, not in its 16 bits. */
const WIDE = 0xffff;

/**
 * One term's postings in flat typed arrays: slots, and per posting the term frequency (low 16 bits) and the
 * document's length (high 16 bits) in one Uint32, so a walk reads the length beside the posting, not from a
 * per-slot array (one random access per posting, the accumulator, instead of two). A tf or
 * length of WIDE or more is stored as WIDE and its true value in `big` (records' text is at most 64 KiB: rare).
 * Entries of removed documents stay until compaction.
 */
class Postings {
  slots = new Int32Array(4);
  meta = new Uint32Array(4);
  /** by slot, for postings whose tf or length is WIDE or more: the true [tf, length] */
  big: Map<number, [number, number]> | undefined;
  length = 0;
  /** live documents holding the term (df) */
  live = 0;
  maxTf = 0;
  /**
   * For the term's score bound: the shortest document length pushed per tf (index tf - 1; tfs above
   * TF_STEPS share the last entry), kept through removals (still bounds). A part grows with tf and shrinks with
   * length, so its largest value over the list is at one of these (tf, length) pairs.
   */
  minLength: number[] = [];

  push(slot: number, tf: number, length: number): void {
    const i = Math.min(tf, TF_STEPS) - 1;
    while (this.minLength.length <= i) this.minLength.push(Infinity);
    if (length < this.minLength[i]!) this.minLength[i] = length;
    if (tf > this.maxTf) this.maxTf = tf;
    if (this.length === this.slots.length) {
      const slots = new Int32Array(this.length * 2),
        meta = new Uint32Array(this.length * 2);
      slots.set(this.slots);
      meta.set(this.meta);
      this.slots = slots;
      this.meta = meta;
    }
    if (tf >= WIDE || length >= WIDE) (this.big ??= new Map()).set(slot, [tf, length]);
    this.slots[this.length] = slot;
    this.meta[this.length++] = Math.min(tf, WIDE) | (Math.min(length, WIDE) << 16);
    this.live++;
  }

  /** The part w * tf / (tf + norm + per * length) of the posting of `slot`, whose tf or length is WIDE or more. */
  widePart(slot: number, w: number, norm: number, per: number): number {
    const [tf, length] = this.big!.get(slot)!;
    return (w * tf) / (tf + norm + per * length);
  }
}

/**
 * score(q, d) = sum over query terms t (with multiplicity) of
 *   idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)),
 * idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative).
 * Statistics (N, df, avgdl) are always those of the documents currently in the index.
 *
 * Layout: postings are flat typed arrays of slots (ascending: slots are handed out in insertion order) beside each
 * posting's tf and document length (Postings), so a search is a tight loop over integers instead of a walk over Map
 * entries, touching one per-slot array (the accumulators) at random. Slots are never reused;
 * when removed documents hold over half of the slots, every list is rebuilt with slots renumbered in
 * insertion order.
 */
export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  private readonly termsOf: (text: string) => string[];
  private readonly docs = new Map<string, Doc>();
  private postings = new Map<string, Postings>();
  private totalLength = 0;
  /** slots handed out (live + removed) */
  private slots = 0;
  /** by slot: the document (undefined once removed) */
  private bySlot: (Doc | undefined)[] = [];
  /**
   * Per-slot score accumulator and the slots it touched, reused across searches: between searches 0 for a live
   * document and -Infinity for a removed one (so a walk needs no other per-slot read to skip removed documents: adding
   * to -Infinity leaves it below every bound, and only slots found at 0 are recorded as touched). Scratch for selection.
   */
  private acc = new Float32Array(0);
  private touched = new Int32Array(0);
  private select = new Float64Array(0);
  private selectSlots = new Int32Array(0);
  /** a bit per slot, all clear between uses (survivors) */
  private bits = new Int32Array(0);

  constructor(opts: Bm25Options = {}) {
    this.k1 = opts.k1 ?? 1.2;
    this.b = opts.b ?? 0.75;
    this.termsOf = opts.terms ?? defaultTerms;
  }

  get size(): number {
    return this.docs.size;
  }

  has(id: string): boolean {
    return this.docs.has(id);
  }

  /** Adds a document; an existing id is replaced (it then ranks as the newest on ties). */
  add(id: string, text: string): void {
    this.remove(id);
    const list = this.termsOf(text);
    const at = new Map<string, number>(),
      terms: string[] = [],
      counts: number[] = [];
    for (const t of list) {
      const i = at.get(t);
      if (i !== undefined) counts[i]!++;
      else {
        at.set(t, terms.length);
        terms.push(t);
        counts.push(1);
      }
    }
    const doc: Doc = { id, slot: 0, length: list.length, terms, counts };
    this.docs.set(id, doc);
    this.totalLength += doc.length;
    this.place(doc);
  }

  /** Gives a document the next slot and appends it to its terms' postings. */
  private place(doc: Doc): void {
    doc.slot = this.slots++;
    this.bySlot[doc.slot] = doc;
    doc.terms.forEach((t, i) => {
      let p = this.postings.get(t);
      if (!p) this.postings.set(t, (p = new Postings()));
      p.push(doc.slot, doc.counts[i]!, doc.length);
    });
  }

  /** This index's statistics for `query`'s terms (what a search over several indexes sums: Bm25Stats). */
  stats(query: string): Bm25Stats {
    const df: Record<string, number> = Object.create(null);
    for (const t of this.termsOf(query)) df[t] = this.postings.get(t)?.live ?? 0;
    return { n: this.docs.size, totalLength: this.totalLength, df };
  }

  /** Removes a document; false when the id is not in the index. */
  remove(id: string): boolean {
    const doc = this.docs.get(id);
    if (!doc) return false;
    this.docs.delete(id);
    this.totalLength -= doc.length;
    this.bySlot[doc.slot] = undefined;
    if (doc.slot < this.acc.length) this.acc[doc.slot] = -Infinity;
    for (const t of doc.terms) {
      const p = this.postings.get(t)!;
      if (--p.live === 0) this.postings.delete(t);
    }
    if (this.slots - this.docs.size > Math.max(1024, this.docs.size)) this.compact();
    return true;
  }

  /** Rebuilds every posting list without removed documents, slots renumbered in insertion order. */
  private compact(): void {
    const live = this.bySlot.filter((d): d is Doc => d !== undefined);
    this.postings = new Map();
    this.bySlot = [];
    this.slots = 0;
    this.acc = new Float32Array(0);
    for (const doc of live) this.place(doc);
  }

  /**
   * The topK best documents with a positive score, best first (ties: earlier added first); with `accept`, only
   * documents it accepts (asked only of documents that can still enter the top K).
   *
   * MaxScore, term at a time: the query's terms are walked in order of their score bound (idf weight at the list's
   * largest tf and shortest document), most selective first, adding into per-slot accumulators. Once the bounds of
   * the terms left sum to less than the K-th best accumulated score (a lower bound of the final K-th best), no
   * document not yet seen can enter the top K: the remaining lists (stop words, most of the index) are only probed
   * by galloping search for the candidates that still can, and their lists are never walked. The survivors' scores
   * are then added up again in query order, as a full walk adds them, so scores and tie order are exactly those of
   * the full walk (the pruning compares with a relative margin against rounding: `slack`).
   */
  search(query: string, topK: number, accept?: (id: string) => boolean, corpus?: Bm25Stats): Bm25Hit[] {
    if (!Number.isInteger(topK) || topK < 1) throw new SvcError("E_TOP_K", "topK must be a positive integer", { field: "topK" });
    if (this.docs.size === 0) return [];
    // `corpus`: the whole corpus's statistics, this index holding a part of it (else this index's own)
    const n = corpus?.n ?? this.docs.size;
    const avgdl = (corpus?.totalLength ?? this.totalLength) / n || 1;
    const qtf = new Map<string, number>();
    for (const t of this.termsOf(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    const k1 = this.k1,
      norm = k1 * (1 - this.b),
      per = (k1 * this.b) / avgdl;
    // the query's terms with postings, in query order (the order a document's parts are added in)
    const terms: QueryTerm[] = [];
    for (const [t, mult] of qtf) {
      const p = this.postings.get(t);
      if (!p) continue;
      const df = corpus?.df[t] ?? p.live;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const w = mult * idf * (k1 + 1);
      let bound = 0;
      p.minLength.forEach((length, i) => {
        const tf = i === TF_STEPS - 1 ? p.maxTf : i + 1;
        if (length !== Infinity) bound = Math.max(bound, (w * tf) / (tf + norm + per * length));
      });
      terms.push({ w, p, bound: bound * (1 + 1e-9) });
    }
    const m = terms.length;
    if (m === 0) return [];
    const walk = [...terms].sort((a, b) => b.bound - a.bound);
    // rest[j]: the most the terms walk[j..] can add to a document; postingsFrom[j]: their postings
    const rest = new Float64Array(m + 1),
      postingsFrom = new Float64Array(m + 1);
    for (let j = m - 1; j >= 0; j--) {
      rest[j] = rest[j + 1]! + walk[j]!.bound;
      postingsFrom[j] = postingsFrom[j + 1]! + walk[j]!.p.length;
    }
    if (this.acc.length < this.slots) {
      this.acc = new Float32Array(Math.max(this.slots, this.acc.length * 2));
      for (let slot = 0; slot < this.slots; slot++) if (this.bySlot[slot] === undefined) this.acc[slot] = -Infinity;
      this.touched = new Int32Array(this.acc.length);
      this.bits = new Int32Array(Math.ceil(this.acc.length / 32));
    }
    const acc = this.acc,
      touched = this.touched;
    let nTouched = 0,
      maxAcc = 0;
    // candidates: null while lists are walked in full, then the slots (ascending) that can still enter the top K
    let candidates: Int32Array | null = null;
    // theta: a lower bound of the final K-th best score, recomputed once the documents seen have doubled, and
    // lowered by `slack` for rounding. The accumulators are float32: a document's is its parts' sum with each of at
    // most m additions rounded to float32 (all parts positive: relative error d <= (1 + u)^m - 1, about m u, u = 2^-24),
    // and theta is the K-th best of such sums plus parts added in walk order, not query order (float64: ~1e-16 each).
    // So theta exceeds the true K-th best score by at most a factor 1 + d, and a document of the true top K has an
    // accumulator + rest of at least (1 - d) times its bound: a document or a term is pruned only below theta /
    // (1 + d) * (1 - d), which `slack` (1 + 4 (m + 1) u + 1e-9 >= (1 + d) / (1 - d)) covers with room.
    const slack = 1 + 4 * (m + 1) * 2 ** -24 + 1e-9;
    let theta = 0,
      thetaAt = 0;
    try {
      for (let j = 0; j < m; j++) {
        const { w, p } = walk[j]!;
        const slots = p.slots,
          meta = p.meta;
        if (candidates === null && j > 0 && nTouched >= topK && rest[j]! < maxAcc && postingsFrom[j]! > nTouched / 2) {
          if (nTouched >= 2 * thetaAt) {
            theta = Math.max(theta, this.kthBest(touched, nTouched, topK, accept, walk, j, norm, per) / slack);
            thetaAt = nTouched;
          }
          if (rest[j]! < theta) {
            // the candidates left, estimated from a strided sample of at most ~SAMPLE touched documents (this only
            // chooses between two exact ways to go on; counting them all, per term, cost a quarter of a search)
            const stride = Math.max(1, Math.floor(nTouched / SAMPLE));
            let left = 0;
            for (let i = 0; i < nTouched; i += stride) if (acc[touched[i]!]! + rest[j]! >= theta) left++;
            left *= stride;
            // probing pays when its galloping steps (about 1 + log2(1 + list / candidates) per candidate and list,
            // each costing about two walked postings) are fewer than the postings left to walk
            let steps = 0;
            for (let i = j; i < m; i++) steps += left * (1 + Math.log2(1 + walk[i]!.p.length / Math.max(1, left)));
            if (2 * steps < postingsFrom[j]!) candidates = this.survivors(touched, nTouched, rest[j]!, theta, false);
          }
        }
        if (candidates === null && rest[j]! < theta) {
          // no document unseen so far can reach theta (at most rest[j]): only the touched ones take this term's part
          for (let i = 0, len = p.length; i < len; i++) {
            const slot = slots[i]!;
            const a = acc[slot]!;
            if (a === 0) continue;
            const v = (acc[slot] = a + part(p, meta[i]!, slot, w, norm, per));
            if (v > maxAcc) maxAcc = v;
          }
        } else if (candidates === null) {
          for (let i = 0, len = p.length; i < len; i++) {
            // a removed document's accumulator is -Infinity (Bm25Index.acc): it stays so, untouched
            const slot = slots[i]!;
            const a = acc[slot]!;
            if (a === 0) touched[nTouched++] = slot;
            const v = (acc[slot] = a + part(p, meta[i]!, slot, w, norm, per));
            if (v > maxAcc) maxAcc = v;
          }
        } else {
          for (let c = 0, at = 0, len = p.length; c < candidates.length; c++) {
            const slot = candidates[c]!;
            at = seek(slots, at, len, slot);
            if (at === len) break;
            if (slots[at] === slot) acc[slot]! += part(p, meta[at]!, slot, w, norm, per);
          }
          if (candidates.length > topK) {
            // the candidates now hold this list's parts too: the best of them by accumulator are closer to the final
            // top K, so theta is raised again from them (their full scores: the lists after j probed) before filtering
            theta = Math.max(theta, this.kthBest(candidates, candidates.length, topK, accept, walk, j + 1, norm, per) / slack);
            candidates = this.survivors(candidates, candidates.length, rest[j + 1]!, theta, true);
          }
        }
      }
      const list = candidates ?? touched,
        count = candidates?.length ?? nTouched;
      candidates = this.survivors(
        list,
        count,
        0,
        count > topK ? this.kthBest(list, count, topK, accept, walk, m, norm, per) / slack : 0,
        candidates !== null,
      );
    } finally {
      for (let i = 0; i < nTouched; i++) acc[touched[i]!] = 0;
    }
    // the survivors' exact scores, parts added in query order
    const exact = new Float64Array(candidates.length);
    for (const { w, p } of terms) {
      const slots = p.slots,
        meta = p.meta;
      for (let c = 0, at = 0, len = p.length; c < candidates.length; c++) {
        const slot = candidates[c]!;
        at = seek(slots, at, len, slot);
        if (at === len) break;
        if (slots[at] === slot) exact[c]! += part(p, meta[at]!, slot, w, norm, per);
      }
    }
    const heap = new Bm25Heap(topK);
    for (let c = 0; c < candidates.length; c++) {
      const score = exact[c]!,
        slot = candidates[c]!;
      if (score > 0 && heap.beats(score, slot) && (accept === undefined || accept(this.bySlot[slot]!.id))) heap.offer(score, slot);
    }
    return heap.sorted().map(({ slot, score }) => ({ id: this.bySlot[slot]!.id, score }));
  }

  /**
   * A lower bound of the final K-th best score: the K-th best full score (the terms walk[from..] added by
   * probing) among the documents of list[0..count) with the best accumulated scores (the best K, or the best 4K
   * when `accept` is given, the accepted ones); 0 when they are fewer than K.
   */
  private kthBest(
    list: Int32Array,
    count: number,
    k: number,
    accept: ((id: string) => boolean) | undefined,
    walk: QueryTerm[],
    from: number,
    norm: number,
    per: number,
  ): number {
    const want = accept === undefined ? k : Math.min(count, 4 * k);
    if (count < k) return 0;
    const acc = this.acc;
    if (this.select.length < count) {
      this.select = new Float64Array(Math.max(count, this.select.length * 2));
      this.selectSlots = new Int32Array(this.select.length);
    }
    const vals = this.select,
      valSlots = this.selectSlots;
    // Only the documents whose accumulator reaches `guess` are selected from, in one pass: the guess is the value about
    // 4 x want of them reach, estimated from a strided sample (-Infinity when the list is small). When fewer than want
    // reach it, all are taken. Either way the documents taken include every one at or above the want-th largest, so
    // `floor` and `best` are what selecting over all of them gives.
    let guess = -Infinity;
    if (count >= 16 * SAMPLE) {
      const stride = Math.floor(count / SAMPLE);
      for (let i = 0; i < SAMPLE; i++) vals[i] = acc[list[i * stride]!]!;
      guess = kthLargest(vals, SAMPLE, Math.min(SAMPLE, Math.ceil((4 * want * SAMPLE) / count)));
    }
    let n = 0;
    for (let i = 0; i < count; i++) {
      const slot = list[i]!,
        a = acc[slot]!;
      if (a >= guess) {
        vals[n] = a;
        valSlots[n++] = slot;
      }
    }
    if (n < want)
      for (n = 0; n < count; n++) {
        vals[n] = acc[list[n]!]!;
        valSlots[n] = list[n]!;
      }
    const floor = kthLargest(vals, n, want);
    const best: number[] = [];
    for (let i = 0; i < n && best.length < 2 * want; i++) {
      const slot = valSlots[i]!;
      if (acc[slot]! >= floor && (accept === undefined || accept(this.bySlot[slot]!.id))) best.push(slot);
    }
    if (best.length < k) return 0;
    const slots = Int32Array.from(best).sort();
    const full = Float64Array.from(slots, (slot) => acc[slot]!);
    for (let j = from; j < walk.length; j++) {
      const { w, p } = walk[j]!;
      for (let c = 0, at = 0; c < slots.length; c++) {
        at = seek(p.slots, at, p.length, slots[c]!);
        if (at === p.length) break;
        if (p.slots[at] === slots[c]) full[c]! += part(p, p.meta[at]!, slots[c]!, w, norm, per);
      }
    }
    return kthLargest(full, full.length, k);
  }

  /** The slots among list[0..count) whose accumulated score plus `rest` can reach `theta`, ascending (`sorted`: list already is). */
  private survivors(list: Int32Array, count: number, rest: number, theta: number, sorted: boolean): Int32Array {
    const acc = this.acc,
      bits = this.bits;
    let n = 0;
    if (sorted) {
      for (let i = 0; i < count; i++) if (acc[list[i]!]! + rest >= theta) n++;
      const out = new Int32Array(n);
      for (let i = 0, o = 0; i < count; i++) {
        const slot = list[i]!;
        if (acc[slot]! + rest >= theta) out[o++] = slot;
      }
      return out;
    }
    // in slot order without sorting: the survivors' bits set, then read back (and cleared) word by word
    let lo = bits.length,
      hi = 0;
    for (let i = 0; i < count; i++) {
      const slot = list[i]!;
      if (acc[slot]! + rest >= theta) {
        const word = slot >>> 5;
        bits[word]! |= 1 << (slot & 31);
        if (word < lo) lo = word;
        if (word > hi) hi = word;
        n++;
      }
    }
    const out = new Int32Array(n);
    for (let word = lo, o = 0; word <= hi; word++) {
      let b = bits[word]!;
      if (b === 0) continue;
      bits[word] = 0;
      for (; b !== 0; b &= b - 1) out[o++] = (word << 5) | (31 - Math.clz32(b & -b));
    }
    return out;
  }
}

/** The part w * tf / (tf + norm + per * length) of the posting of `slot` whose packed tf and length are `meta`. */
function part(p: Postings, meta: number, slot: number, w: number, norm: number, per: number): number {
  const tf = meta & WIDE,
    length = meta >>> 16;
  return tf === WIDE || length === WIDE ? p.widePart(slot, w, norm, per) : (w * tf) / (tf + norm + per * length);
}

/** The k-th largest of vals[0..n) (1 <= k <= n); reorders vals (quickselect). */
function kthLargest(vals: Float64Array, n: number, k: number): number {
  let lo = 0,
    hi = n - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = vals[(lo + hi) >>> 1]!;
    let i = lo,
      j = hi;
    while (i <= j) {
      while (vals[i]! > pivot) i++;
      while (vals[j]! < pivot) j--;
      if (i <= j) {
        const t = vals[i]!;
        vals[i++] = vals[j]!;
        vals[j--] = t;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return vals[target]!;
  }
  return vals[target]!;
}

interface QueryTerm {
  /** multiplicity x idf x (k1 + 1) */
  w: number;
  p: Postings;
  /** no document's part for this term exceeds it */
  bound: number;
}

/**
 * The first index in [from, end) whose slot is >= target, else end: a galloping search over ascending slots that
 * starts where the list's average density puts the target (the lists are documents spread over the slots about
 * evenly), so a probe of a long list touches a few cache lines near the answer instead of doubling its way there.
 */
function seek(slots: Int32Array, from: number, end: number, target: number): number {
  if (from >= end || slots[from]! >= target) return from;
  // slots[from] < target: the answer is in (from, end]
  const span = slots[end - 1]! - slots[0]!;
  const guess = span <= 0 ? from + 1 : Math.min(end - 1, from + 1 + Math.floor(((target - slots[from]!) * (end - 1)) / span));
  let lo: number,
    hi: number,
    step = 1;
  if (slots[guess]! < target) {
    lo = guess;
    hi = lo + 1;
    while (hi < end && slots[hi]! < target) {
      lo = hi;
      step *= 2;
      hi = lo + step;
    }
    if (hi > end) hi = end;
  } else {
    hi = guess;
    lo = hi - 1;
    while (lo > from && slots[lo]! >= target) {
      hi = lo;
      step *= 2;
      lo = hi - step;
    }
    if (lo < from) lo = from;
  }
  // slots[lo] < target, and slots[hi] >= target or hi = end: the answer is in (lo, hi]
  while (lo + 1 < hi) {
    const mid = (lo + hi) >>> 1;
    if (slots[mid]! < target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The best K (score desc, slot asc) as a bounded min-heap with the worst on top. */
class Bm25Heap {
  private scores: Float64Array;
  private slots: Int32Array;
  private size = 0;

  /** The arrays start at min(k, 65536) entries: a huge topK does not allocate up front. */
  constructor(private readonly k: number) {
    this.scores = new Float64Array(Math.min(k, 1 << 16));
    this.slots = new Int32Array(this.scores.length);
  }

  get full(): boolean {
    return this.size === this.k;
  }

  /** the K-th best score (when full) */
  get worstScore(): number {
    return this.scores[0]!;
  }

  /** Whether (score, slot) would enter: not full, or better than the worst (a later slot loses a tie). */
  beats(score: number, slot: number): boolean {
    return this.size < this.k || score > this.scores[0]! || (score === this.scores[0] && slot < this.slots[0]!);
  }

  private worse(i: number, j: number): boolean {
    const a = this.scores[i]!,
      b = this.scores[j]!;
    return a < b || (a === b && this.slots[i]! > this.slots[j]!);
  }

  private swap(i: number, j: number): void {
    const s = this.scores[i]!,
      t = this.slots[i]!;
    this.scores[i] = this.scores[j]!;
    this.slots[i] = this.slots[j]!;
    this.scores[j] = s;
    this.slots[j] = t;
  }

  offer(score: number, slot: number): void {
    if (this.size < this.k) {
      if (this.size === this.scores.length) this.grow();
      let i = this.size++;
      this.scores[i] = score;
      this.slots[i] = slot;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if (!this.worse(i, up)) break;
        this.swap(i, up);
        i = up;
      }
      return;
    }
    this.scores[0] = score;
    this.slots[0] = slot;
    for (let i = 0; ;) {
      const l = 2 * i + 1,
        r = l + 1;
      let w = i;
      if (l < this.size && this.worse(l, w)) w = l;
      if (r < this.size && this.worse(r, w)) w = r;
      if (w === i) break;
      this.swap(i, w);
      i = w;
    }
  }

  private grow(): void {
    const scores = new Float64Array(this.scores.length * 2),
      slots = new Int32Array(this.slots.length * 2);
    scores.set(this.scores);
    slots.set(this.slots);
    this.scores = scores;
    this.slots = slots;
  }

  sorted(): { slot: number; score: number }[] {
    const out = Array.from({ length: this.size }, (_, i) => ({ slot: this.slots[i]!, score: this.scores[i]! }));
    return out.sort((x, y) => y.score - x.score || x.slot - y.slot);
  }
}
