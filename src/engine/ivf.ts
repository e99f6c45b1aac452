/** @module ivf — the approximate index of a partition: an inverted file over packed bits (k-modes centroids, rows stored contiguously per list), its probe plan and its file. */
import { readFileSync } from "node:fs";
import { SvcError } from "../errors.js";
import { wordsFor, type IvfRef, type Kernels, type RowsRef, type TopK } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { mulberry32 } from "../kernels/random.js";

/**
 * A partition holding at least this many live rows gets an index (built in the background by
 * a clustering compaction) and unfiltered queries use it unless they ask for `exact`.
 * Measured in bench/RESULTS.md (`npm run bench -- --only ann`): at 100k x 1024 bits the
 * index answered in ~0.03 ms p50 at recall@10 >= 0.99 against ~0.5-0.8 ms for the exact scan;
 * at 50k an exact scan costs ~0.25 ms, and below that the saving is small next to the cost of
 * the background rebuilds (each rewrites the namespace).
 */
export const ANN_MIN_ROWS = 50_000;
/**
 * Rows written since the build (the exactly scanned delta) past this fraction of the indexed
 * rows trigger a rebuild (the merge). A rebuild rewrites the namespace (values too, for cosine),
 * so growing from ANN_MIN_ROWS to n rewrites about n / ANN_DELTA_FRACTION rows in all; the delta
 * stays under a third of the rows.
 */
export const ANN_DELTA_FRACTION = 0.5;
/**
 * Once no upsert reached a namespace for ANN_IDLE_MS, a delta of at least ANN_IDLE_DELTA_FRACTION
 * of the indexed rows is merged too: after a load the delta is otherwise scanned exactly on every
 * query until the next writes pass ANN_DELTA_FRACTION (at 60k x 256-d served, 3,000 delta rows
 * cost the probe 0.071 ms p50 and 9,000 0.115-0.139 ms; bench/RESULTS.md "served").
 */
export const ANN_IDLE_MS = 5_000;
export const ANN_IDLE_DELTA_FRACTION = 0.02;
/**
 * Filtered queries on an index without a probe (calibration found the exact scan as good)
 * whose filter keeps at most this fraction of the live rows are scored exactly from the
 * filter's row list (the true top-k among them); broader filters probe every list with the
 * filter as a mask. Measured at 100k rows (bench/RESULTS.md): at 10% the list took 0.28 ms
 * p50 and the masked probe 0.49 ms; at 30% 1.69 ms against 0.42 ms.
 */
export const ANN_FILTER_EXACT_FRACTION = 0.15;

/**
 * What a row of the filter's list costs the exact list scan, in rows read by a masked probe:
 * the list's rows are scattered over the partition (a cache and TLB miss each, ~40-50 ns on
 * this VM), a probed list's rows are contiguous (~10-12 ns). Measured at 1M x 1024-d
 * (bench/filtered-bench.ts, bench/RESULTS.md "Filtered top-10").
 */
export const SCATTERED_ROW_COST = 4;
/**
 * The capped masked probe answers approximately, the list exactly: the planner takes the probe
 * only when it reads at most 1 / MASKED_PROBE_MARGIN of what the list costs. Measured at 100k
 * rows, 10%: the probe (800 lists, 32k rows) against the list's 10k scattered rows was no
 * faster (0.72 against 0.69 ms p50) and lost recall (0.973 against 0.985); at 1M it reads 8x less.
 */
export const MASKED_PROBE_MARGIN = 2;

/**
 * Lists a probe ranks: the unfiltered cap (maxProbe x ceil(k / 10)); with a filter keeping
 * `selectivity` of the live rows, `factor` (the index's calibrated filterFactor) times that
 * divided by the selectivity, so that the lists nearest the query offer at least as many
 * matching rows as an unfiltered probe compares (a filter independent of where rows lie keeps
 * that fraction of every list; `factor` covers how far the data's clusters make it look).
 */
export function filteredCap(params: ProbeParams, k: number, selectivity: number, lists: number, factor = 1): number {
  return Math.min(
    lists,
    Math.ceil((factor * Math.max(params.maxProbe, params.minProbe) * Math.ceil(k / 10)) / Math.max(selectivity, 1e-9)),
  );
}

