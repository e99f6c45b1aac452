/** @module abi — the only code that knows build/kernels.wasm: export names, pointers, layouts. */
import { readFileSync } from "node:fs";
import { SvcError } from "../errors.js";
import { SharedHeap } from "./shared-heap.js";

/** Must equal ABI_VERSION in assembly/index.ts. */
export const ABI_VERSION = 6;
const WASM_URL = new URL("../../build/kernels.wasm", import.meta.url);

/** Raw exports; every pointer is a byte offset into the shared memory. */
interface Exports {
  abiVersion(): number;
  hammingTopK(base: number, words: number, start: number, end: number, q: number, k: number, heap: number): number;
  hammingTopKMasked(base: number, words: number, start: number, end: number, q: number, k: number, heap: number, mask: number): number;
  hammingTopKList(base: number, words: number, list: number, n: number, q: number, k: number, heap: number): number;
  gatherRows(base: number, words: number, list: number, n: number, out: number): void;
  hammingTopKMulti(base: number, words: number, start: number, end: number, queries: number, nq: number, k: number, heaps: number): number;
  buildQueryTable(queries: number, nq: number, rowBytes: number, table: number, scratch: number): void;
  scanQueryTable(
    base: number,
    rowBytes: number,
    start: number,
    end: number,
    table: number,
    nq: number,
    k: number,
    heaps: number,
    scratch: number,
  ): number;
  hamming(a: number, b: number, words: number): number;
  hammingTopKRanges(base: number, words: number, ranges: number, nr: number, q: number, k: number, heap: number, mask: number): number;
  nearestCentroids(
    base: number,
    words: number,
    start: number,
    end: number,
    centroids: number,
    nc: number,
    out: number,
    dists: number,
  ): void;
  ivfProbe(
    base: number,
    words: number,
    count: number,
    centroids: number,
    lists: number,
    offsets: number,
    radii: number,
    indexedRows: number,
    q: number,
    k: number,
    heap: number,
    mask: number,
    minProbe: number,
    cap: number,
    slack: number,
    scratch: number,
    info: number,
  ): number;
  bind(a: number, b: number, out: number, words: number): void;
  bundleAdd(counters: number, row: number, dim: number, weight: number): void;
  bundleThreshold(counters: number, dim: number, tie: number, out: number, words: number): void;
  encodeF32(
    src: number,
    n: number,
    dim: number,
    P: number,
    signs: number,
    scratch: number,
    out: number,
    words: number,
    normOut: number,
  ): number;
  asymTable(q: number, dim: number, rowBytes: number, table: number): void;
  asymScores(base: number, rowBytes: number, list: number, n: number, table: number, out: number): void;
  dotNorm(q: number, x: number, dim: number, out: number): void;
  dotNormMany(qs: number, nq: number, x: number, dim: number, out: number): void;
  dotF32Many(qs: number, nq: number, x: number, dim: number, out: number): void;
  dotF32Keep(qs: number, nq: number, x: number, dim: number, norm: number, floors: number, idx: number, out: number): number;
  readProbe(ptr: number, bytes: number): bigint;
  refDistance(a: number, b: number, words: number): number;
  refHammingTopK(base: number, words: number, start: number, end: number, q: number, k: number, out: number): number;
  refHammingTopKMasked(base: number, words: number, start: number, end: number, q: number, k: number, out: number, mask: number): number;
  refHammingTopKList(base: number, words: number, list: number, n: number, q: number, k: number, out: number): number;
  refBind(a: number, b: number, out: number, words: number): void;
  refBundleAdd(counters: number, row: number, dim: number, weight: number): void;
  refBundleThreshold(counters: number, dim: number, tie: number, out: number, words: number): void;
  refEncodeF32(src: number, dim: number, P: number, signs: number, rotated: number, tmp: number, out: number, words: number): number;
  refDotNorm(q: number, x: number, dim: number, out: number): void;
}

