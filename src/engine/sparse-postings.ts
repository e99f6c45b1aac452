/**
 * @module sparse-postings — the inverted index of one partition's sparse vectors (row payloads, sparse.ts) and
 * its exact top-k by sparse dot product (sparse-only indexes): postings per sparse index, extended as rows are
 * appended, searched term at a time with MaxScore pruning when no query term can lower a score.
 */
import type { RoaringBitmap32 } from "./roaring.js";
import { sparseDot, sparseOf, type SparseVector } from "./sparse.js";

/** What the postings read of a partition: rows [0, rows) are append-only and a row's payload never changes. */
export interface SparseRows {
  readonly rows: number;
  payload(row: number): Uint8Array | null;
  idOf(row: number): string;
}

/** One sparse index's postings: the rows holding it, ascending, and their values (float32), with the values' range. */
interface Postings {
  rows: Uint32Array;
  values: Float32Array;
  length: number;
  max: number;
  min: number;
}

export interface SparseHit {
  row: number;
  score: number;
}

/**
 * Invariants: `indexed` rows have been added, in row order, so every list's rows ascend; dead rows stay in the
 * lists (a search skips rows `accept` refuses), and a compaction makes a new partition, hence new postings.
 */
export class SparsePostings {
  private readonly lists = new Map<number, Postings>();
  /** Rows [0, indexed) are in the lists. */
  indexed = 0;
  /** Postings held (all lists), dead rows included. */
  size = 0;
  /** Per-row accumulators and seen flags of a search, all 0 between searches (reused: a search runs to its end synchronously). */
  private acc = new Float64Array(0);
  private seen = new Uint8Array(0);

  /** Add the rows appended since the last call (a partition that shrank cannot be extended: the caller rebuilds). */
  extend(p: SparseRows): void {
    for (let row = this.indexed; row < p.rows; row++) {
      const s = sparseOf(p.payload(row));
      if (s === null) continue;
      for (let i = 0; i < s.indices.length; i++) this.add(s.indices[i]!, row, s.values[i]!);
    }
    this.indexed = Math.max(this.indexed, p.rows);
  }

  private add(index: number, row: number, value: number): void {
    let l = this.lists.get(index);
    if (l === undefined)
      this.lists.set(index, (l = { rows: new Uint32Array(4), values: new Float32Array(4), length: 0, max: -Infinity, min: Infinity }));
    if (l.length === l.rows.length) {
      const rows = new Uint32Array(l.rows.length * 2);
      rows.set(l.rows);
      const values = new Float32Array(l.values.length * 2);
      values.set(l.values);
      l.rows = rows;
      l.values = values;
    }
    l.rows[l.length] = row;
    l.values[l.length++] = value;
    if (value > l.max) l.max = value;
    if (value < l.min) l.min = value;
    this.size++;
  }

  /**
   * The top `k` rows `accept` accepts among those sharing at least one index with `q`, by sparse dot product
   * (larger first; ties: smaller id first), scores exactly sparseDot(q, row) (sparse.ts). `scanned`: postings read.
   *
   * Term at a time: the query's indices are walked by their bound (|q| times the list's extreme value), largest
   * first, adding into per-row accumulators. When every term adds >= 0 (each q value times its list's range is
   * non-negative: the usual non-negative weights), an accumulator only grows, so the k-th best one is a lower bound
   * of the final k-th best (theta); once the bounds of the terms left sum below theta, no row not yet seen can enter
   * the top k, and the remaining lists are only probed (binary search) for the rows that still can. A query with a
   * term that can subtract walks every list (still exact). Survivors are scored again with sparseDot, the order the
   * brute force adds in, so scores are exactly those of a scan (the pruning keeps a 1e-9 relative margin).
   */
  search(q: SparseVector, k: number, accept: RoaringBitmap32, p: SparseRows): { hits: SparseHit[]; scanned: number } {
    const terms: Array<{ q: number; l: Postings; bound: number }> = [];
    let monotone = true;
    for (let i = 0; i < q.indices.length; i++) {
      const l = this.lists.get(q.indices[i]!);
      const w = q.values[i]!;
      if (l === undefined || w === 0) continue;
      const hi = Math.max(w * l.max, w * l.min);
      const lo = Math.min(w * l.max, w * l.min);
      if (lo < 0) monotone = false;
      terms.push({ q: w, l, bound: Math.max(0, hi) * (1 + 1e-9) });
    }
    terms.sort((a, b) => b.bound - a.bound);
    const m = terms.length;
    const rest = new Float64Array(m + 1);
    for (let j = m - 1; j >= 0; j--) rest[j] = rest[j + 1]! + terms[j]!.bound;
    if (this.acc.length < this.indexed) {
      this.acc = new Float64Array(Math.max(this.indexed, 2 * this.acc.length));
      this.seen = new Uint8Array(this.acc.length);
    }
    const acc = this.acc;
    const seen = this.seen;
    const touched: number[] = [];
    let scanned = 0;
    let candidates: number[] | null = null;
    let theta = -Infinity;
    let thetaAt = 0;
    try {
      for (let j = 0; j < m; j++) {
        const { q: w, l } = terms[j]!;
        if (candidates === null && monotone && j > 0 && touched.length >= k) {
          // a theta from fewer rows stays a lower bound (accumulators only grow): recomputed once the rows seen have doubled
          if (touched.length >= 2 * thetaAt) {
            theta = Math.max(theta, kth(touched, acc, k));
            thetaAt = touched.length;
          }
          if (rest[j]! < theta) candidates = touched.filter((row) => acc[row]! + rest[j]! >= theta).sort((a, b) => a - b);
        }
        if (candidates === null) {
          scanned += l.length;
          for (let i = 0; i < l.length; i++) {
            const row = l.rows[i]!;
            if (!accept.has(row)) continue;
            if (seen[row] === 0) {
              seen[row] = 1;
              touched.push(row);
            }
            acc[row]! += w * l.values[i]!;
          }
        } else {
          let at = 0;
          for (const row of candidates) {
            at = lowerBound(l.rows, at, l.length, row);
            scanned++;
            if (at === l.length) break;
            if (l.rows[at] === row) acc[row]! += w * l.values[at]!;
          }
          if (candidates.length > k) {
            theta = Math.max(theta, kth(candidates, acc, k));
            const left = rest[j + 1]!;
            candidates = candidates.filter((row) => acc[row]! + left >= theta);
          }
        }
      }
      const rows = candidates ?? touched;
      // Rows within rounding of the k-th best accumulated score are scored again exactly, then ranked.
      const cut = rows.length > k ? kth(rows, acc, k) : -Infinity;
      const margin = Math.abs(cut) * 1e-9 + 1e-30;
      const hits = rows
        .filter((row) => acc[row]! >= cut - margin)
        .map((row) => ({ row, id: p.idOf(row), score: sparseDot(q, sparseOf(p.payload(row))!) }))
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, k)
        .map(({ row, score }) => ({ row, score }));
      return { hits, scanned };
    } finally {
      for (const row of touched) {
        acc[row] = 0;
        seen[row] = 0;
      }
    }
  }
}

/** The k-th largest accumulator of `rows` (k >= 1; -Infinity when there are fewer). */
function kth(rows: readonly number[], acc: Float64Array, k: number): number {
  const all = Float64Array.from(rows, (row) => acc[row]!).sort();
  return all.length < k ? -Infinity : all[all.length - k]!;
}

/** First index in rows[from, len) with rows[i] >= row (rows ascending). */
function lowerBound(rows: Uint32Array, from: number, len: number, row: number): number {
  let lo = from;
  let hi = len;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]! < row) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