/**
 * How a query probes (assembly/ivf.ts `ivfProbe`): the lists in order of centroid distance,
 * each taken when it is among the `minProbe` nearest, or within `slack` bits of the nearest
 * centroid's distance, or the top-k is not full yet, or d(q, centroid) - radius <= the current
 * k-th distance: the triangle inequality, with the radius a high quantile of the list's member
 * distances, so nearly (not strictly) safe. Unfiltered queries rank at most
 * `maxProbe` x ceil(k / 10) lists; filtered ones that many / the filter's selectivity (filteredCap).
 */
export interface ProbeParams {
  minProbe: number;
  maxProbe: number;
  slack: number;
}

/** Default probing for an index without a calibration (files of version 1); tight clusters reach recall@10 >= 0.99 with it, diffuse ones do not. */
export const DEFAULT_PROBE: ProbeParams = { minProbe: 2, maxProbe: 32, slack: 8 };

/**
 * Calibration (after each build): CALIBRATION_SAMPLE indexed rows are queried as held-in points
 * (measured: their recall tracks held-out queries' within 0.002 on the bench data)
 * (their own row left out) with each setting of this ladder, cheapest first, against an exact
 * scan; the first whose recall@10 reaches CALIBRATION_RECALL becomes the index's probe. When none
 * does, or the one that does compares more than ANN_MAX_SCAN_FRACTION of the rows, the exact scan
 * is as good and the index is used only for broad filters (`probe` null); the ladder stops at the
 * first setting past ANN_MAX_SCAN_FRACTION. The first steps cap a
 * query at 1-3 lists per 10 asked: at 100k x 1024-d (1000 clusters of 100, 2,530 lists) 1 list per
 * 10 rescoring candidates (10 lists) kept recall@10 1.000 where the old cheapest step, 4, probed 39
 * (bench/RESULTS.md, issue 32 item 2).
 */
export const PROBE_LADDER: readonly ProbeParams[] = [
  { minProbe: 1, maxProbe: 1, slack: 0 },
  { minProbe: 1, maxProbe: 2, slack: 0 },
  { minProbe: 1, maxProbe: 3, slack: 0 },
  { minProbe: 1, maxProbe: 4, slack: 0 },
  { minProbe: 2, maxProbe: 16, slack: 4 },
  DEFAULT_PROBE,
  { minProbe: 3, maxProbe: 48, slack: 12 },
  { minProbe: 4, maxProbe: 64, slack: 16 },
  { minProbe: 6, maxProbe: 96, slack: 20 },
  { minProbe: 8, maxProbe: 128, slack: 24 },
  { minProbe: 8, maxProbe: 192, slack: 28 },
  { minProbe: 8, maxProbe: 256, slack: 32 },
  { minProbe: 12, maxProbe: 384, slack: 48 },
  { minProbe: 16, maxProbe: 512, slack: 64 },
  { minProbe: 24, maxProbe: 768, slack: 96 },
  { minProbe: 32, maxProbe: 1024, slack: 128 },
];
export const CALIBRATION_SAMPLE = 200;
/**
 * Filtered probes are calibrated too (after the unfiltered probe): the sample rows query again
 * through seeded random masks keeping each of FILTER_CALIBRATION_SELECTIVITY of the rows, with
 * the list cap filteredCap x each factor of this ladder; the first factor whose recall reaches
 * CALIBRATION_RECALL at every selectivity becomes `filterFactor` (0 when none does: filters
 * then take the exact row list, or probe every list when broad). Measured: on the bench's 1M
 * rows (1000 clusters of 1000) factor 1; on the test's 6k rows (300 clusters of 20) no factor
 * up to 4 passed at 10% (recall 0.54-0.86). Steps past FILTER_CAP_MAX / maxProbe are skipped: a probe of
 * maxProbe 1 (PROBE_LADDER's cheapest) tries up to 32, one of 4 up to 8, as before the ladder went below 4.
 */
