/** @module reader — the read path of a collection, over the partitions' visible state only: fetch, query, queryBatch, stats, order, facet, range, ids, count, namespaces, indexStats. */
import { SvcError } from "../errors.js";
import type { CollectionState } from "./collection-state.js";
import type { Metadata } from "./filter/metadata.js";
import { parseFilter } from "./filter/parse.js";
import { checkBits, checkField, checkTopK, checkValues, MAX_ORDER_LIMIT } from "./input-checks.js";
import type { ProbeParams } from "./ivf.js";
import { compareIds, idsAfter, type IdPage, type IdPageInput } from "./id-order.js";
import { SortedIds } from "./sorted-ids.js";
import type { Partition } from "./partition.js";
import { checkSparse, MAX_SPARSE_INDEX_NNZ, sparseDot, sparseJson, sparseOf, type SparseVector } from "./sparse.js";
import { SparsePostings } from "./sparse-postings.js";
import { search, searchBatch, TOMBSTONE_SKIP_MAX, type Plan, type Scoring, type SearchResult } from "./search.js";

export interface QueryInput {
  vector?: ArrayLike<number>;
  bits?: Uint8Array;
  id?: string;
  topK: number;
  filter?: unknown;
  includeValues?: boolean;
  includeMetadata?: boolean;
  includePayload?: boolean;
  /** Rows the 1-bit scan keeps, and rows rescored with float32 values (cosine); see search.ts. */
  candidates?: number;
  rescore?: number;
  /** Float collections: the exact float top-k over every live row (or filter match); bit collections: scan every row even when the namespace has an approximate index. */
  exact?: boolean;
  /**
   * Pinecone's sparse query `{indices, values}` (sparse.ts `checkSparse`). On a dense collection (a dotproduct index
   * only: `scoring` must be "dotproduct", as Pinecone) every live row matching the filter is scored exactly,
   * dot(vector, row) when a vector or id is given, plus the sparse dot product with the row's sparse values (0 for a
   * row without any); plan "hybrid", the approximate index is not used. On a sparse-only index (`sparseIndex`) the
   * postings are searched (plan "sparse").
   */
  sparseVector?: unknown;
  /**
   * The collection holds a sparse-only index (memory/vector-index.ts): rows are ranked by the sparse dot product
   * of their sparse values with `sparseVector` (or with the sparse values of the stored row `id`); only rows sharing
   * an index with a non-zero query value match. A dense `vector` is refused.
   */
  sparseIndex?: boolean;
  /** How a float collection's rows are ranked (search.ts `Scoring`; default cosine): the vector index's metric. */
  scoring?: Scoring;
  /** How the approximate index is probed (benchmarks and tuning; default DEFAULT_PROBE in ivf.ts). */
  probe?: ProbeParams;
}

export interface Match {
  id: string;
  score: number;
  values?: number[] | Uint8Array;
  metadata?: Metadata;
  /** With includePayload, when the row has one. */
  payload?: Uint8Array;
  /** With includeValues on a hybrid query (sparseVector), when the row has sparse values. */
  sparseValues?: { indices: number[]; values: number[] };
}

export interface StoredRow {
  id: string;
  metadata: Metadata;
  payload: Uint8Array | null;
}

export interface FetchedVector extends StoredRow {
  values: Float32Array | Uint8Array;
}

export interface OrderInput {
  /** The metadata field whose numbers order the rows; rows without a number there are left out. */
  field: string;
  filter?: unknown;
  /** An integer in [1, MAX_ORDER_LIMIT]. */
  limit: number;
  /** Largest first (default); ties: the later-appended row first, or the earlier one ascending. */
  desc?: boolean;
  includeMetadata?: boolean;
  includePayload?: boolean;
}

export interface OrderedRow {
  id: string;
  value: number;
  metadata?: Metadata;
  payload?: Uint8Array;
}

/** A filtered list walks the cached sorted ids when the filter keeps at least 1/LIST_WALK_FRACTION of the live rows. */
const LIST_WALK_FRACTION = 8;

/** Reads only: a query pins the partition it started on, so a swap or retire meanwhile does not close it under the scan. */
export class Reader {
  /** Each partition's sparse postings (sparse-only indexes), extended by the rows appended since the last query. */
  private readonly postings = new WeakMap<Partition, SparsePostings>();
  /** Each partition's ids in id order (sorted-ids.ts), brought up to date by each list: a write costs the next list the rows it appended, not a re-sort. */
  private readonly sortedIds = new WeakMap<Partition, SortedIds>();

