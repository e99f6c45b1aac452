/** @module search — the read path of one partition: plan (full, masked or candidate-list scan), 1-bit top-k in WASM, rescoring. */
import type { Kernels, RowsRef, TopK } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { bestEstimated } from "./estimate.js";
import type { Filter } from "./filter/parse.js";
import { setBits } from "./filter/row-set.js";
import { ANN_FILTER_EXACT_FRACTION, DEFAULT_PROBE, filteredCap, MASKED_PROBE_MARGIN, SCATTERED_ROW_COST, type IvfIndex, type ProbeParams } from "./ivf.js";
import type { Partition } from "./partition.js";
import type { RoaringBitmap32 } from "./roaring.js";

/** Unfiltered scans over a partition with at most this many tombstones ask for k + tombstones and drop the dead; past it they mask. */
export const TOMBSTONE_SKIP_MAX = 256;
/**
 * Cosine collections rank in three stages: the 1-bit scan keeps max(k * CANDIDATE_FACTOR,
 * CANDIDATE_MIN) rows by Hamming distance; the asymmetric estimate (float query against
 * sign bits) keeps max(k * RESCORE_FACTOR, RESCORE_MIN) of them; those are rescored with
 * their stored float32 values (positional reads). Measured on clustered 1024-d data in
 * bench/RESULTS.md (recall@10 against exact cosine).
 */
export const CANDIDATE_FACTOR = 10;
export const CANDIDATE_MIN = 100;

/** Rows a cosine query of top-k keeps from the 1-bit stage by default. */
export function candidatesFor(k: number): number {
  return Math.max(k, k * CANDIDATE_FACTOR, CANDIDATE_MIN);
}
export const RESCORE_FACTOR = 4;
export const RESCORE_MIN = 40;

export type Plan = "full" | "full-skip-dead" | "masked" | "list" | "empty" | "ivf" | "ivf-masked" | "hybrid";

export interface SearchQuery {
  /** Packed query bits in shared memory. */
  bits: number;
  /** The L2-normalized query (cosine collections), for rescoring. */
  unit: Float32Array | null;
  /** The rotated query (cosine collections), for the asymmetric estimate. */
  rotated: Float32Array | null;
  k: number;
  filter: Filter | null;
  /** Rows kept by the 1-bit scan (cosine); default max(k * CANDIDATE_FACTOR, CANDIDATE_MIN). */
  candidates?: number;
  /** Rows rescored with float32 values (cosine); default max(k * RESCORE_FACTOR, RESCORE_MIN). */
  rescore?: number;
  /** Scan exactly even when the partition has an approximate index. */
  exact?: boolean;
  /** How the approximate index is probed (default DEFAULT_PROBE). */
  probe?: ProbeParams;
}

export interface Hit {
  row: number;
  score: number;
}

export interface SearchResult {
  hits: Hit[];
  plan: Plan;
  /** Milliseconds per stage: filter compile, 1-bit scan, asymmetric estimate, exact rescoring. */
  timings: { filter: number; scan: number; estimate: number; rescore: number };
  /** Rows the filter matched (undefined without a filter). */
  matched?: number;
  /** Index plans: the lists probed. */
  probed?: number;
  /** Index plans: about how many rows were compared (centroids, probed lists at their mean size, the delta); what metering charges. */
  scanned?: number;
}