export const FILTER_FACTOR_LADDER: readonly number[] = [1, 2, 4, 8, 16, 32];
/** A filtered probe's cap before selectivity (filteredCap) stays within this many lists per 10 asked: factor x maxProbe <= 32. */
export const FILTER_CAP_MAX = 32;
export const FILTER_CALIBRATION_SELECTIVITY: readonly number[] = [0.05, 0.25];
/** Above the 0.99 promised, for the sampling error of 2,000 answers (about +-0.002). */
export const CALIBRATION_RECALL = 0.995;
export const ANN_MAX_SCAN_FRACTION = 0.3;
/** Calibration queries between yields (exact ones are full scans). */
const CALIBRATION_STEP = 8;

const MAGIC = 0x31465649; // "IVF1" little-endian
const VERSION = 4;
const HEADER_U32 = 12; // magic, version, lists, words, indexedRows, dimBits, probe minProbe, maxProbe, slack (all 0xffffffff: exact is better), filterFactor, rescore and candidate scales (per mille)
const HEADER_U32_V3 = 10;
const HEADER_U32_V2 = 9;
const HEADER_U32_V1 = 6;
const NO_PROBE = 0xffff_ffff;
/** A list's radius: this quantile of its members' distances to the centroid (the max would let one outlier widen every probe). */
const RADIUS_QUANTILE = 0.95;

/**
 * Lists for n rows: 8 sqrt(n), at least 16. Fewer lists than the data has clusters leave
 * clusters without a centroid, and their rows scatter over far lists (measured on 20k rows of
 * 1000 clusters: 849 lists gave recall@10 0.90 at 32 probes, 1414 lists 0.999 at 4).
 */
export function listsFor(n: number): number {
  return Math.max(16, Math.round(8 * Math.sqrt(n)));
}

/**
 * Rows [offsets[l], offsets[l + 1]) of the partition belong to list l (the rows nearest
 * centroid l when the index was built); rows from `indexedRows` on were written since and
 * are scanned exactly. Centroids live in the shared memory (lists x rowBytes).
 */
export class IvfIndex {
  readonly lists: number;
  readonly words: number;
  readonly dimBits: number;
  readonly offsets: Uint32Array;
  /** Per list: RADIUS_QUANTILE of its members' distances to the centroid, in bits. */
  readonly radii: Uint32Array;
  /**
   * The calibrated probe: the cheapest setting that reached CALIBRATION_RECALL on held-in rows;
   * null when an exact scan is as good (unfiltered queries then scan exactly).
   */
  calibrated: ProbeParams | null = DEFAULT_PROBE;
  /** The calibrated FILTER_FACTOR_LADDER step for masked probes (filteredCap); 0: filters never probe a capped list set. */
  filterFactor = 0;
  /**
   * Float partitions: the fraction of rescoreFor(k, depth) that unfiltered default queries through this index rescore
   * (depth.ts calibrateRescore, a RESCORE_SCALE_LADDER step; 1: all of them, as without a calibration).
   */
  rescoreScale = 1;
  /** Float partitions: likewise the fraction of candidatesFor(k, depth) those queries keep from the probe (at least the rows they rescore). */
  candidateScale = 1;
  /** Pointers (shared memory) of the centroid rows, the offsets and the radii, for the probe kernel. */
  centroids: number;
  private offsetsPtr: number;
  private radiiPtr: number;

  constructor(
    private readonly kernels: Kernels,
    dimBits: number,
    words: number,
    centroidBytes: Uint8Array,
    offsets: Uint32Array,
    radii: Uint32Array,
  ) {
    this.dimBits = dimBits;
    this.words = words;
    this.lists = offsets.length - 1;
    this.offsets = offsets;
    this.radii = radii;
    if (centroidBytes.byteLength !== this.lists * words * 8)
      throw new SvcError("E_IO", `index: ${centroidBytes.byteLength} centroid bytes for ${this.lists} lists`);
    this.centroids = kernels.heap.put(centroidBytes);
    this.offsetsPtr = kernels.heap.put(offsets);
    this.radiiPtr = kernels.heap.put(radii.length > 0 ? radii : new Uint32Array(1));
  }

  /** What the probe kernel reads. */
  ref(): IvfRef {
    return { centroids: this.centroids, lists: this.lists, offsets: this.offsetsPtr, radii: this.radiiPtr, indexedRows: this.indexedRows };
  }

  get indexedRows(): number {
    return this.offsets[this.lists]!;
  }

  /** Bytes the index adds to the partition (centroids and list offsets). */
  get bytes(): number {
    return this.lists * this.words * 8 + this.offsets.byteLength + this.radii.byteLength;
  }