/**
 * Row norms within which dotF32Keep's f32 dot products are trusted to their bound (engine/depth.ts exactBest): no
 * product or sum overflows, none that matters is subnormal. dotF32KeepRows scores rows outside them exactly.
 */
export const F32_NORM_MIN = 1e-15;
export const F32_NORM_MAX = 1e30;

/** Arguments of Kernels.dotF32KeepRows (pointers into the shared memory, so a pool worker takes them as they are). */
export interface KeepRows {
  queries: number;
  nq: number;
  qMax: number;
  xs: number;
  list: number;
  n: number;
  dim: number;
  floors: number;
  out: number;
  counts: number;
}

/** Bytes of dotF32KeepRows's results per row for nq queries: Σx² and nq scores (f64), nq indices (u32), to 8 bytes. */
export function keepStride(nq: number): number {
  return Math.ceil((8 * (1 + nq) + 4 * nq) / 8) * 8;
}

/** Results of a top-k scan: ascending distance, ties by ascending row. */
export interface TopK {
  rows: Uint32Array;
  dists: Uint32Array;
}

/** Rows of a packed-bit arena: row r starts at base + r * words * 8. */
export interface RowsRef {
  base: number;
  words: number;
  count: number;
}

/**
 * An inverted file in shared memory: `lists` centroid rows at `centroids`, u32 offsets
 * (lists + 1; list l = rows [offsets[l], offsets[l + 1])) and u32 radii (lists). Rows from
 * indexedRows on are the delta. Layout in FORMAT.md ("Approximate index").
 */
export interface IvfRef {
  centroids: number;
  lists: number;
  offsets: number;
  radii: number;
  indexedRows: number;
}

/** u64 lanes per row for `dimBits` bits, padded to a multiple of 128 bits. */
export function wordsFor(dimBits: number): number {
  return Math.ceil(dimBits / 128) * 2;
}

let compiled: WebAssembly.Module | undefined;

/** The compiled module, cached; it can be posted to workers. */
export function kernelModule(): WebAssembly.Module {
  compiled ??= new WebAssembly.Module(readFileSync(WASM_URL));
  return compiled;
}

/** Which kernel family runs: the fast paths, or the scalar references (for tests and benches). */
export type Variant = "fast" | "reference";

/** Queries per query table (one 32-byte lane group per table entry). */
export const TABLE_QUERIES = 32;
/** Measured: below 16 queries per block, or over few rows, 16 POPCNTs per pair beat the table. */
const TABLE_MIN_QUERIES = 16;
const TABLE_MIN_ROWS = 2048;
/** Rows wider than this (2048 bits) would make the table (rowBytes x 8 KiB) outgrow L2. */
const TABLE_MAX_ROW_BYTES = 256;

/** How a blocked multi-query scan computes distances: chosen by size, or forced (tests, benches). */
export type MultiPath = "auto" | "popcnt" | "table";

/** Bytes of a query table plus its scratch for rows of `words` lanes (0 when the table path is never used). */
export function queryTableBytes(words: number): number {
  return words * 8 <= TABLE_MAX_ROW_BYTES ? words * 8 * 8192 + 128 : 0;
}

/** Whether a blocked scan of nq queries over n rows should use a query table. */
export function useQueryTable(rows: RowsRef, n: number, nq: number, path: MultiPath = "auto"): boolean {
  if (path !== "auto") return path === "table" && queryTableBytes(rows.words) > 0;
  return nq >= TABLE_MIN_QUERIES && n >= TABLE_MIN_ROWS && queryTableBytes(rows.words) > 0;
}

/**
 * Typed, validated calls into one instance. Validation happens here so a bad argument is
 * an SvcError, never a trap inside a worker. Kernels never allocate: callers pass memory.
 */
export class Kernels {
  readonly heap: SharedHeap;
  private readonly x: Exports;

  private constructor(heap: SharedHeap, exports: Exports) {
    this.heap = heap;
    this.x = exports;
  }

