/** @module estimate — asymmetric scores: the float query (rotated) against a row's sign bits, via per-byte lookup tables (scored in WASM: asymScores). */
import type { Kernels, RowsRef } from "../kernels/abi.js";

/**
 * For a unit row x and query q, both rotated, q·x ≈ c · Σ_j q_j sign(x_j): far closer to
 * the true cosine than the Hamming distance of two sign vectors, because the query keeps
 * its magnitudes. Σ_j q_j sign(x_j) = 2 Σ_{bit j set} q_j - Σ_j q_j, so ranking by the sum
 * over set bits is enough. Table entry [p][v] = Σ of q over the set bits of nibble value v
 * at nibble position p: 16 f32 per 4 bits, built incrementally (one add per entry), so a
 * 1024-d query costs 3,840 adds to prepare and a row 256 lookups to score.
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

/** The lookup table of `rotated` (dimBits used) into t: 32 f32 per row byte (low nibble, then high); entries past dimBits are 0. */
export function fillTable(rotated: ArrayLike<number>, dimBits: number, t: Float32Array): void {
  t.fill(0);
  const nibbles = Math.min(Math.ceil(dimBits / 8) * 2, t.length >> 4);
  for (let p = 0; p < nibbles; p++) {
    const base = p << 4;
    const q0 = 4 * p < dimBits ? rotated[4 * p]! : 0;
    const q1 = 4 * p + 1 < dimBits ? rotated[4 * p + 1]! : 0;
    const q2 = 4 * p + 2 < dimBits ? rotated[4 * p + 2]! : 0;
    const q3 = 4 * p + 3 < dimBits ? rotated[4 * p + 3]! : 0;
    for (let v = 1; v < 16; v++) t[base + v] = (v & 1 ? q0 : 0) + (v & 2 ? q1 : 0) + (v & 4 ? q2 : 0) + (v & 8 ? q3 : 0);
  }
}

/**
 * The `keep` of `candidates` (row ids of `rows`) with the best asymmetric estimate, ties by row: the table is
 * built in shared memory and the rows scored by the asymScores kernel (one call for all candidates).
 */
export function bestEstimated(kernels: Kernels, rows: RowsRef, candidates: Uint32Array, rotated: Float32Array, keep: number): Uint32Array {
  const n = candidates.length;
  if (n <= keep) return candidates;
  const heap = kernels.heap;
  const rowBytes = rows.words * 8;
  const tableBytes = rowBytes * 32 * 4;
  const block = heap.alloc(tableBytes + n * 12);
  try {
    fillTable(rotated, Math.min(rotated.length, rowBytes * 8), heap.f32(block, rowBytes * 32));
    const out = block + tableBytes;
    const list = out + n * 8;
    heap.u32(list, n).set(candidates);
    kernels.asymScores(rows, list, n, block, out);
    const s = new Float64Array(heap.memory.buffer, out, n);
    const order = Array.from({ length: n }, (_, i) => i);
    order.sort((a, b) => s[b]! - s[a]! || candidates[a]! - candidates[b]!);
    return Uint32Array.from(order.slice(0, keep), (i) => candidates[i]!);
  } finally {
    heap.release(block);
  }
}
