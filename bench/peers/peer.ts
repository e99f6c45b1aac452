/** @module peer — the interface every benchmarked engine implements. */

/** Ascending distance, ties by ascending row; dists are Hamming distances in bits. */
export interface TopK {
  rows: Int32Array;
  dists: Int32Array;
}

export interface PeerEngine {
  readonly name: string; // e.g. "usearch exact", "sqlite-vec", "naive JS"
  /** rows: n packed rows of `bytesPerRow` bytes (bit j of a row is (row[j>>3] >> (j&7)) & 1); dimBits <= bytesPerRow*8, padding bits are zero. */
  build(rows: Uint8Array, n: number, dimBits: number, bytesPerRow: number): Promise<void>;
  /** one query row (same packing). Must return exact top-k. */
  search(query: Uint8Array, k: number): TopK;
  /** optional: many queries at once if the engine has a batch path */
  searchBatch?(queries: Uint8Array, nq: number, k: number): TopK[];
  close(): void;
}

/**
 * Sorts parallel (row, dist) arrays in place into the TopK order (dist asc, row asc).
 * For engines whose native order among tied distances is unspecified; k is small, so insertion sort.
 */
export function sortTopK(rows: Int32Array, dists: Int32Array): TopK {
  for (let i = 1; i < rows.length; i++) {
    const r = rows[i]!,
      d = dists[i]!;
    let j = i - 1;
    while (j >= 0 && (dists[j]! > d || (dists[j] === d && rows[j]! > r))) {
      rows[j + 1] = rows[j]!;
      dists[j + 1] = dists[j]!;
      j--;
    }
    rows[j + 1] = r;
    dists[j + 1] = d;
  }
  return { rows, dists };
}