  /** Instantiate on `heap`'s memory (a new shared memory when omitted). */
  static create(heap = new SharedHeap(), module = kernelModule()): Kernels {
    const instance = new WebAssembly.Instance(module, { env: { memory: heap.memory } });
    const x = instance.exports as unknown as Exports;
    const found = x.abiVersion();
    if (found !== ABI_VERSION) {
      throw new SvcError("E_ABI", `kernels.wasm has ABI ${found}, expected ${ABI_VERSION}; run npm run build`);
    }
    return new Kernels(heap, x);
  }

  /** Copy a packed query row into shared memory, checking it is as wide as the rows; the caller releases it. */
  putQuery(rows: RowsRef, bits: Uint8Array): number {
    if (bits.byteLength !== rows.words * 8) {
      throw new SvcError("E_DIMENSION", `query row has ${bits.byteLength} bytes, rows have ${rows.words * 8}`, { field: "vector" });
    }
    return this.heap.put(bits);
  }

  /** Top-k into `out` (k u64 slots); returns the count. For workers: no decoding. */
  topKRaw(rows: RowsRef, start: number, end: number, query: number, k: number, out: number, variant: Variant = "fast"): number {
    checkRange(rows, start, end);
    checkK(k);
    const f = variant === "fast" ? this.x.hammingTopK : this.x.refHammingTopK;
    return this.guard(() => f(rows.base, rows.words, start, end, query, heapSlots(k, end - start), out));
  }

  topK(rows: RowsRef, start: number, end: number, query: number, k: number, variant: Variant = "fast"): TopK {
    checkK(k);
    return this.withOut(heapSlots(k, end - start), (out) => this.topKRaw(rows, start, end, query, k, out, variant));
  }

  /** Top-k among rows in [start, end) whose bit is set in the row bitset at `mask`, into `out`. */
  topKMaskedRaw(
    rows: RowsRef,
    start: number,
    end: number,
    query: number,
    k: number,
    mask: number,
    out: number,
    variant: Variant = "fast",
  ): number {
    checkRange(rows, start, end);
    checkK(k);
    const f = variant === "fast" ? this.x.hammingTopKMasked : this.x.refHammingTopKMasked;
    return this.guard(() => f(rows.base, rows.words, start, end, query, heapSlots(k, end - start), out, mask));
  }

  topKMasked(rows: RowsRef, start: number, end: number, query: number, k: number, mask: number, variant: Variant = "fast"): TopK {
    checkK(k);
    return this.withOut(heapSlots(k, end - start), (out) => this.topKMaskedRaw(rows, start, end, query, k, mask, out, variant));
  }

  /** Top-k among an explicit list of row ids (u32 at `list`, n of them) into `out`; returns the count. For workers. */
  topKListRaw(rows: RowsRef, list: number, n: number, query: number, k: number, out: number, variant: Variant = "fast"): number {
    checkK(k);
    const ids = this.heap.u32(list, n);
    for (let i = 0; i < n; i++) {
      if (ids[i]! >= rows.count)
        throw new SvcError("E_RANGE", `candidate row ${ids[i]} is past the last row ${rows.count - 1}`, { field: "rows" });
    }
    const f = variant === "fast" ? this.x.hammingTopKList : this.x.refHammingTopKList;
    return this.guard(() => f(rows.base, rows.words, list, n, query, heapSlots(k, n), out));
  }

  topKList(rows: RowsRef, list: number, n: number, query: number, k: number, variant: Variant = "fast"): TopK {
    checkK(k);
    return this.withOut(heapSlots(k, n), (out) => this.topKListRaw(rows, list, n, query, k, out, variant));
  }