  /**
   * One query's probe (assembly/ivf.ts `ivfProbe`): the delta [indexedRows, count), then the
   * lists by centroid distance while the rule of ProbeParams holds. `exhaustive` lifts the cap
   * on lists; deeper candidate lists (cosine keeps 100 for rescoring) raise it in proportion to
   * k, and a filter's mask (keeping `selectivity` of the rows) in proportion to 1 / selectivity. Returns the top-k (ascending) and the lists probed.
   */
  probe(
    rows: RowsRef,
    query: number,
    k: number,
    params: ProbeParams,
    exhaustive: boolean,
    mask = 0,
    selectivity = 1,
  ): { top: TopK; probed: number } {
    return this.kernels.ivfProbe(
      rows,
      this.ref(),
      query,
      k,
      this.limits(k, params, exhaustive, mask === 0 ? 1 : selectivity, mask === 0 ? 1 : this.filterFactor),
      mask,
    );
  }

  /** The kernel's probe limits for a top-k: `exhaustive` lifts the cap on lists probed; a filter's `selectivity` raises it (filteredCap). */
  limits(
    k: number,
    params: ProbeParams,
    exhaustive: boolean,
    selectivity = 1,
    factor = 1,
  ): { minProbe: number; cap: number; slack: number } {
    const cap = exhaustive ? this.lists : filteredCap(params, k, selectivity, this.lists, factor);
    return { minProbe: params.minProbe, cap, slack: params.slack };
  }

  /**
   * Choose `calibrated` (see PROBE_LADDER): sample rows of [0, indexedRows) answer as queries, their
   * own row left out: the exact top-10 of all `rows` must be among the probe's best `depth` (10 for
   * Hamming collections; the rescoring candidates for cosine ones). Yields between settings.
   */
  async calibrate(
    rows: RowsRef,
    seed: number,
    stop: () => boolean,
    depth = 10,
  ): Promise<{ probe: ProbeParams | null; recall: number; fraction: number; filterFactor: number }> {
    const n = this.indexedRows;
    const k = 10;
    const next = mulberry32(seed ^ 0xca11b8);
    const sample = Array.from({ length: Math.min(CALIBRATION_SAMPLE, n) }, () => next() % n);
    const rowBytes = rows.words * 8;
    const without = (t: TopK, self: number, m: number) =>
      Array.from(t.dists)
        .filter((_, i) => t.rows[i] !== self)
        .slice(0, m);
    // exact answers a few at a time (one is a full scan: ~4 ms at 1M rows), yielding to queries and writes between
    const kth: number[] = [];
    for (const [i, r] of sample.entries()) {
      if (i % CALIBRATION_STEP === 0) await tick(stop);
      kth.push(without(this.kernels.topK(rows, 0, rows.count, rows.base + r * rowBytes, k + 1), r, k).at(-1) ?? 0);
    }
    let last = { probe: null as ProbeParams | null, recall: 0, fraction: 1 };
    for (const params of PROBE_LADDER) {
      let hits = 0;
      let lists = 0;
      for (const [i, r] of sample.entries()) {
        if (i % CALIBRATION_STEP === 0) await tick(stop);
        // one more answer for the row itself, with the list cap a query of `depth` gets
        const cap = Math.min(this.lists, Math.max(params.maxProbe, params.minProbe) * Math.ceil(Math.max(k, depth) / 10));
        const res = this.kernels.ivfProbe(rows, this.ref(), rows.base + r * rowBytes, Math.max(k, depth) + 1, {
          minProbe: params.minProbe,
          cap,
          slack: params.slack,
        });
        lists += res.probed;
        hits += Math.min(k, without(res.top, r, depth).filter((d) => d <= kth[i]!).length);
      }
      const recall = hits / (k * sample.length);
      const fraction = (this.lists + (lists / sample.length) * (n / this.lists) + (rows.count - n)) / rows.count;
      last = { probe: params, recall, fraction };
      // A setting comparing more than ANN_MAX_SCAN_FRACTION of the rows cannot become the probe, and the later ones
      // take at least as many lists (minProbe, slack and maxProbe each grow along the ladder): the exact scan is as
      // good. Going on cost data without list structure (text encoder vectors, issue 32 item 3) a sample of
      // near-exhaustive probes per later step.
      if (recall >= CALIBRATION_RECALL || fraction > ANN_MAX_SCAN_FRACTION) break;
    }
    this.calibrated = last.recall >= CALIBRATION_RECALL && last.fraction <= ANN_MAX_SCAN_FRACTION ? last.probe : null;
    this.filterFactor = this.calibrated === null ? 0 : await this.calibrateFilter(rows, sample, next, stop, depth, this.calibrated);
    return { ...last, probe: this.calibrated, filterFactor: this.filterFactor };
  }