  constructor(private readonly s: CollectionState) {}

  /** Each found id's vector, metadata and payload, in `ids` order (absent ids left out). */
  fetch(namespace: string, ids: readonly string[]): FetchedVector[] {
    return this.found(namespace, ids, (p, row, id) => ({ id, values: p.vector(row), ...p.stored(row) }));
  }

  /** Like fetch without the vectors. */
  rows(namespace: string, ids: readonly string[]): StoredRow[] {
    return this.found(namespace, ids, (p, row, id) => ({ id, ...p.stored(row) }));
  }

  /** `read` of each id the namespace holds, in `ids` order. */
  private found<T>(namespace: string, ids: readonly string[], read: (p: Partition, row: number, id: string) => T): T[] {
    const p = this.s.partitions.get(namespace);
    const out: T[] = [];
    if (p === undefined) return out;
    for (const id of ids) {
      const row = p.rowOf(id);
      if (row !== undefined) out.push(read(p, row, id));
    }
    return out;
  }

  /** `scanned`: the rows the query had to consider (the namespace's live rows, those its filter matched, or about those an index probe compared, at most the live rows); what metering charges. */
  async query(
    namespace: string,
    req: QueryInput,
  ): Promise<{ matches: Match[]; plan: Plan; scanned: number; matched?: number; timings?: SearchResult["timings"]; probed?: number }> {
    const k = req.topK;
    checkTopK(k);
    const filter = parseFilter(req.filter);
    const p = this.s.partitions.get(namespace);
    if (req.sparseIndex === true) return this.sparseOnly(p, namespace, req, filter);
    if (req.sparseVector !== undefined) return this.hybrid(p, namespace, req, filter);
    let vector: Float32Array | Uint8Array;
    if (req.id !== undefined) {
      const row = p?.rowOf(req.id);
      if (row === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
      vector = p!.vector(row);
    } else if (this.s.rotation) vector = checkValues(req.vector, "vector", this.s.dimension);
    else vector = checkBits(req.bits, "bits", this.s.dimension);
    if (p === undefined || p.liveCount === 0) return { matches: [], plan: "empty", scanned: 0 };

    const heap = this.s.kernels.heap;
    const bits = heap.alloc(this.s.rowBytes);
    // the unit query, then the rotated query: both read in place by the float stages (search.ts, estimate.ts)
    const unitPtr = this.s.rotation ? heap.alloc(this.s.dimension * 8) : 0;
    let unit: Float32Array | null = null;
    let rotated: Float32Array | null = null;
    let norm = 0;
    try {
      if (this.s.rotation) {
        const v = vector as Float32Array;
        this.s.rotation.encode(v, bits, unitPtr);
        // views, not copies: unitPtr is held until the search is done (shared memory: growing it keeps these views valid)
        rotated = this.s.rotation.copyRotated(unitPtr + this.s.dimension * 4);
        unit = heap.f32(unitPtr, this.s.dimension);
        for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!;
        norm = Math.sqrt(norm);
      } else heap.bytes().set(vector, bits);
      p.pins++;
      try {
        const res = await search(this.s.kernels, this.s.pool, p, {
          bits,
          unit,
          unitAt: unitPtr,
          rotated,
          rotatedAt: unitPtr && unitPtr + this.s.dimension * 4,
          norm,
          scoring: req.scoring,
          k,
          filter,
          candidates: req.candidates,
          rescore: req.rescore,
          exact: req.exact === true,
          probe: req.probe,
        });
        const matches = res.hits.map(({ row, score }) => {
          const match: Match = { id: p.idOf(row), score };
          if (req.includeValues) {
            const v = p.vector(row);
            match.values = v instanceof Float32Array ? Array.from(v) : v;
          }
          if (req.includeMetadata) match.metadata = p.metadata(row);
          if (req.includePayload) {
            const payload = p.payload(row);
            if (payload !== null) match.payload = payload;
          }
          return match;
        });
        // An index probe's estimate is capped at the live rows: never more than an exact scan (the wallet reserves that bound).
        return {
          matches,
          plan: res.plan,
          scanned: Math.min(res.scanned ?? res.matched ?? p.liveCount, p.liveCount),
          matched: res.matched,
          timings: res.timings,
          ...(res.probed === undefined ? {} : { probed: res.probed }),
        };
      } finally {
        p.pins--;
        this.s.closeRetired();
      }
    } finally {
      heap.release(bits);
      if (unitPtr) heap.release(unitPtr);
    }
  }

  /** An exact scan scoring dense dot product (when a vector or id is given) + sparse dot over the live rows matching `filter` (QueryInput.sparseVector). */
  private hybrid(
    p: Partition | undefined,
    namespace: string,
    req: QueryInput,
    filter: ReturnType<typeof parseFilter>,
  ): { matches: Match[]; plan: Plan; scanned: number } {
    if (!this.s.rotation) throw new SvcError("E_BAD_REQUEST", "sparse queries need a float collection", { field: "sparseVector" });
    // Pinecone scores sparse-dense as dense dot + sparse dot and refuses sparse values on cosine and euclidean indexes.
    if ((req.scoring ?? "cosine") !== "dotproduct")
      throw new SvcError(
        "E_BAD_REQUEST",
        `this index (metric ${req.scoring ?? "cosine"}) does not take sparse values: sparse-dense queries need a dotproduct index (or a sparse index)`,
        { field: "sparseVector" },
      );
    const sparse = checkSparse(req.sparseVector, "sparseVector");
    let dense: Float32Array | null = null;
    if (req.id !== undefined) {
      const row = p?.rowOf(req.id);
      if (row === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
      dense = p!.vector(row) as Float32Array;
    } else if (req.vector !== undefined) dense = checkValues(req.vector, "vector", this.s.dimension);
    if (p === undefined || p.liveCount === 0) return { matches: [], plan: "empty", scanned: 0 };
    const rows = (filter === null ? p.live() : p.index.evaluate(filter, p.live())).toUint32Array();
    const scored: Array<{ row: number; id: string; score: number }> = [];
    for (const row of rows) {
      let score = sparseDotOr0(sparse, sparseOf(p.payload(row)));
      if (dense !== null) score += dotF32(dense, p.vector(row) as Float32Array);
      scored.push({ row, id: p.idOf(row), score });
    }
    scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const matches = scored.slice(0, req.topK).map(({ row, id, score }) => {
      const match: Match = { id, score };
      if (req.includeValues) {
        match.values = Array.from(p.vector(row));
        const s = sparseOf(p.payload(row));
        if (s !== null) match.sparseValues = sparseJson(s);
      }
      if (req.includeMetadata) match.metadata = p.metadata(row);
      return match;
    });
    return { matches, plan: "hybrid", scanned: rows.length };
  }

  /** A sparse-only index's top-k (QueryInput.sparseIndex) from the partition's postings; `scanned`: the postings read, at most the live rows. */
  private sparseOnly(
    p: Partition | undefined,
    namespace: string,
    req: QueryInput,
    filter: ReturnType<typeof parseFilter>,
  ): { matches: Match[]; plan: Plan; scanned: number } {
    if (req.vector !== undefined)
      throw new SvcError("E_BAD_REQUEST", "a sparse index holds no dense values: query with sparseVector (or the id of a stored vector)", {
        field: "vector",
      });
    if (req.sparseVector !== undefined && req.id !== undefined)
      throw new SvcError("E_BAD_REQUEST", "give either sparseVector or id, not both", { field: "id" });
    let q: SparseVector;
    if (req.sparseVector !== undefined) q = checkSparse(req.sparseVector, "sparseVector", MAX_SPARSE_INDEX_NNZ);
    else if (req.id !== undefined) {
      const row = p?.rowOf(req.id);
      if (row === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
      q = sparseOf(p!.payload(row)) ?? { indices: new Uint32Array(0), values: new Float32Array(0) };
    } else
      throw new SvcError("E_BAD_REQUEST", "a sparse index is queried with sparseVector (or the id of a stored vector)", {
        field: "sparseVector",
      });
    if (p === undefined || p.liveCount === 0) return { matches: [], plan: "empty", scanned: 0 };
    let postings = this.postings.get(p);
    if (postings === undefined || postings.indexed > p.rows) this.postings.set(p, (postings = new SparsePostings()));
    postings.extend(p);
    const accept = filter === null ? p.live() : p.index.evaluate(filter, p.live());
    const { hits, scanned } = postings.search(q, req.topK, accept, p);
    const matches = hits.map(({ row, score }) => {
      const match: Match = { id: p.idOf(row), score };
      if (req.includeValues) {
        match.values = [];
        const s = sparseOf(p.payload(row));
        if (s !== null) match.sparseValues = sparseJson(s);
      }
      if (req.includeMetadata) match.metadata = p.metadata(row);
      return match;
    });
    return { matches, plan: "sparse", scanned: Math.min(scanned, p.liveCount) };
  }

  /**
   * Top-k of many packed-bit queries at once (hamming collections, no filter): the
   * throughput path. With an index the probes run on the pool's workers (each takes a share
   * of the queries); without one, or with `exact`, one blocked exact scan. Matches carry id
   * and score only.
   */
  async queryBatch(
    namespace: string,
    req: { bits: readonly Uint8Array[]; topK: number; exact?: boolean; probe?: ProbeParams },
  ): Promise<{ matches: Match[][]; plan: Plan }> {
    if (this.s.rotation)
      throw new SvcError("E_BAD_REQUEST", "queryBatch takes packed bits: it serves hamming collections", { field: "bits" });
    const k = req.topK;
    checkTopK(k);
    if (!Array.isArray(req.bits) || req.bits.length === 0)
      throw new SvcError("E_BAD_REQUEST", "bits must be a non-empty array of packed rows", { field: "bits" });
    const rowBytes = this.s.rowBytes;
    const block = new Uint8Array(req.bits.length * rowBytes);
    req.bits.forEach((b, i) => block.set(checkBits(b, `bits[${i}]`, this.s.dimension), i * rowBytes));
    const p = this.s.partitions.get(namespace);
    if (p === undefined || p.liveCount === 0) return { matches: req.bits.map(() => []), plan: "empty" };
    if (p.tombstones.size > TOMBSTONE_SKIP_MAX) {
      const each = await Promise.all(req.bits.map((bits) => this.query(namespace, { bits, topK: k, exact: req.exact, probe: req.probe })));
      return { matches: each.map((r) => r.matches), plan: each[0]!.plan };
    }
    const ptr = this.s.kernels.heap.put(block);
    p.pins++;
    try {
      const res = await searchBatch(this.s.pool, p, ptr, req.bits.length, k, { exact: req.exact === true, probe: req.probe });
      return { matches: res.hits.map((hits) => hits.map(({ row, score }) => ({ id: p.idOf(row), score }))), plan: res.plan };
    } finally {
      p.pins--;
      this.s.kernels.heap.release(ptr);
      this.s.closeRetired();
    }
  }

  /** Per-namespace live counts; with a filter, only the vectors it matches (namespaces with none are left out). */
  stats(filter?: unknown): {
    dimension: number;
    metric: string;
    namespaces: Record<string, { vectorCount: number }>;
    totalVectorCount: number;
  } {
    const f = parseFilter(filter);
    // no prototype: a namespace named "__proto__" or "constructor" is a key like any other
    const namespaces: Record<string, { vectorCount: number }> = Object.create(null);
    let total = 0;
    for (const [ns, p] of this.s.partitions) {
      const count = f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
      if (count === 0) continue;
      namespaces[ns] = { vectorCount: count };
      total += count;
    }
    return { dimension: this.s.dimension, metric: this.s.config.metric, namespaces, totalVectorCount: total };
  }

  /**
   * Live rows (matching `filter`) holding a number in `req.field`, by that number: largest
   * first unless `desc` is false; ties go to the later-appended row first (descending) or the
   * earlier one (ascending). At most `limit`. Walks the field's sorted numeric column from
   * one end testing membership in the filter's rows, so no per-call sort of the namespace.
   */
  order(namespace: string, req: OrderInput): OrderedRow[] {
    const limit = req.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ORDER_LIMIT)
      throw new SvcError("E_BAD_REQUEST", `limit must be an integer in [1, ${MAX_ORDER_LIMIT}], got ${limit}`, { field: "limit" });
    checkField(req.field, "field");
    const desc = req.desc ?? true;
    if (typeof desc !== "boolean") throw new SvcError("E_BAD_REQUEST", "desc must be a boolean", { field: "desc" });
    const filter = parseFilter(req.filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return [];
    const universe = filter === null ? p.live() : p.index.evaluate(filter, p.live());
    const { rows, values } = p.index.ordered(req.field, universe, limit, desc);
    return Array.from(rows, (row, i) => {
      const out: OrderedRow = { id: p.idOf(row), value: values[i]! };
      if (req.includeMetadata) out.metadata = p.metadata(row);
      if (req.includePayload) {
        const payload = p.payload(row);
        if (payload !== null) out.payload = payload;
      }
      return out;
    });
  }

  /** Live rows (matching `filter`) per string value of `field`; a list of strings counts once per distinct value. No prototype. */
  facet(namespace: string, field: string, filter?: unknown): Record<string, number> {
    checkField(field, "field");
    const f = parseFilter(filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return Object.create(null) as Record<string, number>;
    return p.index.facet(field, f === null ? p.live() : p.index.evaluate(f, p.live()));
  }

  /** Smallest and largest number in `field` over the live rows (matching `filter`) holding one; null when none does. */
  range(namespace: string, field: string, filter?: unknown): { min: number; max: number } | null {
    checkField(field, "field");
    const f = parseFilter(filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return null;
    const universe = f === null ? p.live() : p.index.evaluate(f, p.live());
    const low = p.index.ordered(field, universe, 1, false);
    if (low.rows.length === 0) return null;
    return { min: low.values[0]!, max: p.index.ordered(field, universe, 1, true).values[0]! };
  }

  /** Ids of the namespace's live rows matching `filter`, in row order. */
  ids(namespace: string, filter?: unknown): string[] {
    const f = parseFilter(filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return [];
    const rows = f === null ? p.live() : p.index.evaluate(f, p.live());
    return Array.from(rows.toUint32Array(), (row) => p.idOf(row));
  }

  /**
   * One page of the namespace's live ids (matching `filter`) in id order (code points, which is
   * UTF-8 byte order: Pinecone's "C" collation), those starting with `prefix` and after `after`.
   * Pages come from the partition's sorted ids, kept incrementally (sorted-ids.ts: a run and a delta of the
   * rows appended since, merged lazily); a filter keeping at least 1/LIST_WALK_FRACTION of the rows skips the
   * others while walking them, a narrower filter sorts its matches.
   */
  list(namespace: string, req: IdPageInput & { filter?: unknown }): IdPage {
    const f = parseFilter(req.filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return { ids: [], more: false };
    if (f === null) return this.sorted(p).page(p, req);
    const rows = p.index.evaluate(f, p.live());
    // A broad filter walks the sorted ids (about 1/selectivity ids per one kept); a narrow one sorts its matches.
    if (rows.size * LIST_WALK_FRACTION < p.liveCount)
      return idsAfter(Array.from(rows.toUint32Array(), (row) => p.idOf(row)).sort(compareIds), req);
    return this.sorted(p).page(p, req, (_id, row) => rows.has(row));
  }

  /** The partition's sorted ids, brought up to date. */
  private sorted(p: Partition): SortedIds {
    let ids = this.sortedIds.get(p);
    if (ids === undefined) this.sortedIds.set(p, (ids = new SortedIds()));
    ids.update(p);
    return ids;
  }

  /** Live rows of the namespace (matching `filter`). */
  count(namespace: string, filter?: unknown): number {
    const f = parseFilter(filter);
    const p = this.s.partitions.get(namespace);
    if (p === undefined) return 0;
    return f === null ? p.liveCount : p.index.evaluate(f, p.live()).size;
  }

  /** Namespaces holding live rows, sorted. */
  namespaces(): string[] {
    const out: string[] = [];
    for (const [ns, p] of this.s.partitions) if (p.liveCount > 0) out.push(ns);
    return out.sort();
  }

  /** The namespace's index, if any: lists, indexed rows and the delta of rows written since. */
  indexStats(namespace: string): {
    lists: number;
    indexedRows: number;
    deltaRows: number;
    bytes: number;
    probe: ProbeParams | null;
    filterFactor: number;
    rescoreScale: number;
    candidateScale: number;
  } | null {
    const p = this.s.partitions.get(namespace);
    if (p?.ivf == null) return null;
    return {
      lists: p.ivf.lists,
      indexedRows: p.ivf.indexedRows,
      deltaRows: p.rows - p.ivf.indexedRows,
      bytes: p.ivf.bytes,
      probe: p.ivf.calibrated,
      filterFactor: p.ivf.filterFactor,
      rescoreScale: p.ivf.rescoreScale,
      candidateScale: p.ivf.candidateScale,
    };
  }
}

function dotF32(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

function sparseDotOr0(q: SparseVector, row: SparseVector | null): number {
  return row === null ? 0 : sparseDot(q, row);
}