export async function search(kernels: Kernels, pool: ScanPool, p: Partition, q: SearchQuery): Promise<SearchResult> {
  const cosine = p.values !== null;
  // An index whose calibration found the exact scan as good serves only broad filters (and explicit probes).
  const ivf = q.exact ? null : p.ivf;
  const probeIvf = ivf !== null && (ivf.calibrated !== null || q.probe !== undefined) ? ivf : null;
  const want = cosine ? Math.max(q.k, q.candidates ?? candidatesFor(q.k)) : q.k;
  const heap = kernels.heap;
  const { rows, unpin } = p.arena.pin();
  const owned: number[] = [];
  const timings = { filter: 0, scan: 0, estimate: 0, rescore: 0 };
  let t = performance.now();
  const lap = (stage: keyof typeof timings) => {
    const now = performance.now();
    timings[stage] = now - t;
    t = now;
  };
  try {
    let top: TopK;
    let plan: Plan;
    let matched: number | undefined;
    const probed = { lists: 0, rows: 0 };
    if (q.filter !== null) {
      const matches = p.index.evaluate(q.filter, p.live());
      const count = matches.size;
      matched = count;
      lap("filter");
      if (count === 0) return { hits: [], plan: "empty", matched, timings };
      const k = Math.min(want, count);
      let masked: TopK | null = null;
      let mask = 0;
      if (probeIvf !== null && maskedProbeCheaper(probeIvf, rows, q, k, count, count / p.liveCount)) {
        // The lists nearest the query, as many more as the filter is selective, with the filter as a mask.
        mask = maskOf(kernels, rows.count, matches, owned);
        masked = probeIndex(probeIvf, rows, q, probed, k, mask, false, count / p.liveCount);
        // Fewer matches than asked in those lists (a filter keeping rows far from the query): as without a calibrated probe, below.
        if (masked.rows.length < k) masked = null;
      }
      if (masked === null && ivf !== null && count > ANN_FILTER_EXACT_FRACTION * p.liveCount) {
        // A broad filter without a capped probe: every list the stop rule takes, with the mask.
        masked = probeIndex(ivf, rows, q, probed, k, mask || maskOf(kernels, rows.count, matches, owned), true);
      }
      if (masked !== null) {
        plan = "ivf-masked";
        top = masked;
      } else {
        plan = "list";
        const list = heap.put(matches.toUint32Array());
        owned.push(list);
        top = await pool.topKList(rows, list, count, q.bits, k);
      }
    } else {
      const dead = p.tombstones;
      const live = rows.count - dead.size;
      if (live <= 0) return { hits: [], plan: "empty", timings };
      if (probeIvf !== null) {
        plan = "ivf";
        if (dead.size <= TOMBSTONE_SKIP_MAX) {
          top = await probeUnmasked(pool, probeIvf, rows, q, probed, Math.min(want + dead.size, rows.count));
          if (dead.size > 0) top = dropDead(top, dead, want);
        } else {
          const mask = liveMask(kernels, rows.count, dead, owned);
          top = probeIndex(probeIvf, rows, q, probed, Math.min(want, live), mask, false);
        }
      } else if (dead.size <= TOMBSTONE_SKIP_MAX) {
        plan = dead.size === 0 ? "full" : "full-skip-dead";
        top = await pool.topKShared(rows, q.bits, Math.min(want + dead.size, rows.count));
        if (dead.size > 0) top = dropDead(top, dead, want);
      } else {
        plan = "masked";
        const mask = liveMask(kernels, rows.count, dead, owned);
        top = await pool.topK(rows, q.bits, Math.min(want, live), { mask });
      }
    }
    lap("scan");
    let hits: Hit[];
    if (cosine) {
      const exact = Math.max(q.k, q.rescore ?? Math.max(q.k * RESCORE_FACTOR, RESCORE_MIN));
      const best = bestEstimated(kernels, rows, top.rows, q.rotated!, exact);
      lap("estimate");
      hits = rescore(kernels, p, best, q.unit!, q.k);
      lap("rescore");
    } else hits = hammingHits(top, p.shape.dimension, q.k);
    return { hits, plan, matched, timings, ...(plan === "ivf" || plan === "ivf-masked" ? { probed: probed.lists, scanned: probed.rows } : {}) };
  } finally {
    for (const ptr of owned) heap.release(ptr);
    unpin();
  }
}

/**
 * Top-k over the index's probed lists and its delta, in the calling thread (a probe reads a
 * few percent of the rows: less than a worker hand-off costs). `exhaustive` lifts the cap on
 * lists probed; `selectivity` (a filter's mask) raises it (filteredCap).
 */
function probeIndex(ivf: IvfIndex, rows: RowsRef, q: SearchQuery, probed: { lists: number; rows: number }, k: number, mask: number, exhaustive: boolean, selectivity = 1): TopK {
  const res = ivf.probe(rows, q.bits, k, q.probe ?? ivf.calibrated ?? DEFAULT_PROBE, exhaustive, mask, selectivity);
  return counted(ivf, rows, res, probed);
}