  /** The first FILTER_FACTOR_LADDER step reaching CALIBRATION_RECALL through random masks at every FILTER_CALIBRATION_SELECTIVITY (0: none). */
  private async calibrateFilter(
    rows: RowsRef,
    sample: number[],
    next: () => number,
    stop: () => boolean,
    depth: number,
    params: ProbeParams,
  ): Promise<number> {
    const k = 10;
    const rowBytes = rows.words * 8;
    const heap = this.kernels.heap;
    const maskWords = Math.ceil(rows.count / 64) * 2;
    const masks = FILTER_CALIBRATION_SELECTIVITY.map(() => heap.calloc(Math.max(8, maskWords * 4)));
    try {
      const kth: number[][] = [];
      for (const [m, s] of FILTER_CALIBRATION_SELECTIVITY.entries()) {
        const words = heap.u32(masks[m]!, maskWords);
        for (let r = 0; r < rows.count; r++) if (next() / 2 ** 32 < s) words[r >>> 5]! |= 1 << (r & 31);
        const per: number[] = [];
        for (const [i, r] of sample.entries()) {
          if (i % CALIBRATION_STEP === 0) await tick(stop);
          const t = this.kernels.topKMasked(rows, 0, rows.count, rows.base + r * rowBytes, k + 1, masks[m]!);
          per.push(
            Array.from(t.dists)
              .filter((_, j) => t.rows[j] !== r)
              .slice(0, k)
              .at(-1) ?? 0,
          );
        }
        kth.push(per);
      }
      for (const factor of FILTER_FACTOR_LADDER) {
        // no wider than the old ladder's widest (4 lists per 10 asked x 8) whatever the probe
        if (factor * Math.max(params.maxProbe, params.minProbe) > FILTER_CAP_MAX) break;
        let ok = true;
        for (const [m, s] of FILTER_CALIBRATION_SELECTIVITY.entries()) {
          const cap = filteredCap(params, Math.max(k, depth), s, this.lists, factor);
          let hits = 0;
          for (const [i, r] of sample.entries()) {
            if (i % CALIBRATION_STEP === 0) await tick(stop);
            const res = this.kernels.ivfProbe(
              rows,
              this.ref(),
              rows.base + r * rowBytes,
              Math.max(k, depth) + 1,
              { minProbe: params.minProbe, cap, slack: params.slack },
              masks[m]!,
            );
            const got = Array.from(res.top.dists)
              .filter((_, j) => res.top.rows[j] !== r)
              .slice(0, depth);
            hits += Math.min(k, got.filter((d) => d <= kth[m]![i]!).length);
          }
          if (hits / (k * sample.length) < CALIBRATION_RECALL) ok = false;
          if (!ok) break;
        }
        if (ok) return factor;
      }
      return 0;
    } finally {
      for (const ptr of masks) heap.release(ptr);
    }
  }

  centroidRows(): RowsRef {
    return { base: this.centroids, words: this.words, count: this.lists };
  }