  /**
   * Copy the n rows at `list` (u32 row ids) to `out` (n rows of rows.words u64, in list order): a scattered row list
   * made contiguous, so that later scans of the same rows read them sequentially.
   */
  gatherRows(rows: RowsRef, list: number, n: number, out: number): void {
    const ids = this.heap.u32(list, n);
    for (let i = 0; i < n; i++) {
      if (ids[i]! >= rows.count)
        throw new SvcError("E_RANGE", `gathered row ${ids[i]} is past the last row ${rows.count - 1}`, { field: "rows" });
    }
    this.guard(() => {
      this.x.gatherRows(rows.base, rows.words, list, n, out);
      return 0;
    });
  }

  /**
   * Blocked scan of nq queries (contiguous rows at `queries`) into nq heaps at `out`; returns
   * the per-heap count. Given a query-table block (`table`, queryTableBytes(words) bytes),
   * blocks of TABLE_QUERIES queries with at least TABLE_MIN_QUERIES use the table kernel;
   * the rest use 16 POPCNTs per pair.
   */
  topKMultiRaw(rows: RowsRef, start: number, end: number, queries: number, nq: number, k: number, out: number, table = 0): number {
    checkRange(rows, start, end);
    checkK(k);
    const slots = heapSlots(k, end - start);
    const rowBytes = rows.words * 8;
    let count = 0;
    for (let first = 0; first < nq; first += TABLE_QUERIES) {
      const n = Math.min(TABLE_QUERIES, nq - first);
      const q = queries + first * rowBytes;
      const heaps = out + first * slots * 8;
      count = this.guard(() => {
        if (table === 0 || n < TABLE_MIN_QUERIES) return this.x.hammingTopKMulti(rows.base, rows.words, start, end, q, n, slots, heaps);
        const scratch = table + rowBytes * 8192;
        this.x.buildQueryTable(q, n, rowBytes, table, scratch);
        return this.x.scanQueryTable(rows.base, rowBytes, start, end, table, n, slots, heaps, scratch);
      });
    }
    return count;
  }

  topKMulti(rows: RowsRef, start: number, end: number, queries: number, nq: number, k: number, path: MultiPath = "auto"): TopK[] {
    checkK(k);
    const slots = heapSlots(k, end - start);
    const out = this.heap.alloc(nq * slots * 8);
    const table = useQueryTable(rows, end - start, nq, path) ? this.heap.alloc(queryTableBytes(rows.words)) : 0;
    try {
      const count = this.topKMultiRaw(rows, start, end, queries, nq, k, out, table);
      return Array.from({ length: nq }, (_, j) => decodeKeys(this.heap, out + j * slots * 8, count));
    } finally {
      this.heap.release(out);
      if (table !== 0) this.heap.release(table);
    }
  }

  /**
   * Top-k over the rows of nr ranges (u32 pairs [start, end) at `ranges`, not overlapping),
   * optionally only rows set in the bitset at `mask`: the probed lists of an inverted file
   * plus its fresh delta, in one heap. Ranges are checked against rows.count.
   */
  topKRanges(rows: RowsRef, ranges: number, nr: number, query: number, k: number, mask = 0): TopK {
    checkK(k);
    const pairs = this.heap.u32(ranges, nr * 2);
    let n = 0;
    for (let i = 0; i < nr; i++) {
      checkRange(rows, pairs[2 * i]!, pairs[2 * i + 1]!);
      n += pairs[2 * i + 1]! - pairs[2 * i]!;
    }
    const slots = heapSlots(k, n);
    return this.withOut(slots, (out) =>
      this.guard(() => this.x.hammingTopKRanges(rows.base, rows.words, ranges, nr, query, slots, out, mask)),
    );
  }

