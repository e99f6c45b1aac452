/** @module search — the read path of one partition: plan (full, masked or candidate-list scan), 1-bit top-k in WASM, rescoring. */
import type { Kernels, RowsRef, TopK } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { bestEstimated } from "./estimate.js";
import type { Filter } from "./filter/parse.js";
import { setBits } from "./filter/row-set.js";
import {
  ANN_FILTER_EXACT_FRACTION,
  DEFAULT_PROBE,
  filteredCap,
  MASKED_PROBE_MARGIN,
  SCATTERED_ROW_COST,
  type IvfIndex,
  type ProbeParams,
} from "./ivf.js";
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
/**
 * Below this dimension the default depths grow: fewer sign bits tell rows apart less well (at 64 bits the Hamming
 * top-1,600 of 5,000 clustered rows still missed 1% of the true top-10), while each row costs less to estimate and to
 * rescore. A depth d keeps d² times the candidates and rescores d times the rows of depth 1 (the depths above); the
 * dimension's default is d = DEPTH_DIM / dimension (depthScale), so the asymmetric estimate, whose cost per row is
 * proportional to the dimension, reads d times the bytes it reads at DEPTH_DIM, and the rows rescored hold the same
 * number of floats (40 x 1024). A partition of at least DEPTH_MIN_ROWS rows replaces the default by the depth its own
 * rows need (depth.ts, `Partition.depth`). A query whose candidates cover every row skips the 1-bit scan. Measured
 * in bench/RESULTS.md (bench/recall-bench.ts).
 */
export const DEPTH_DIM = 1024;
/** The depth of a partition whose calibration found no depth short of scoring every row as good: queries score every live row exactly. */
export const DEPTH_EXACT = Number.POSITIVE_INFINITY;

/**
 * Partitions above this many floats (live rows x dimension: 128 MiB of values, e.g. 8,192 x 4096-d or 32,768 x 1024-d)
 * are not calibrated again (depth.ts): the exact answers of its sample read every value once and cost DEPTH_SAMPLE x rows
 * x dimension multiply-adds (6.7 G here, a few seconds of a core, once per doubling). Past it a partition queries at its
 * last calibrated depth, but never deeper than the dimension's default: a depth measured on fewer rows (5 a cluster
 * needed depth 4-32 where 16 a cluster needed 1) must not multiply the cost of a large namespace.
 */
export const DEPTH_MAX_FLOATS = 32 << 20;

/** The depth a query of `p` uses: the calibrated one (capped by the default past DEPTH_MAX_FLOATS), else the dimension's default. */
export function queryDepth(p: Partition): number {
  const def = depthScale(p.shape.dimension);
  if (p.depth === null) return def;
  return p.liveCount * p.shape.dimension > DEPTH_MAX_FLOATS ? Math.min(p.depth, def) : p.depth;
}

/** The default depth of dimension-`dim` rows (1 at and above DEPTH_DIM). */
export function depthScale(dim: number): number {
  return Math.max(1, Math.ceil(DEPTH_DIM / dim));
}

/** Rows a cosine query of top-k keeps from the 1-bit stage at `depth` (default: depth 1), times `scale` (an index's calibrated candidateScale), at least k. */
export function candidatesFor(k: number, depth = 1, scale = 1): number {
  return Math.max(k, Math.ceil(Math.max(k, k * CANDIDATE_FACTOR, CANDIDATE_MIN) * depth ** 2 * scale));
}
export const RESCORE_FACTOR = 4;
export const RESCORE_MIN = 40;

/** Rows a query of top-k rescores with float values at `depth` (default: depth 1), times `scale` (an index's calibrated rescoreScale), at least k. */
export function rescoreFor(k: number, depth = 1, scale = 1): number {
  return Math.max(k, Math.ceil(Math.max(k, k * RESCORE_FACTOR, RESCORE_MIN) * depth * scale));
}