  /** File layout (FORMAT.md): u32 magic "IVF1", version 4, lists, words, indexedRows, dimBits, probe minProbe, maxProbe, slack, filterFactor, rescore and candidate scales (per mille); u32 offsets[lists + 1]; u32 radii[lists]; centroid rows. */
  serialize(): Uint8Array {
    const rowBytes = this.words * 8;
    const u32s = HEADER_U32 + this.offsets.length + this.radii.length;
    const out = new Uint8Array(u32s * 4 + this.lists * rowBytes);
    const head = new Uint32Array(out.buffer, 0, u32s);
    const c = this.calibrated;
    const probe = c === null ? [NO_PROBE, NO_PROBE, NO_PROBE] : [c.minProbe, c.maxProbe, c.slack];
    head.set([
      MAGIC,
      VERSION,
      this.lists,
      this.words,
      this.indexedRows,
      this.dimBits,
      ...probe,
      this.filterFactor,
      ...[this.rescoreScale, this.candidateScale].map((x) => Math.round(x * 1000)),
    ]);
    head.set(this.offsets, HEADER_U32);
    head.set(this.radii, HEADER_U32 + this.offsets.length);
    out.set(this.kernels.heap.bytes().subarray(this.centroids, this.centroids + this.lists * rowBytes), u32s * 4);
    return out;
  }

  static load(kernels: Kernels, path: string, dimBits: number, words: number): IvfIndex {
    const bytes = readFileSync(path);
    const bad = (why: string) => new SvcError("E_IO", `${path}: ${why}`);
    if (bytes.byteLength < HEADER_U32_V1 * 4) throw bad("truncated index file");
    const copy = new Uint8Array(bytes);
    const version = new Uint32Array(copy.buffer, 0, 2)[1];
    if (new Uint32Array(copy.buffer, 0, 1)[0] !== MAGIC || version === undefined || version < 1 || version > VERSION)
      throw bad("not an index file (magic/version)");
    const headU32 = version === 1 ? HEADER_U32_V1 : version === 2 ? HEADER_U32_V2 : version === 3 ? HEADER_U32_V3 : HEADER_U32;
    if (bytes.byteLength < headU32 * 4) throw bad("truncated index file");
    const head = new Uint32Array(copy.buffer, 0, headU32);
    const [, , lists, w, indexed, dim, minProbe, maxProbe, slack, filterFactor, rescorePerMille, candidatesPerMille] =
      head as unknown as number[];
    if (w !== words || dim !== dimBits) throw bad(`index rows are ${dim} bits, the collection's ${dimBits}`);
    const at = headU32 * 4;
    const offBytes = (lists! + 1) * 4;
    const radBytes = lists! * 4;
    if (copy.byteLength !== at + offBytes + radBytes + lists! * words * 8) throw bad("index file size does not match its header");
    const offsets = new Uint32Array(copy.buffer.slice(at, at + offBytes));
    const radii = new Uint32Array(copy.buffer.slice(at + offBytes, at + offBytes + radBytes));
    if (offsets[lists!] !== indexed) throw bad("index offsets do not end at indexedRows");
    const index = new IvfIndex(kernels, dimBits, words, copy.subarray(at + offBytes + radBytes), offsets, radii);
    if (version !== 1) index.calibrated = minProbe === NO_PROBE ? null : { minProbe: minProbe!, maxProbe: maxProbe!, slack: slack! };
    index.filterFactor = version >= 3 ? filterFactor! : 0;
    // a scale outside (0, 1] is not one a calibration writes: rescore every candidate, as before version 4
    const scale = (perMille: number | undefined) => (version >= 4 && perMille! > 0 && perMille! <= 1000 ? perMille! / 1000 : 1);
    index.rescoreScale = scale(rescorePerMille);
    index.candidateScale = scale(candidatesPerMille);
    return index;
  }

  dispose(): void {
    if (this.centroids === 0) return;
    for (const ptr of [this.centroids, this.offsetsPtr, this.radiiPtr]) this.kernels.heap.release(ptr);
    this.centroids = this.offsetsPtr = this.radiiPtr = 0;
  }
}

/**
 * Yield to queries and the applier between build steps; then stop with E_CLOSED when `stop()`
 * says so (the collection is closing: a build is abandoned rather than awaited).
 */
export async function tick(stop: () => boolean): Promise<void> {
  await new Promise<void>((r) => setImmediate(r));
  if (stop()) throw new SvcError("E_CLOSED", "index build abandoned: the collection is closing");
}
/** Rows assigned per build step (at 2530 lists of 1024 bits ~0.1 s of kernel time, split over the workers). */
const ASSIGN_CHUNK = 16_384;

/** Rows pinned for the duration of one step (RowArena.pin). */
export type PinnedRows = { rows: RowsRef; unpin: () => void };