  /**
   * One query's probe of an inverted file over `rows` (see IvfRef): the delta, then lists by
   * centroid distance while the probe rule holds (assembly/ivf.ts). Optionally only rows set
   * in the bitset at `mask`. Returns the top-k and the lists scanned.
   */
  ivfProbe(
    rows: RowsRef,
    ivf: IvfRef,
    query: number,
    k: number,
    probe: { minProbe: number; cap: number; slack: number },
    mask = 0,
  ): { top: TopK; probed: number } {
    checkK(k);
    const cap = Math.max(1, Math.min(ivf.lists, Math.floor(probe.cap)));
    const slots = heapSlots(k, rows.count);
    const out = this.heap.alloc(slots * 8 + cap * 8 + 8);
    try {
      const count = this.ivfProbeRaw(rows, ivf, query, k, { ...probe, cap }, mask, out, out + slots * 8, out + slots * 8 + cap * 8);
      return { top: decodeKeys(this.heap, out, count), probed: this.heap.u32(out + slots * 8 + cap * 8, 1)[0]! };
    } finally {
      this.heap.release(out);
    }
  }

  /**
   * ivfProbe for workers: no allocation. `out` has room for heapSlots(k, rows.count) keys,
   * `scratch` for cap keys and `info` for one u32 (lists probed). Returns the key count.
   */
  ivfProbeRaw(
    rows: RowsRef,
    ivf: IvfRef,
    query: number,
    k: number,
    probe: { minProbe: number; cap: number; slack: number },
    mask: number,
    out: number,
    scratch: number,
    info: number,
  ): number {
    checkK(k);
    if (ivf.indexedRows > rows.count || ivf.lists < 1)
      throw new SvcError("E_RANGE", `index covers ${ivf.indexedRows} rows of ${rows.count}`, { field: "rows" });
    const cap = Math.max(1, Math.min(ivf.lists, Math.floor(probe.cap)));
    return this.guard(() =>
      this.x.ivfProbe(
        rows.base,
        rows.words,
        rows.count,
        ivf.centroids,
        ivf.lists,
        ivf.offsets,
        ivf.radii,
        ivf.indexedRows,
        query,
        heapSlots(k, rows.count),
        out,
        mask,
        Math.max(0, Math.floor(probe.minProbe)),
        cap,
        Math.max(0, Math.floor(probe.slack)),
        scratch,
        info,
      ),
    );
  }

  /** Nearest of `nc` centroids (rows of the same width at `centroids`) for rows [start, end): u32 indexes into out, distances into dists (0: none). */
  nearestCentroids(rows: RowsRef, start: number, end: number, centroids: number, nc: number, out: number, dists = 0): void {
    checkRange(rows, start, end);
    if (!Number.isInteger(nc) || nc < 1) throw new SvcError("E_RANGE", `need at least one centroid, got ${nc}`, { field: "centroids" });
    this.x.nearestCentroids(rows.base, rows.words, start, end, centroids, nc, out, dists);
  }

  hamming(a: number, b: number, words: number, variant: Variant = "fast"): number {
    return (variant === "fast" ? this.x.hamming : this.x.refDistance)(a, b, words) >>> 0;
  }

  bind(a: number, b: number, out: number, words: number, variant: Variant = "fast"): void {
    (variant === "fast" ? this.x.bind : this.x.refBind)(a, b, out, words);
  }

  /** counters (dim i32) += weight * bipolar(row); weight -1 removes an added row. */
  bundleAdd(counters: number, row: number, dim: number, weight = 1, variant: Variant = "fast"): void {
    (variant === "fast" ? this.x.bundleAdd : this.x.refBundleAdd)(counters, row, dim, weight | 0);
  }

  /** Majority bits from counters; ties take the bit of the seeded tie row. */
  bundleThreshold(counters: number, dim: number, tie: number, out: number, variant: Variant = "fast"): void {
    (variant === "fast" ? this.x.bundleThreshold : this.x.refBundleThreshold)(counters, dim, tie, out, wordsFor(dim));
  }

  /** Encode n vectors (f32 at src) to rows at out; NaN/Infinity is an SvcError naming the vector. */
  encode(src: number, n: number, dim: number, rotation: { P: number; signs: number; scratch: number }, out: number, normOut = 0): void {
    const bad = this.x.encodeF32(src, n, dim, rotation.P, rotation.signs, rotation.scratch, out, wordsFor(dim), normOut);
    if (bad >= 0) throw new SvcError("E_NON_FINITE", `vector ${bad} holds NaN or Infinity`, { field: `vectors[${bad}].values` });
  }