/** Rows compared by a probe: every centroid, the probed lists (at their mean size) and the delta; what metering charges. */
function counted(ivf: IvfIndex, rows: RowsRef, res: { top: TopK; probed: number }, probed: { lists: number; rows: number }): TopK {
  probed.lists = res.probed;
  probed.rows = Math.round(ivf.lists + (res.probed * ivf.indexedRows) / ivf.lists + (rows.count - ivf.indexedRows));
  return res.top;
}

/** probeIndex without a mask, through the pool: on a worker past its probeInlineBelow rows (a probe at 1M rows is ~0.1 ms of the main thread), else here. */
async function probeUnmasked(pool: ScanPool, ivf: IvfIndex, rows: RowsRef, q: SearchQuery, probed: { lists: number; rows: number }, k: number): Promise<TopK> {
  return counted(ivf, rows, await pool.probe(rows, ivf.ref(), q.bits, k, ivf.limits(k, q.probe ?? ivf.calibrated ?? DEFAULT_PROBE, false)), probed);
}

/**
 * Many unfiltered queries of a hamming partition at once (nq packed rows at `queries`): with
 * an index, the probes are spread over the pool's workers; without one (or `exact`), one
 * blocked exact scan. Partitions with more than TOMBSTONE_SKIP_MAX tombstones are the
 * caller's to query one by one. Returns per query its best k hits.
 */
export async function searchBatch(pool: ScanPool, p: Partition, queries: number, nq: number, k: number, opts: { exact?: boolean; probe?: ProbeParams }): Promise<{ hits: Hit[][]; plan: Plan }> {
  const dead = p.tombstones;
  const { rows, unpin } = p.arena.pin();
  try {
    const want = Math.min(k + dead.size, rows.count);
    const ivf = opts.exact || p.ivf === null || (p.ivf.calibrated === null && opts.probe === undefined) ? null : p.ivf;
    let tops: TopK[];
    if (ivf !== null) {
      const probe = opts.probe ?? ivf.calibrated ?? DEFAULT_PROBE;
      tops = await pool.probeBatch(rows, ivf.ref(), queries, nq, want, { minProbe: probe.minProbe, cap: Math.max(probe.maxProbe, probe.minProbe) * Math.ceil(want / 10), slack: probe.slack });
    } else tops = await pool.topKBatch(rows, queries, nq, want);
    const hits = tops.map((t) => hammingHits(dead.size > 0 ? dropDead(t, dead, k) : t, p.shape.dimension, k));
    return { hits, plan: ivf !== null ? "ivf" : "full" };
  } finally {
    unpin();
  }
}

/**
 * The planner's choice for a filter keeping `count` (`selectivity` of the live rows), on an index
 * with a probe and a calibrated filterFactor: the masked probe reads its capped lists
 * (filteredCap, at their mean size) and the delta, contiguous rows; the exact list scan reads
 * `count` scattered ones, each costing SCATTERED_ROW_COST contiguous rows; the probe must read
 * MASKED_PROBE_MARGIN times less.
 */
function maskedProbeCheaper(ivf: IvfIndex, rows: RowsRef, q: SearchQuery, k: number, count: number, selectivity: number): boolean {
  if (ivf.filterFactor === 0) return false;
  const cap = filteredCap(q.probe ?? ivf.calibrated ?? DEFAULT_PROBE, k, selectivity, ivf.lists, ivf.filterFactor);
  const probeRows = (cap * ivf.indexedRows) / ivf.lists + (rows.count - ivf.indexedRows);
  return probeRows * MASKED_PROBE_MARGIN < SCATTERED_ROW_COST * count;
}

/** A bitset over `count` rows with the rows of `matches` set, released by the caller via `owned`. */
function maskOf(kernels: Kernels, count: number, matches: RoaringBitmap32, owned: number[]): number {
  const mask = bitset(kernels, count, owned);
  setBits(matches, kernels.heap.u32(mask, Math.ceil(count / 64) * 2));
  return mask;
}