/** nearestCentroids on the pool's workers, or in this thread without a pool. */
function nearest(
  kernels: Kernels,
  pool: ScanPool | null,
  rows: RowsRef,
  start: number,
  end: number,
  centroids: number,
  lists: number,
  out: number,
  dists: number,
): Promise<void> | void {
  if (pool === null) return kernels.nearestCentroids(rows, start, end, centroids, lists, out, dists);
  return pool.nearestCentroids(rows, start, end, centroids, lists, out, dists);
}
/** k-modes iterations over the training sample. */
const TRAIN_ITERATIONS = 4;
/** Training sample: this many rows per list (at most all rows). */
const SAMPLE_PER_LIST = 8;

/**
 * k-modes on packed bits: centroids start as distinct sampled rows; each iteration assigns
 * the sample to the nearest centroid (Hamming) and sets every centroid to the per-bit
 * majority of its members (ties keep the old bit); an emptied list takes a random sample row.
 * The sample is copied out of the rows (pinned only while copying); assignments run on the
 * pool's workers when a pool is given. Returns the centroid rows (lists x rowBytes, a pointer
 * the caller releases).
 */
export async function trainCentroids(
  kernels: Kernels,
  pool: ScanPool | null,
  pin: () => PinnedRows,
  candidates: Uint32Array,
  lists: number,
  dimBits: number,
  seed: number,
  stop: () => boolean = () => false,
): Promise<number> {
  const heap = kernels.heap;
  const words = wordsFor(dimBits);
  const rowBytes = words * 8;
  const next = mulberry32(seed);
  const sampleN = Math.min(candidates.length, lists * SAMPLE_PER_LIST);
  // partial Fisher-Yates over a copy: a seeded sample without repeats
  const pick = candidates.slice();
  for (let i = 0; i < sampleN; i++) {
    const j = i + (next() % (pick.length - i));
    [pick[i], pick[j]] = [pick[j]!, pick[i]!];
  }
  const sample = heap.alloc(sampleN * rowBytes);
  const centroids = heap.alloc(lists * rowBytes);
  const assign = heap.alloc(sampleN * 4);
  const counters = heap.alloc(dimBits * 4);
  try {
    {
      const { rows, unpin } = pin();
      const bytes = heap.bytes();
      for (let i = 0; i < sampleN; i++)
        bytes.copyWithin(sample + i * rowBytes, rows.base + pick[i]! * rowBytes, rows.base + (pick[i]! + 1) * rowBytes);
      unpin();
    }
    const sampleRows: RowsRef = { base: sample, words, count: sampleN };
    await seedCentroids(kernels, sampleRows, centroids, lists, assign, next, stop);
    for (let it = 0; it < TRAIN_ITERATIONS; it++) {
      for (let s = 0; s < sampleN; s += ASSIGN_CHUNK) {
        await nearest(kernels, pool, sampleRows, s, Math.min(sampleN, s + ASSIGN_CHUNK), centroids, lists, assign + s * 4, 0);
        await tick(stop);
      }
      const of = heap.u32(assign, sampleN).slice();
      const members = groupBy(of, lists);
      for (let l = 0; l < lists; l++) {
        const from = members.offsets[l]!,
          to = members.offsets[l + 1]!;
        const c = centroids + l * rowBytes;
        if (from === to) {
          const r = next() % sampleN;
          heap.bytes().copyWithin(c, sample + r * rowBytes, sample + (r + 1) * rowBytes);
          continue;
        }
        heap.bytes().fill(0, counters, counters + dimBits * 4);
        for (let i = from; i < to; i++) kernels.bundleAdd(counters, sample + members.order[i]! * rowBytes, dimBits);
        kernels.bundleThreshold(counters, dimBits, c, c);
      }
      await tick(stop);
    }
    return centroids;
  } catch (err) {
    heap.release(centroids);
    throw err;
  } finally {
    heap.release(sample);
    heap.release(assign);
    heap.release(counters);
  }
}

/**
 * k-means++ seeding: the first centroid is a random sample row, each next one a sample row
 * drawn with probability proportional to its squared distance to the nearest centroid so
 * far. Random seeds leave natural clusters without a seed; their rows then join far
 * centroids, whose majority drifts towards the global majority pattern and becomes a hub
 * that is near every query and holds rows of many clusters (measured: recall@10 0.85 at a
 * quarter of the lists probed, against >= 0.99 at a few percent with this seeding).
 */
