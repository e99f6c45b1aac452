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
  /** dense slot for the search's score array (slots of removed documents are reused) */
  slot: number;
  /** insertion sequence number: ties in score rank the earlier-added document first */
  seq: number;
  length: number;
  tf: Map<string, number>;
}

/**
 * score(q, d) = sum over query terms t (with multiplicity) of
 *   idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)),
 * idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative).
 * Statistics (N, df, avgdl) are always those of the documents currently in the index.
 */
export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  private readonly termsOf: (text: string) => string[];
  private readonly docs = new Map<string, Doc>();
  /** term -> documents holding it, with their term frequency */
  private readonly postings = new Map<string, Map<Doc, number>>();
  private totalLength = 0;
  private seq = 0;
  private slots = 0;
  private readonly freeSlots: number[] = [];
  /** per-slot score accumulator and the slots a search touched, reused across searches */
  private scores = new Float64Array(0);

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
    const doc: Doc = { id, slot: this.freeSlots.pop() ?? this.slots++, seq: this.seq++, length: list.length, tf };
    this.docs.set(id, doc);
    this.totalLength += doc.length;
    for (const [t, n] of tf) {
      let p = this.postings.get(t);
      if (!p) this.postings.set(t, (p = new Map()));
      p.set(doc, n);
    }
  }

  /** Removes a document; false when the id is not in the index. */
  remove(id: string): boolean {
    const doc = this.docs.get(id);
    if (!doc) return false;
    this.docs.delete(id);
    this.freeSlots.push(doc.slot);
    this.totalLength -= doc.length;
    for (const t of doc.tf.keys()) {
      const p = this.postings.get(t)!;
      p.delete(doc);
      if (p.size === 0) this.postings.delete(t);
    }
    return true;
  }

  /** The topK best documents with a positive score, best first (ties: earlier added first). */
  search(query: string, topK: number): Bm25Hit[] {
    if (!Number.isInteger(topK) || topK < 1) throw new SvcError("E_TOP_K", "topK must be a positive integer", { field: "topK" });
    const n = this.docs.size;
    if (n === 0) return [];
    const avgdl = this.totalLength / n || 1;
    const qtf = new Map<string, number>();
    for (const t of this.termsOf(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    if (this.scores.length < this.slots) this.scores = new Float64Array(Math.max(this.slots, this.scores.length * 2));
    const scores = this.scores;
    const touched: Doc[] = [];
    for (const [t, mult] of qtf) {
      const p = this.postings.get(t);
      if (!p) continue;
      const idf = Math.log(1 + (n - p.size + 0.5) / (p.size + 0.5));
      const k1 = this.k1, norm = k1 * (1 - this.b), per = (k1 * this.b) / avgdl, w = mult * idf * (k1 + 1);
      for (const [doc, tf] of p) {
        if (scores[doc.slot] === 0) touched.push(doc);
        scores[doc.slot]! += (w * tf) / (tf + norm + per * doc.length);
      }
    }
    // best topK by (score desc, seq asc) with a bounded min-heap (worst on top), then sorted
    const heap: Doc[] = [];
    const worse = (a: Doc, b: Doc) => scores[a.slot]! < scores[b.slot]! || (scores[a.slot] === scores[b.slot] && a.seq > b.seq);
    for (const doc of touched) {
      if (!(scores[doc.slot]! > 0)) continue;
      if (heap.length < topK) {
        heap.push(doc);
        for (let i = heap.length - 1; i > 0; ) {
          const up = (i - 1) >> 1;
          if (!worse(heap[i]!, heap[up]!)) break;
          [heap[i], heap[up]] = [heap[up]!, heap[i]!];
          i = up;
        }
      } else if (worse(heap[0]!, doc)) {
        heap[0] = doc;
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
    const hits = heap.map((doc) => ({ doc, score: scores[doc.slot]! }));
    for (const doc of touched) scores[doc.slot] = 0;
    hits.sort((x, y) => y.score - x.score || x.doc.seq - y.doc.seq);
    return hits.map(({ doc, score }) => ({ id: doc.id, score }));
  }
}