/**
 * How float rows are ranked: `cosine` (score = cosine, larger first), `dotproduct` (q·x, larger first) or
 * `euclidean` (|q - x|², smaller first, as Pinecone returns it). The 1-bit stages rank by direction in every case;
 * the float rescoring applies the metric with the stored values' norms.
 */
export type Scoring = "cosine" | "dotproduct" | "euclidean";

/**
 * Under dotproduct and euclidean a namespace of at most this many floats (live rows x dimension: 16 MiB of values) is
 * always scored exactly: the 1-bit stages see only directions, and under euclidean the nearest rows of a short query
 * are short rows in any direction, which no direction-ranked candidate pool holds (recall@10 0.90 at 20,000 x 1024 with
 * norms in [0.5, 3], bench/RESULTS.md). Larger namespaces take the candidate pool, every candidate rescored.
 */
export const EXACT_SCORING_FLOATS = 1 << 22;

/**
 * "exact": `exact: true`; "hybrid": a sparseVector query (reader.ts) on a float collection, every live row (or every row the filter matched) scored with its float values;
 * "sparse": a query of a sparse-only index, its postings searched (sparse-postings.ts).
 */
export type Plan = "full" | "full-skip-dead" | "masked" | "list" | "empty" | "ivf" | "ivf-masked" | "exact" | "hybrid" | "sparse";