async function seedCentroids(
  kernels: Kernels,
  sample: RowsRef,
  centroids: number,
  lists: number,
  scratch: number,
  next: () => number,
  stop: () => boolean,
): Promise<void> {
  const heap = kernels.heap;
  const rowBytes = sample.words * 8;
  const n = sample.count;
  const best = new Float64Array(n).fill(Infinity);
  const dists = heap.alloc(n * 4);
  try {
    let pick = next() % n;
    for (let l = 0; l < lists; l++) {
      const c = centroids + l * rowBytes;
      heap.bytes().copyWithin(c, sample.base + pick * rowBytes, sample.base + (pick + 1) * rowBytes);
      kernels.nearestCentroids(sample, 0, n, c, 1, scratch, dists);
      const d = heap.u32(dists, n);
      let total = 0;
      for (let i = 0; i < n; i++) {
        const x = d[i]! * d[i]!;
        if (x < best[i]!) best[i] = x;
        total += best[i]!;
      }
      if (total === 0) {
        pick = next() % n;
      } else {
        let at = (next() / 2 ** 32) * total;
        pick = n - 1;
        for (let i = 0; i < n; i++) {
          at -= best[i]!;
          if (at < 0) {
            pick = i;
            break;
          }
        }
      }
      if ((l & 63) === 63) await tick(stop);
    }
  } finally {
    heap.release(dists);
  }
}

/** Nearest centroid of rows [0, count) and the distance to it, in steps between which others run (on the pool's workers when given; the rows pinned per step). */
export async function assignRows(
  kernels: Kernels,
  pool: ScanPool | null,
  pin: () => PinnedRows,
  count: number,
  centroids: number,
  lists: number,
  stop: () => boolean = () => false,
): Promise<{ nearest: Uint32Array; dists: Uint32Array }> {
  const heap = kernels.heap;
  const near = new Uint32Array(count);
  const dists = new Uint32Array(count);
  const scratch = heap.alloc(Math.max(8, ASSIGN_CHUNK * 8));
  try {
    for (let s = 0; s < count; s += ASSIGN_CHUNK) {
      const e = Math.min(count, s + ASSIGN_CHUNK);
      const { rows, unpin } = pin();
      try {
        await nearest(kernels, pool, rows, s, e, centroids, lists, scratch, scratch + ASSIGN_CHUNK * 4);
      } finally {
        unpin();
      }
      near.set(heap.u32(scratch, e - s), s);
      dists.set(heap.u32(scratch + ASSIGN_CHUNK * 4, e - s), s);
      await tick(stop);
    }
    return { nearest: near, dists };
  } finally {
    heap.release(scratch);
  }
}

/** Per list: the RADIUS_QUANTILE of its members' distances (members = order[offsets[l] .. offsets[l + 1]), row ids into dists). */
export function listRadii(order: Uint32Array, offsets: Uint32Array, dists: Uint32Array): Uint32Array {
  const lists = offsets.length - 1;
  const radii = new Uint32Array(lists);
  for (let l = 0; l < lists; l++) {
    const from = offsets[l]!,
      to = offsets[l + 1]!;
    if (from === to) continue;
    const d = Uint32Array.from(order.subarray(from, to), (r) => dists[r]!).sort();
    radii[l] = d[Math.min(d.length - 1, Math.floor(RADIUS_QUANTILE * d.length))]!;
  }
  return radii;
}

/** Counting sort of items by their key in [0, lists): items of key l are order[offsets[l] .. offsets[l + 1]), ascending within. */
export function groupBy(keys: ArrayLike<number>, lists: number, items?: ArrayLike<number>): { order: Uint32Array; offsets: Uint32Array } {
  const n = items ? items.length : keys.length;
  const offsets = new Uint32Array(lists + 1);
  for (let i = 0; i < n; i++) offsets[keys[items ? items[i]! : i]! + 1]!++;
  for (let l = 0; l < lists; l++) offsets[l + 1]! += offsets[l]!;
  const fill = offsets.slice(0, lists);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const item = items ? items[i]! : i;
    order[fill[keys[item]!]!++] = item;
  }
  return { order, offsets };
}
