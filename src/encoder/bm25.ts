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

interface Doc {
  id: string;
  /** dense slot in insertion order: a larger slot is a later-added document, so ties in score rank the smaller slot first */
  slot: number;
  length: number;
  tf: Map<string, number>;
}

/** One term's postings in flat typed arrays (slot, term frequency); entries of removed documents stay until compaction. */
class Postings {
  slots = new Int32Array(4);
  tfs = new Int32Array(4);
  length = 0;
  /** live documents holding the term (df) */
  live = 0;

  push(slot: number, tf: number): void {
    if (this.length === this.slots.length) {
      const slots = new Int32Array(this.length * 2), tfs = new Int32Array(this.length * 2);
      slots.set(this.slots);
      tfs.set(this.tfs);
      this.slots = slots;
      this.tfs = tfs;
    }
    this.slots[this.length] = slot;
    this.tfs[this.length++] = tf;
    this.live++;
  }
}

/**
 * score(q, d) = sum over query terms t (with multiplicity) of
 *   idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)),
 * idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative).
 * Statistics (N, df, avgdl) are always those of the documents currently in the index.
 *
 * Layout: postings are flat typed arrays of slots, document lengths a Float64Array by slot (-1: removed),
 * so a search is a tight loop over integers instead of a walk over Map entries. Slots are never reused;
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
  /** by slot: the document (undefined once removed) and its length (-1 once removed) */
  private bySlot: (Doc | undefined)[] = [];
  private lengths = new Float64Array(16);
  /** per-slot score accumulator, reused across searches (all zero between searches) */
  private scores = new Float64Array(0);
  private touched = new Int32Array(0);

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
    const tf = new Map<string, number>();
    const list = this.termsOf(text);
    for (const t of list) tf.set(t, (tf.get(t) ?? 0) + 1);
    const doc: Doc = { id, slot: 0, length: list.length, tf };
    this.docs.set(id, doc);
    this.totalLength += doc.length;
    this.place(doc);
  }

  /** Gives a document the next slot and appends it to its terms' postings. */
  private place(doc: Doc): void {
    doc.slot = this.slots++;
    if (doc.slot >= this.lengths.length) {
      const lengths = new Float64Array(this.lengths.length * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    this.lengths[doc.slot] = doc.length;
    this.bySlot[doc.slot] = doc;
    for (const [t, n] of doc.tf) {
      let p = this.postings.get(t);
      if (!p) this.postings.set(t, (p = new Postings()));
      p.push(doc.slot, n);
    }
  }

  /** Removes a document; false when the id is not in the index. */
  remove(id: string): boolean {
    const doc = this.docs.get(id);
    if (!doc) return false;
    this.docs.delete(id);
    this.totalLength -= doc.length;
    this.lengths[doc.slot] = -1;
    this.bySlot[doc.slot] = undefined;
    for (const t of doc.tf.keys()) {
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
    this.lengths = new Float64Array(Math.max(16, live.length));
    for (const doc of live) this.place(doc);
  }

  /** The topK best documents with a positive score, best first (ties: earlier added first). */
  search(query: string, topK: number): Bm25Hit[] {
    if (!Number.isInteger(topK) || topK < 1) throw new SvcError("E_TOP_K", "topK must be a positive integer", { field: "topK" });
    const n = this.docs.size;
    if (n === 0) return [];
    const avgdl = this.totalLength / n || 1;
    const qtf = new Map<string, number>();
    for (const t of this.termsOf(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    if (this.scores.length < this.slots) {
      this.scores = new Float64Array(Math.max(this.slots, this.scores.length * 2));
      this.touched = new Int32Array(this.scores.length);
    }
    const scores = this.scores, touched = this.touched, lengths = this.lengths;
    let nTouched = 0;
    for (const [t, mult] of qtf) {
      const p = this.postings.get(t);
      if (!p) continue;
      const idf = Math.log(1 + (n - p.live + 0.5) / (p.live + 0.5));
      const k1 = this.k1, norm = k1 * (1 - this.b), per = (k1 * this.b) / avgdl, w = mult * idf * (k1 + 1);
      const slots = p.slots, tfs = p.tfs, len = p.length;
      for (let i = 0; i < len; i++) {
        const slot = slots[i]!;
        const dl = lengths[slot]!;
        if (dl < 0) continue;
        const tf = tfs[i]!;
        if (scores[slot] === 0) touched[nTouched++] = slot;
        scores[slot]! += (w * tf) / (tf + norm + per * dl);
      }
    }
    // best topK by (score desc, slot asc) with a bounded min-heap of slots (worst on top), then sorted
    const heap: number[] = [];
    const worse = (a: number, b: number) => scores[a]! < scores[b]! || (scores[a] === scores[b] && a > b);
    for (let j = 0; j < nTouched; j++) {
      const slot = touched[j]!;
      if (!(scores[slot]! > 0)) continue;
      if (heap.length < topK) {
        heap.push(slot);
        for (let i = heap.length - 1; i > 0; ) {
          const up = (i - 1) >> 1;
          if (!worse(heap[i]!, heap[up]!)) break;
          [heap[i], heap[up]] = [heap[up]!, heap[i]!];
          i = up;
        }
      } else if (worse(heap[0]!, slot)) {
        heap[0] = slot;
        for (let i = 0; ; ) {
          const l = 2 * i + 1, r = l + 1;
          let m = i;
          if (l < heap.length && worse(heap[l]!, heap[m]!)) m = l;
          if (r < heap.length && worse(heap[r]!, heap[m]!)) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m]!, heap[i]!];
          i = m;
        }
      }
    }
    const hits = heap.map((slot) => ({ slot, score: scores[slot]! }));
    for (let j = 0; j < nTouched; j++) scores[touched[j]!] = 0;
    hits.sort((x, y) => y.score - x.score || x.slot - y.slot);
    return hits.map(({ slot, score }) => ({ id: this.bySlot[slot]!.id, score }));
  }
}