/** A bitset of the rows in [0, count) that are not in `dead`. */
function liveMask(kernels: Kernels, count: number, dead: RoaringBitmap32, owned: number[]): number {
  const mask = bitset(kernels, count, owned);
  const words = kernels.heap.u32(mask, Math.ceil(count / 64) * 2);
  words.fill(0xffffffff, 0, count >>> 5);
  if (count & 31) words[count >>> 5] = (1 << (count & 31)) - 1;
  for (const r of dead.toUint32Array()) words[r >>> 5]! &= ~(1 << (r & 31));
  return mask;
}

/** A zeroed bitset over `count` rows (u64 words), released by the caller via `owned`. */
function bitset(kernels: Kernels, count: number, owned: number[]): number {
  const ptr = kernels.heap.calloc(Math.max(8, Math.ceil(count / 64) * 8));
  owned.push(ptr);
  return ptr;
}

function dropDead(top: TopK, dead: RoaringBitmap32, want: number): TopK {
  const rows: number[] = [];
  const dists: number[] = [];
  for (let i = 0; i < top.rows.length && rows.length < want; i++) {
    if (dead.has(top.rows[i]!)) continue;
    rows.push(top.rows[i]!);
    dists.push(top.dists[i]!);
  }
  return { rows: Uint32Array.from(rows), dists: Uint32Array.from(dists) };
}

/** Hamming collections: score = 1 - 2d/D, the cosine of the ±1 vectors. */
function hammingHits(top: TopK, dim: number, k: number): Hit[] {
  const n = Math.min(k, top.rows.length);
  return Array.from({ length: n }, (_, i) => ({ row: top.rows[i]!, score: 1 - (2 * top.dists[i]!) / dim }));
}

/**
 * Candidates closer than this (bytes between their rows) are read with one pread of the span: the clustered
 * layout (ivf-build.ts) puts a probed list's rows next to each other, and a syscall per 1 KiB row cost more
 * than reading the few rows between two candidates.
 */
export const RESCORE_GAP_BYTES = 16 << 10;
/** One read spans at most this many bytes. */
const RESCORE_SPAN_BYTES = 256 << 10;

/**
 * Exact cosine of the unit query against each candidate's stored float32 values; best k, ties by row. The runs of
 * nearby candidates are read (pread) into one block of shared memory and each candidate's dot product and norm
 * taken there by the dotNorm kernel (SIMD, f64 accumulation).
 */
function rescore(kernels: Kernels, p: Partition, candidates: Uint32Array, unit: Float32Array, k: number): Hit[] {
  const dim = unit.length;
  const rowBytes = dim * 4;
  const rows = Uint32Array.from(candidates).sort();
  // Runs [i, j) of candidates read as rows [rows[i], rows[j - 1]] with one pread each.
  const ends: number[] = [];
  let widest = 0;
  for (let i = 0; i < rows.length; ) {
    const start = rows[i]!;
    let j = i + 1;
    while (j < rows.length && (rows[j]! - rows[j - 1]! - 1) * rowBytes <= RESCORE_GAP_BYTES && (rows[j]! - start + 1) * rowBytes <= RESCORE_SPAN_BYTES) j++;
    ends.push(j);
    widest = Math.max(widest, rows[j - 1]! - start + 1);
    i = j;
  }
  const heap = kernels.heap;
  const block = heap.alloc(16 + rowBytes + widest * rowBytes);
  try {
    const q = block + 16;
    const buf = q + rowBytes;
    heap.f32(q, dim).set(unit);
    const res = new Float64Array(heap.memory.buffer, block, 2);
    const bytes = heap.bytes();
    const hits: Hit[] = new Array(rows.length);
    let i = 0;
    for (const j of ends) {
      const start = rows[i]!;
      const n = rows[j - 1]! - start + 1;
      p.values!.readRange(start, n, bytes.subarray(buf, buf + n * rowBytes));
      for (; i < j; i++) {
        const row = rows[i]!;
        kernels.dotNorm(q, buf + (row - start) * rowBytes, dim, block);
        const norm = res[1]!;
        hits[i] = { row, score: norm > 0 ? res[0]! / Math.sqrt(norm) : 0 };
      }
    }
    hits.sort((a, b) => b.score - a.score || a.row - b.row);
    return hits.slice(0, k);
  } finally {
    heap.release(block);
  }
}