  /** Dense O(P^2) reference of encode for one vector; rotated receives P f64, tmp is P f64 scratch. */
  encodeReference(src: number, dim: number, rotation: { P: number; signs: number }, rotated: number, tmp: number, out: number): boolean {
    return this.x.refEncodeF32(src, dim, rotation.P, rotation.signs, rotated, tmp, out, wordsFor(dim)) === 0;
  }

  /**
   * The asymmetric estimate's lookup table (rows.words x 8 x 32 f32 at `table`, what asymScores reads) of a query's
   * `dim` rotated coordinates (f32 at `q`): the same bits as src/engine/estimate.ts fillTable, its reference.
   * Rows hold a coordinate per bit, so dim must fit in a row: dim <= rows.words x 64.
   */
  asymTable(rows: RowsRef, q: number, dim: number, table: number): void {
    if (!Number.isInteger(dim) || dim < 0 || dim > rows.words * 64)
      throw new SvcError("E_DIMENSION", `query has ${dim} rotated coordinates, rows hold ${rows.words * 64} bits`, { field: "vector" });
    this.x.asymTable(q, dim, rows.words * 8, table);
  }

  /**
   * Asymmetric estimates (src/engine/estimate.ts) of the n rows whose u32 ids are at `list`: f64 scores at out,
   * from the per-byte lookup table at `table` (rowBytes x 32 f32). Ids must be < rows.count (the caller's candidates).
   */
  asymScores(rows: RowsRef, list: number, n: number, table: number, out: number): void {
    this.x.asymScores(rows.base, rows.words * 8, list, n, table, out);
  }

  /** f64 at out: the dot product of the dim f32 at q and x, then x's squared norm (f64 accumulation, same bits either variant). */
  dotNorm(q: number, x: number, dim: number, out: number, variant: Variant = "fast"): void {
    (variant === "fast" ? this.x.dotNorm : this.x.refDotNorm)(q, x, dim, out);
  }

  /**
   * dotNorm of `nq` queries (f32 rows of `dim`, one after another at `qs`) against the one row at `x`: f64 at out = Σ x²,
   * at out + 8(1 + i) = query i's dot product, each the same bits as dotNorm(query i, x). out holds 8(1 + nq) bytes.
   */
  dotNormMany(qs: number, nq: number, x: number, dim: number, out: number): void {
    this.x.dotNormMany(qs, nq, x, dim, out);
  }

  /**
   * f64 at out + 8i: query i's dot product with the row at `x` (queries as in dotNormMany), computed in f32: within
   * (dim / 8 + 12) x 2^-24 x Σ|q_i[j]·x[j]| of the exact one while no product or partial sum leaves f32's normal range.
   * About twice dotNormMany's pairs per second; a filter, never a score (assembly/rescore.ts).
   */
  dotF32Many(qs: number, nq: number, x: number, dim: number, out: number): void {
    this.x.dotF32Many(qs, nq, x, dim, out);
  }

  /**
   * dotF32Many's dot products divided by `norm` (the row's), kept where at least the query's floor (nq f64 at
   * `floors`): the kept queries' indices (u32) at `idx` and their scores (f64) at `out`, in query order; returns how
   * many. `out` holds 8 x nq bytes. A filter, never a score.
   */
  dotF32Keep(qs: number, nq: number, x: number, dim: number, norm: number, floors: number, idx: number, out: number): number {
    return this.x.dotF32Keep(qs, nq, x, dim, norm, floors, idx, out);
  }

