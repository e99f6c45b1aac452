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
    const doc: Doc = { id, seq: this.seq++, length: list.length, tf };
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
    const scores = new Map<Doc, number>();
    for (const [t, mult] of qtf) {
      const p = this.postings.get(t);
      if (!p) continue;
      const idf = Math.log(1 + (n - p.size + 0.5) / (p.size + 0.5));
      for (const [doc, tf] of p) {
        const s = (mult * idf * tf * (this.k1 + 1)) / (tf + this.k1 * (1 - this.b + (this.b * doc.length) / avgdl));
        scores.set(doc, (scores.get(doc) ?? 0) + s);
      }
    }
    const hits = [...scores].filter(([, s]) => s > 0);
    hits.sort((x, y) => y[1] - x[1] || x[0].seq - y[0].seq);
    return hits.slice(0, topK).map(([doc, score]) => ({ id: doc.id, score }));
  }
}
