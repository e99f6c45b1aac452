/** @module naive-js — hand-written JS brute-force Hamming top-k (Uint32 words + SWAR popcount), the baseline a Node user would write. */
import type { PeerEngine, TopK } from "./peer.js";

/** Bit count of a 32-bit word (SWAR); result in 0..32. */
export function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * Copies packed rows into word-aligned storage: each row padded with zero bytes to `words` u32 words.
 * Little-endian word view keeps bit j of the row in word j>>5 (bit positions permute within a word,
 * which Hamming distance does not see since queries are copied the same way).
 */
function toWords(src: Uint8Array, n: number, bytesPerRow: number, words: number): Uint32Array {
  const out = new Uint32Array(n * words);
  const bytes = new Uint8Array(out.buffer);
  for (let i = 0; i < n; i++) {
    bytes.set(src.subarray(i * bytesPerRow, (i + 1) * bytesPerRow), i * words * 4);
  }
  return out;
}

export class NaiveJsEngine implements PeerEngine {
  readonly name = "naive JS";
  private data: Uint32Array = new Uint32Array(0);
  private n = 0;
  private words = 0; // u32 words per row
  private bytesPerRow = 0;
  private q = new Uint32Array(0); // query scratch, `words` long; bytes past bytesPerRow stay zero
  private qBytes = new Uint8Array(0); // byte view of q

  async build(rows: Uint8Array, n: number, _dimBits: number, bytesPerRow: number): Promise<void> {
    this.n = n;
    this.bytesPerRow = bytesPerRow;
    this.words = Math.ceil(bytesPerRow / 4);
    this.data = toWords(rows, n, bytesPerRow, this.words);
    this.q = new Uint32Array(this.words);
    this.qBytes = new Uint8Array(this.q.buffer);
  }

  search(query: Uint8Array, k: number): TopK {
    this.qBytes.set(query.subarray(0, this.bytesPerRow));
    return this.scan(this.q, k);
  }

  /**
   * Linear scan keeping a sorted buffer of the best `k` (dist asc, row asc).
   * Rows are visited in ascending order, so a candidate only enters when strictly closer than the
   * current worst, and is inserted after existing equal distances: ties stay ordered by row.
   */
  private scan(q: Uint32Array, k: number): TopK {
    const { data, n, words } = this;
    k = Math.max(0, Math.min(k, n));
    const rows = new Int32Array(k);
    const dists = new Int32Array(k);
    if (k <= 0) return { rows, dists };
    let filled = 0;
    let worst = 0x7fffffff; // dists[k-1] once filled, else +inf
    for (let r = 0, base = 0; r < n; r++, base += words) {
      let d = 0;
      for (let w = 0; w < words; w++) d += popcount32(data[base + w]! ^ q[w]!);
      if (d >= worst) continue;
      let j = filled < k ? filled++ : k - 1;
      while (j > 0 && dists[j - 1]! > d) {
        dists[j] = dists[j - 1]!;
        rows[j] = rows[j - 1]!;
        j--;
      }
      dists[j] = d;
      rows[j] = r;
      if (filled === k) worst = dists[k - 1]!;
    }
    return { rows, dists };
  }

  close(): void {
    this.data = new Uint32Array(0);
    this.n = 0;
  }
}
