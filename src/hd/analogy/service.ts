/** @module analogy — stateless parallelogram completion A:B::C:? over factored binary items, cleaned up by a full WASM scan. */
import { SvcError } from "../../errors.js";
import type { Kernels } from "../../kernels/abi.js";
import type { ScanPool } from "../../pool/scan-pool.js";
import { buildItemTable, type ItemTable } from "./item-table.js";

export { MAX_FEATURES } from "../input-rules.js";
export const DEFAULT_SEED = 0;
/**
 * Item vector width. 512 bits: the 2^20 table is 64 MiB and a full scan of it on the 2-core
 * target meets p50 <= 10 ms (bench/hd-analogy-bench.ts); the right answer is at distance 0
 * and the runner-up near D/2 - 5 sigma, so width buys nothing for correctness.
 */
export const DEFAULT_DIM_BITS = 512;
/** Item tables kept (LRU by (n_feat, seed)) up to this many bytes of rows; the newest table is always kept. */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

export interface AnalogyRequest {
  n_feat: number;
  a: number;
  b: number;
  c: number;
  seed?: number;
}

export interface AnalogyResult {
  candidate: number;
  candidate_bits: number[];
  cosine: number;
  runner_up: number;
  ambiguity: number;
  confidence: number;
}

export interface AnalogyOptions {
  dimBits?: number;
  cacheBytes?: number;
}

export class AnalogyService {
  readonly dimBits: number;
  readonly cacheBytes: number;
  private readonly kernels: Kernels;
  private readonly pool: ScanPool;
  /** Insertion order = recency (re-inserted on use). */
  private readonly tables = new Map<string, ItemTable>();

  constructor(deps: { kernels: Kernels; pool: ScanPool }, opts: AnalogyOptions = {}) {
    this.kernels = deps.kernels;
    this.pool = deps.pool;
    this.dimBits = opts.dimBits ?? DEFAULT_DIM_BITS;
    if (this.dimBits % 128 !== 0 || this.dimBits <= 0)
      throw new SvcError("E_DIMENSION", `analogy width must be a positive multiple of 128 bits, got ${this.dimBits}`, { field: "dimBits" });
    this.cacheBytes = opts.cacheBytes ?? DEFAULT_CACHE_BYTES;
  }

  /** Bytes of item tables currently cached. */
  get cachedBytes(): number {
    let s = 0;
    for (const t of this.tables.values()) s += t.bytes;
    return s;
  }

  /** The item table of (nFeat, seed), built on first use; evicts least recently used tables past the bound. */
  table(nFeat: number, seed: number): ItemTable {
    const key = `${nFeat}:${seed}`;
    let t = this.tables.get(key);
    if (t !== undefined) {
      this.tables.delete(key);
      this.tables.set(key, t);
      return t;
    }
    const need = 2 ** nFeat * (this.dimBits / 8);
    // evict before building so the heap can reuse the freed blocks
    for (const [k, old] of this.tables) {
      if (this.cachedBytes + need <= this.cacheBytes) break;
      this.tables.delete(k);
      old.arena.dispose();
    }
    t = buildItemTable(this.kernels.heap, nFeat, seed, this.dimBits);
    this.tables.set(key, t);
    return t;
  }

  /** `input` as the route's schema checked it (tools/hd-ops.ts); the item indices' bound is checked here (checkItems). */
  async analogy(input: AnalogyRequest): Promise<AnalogyResult> {
    const req = checkItems(input);
    const seed = req.seed ?? DEFAULT_SEED;
    const t = this.table(req.n_feat, seed);
    const heap = this.kernels.heap;
    const { rows, unpin } = t.arena.pin();
    const rowBytes = rows.words * 8;
    const q = heap.alloc(rowBytes);
    try {
      const m = new Uint32Array(heap.memory.buffer);
      const lanes = rowBytes / 4;
      const [qa, pa, pb, pc] = [q, rows.base + req.a * rowBytes, rows.base + req.b * rowBytes, rows.base + req.c * rowBytes].map(
        (p) => p / 4,
      ) as [number, number, number, number];
      // D = C xor (A xor B)
      for (let j = 0; j < lanes; j++) m[qa + j] = m[pc + j]! ^ (m[pa + j]! ^ m[pb + j]!);
      const top = await this.pool.topKShared(rows, q, 2);
      return describe(top.rows, top.dists, req.n_feat, this.dimBits);
    } finally {
      heap.release(q);
      unpin();
    }
  }
}

/**
 * cosine = 1 - 2 * hamming / D (bipolar vectors) of the query and the best item.
 * runner_up = the second-nearest item; ambiguity = max(0, its cosine) / cosine, in [0, 1]
 * (1 when cosine <= 0); confidence = clamp(cosine - runner-up cosine, 0, 1), the margin.
 */
export function describe(rows: Uint32Array, dists: Uint32Array, nFeat: number, dimBits: number): AnalogyResult {
  const cos = (d: number) => 1 - (2 * d) / dimBits;
  const candidate = rows[0]!;
  const cosine = cos(dists[0]!);
  const ruCos = cos(dists[1]!);
  const ambiguity = cosine <= 0 ? 1 : Math.min(1, Math.max(0, ruCos) / cosine);
  const confidence = Math.min(1, Math.max(0, cosine - ruCos));
  const candidate_bits = Array.from({ length: nFeat }, (_, f) => (candidate >>> f) & 1);
  return { candidate, candidate_bits, cosine, runner_up: rows[1]!, ambiguity, confidence };
}

/**
 * The rule the schema cannot state, as it relates fields: a, b and c are items of 2^n_feat (E_BAD_REQUEST naming
 * the field). Types, n_feat's range and the seed the route's schema checked (tools/hd-ops.ts).
 */
export function checkItems(req: AnalogyRequest): AnalogyRequest {
  const items = 2 ** req.n_feat;
  for (const name of ["a", "b", "c"] as const)
    if (req[name] >= items)
      throw new SvcError("E_BAD_REQUEST", `${name} must be an item index in 0..${items - 1} for n_feat ${req.n_feat}, got ${req[name]}`, {
        field: name,
      });
  return req;
}
