/** @module usearch — usearch `exactSearch` (brute force, native SIMD) over 1-bit rows expanded to ±1 int8, one int8 per bit. */
import usearch, { MetricKind, Matches } from "usearch";
import { sortTopK, type PeerEngine, type TopK } from "./peer.js";

export interface UsearchOptions {
  /** native worker threads for exactSearch; default 1 (0 would mean "all cores" to usearch). */
  threads?: number;
}

/**
 * Writes `count` packed rows as ±1 int8 vectors of `dimBits` components: bit 1 → +1, bit 0 → -1.
 * With L2sq, each differing bit contributes (±2)^2 = 4 and each equal bit 0, so
 * l2sq = 4 * hamming exactly (≤ 4*dimBits, far below 2^24, so exact in the f32 usearch returns).
 */
function expandBits(src: Uint8Array, count: number, dimBits: number, bytesPerRow: number, out: Int8Array): void {
  for (let i = 0; i < count; i++) {
    const s = i * bytesPerRow,
      o = i * dimBits;
    for (let j = 0; j < dimBits; j++) out[o + j] = ((src[s + (j >> 3)]! >> (j & 7)) & 1) * 2 - 1;
  }
}

export class UsearchEngine implements PeerEngine {
  readonly name: string;
  private readonly threads: number;
  private data = new Int8Array(0); // n * dimBits, own ArrayBuffer at offset 0
  private query = new Int8Array(0); // scratch for single queries, dimBits
  private n = 0;
  private dimBits = 0;
  private bytesPerRow = 0;

  constructor(opts: UsearchOptions = {}) {
    this.threads = opts.threads ?? 1;
    this.name = this.threads === 1 ? "usearch exact" : `usearch exact (${this.threads} threads)`;
  }

  async build(rows: Uint8Array, n: number, dimBits: number, bytesPerRow: number): Promise<void> {
    this.n = n;
    this.dimBits = dimBits;
    this.bytesPerRow = bytesPerRow;
    this.data = new Int8Array(n * dimBits);
    expandBits(rows, n, dimBits, bytesPerRow, this.data);
    this.query = new Int8Array(dimBits);
  }

  search(query: Uint8Array, k: number): TopK {
    k = Math.min(k, this.n);
    if (k <= 0) return { rows: new Int32Array(0), dists: new Int32Array(0) };
    // The native binding reads ArrayBuffer.Data() and ignores byteOffset: typed arrays handed to
    // exactSearch must start at offset 0 of their buffer (this.query and this.data both do).
    expandBits(query, 1, this.dimBits, this.bytesPerRow, this.query);
    const res = usearch.exactSearch(this.data, this.query, this.dimBits, k, MetricKind.L2sq, this.threads);
    if (!(res instanceof Matches)) throw new Error("usearch: expected Matches for a single query");
    return toTopK(res.keys, res.distances, 0, k);
  }

  searchBatch(queries: Uint8Array, nq: number, k: number): TopK[] {
    k = Math.min(k, this.n);
    if (nq <= 0) return [];
    if (k <= 0) return Array.from({ length: nq }, () => ({ rows: new Int32Array(0), dists: new Int32Array(0) }));
    const q = new Int8Array(nq * this.dimBits);
    expandBits(queries, nq, this.dimBits, this.bytesPerRow, q);
    const res = usearch.exactSearch(this.data, q, this.dimBits, k, MetricKind.L2sq, this.threads);
    // usearch returns Matches when nq == 1, BatchMatches otherwise; both lay results out as nq*k.
    const out: TopK[] = [];
    for (let i = 0; i < nq; i++) out.push(toTopK(res.keys, res.distances, i * k, k));
    return out;
  }

  close(): void {
    this.data = new Int8Array(0);
    this.query = new Int8Array(0);
    this.n = 0;
  }
}

/** keys are row offsets into the dataset (exactSearch keys = dataset index); dist/4 = Hamming bits. */
function toTopK(keys: BigUint64Array, distances: Float32Array, from: number, k: number): TopK {
  const rows = new Int32Array(k);
  const dists = new Int32Array(k);
  for (let i = 0; i < k; i++) {
    rows[i] = Number(keys[from + i]!);
    const h = distances[from + i]! / 4;
    if (!Number.isInteger(h)) throw new Error(`usearch: non-integral l2sq/4 distance ${distances[from + i]}`);
    dists[i] = h;
  }
  return sortTopK(rows, dists);
}