  /**
   * dotF32Keep for `n` rows against nq queries (at `queries`, the largest |q| `qMax`): row i is the f32 row at
   * xs + list[i] x dim x 4 (`list`: n u32), its results at out + i x keepStride(nq): f64 Σx², then the kept scores (f64,
   * from + 8), then their query indices (u32, from + 8(1 + nq)); its kept count (u32) at counts + 4i. A row whose norm
   * is outside [F32_NORM_MIN, F32_NORM_MAX / qMax] (where the f32 bound does not hold) is scored exactly (dotNormMany),
   * kept by the same floors. The depth calibration's exact pass (engine/depth.ts exactBest), in the calling thread or a
   * pool worker (one chunk a task): the same kernel on the same memory either way.
   */
  dotF32KeepRows({ queries: qs, nq, qMax, xs, list, n, dim, floors, out, counts }: KeepRows): void {
    const stride = keepStride(nq);
    const buf = this.heap.memory.buffer;
    const at = new Uint32Array(buf, list, n);
    const kept = new Uint32Array(buf, counts, n);
    const floor = new Float64Array(buf, floors, nq);
    for (let i = 0; i < n; i++) {
      const x = xs + at[i]! * dim * 4;
      const o = out + i * stride;
      this.x.dotNormMany(qs, 0, x, dim, o);
      const res = new Float64Array(buf, o, 1 + nq);
      const norm = Math.sqrt(res[0]!);
      if (norm >= F32_NORM_MIN && norm * qMax <= F32_NORM_MAX) {
        kept[i] = this.x.dotF32Keep(qs, nq, x, dim, norm, floors, o + 8 * (1 + nq), o + 8);
        continue;
      }
      // out of f32's safe range: the exact scores (within any margin of themselves), compacted in place (t <= j)
      this.x.dotNormMany(qs, nq, x, dim, o);
      const idx = new Uint32Array(buf, o + 8 * (1 + nq), nq);
      let t = 0;
      for (let j = 0; j < nq; j++) {
        const score = norm > 0 ? res[1 + j]! / norm : 0;
        if (score >= floor[j]!) {
          res[1 + t] = score;
          idx[t++] = j;
        }
      }
      kept[i] = t;
    }
  }

  /** Stream-read rows [0, count) once (two streams, no compute); the scan's memory ceiling. */
  readProbe(rows: RowsRef): void {
    this.x.readProbe(rows.base, rows.count * rows.words * 8);
  }

  private withOut(k: number, run: (out: number) => number): TopK {
    const out = this.heap.alloc(k * 8);
    try {
      return decodeKeys(this.heap, out, run(out));
    } finally {
      this.heap.release(out);
    }
  }

  private guard(run: () => number): number {
    try {
      return run();
    } catch (err) {
      throw new SvcError("E_KERNEL", `kernel trapped: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** Decode `count` ascending u64 keys (dist << 32 | row) at ptr. */
export function decodeKeys(heap: SharedHeap, ptr: number, count: number): TopK {
  const lanes = heap.u32(ptr, count * 2);
  // One buffer for both halves: a typed array past 64 bytes is a malloc'd backing store (~0.45 µs each in V8, against
  // ~20 ns for a view), and a probe of 50 candidates would otherwise make two.
  const both = new Uint32Array(count * 2);
  const rows = both.subarray(0, count);
  const dists = both.subarray(count);
  for (let i = 0; i < count; i++) {
    rows[i] = lanes[2 * i]!;
    dists[i] = lanes[2 * i + 1]!;
  }
  return { rows, dists };
}

/** Heap capacity for top-k over n candidates: never more slots than candidates (and at least 1). */
export function heapSlots(k: number, n: number): number {
  return Math.max(1, Math.min(k, n));
}

export function checkK(k: number): void {
  if (!Number.isInteger(k) || k <= 0 || k > 0x7fffffff)
    throw new SvcError("E_TOP_K", `topK must be a positive integer, got ${k}`, { field: "topK" });
}

function checkRange(rows: RowsRef, start: number, end: number): void {
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > rows.count || start > end) {
    throw new SvcError("E_RANGE", `row range [${start}, ${end}) is outside [0, ${rows.count})`, { field: "range" });
  }
}
