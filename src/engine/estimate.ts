/** @module estimate — asymmetric scores: the float query (rotated) against a row's sign bits, via per-byte lookup tables (scored in WASM: asymScores). */
import type { Kernels, RowsRef } from "../kernels/abi.js";
import { invariant } from "../invariant.js";

/**
 * For a unit row x and query q, both rotated, q·x ≈ c · Σ_j q_j sign(x_j): far closer to
 * the true cosine than the Hamming distance of two sign vectors, because the query keeps
 * its magnitudes. Σ_j q_j sign(x_j) = 2 Σ_{bit j set} q_j - Σ_j q_j, so ranking by the sum
 * over set bits is enough. Table entry [p][v] = Σ of q over the set bits of nibble value v
 * at nibble position p: 16 f32 per 4 bits, 8 adds per nibble (fillTable), so a 1024-d query
 * costs 2,048 adds to prepare and a row 256 lookups to score.
 */
export class AsymmetricScorer {
  private readonly table: Float32Array;
  private readonly bytes: number;

  constructor(rotated: Float32Array, dimBits: number) {
    this.bytes = Math.ceil(dimBits / 8);
    this.table = new Float32Array(this.bytes * 32);
    fillTable(rotated, dimBits, this.table);
  }

  /** Score of the packed row starting at `ptr` in `heap` (higher = closer). The reference of the asymScores kernel. */
  score(heap: Uint8Array, ptr: number): number {
    const t = this.table;
    let s = 0;
    for (let p = 0; p < this.bytes; p++) {
      const b = heap[ptr + p]!;
      s += t[(p << 5) | (b & 15)]! + t[(p << 5) | 16 | (b >> 4)]!;
    }
    return s;
  }
}

/**
 * The lookup table of `rotated` (dimBits used) into t: 32 f32 per row byte (low nibble, then high); entries past dimBits are 0.
 * The reference of the asymTable kernel (assembly/rescore.ts), which gives the same bits; AsymmetricScorer's table.
 * Unrolled, sums in f64 as (q0 + q1) + q2 + q3 over the set bits (the same values as summing the four terms with zeros for
 * clear bits): a loop of 15 entries x 4 conditional terms per nibble cost ~40 µs per 1024-d query, this ~5.
 */
export function fillTable(rotated: ArrayLike<number>, dimBits: number, t: Float32Array): void {
  const nibbles = Math.min(Math.ceil(dimBits / 8) * 2, t.length >> 4);
  const q = (j: number) => (j < dimBits ? rotated[j]! : 0);
  for (let p = 0; p < nibbles; p++) {
    const b = p << 4;
    const q0 = q(4 * p),
      q1 = q(4 * p + 1),
      q2 = q(4 * p + 2),
      q3 = q(4 * p + 3);
    const s01 = q0 + q1,
      s02 = q0 + q2,
      s12 = q1 + q2,
      s012 = s01 + q2;
    t[b] = 0;
    t[b + 1] = q0;
    t[b + 2] = q1;
    t[b + 3] = s01;
    t[b + 4] = q2;
    t[b + 5] = s02;
    t[b + 6] = s12;
    t[b + 7] = s012;
    t[b + 8] = q3;
    t[b + 9] = q0 + q3;
    t[b + 10] = q1 + q3;
    t[b + 11] = s01 + q3;
    t[b + 12] = q2 + q3;
    t[b + 13] = s02 + q3;
    t[b + 14] = s12 + q3;
    t[b + 15] = s012 + q3;
  }
  t.fill(0, nibbles << 4);
}

/**
 * The `keep` of `candidates` (row ids of `rows`) with the best asymmetric estimate, ties by row: the table is
 * built in shared memory by the asymTable kernel (fillTable's bits; in JS it was ~7% of a 1024-d query's engine CPU)
 * and the rows scored by the asymScores kernel (one call for all candidates). `rotatedAt`: where `rotated` lies in shared
 * memory, when it does (0: it is copied in).
 */
export function bestEstimated(
  kernels: Kernels,
  rows: RowsRef,
  candidates: Uint32Array,
  rotated: Float32Array,
  keep: number,
  rotatedAt = 0,
): Uint32Array {
  const n = candidates.length;
  if (n <= keep) return candidates;
  const heap = kernels.heap;
  const rowBytes = rows.words * 8;
  const tableBytes = rowBytes * 32 * 4;
  const dim = Math.min(rotated.length, rowBytes * 8);
  const block = heap.alloc(tableBytes + n * 20 + (rotatedAt === 0 ? dim * 4 : 0));
  try {
    const out = block + tableBytes;
    const work = out + n * 8; // bestScored's quickselect copy, here rather than a malloc'd Float64Array
    const list = work + n * 8;
    const q = rotatedAt === 0 ? list + n * 4 : rotatedAt;
    if (rotatedAt === 0) heap.f32(q, dim).set(rotated.subarray(0, dim));
    kernels.asymTable(rows, q, dim, block);
    heap.u32(list, n).set(candidates);
    kernels.asymScores(rows, list, n, block, out);
    const scores = new Float64Array(heap.memory.buffer, out, n);
    return bestScored(scores, candidates, keep, new Float64Array(heap.memory.buffer, work, n));
  } finally {
    heap.release(block);
  }
}

/**
 * The `keep` < n candidates with the highest scores, ties by the smaller row id, in no particular order: the cut is the
 * (n - keep)-th smallest score, found by quickselect on a copy (Float64Array.sort of 5,000 scores took ~2.6 ms here):
 * in `work` (n scores, reordered) when the caller has room for it, else a new array.
 */
export function bestScored(scores: Float64Array, candidates: Uint32Array, keep: number, work?: Float64Array): Uint32Array {
  const n = candidates.length;
  invariant(work === undefined || work.length === n, "bestScored: the work array holds one score per candidate");
  const copy = work ?? new Float64Array(n);
  copy.set(scores);
  const cut = nthSmallest(copy, n - keep);
  // Every row above the cut is kept; of those at the cut, the smallest rows until `keep`.
  const out = new Uint32Array(keep);
  const ties: number[] = [];
  let o = 0;
  for (let i = 0; i < n; i++) {
    if (scores[i]! > cut) out[o++] = candidates[i]!;
    else if (scores[i] === cut) ties.push(candidates[i]!);
  }
  ties.sort((a, b) => a - b);
  for (let t = 0; o < keep; t++) out[o++] = ties[t]!;
  return out;
}

/** The value that would be at index `nth` of `a` sorted ascending (a is reordered): quickselect with median-of-three pivots. */
export function nthSmallest(a: Float64Array, nth: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    const x = a[lo]!,
      y = a[mid]!,
      z = a[hi]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i++] = a[j]!;
        a[j--] = t;
      }
    }
    if (nth <= j) hi = j;
    else if (nth >= i) lo = i;
    else return a[nth]!;
  }
  return a[nth]!;
}
