/** @module estimate — asymmetric scores: the float query (rotated) against a row's sign bits, via per-byte lookup tables. */

/**
 * For a unit row x and query q, both rotated, q·x ≈ c · Σ_j q_j sign(x_j): far closer to
 * the true cosine than the Hamming distance of two sign vectors, because the query keeps
 * its magnitudes. Σ_j q_j sign(x_j) = 2 Σ_{bit j set} q_j - Σ_j q_j, so ranking by the sum
 * over set bits is enough. Table entry [p][v] = Σ of q over the set bits of byte value v at
 * byte position p: 256 f32 per byte of row, built incrementally (one add per entry).
 */
export class AsymmetricScorer {
  private readonly table: Float32Array;
  private readonly bytes: number;

  constructor(rotated: Float32Array, dimBits: number) {
    this.bytes = Math.ceil(dimBits / 8);
    const t = new Float32Array(this.bytes * 256);
    for (let p = 0; p < this.bytes; p++) {
      const base = p * 256;
      for (let v = 1; v < 256; v++) {
        const low = 31 - Math.clz32(v & -v); // lowest set bit
        const j = p * 8 + low;
        t[base + v] = t[base + (v & (v - 1))]! + (j < dimBits ? rotated[j]! : 0);
      }
    }
    this.table = t;
  }

  /** Score of the packed row starting at `ptr` in `heap` (higher = closer). */
  score(heap: Uint8Array, ptr: number): number {
    const t = this.table;
    let s = 0;
    for (let p = 0; p < this.bytes; p++) s += t[(p << 8) | heap[ptr + p]!]!;
    return s;
  }
}