export interface SearchQuery {
  /** Packed query bits in shared memory. */
  bits: number;
  /** The L2-normalized query (cosine collections), for rescoring. */
  unit: Float32Array | null;
  /** Where `unit` lies in shared memory, when it does (0: not there): rescoring then reads it in place instead of copying it in. */
  unitAt?: number;
  /** The query's L2 norm before normalization (float collections; dotproduct and euclidean scoring use it). */
  norm?: number;
  /** How float rows are ranked (default cosine). */
  scoring?: Scoring;
  /** The rotated query (cosine collections), for the asymmetric estimate. */
  rotated: Float32Array | null;
  /** Where `rotated` lies in shared memory, when it does (0: not there): the estimate's table is then built from it in place. */
  rotatedAt?: number;
  k: number;
  filter: Filter | null;
  /** Rows kept by the 1-bit scan (float collections); default candidatesFor(k, the partition's depth). */
  candidates?: number;
  /** Rows rescored with float32 values (float collections); default rescoreFor(k, the partition's depth), every candidate under dotproduct or euclidean. */
  rescore?: number;
  /** Float collections: score every live row (or every filter match) with its float values; bit collections: scan every row's bits even when the partition has an approximate index. */
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
  const dim = p.shape.dimension;
  // The partition's calibrated depth (depth.ts), else the dimension's default; explicit candidates and rescore override it.
  const depth = queryDepth(p);
  if (
    cosine &&
    (q.exact ||
      ((q.scoring ?? "cosine") !== "cosine" && p.liveCount * dim <= EXACT_SCORING_FLOATS) ||
      (depth === DEPTH_EXACT && q.candidates === undefined && q.rescore === undefined && q.probe === undefined))
  )
    return exactSearch(kernels, p, q);
  // An index whose calibration found the exact scan as good serves only broad filters (and explicit probes).
  const ivf = q.exact ? null : p.ivf;
  const probeIvf = ivf !== null && (ivf.calibrated !== null || q.probe !== undefined) ? ivf : null;
  const want = cosine ? Math.max(q.k, q.candidates ?? candidatesFor(q.k, depth)) : q.k;
  // An unfiltered default cosine query through the index at the dimension's default depth keeps and rescores the
  // index's calibrated shares of the default depths (depth.ts calibrateRescore: measured on this index's rows there).
  const calibrated =
    cosine &&
    probeIvf !== null &&
    q.candidates === undefined &&
    q.rescore === undefined &&
    q.probe === undefined &&
    depth === depthScale(dim);
  const scaled = { candidates: calibrated ? probeIvf.candidateScale : 1, rescore: calibrated ? probeIvf.rescoreScale : 1 };
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
      const { matches, key } = filterMatches(p, q.filter);
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
      } else if (cosine && want >= count && q.probe === undefined) {
        // Every match is a candidate: the 1-bit scan would rank them for nothing.
        plan = "list";
        top = { rows: matches.toUint32Array(), dists: new Uint32Array(0) };
      } else {
        plan = "list";
        // A selective filter: its rows' codes gathered contiguously (filter-cache.ts, kept across writes), scanned here and now.
        const gathered = p.filters.gathered(key, rows);
        if (gathered !== null) {
          const t = kernels.topK({ base: gathered.codes, words: rows.words, count }, 0, count, q.bits, k);
          top = { rows: t.rows.map((i) => gathered.rows[i]!), dists: t.dists };
        } else {
          const list = heap.put(matches.toUint32Array());
          owned.push(list);
          top = await pool.topKList(rows, list, count, q.bits, k);
        }
      }
    } else {
      const dead = p.tombstones;
      const live = rows.count - dead.size;
      if (live <= 0) return { hits: [], plan: "empty", timings };
      if (cosine && want >= live && q.probe === undefined) {
        // Every live row is a candidate: the 1-bit scan would rank them for nothing (an explicit probe still probes).
        plan = "full";
        top = { rows: p.live().toUint32Array(), dists: new Uint32Array(0) };
      } else if (probeIvf !== null) {
        plan = "ivf";
        const wantIvf = scaled.candidates < 1 ? Math.max(q.k, candidatesFor(q.k, depth, scaled.candidates)) : want;
        if (dead.size <= TOMBSTONE_SKIP_MAX) {
          top = await probeUnmasked(pool, probeIvf, rows, q, probed, Math.min(wantIvf + dead.size, rows.count));
          if (dead.size > 0) top = dropDead(top, dead, wantIvf);
        } else {
          const mask = liveMask(kernels, rows.count, dead, owned);
          top = probeIndex(probeIvf, rows, q, probed, Math.min(wantIvf, live), mask, false);
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
      // Under dotproduct and euclidean the norm decides as much as the direction: every candidate is rescored.
      const deep = (q.scoring ?? "cosine") !== "cosine" ? top.rows.length : rescoreFor(q.k, depth, plan === "ivf" ? scaled.rescore : 1);
      const best = bestEstimated(kernels, rows, top.rows, q.rotated!, Math.max(q.k, q.rescore ?? deep), q.rotatedAt);
      lap("estimate");
      hits = rescore(kernels, p, best, q, q.k);
      lap("rescore");
    } else hits = hammingHits(top, p.shape.dimension, q.k);
    return {
      hits,
      plan,
      matched,
      timings,
      ...(plan === "ivf" || plan === "ivf-masked" ? { probed: probed.lists, scanned: probed.rows } : {}),
    };
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
function probeIndex(
  ivf: IvfIndex,
  rows: RowsRef,
  q: SearchQuery,
  probed: { lists: number; rows: number },
  k: number,
  mask: number,
  exhaustive: boolean,
  selectivity = 1,
): TopK {
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
async function probeUnmasked(
  pool: ScanPool,
  ivf: IvfIndex,
  rows: RowsRef,
  q: SearchQuery,
  probed: { lists: number; rows: number },
  k: number,
): Promise<TopK> {
  return counted(
    ivf,
    rows,
    await pool.probe(rows, ivf.ref(), q.bits, k, ivf.limits(k, q.probe ?? ivf.calibrated ?? DEFAULT_PROBE, false)),
    probed,
  );
}

/**
 * Many unfiltered queries of a hamming partition at once (nq packed rows at `queries`): with
 * an index, the probes are spread over the pool's workers; without one (or `exact`), one
 * blocked exact scan. Partitions with more than TOMBSTONE_SKIP_MAX tombstones are the
 * caller's to query one by one. Returns per query its best k hits.
 */
export async function searchBatch(
  pool: ScanPool,
  p: Partition,
  queries: number,
  nq: number,
  k: number,
  opts: { exact?: boolean; probe?: ProbeParams },
): Promise<{ hits: Hit[][]; plan: Plan }> {
  const dead = p.tombstones;
  const { rows, unpin } = p.arena.pin();
  try {
    const want = Math.min(k + dead.size, rows.count);
    const ivf = opts.exact || p.ivf === null || (p.ivf.calibrated === null && opts.probe === undefined) ? null : p.ivf;
    let tops: TopK[];
    if (ivf !== null) {
      const probe = opts.probe ?? ivf.calibrated ?? DEFAULT_PROBE;
      tops = await pool.probeBatch(rows, ivf.ref(), queries, nq, want, {
        minProbe: probe.minProbe,
        cap: Math.max(probe.maxProbe, probe.minProbe) * Math.ceil(want / 10),
        slack: probe.slack,
      });
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

/** The rows of `p` matching `filter`, through the partition's filter cache (its key: null when the filter is not cached). */
function filterMatches(p: Partition, filter: Filter): { matches: RoaringBitmap32; key: string | null } {
  return p.filters.matches(filter, p, (universe) => p.index.evaluate(filter, universe ?? p.live()));
}

/**
 * `exact: true` on a float collection: every live row, or every row the filter matched, scored with its stored float32
 * values under the query's scoring (the rescoring below over all of them); no 1-bit stage, so the answer is the exact
 * float top-k (ties by row). Reads every such row's values (page cache or disk): the accuracy knob, not the fast path.
 */
function exactSearch(kernels: Kernels, p: Partition, q: SearchQuery): SearchResult {
  const timings = { filter: 0, scan: 0, estimate: 0, rescore: 0 };
  let t = performance.now();
  let rows: Uint32Array;
  let matched: number | undefined;
  if (q.filter !== null) {
    const { matches } = filterMatches(p, q.filter);
    matched = matches.size;
    timings.filter = performance.now() - t;
    t = performance.now();
    if (matched === 0) return { hits: [], plan: "empty", matched, timings };
    rows = matches.toUint32Array();
  } else rows = p.live().toUint32Array();
  if (rows.length === 0) return { hits: [], plan: "empty", matched, timings };
  const hits = rescore(kernels, p, rows, q, q.k);
  timings.rescore = performance.now() - t;
  return { hits, plan: "exact", matched, timings };
}

/**
 * The query's score of a row from q̂·x (unit query) and |x|²: cosine q̂·x / |x|; dotproduct |q| q̂·x; euclidean
 * |q|² - 2|q| q̂·x + |x|² (the squared distance, at least 0). Returned with the rank key: larger ranks first.
 */
function scorer(q: SearchQuery): (dot: number, xx: number) => number {
  const norm = q.norm ?? 1;
  switch (q.scoring ?? "cosine") {
    case "cosine":
      return (dot, xx) => (xx > 0 ? dot / Math.sqrt(xx) : 0);
    case "dotproduct":
      return (dot) => norm * dot;
    case "euclidean":
      return (dot, xx) => -Math.max(0, norm * norm - 2 * norm * dot + xx);
  }
}

/**
 * Exact score (scorer) of the query against each candidate's stored float32 values; best k, ties by row. The runs of
 * nearby candidates are read (pread) into one block of shared memory and each candidate's dot product and norm
 * taken there by the dotNorm kernel (SIMD, f64 accumulation); the best k are kept in a bounded heap, so an exact
 * search over every row holds only their scores. `candidates` is sorted in place.
 */
function rescore(kernels: Kernels, p: Partition, candidates: Uint32Array, q: SearchQuery, k: number): Hit[] {
  const unit = q.unit!;
  const dim = unit.length;
  const rowBytes = dim * 4;
  // Sorted in place: every caller hands over an array of its own (no copy: a typed array past 64 bytes is a malloc).
  const rows = candidates.sort();
  // Runs [i, j) of candidates read as rows [rows[i], rows[j - 1]] with one pread each.
  const ends: number[] = [];
  let widest = 0;
  for (let i = 0; i < rows.length;) {
    const start = rows[i]!;
    let j = i + 1;
    while (
      j < rows.length &&
      (rows[j]! - rows[j - 1]! - 1) * rowBytes <= RESCORE_GAP_BYTES &&
      (rows[j]! - start + 1) * rowBytes <= RESCORE_SPAN_BYTES
    )
      j++;
    ends.push(j);
    widest = Math.max(widest, rows[j - 1]! - start + 1);
    i = j;
  }
  const score = scorer(q);
  const heap = kernels.heap;
  const inPlace = (q.unitAt ?? 0) !== 0;
  const block = heap.alloc(16 + (inPlace ? 0 : rowBytes) + widest * rowBytes);
  try {
    const qp = inPlace ? q.unitAt! : block + 16;
    const buf = block + 16 + (inPlace ? 0 : rowBytes);
    if (!inPlace) heap.f32(qp, dim).set(unit);
    const res = new Float64Array(heap.memory.buffer, block, 2);
    const bytes = heap.bytes();
    const best = new BestK(Math.min(k, rows.length));
    let i = 0;
    for (const j of ends) {
      const start = rows[i]!;
      const n = rows[j - 1]! - start + 1;
      p.values!.readRange(start, n, bytes.subarray(buf, buf + n * rowBytes));
      for (; i < j; i++) {
        const row = rows[i]!;
        kernels.dotNorm(qp, buf + (row - start) * rowBytes, dim, block);
        best.offer(row, score(res[0]!, res[1]!));
      }
    }
    // The euclidean rank key is the negated squared distance: the score returned is the distance.
    const sign = q.scoring === "euclidean" ? -1 : 1;
    return best.sorted().map((h) => ({ row: h.row, score: sign * h.score || 0 }));
  } finally {
    heap.release(block);
  }
}

/** Is (s1, r1) worse than (s2, r2): a lower score, or an equal score on a later row. */
function worse(s1: number, r1: number, s2: number, r2: number): boolean {
  return s1 < s2 || (s1 === s2 && r1 > r2);
}

/** The best k of (row, score): larger score first, ties by the smaller row. A binary heap with the worst of them on top. */
export class BestK {
  private readonly rows: Uint32Array;
  // A plain array, not a Float64Array: at the usual k (10) its 80 bytes would be a malloc'd backing store (V8 keeps
  // typed arrays of at most 64 bytes on its heap; one past that cost ~0.45 µs to make and free), one per query.
  private readonly scores: number[];
  private n = 0;

  constructor(private readonly k: number) {
    this.rows = new Uint32Array(k);
    this.scores = new Array<number>(k).fill(-Infinity);
  }

  /** The k-th best score offered so far (the lowest kept), -Infinity until k rows were offered: an offer below it is refused. */
  get worst(): number {
    return this.n < this.k || this.k === 0 ? -Infinity : this.scores[0]!;
  }

  offer(row: number, score: number): void {
    if (this.n < this.k) {
      let i = this.n++;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if (!worse(score, row, this.scores[up]!, this.rows[up]!)) break;
        this.rows[i] = this.rows[up]!;
        this.scores[i] = this.scores[up]!;
        i = up;
      }
      this.rows[i] = row;
      this.scores[i] = score;
      return;
    }
    if (this.k === 0 || !worse(this.scores[0]!, this.rows[0]!, score, row)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.n) break;
      const c = l + 1 < this.n && worse(this.scores[l + 1]!, this.rows[l + 1]!, this.scores[l]!, this.rows[l]!) ? l + 1 : l;
      if (!worse(this.scores[c]!, this.rows[c]!, score, row)) break;
      this.rows[i] = this.rows[c]!;
      this.scores[i] = this.scores[c]!;
      i = c;
    }
    this.rows[i] = row;
    this.scores[i] = score;
  }

  sorted(): Hit[] {
    const out: Hit[] = Array.from({ length: this.n }, (_, i) => ({ row: this.rows[i]!, score: this.scores[i]! }));
    return out.sort((a, b) => b.score - a.score || a.row - b.row);
  }
}
