/**
 * @module vector-index — what the HTTP index routes and the MCP tools call on one vector index
 * (`VectorIndex`), and its local implementation over one Collection (`CollectionIndex`). Cluster
 * mode implements the same interface over shards on other nodes (cluster/sharded-index.ts), so a
 * result may be a promise. Expiry (`svc_expires_at`) is applied here: queries and fetches never
 * see an expired vector.
 */
import type { Collection, FetchedVector, IdPage, IdPageInput, Match, QueryInput, Scoring, VectorInput } from "../engine/collection.js";
import { SvcError } from "../errors.js";

/**
 * Reserved metadata field: a vector whose `svc_expires_at` (unix ms) is <= now is expired. Queries
 * and fetches leave it out at once; the sweeper deletes it within SWEEP_MS. The LLM-client
 * recorder sets it from `ttl_days`; any writer may.
 */
export const EXPIRES_AT = "svc_expires_at";

export interface IndexStats {
  dimension: number;
  metric: string;
  namespaces: Record<string, { vectorCount: number }>;
  totalVectorCount: number;
}

/**
 * A write's acknowledgement. `seq`: in cluster mode, the highest log (stream) sequence the write
 * was acknowledged at; a later read passing it as `after` sees the write on every shard
 * (read-your-writes). Absent on one node, where every read already sees every acknowledged write once applied.
 */
export interface Written {
  seq?: number;
}

/** How fresh a read must be: `after`, a `seq` a write returned (cluster mode; ignored on one node). */
export interface ReadOptions {
  after?: number;
}

export type Awaitable<T> = T | Promise<T>;

export interface VectorIndex {
  /** "sparse": records hold sparse values only (payload), no dense values; absent: dense. */
  readonly vectorType?: "dense" | "sparse";
  upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number } & Written>;
  delete(
    namespace: string,
    req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean },
  ): Promise<{ deleted: number } & Written>;
  /** `payload`: the row's new sparse values (engine/sparse.ts bytes), replacing the old. */
  update(namespace: string, req: { id: string; values?: ArrayLike<number>; setMetadata?: unknown; payload?: Uint8Array }): Promise<Written>;
  /** Merge `setMetadata` into every (unexpired) vector matching `filter`; `dryRun` only counts them. */
  updateWhere(namespace: string, req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean }): Promise<{ matched: number } & Written>;
  /** One page of (unexpired) ids in id order (engine/id-order.ts), optionally only those matching `filter`. */
  list(namespace: string, req: IdPageInput & { filter?: unknown }, read?: ReadOptions): Awaitable<IdPage>;
  /** The stored vectors among `ids` (expired ones left out). */
  fetch(namespace: string, ids: readonly string[], read?: ReadOptions): Awaitable<FetchedVector[]>;
  /** Top-k by score (expired vectors never match); `scanned`: rows the scan read. */
  query(namespace: string, req: QueryInput, read?: ReadOptions): Promise<{ matches: Match[]; scanned: number }>;
  stats(filter?: unknown, read?: ReadOptions): Awaitable<IndexStats>;
  count(namespace: string, filter?: unknown, read?: ReadOptions): Awaitable<number>;
}

/**
 * `filter` narrowed to vectors not expired at `now`, when the namespace holds any `svc_expires_at`
 * (else unchanged, so a namespace without expiring vectors keeps its unfiltered plan). The user's
 * keys stay where they were, so their error paths (filter.<field>) do not change.
 */
export function liveFilter(c: Collection, namespace: string, filter: unknown, now: number): unknown {
  if (filter !== undefined && (typeof filter !== "object" || filter === null || Array.isArray(filter))) return filter; // the collection names the error
  if (c.count(namespace, { [EXPIRES_AT]: { $exists: true } }) === 0) return filter;
  const live = { $or: [{ [EXPIRES_AT]: { $exists: false } }, { [EXPIRES_AT]: { $gt: now } }] };
  const f = (filter ?? {}) as Record<string, unknown>;
  return { ...f, $and: Array.isArray(f.$and) ? [...(f.$and as unknown[]), live] : f.$and === undefined ? [live] : [f.$and, live] };
}

/** Is a stored vector with this metadata expired at `now`? */
export function expired(metadata: Record<string, unknown> | null | undefined, now: number): boolean {
  const exp = metadata?.[EXPIRES_AT];
  return typeof exp === "number" && exp <= now;
}

/** Sparse values (a row's payload) on a dense index: dotproduct only (Pinecone: "Index configuration does not support sparse values"). */
export function checkDensePayload(metric: string, payload: Uint8Array | undefined, field: string): void {
  if (payload !== undefined && metric !== "dotproduct") {
    throw new SvcError(
      "E_BAD_REQUEST",
      `this index (metric ${metric}) does not take sparse values: only dotproduct and sparse indexes do`,
      { field },
    );
  }
}

/** checkDensePayload over a batch (the first offending vector named); cluster/sharded-index.ts checks the whole batch before any shard writes. */
export function checkDensePayloads(metric: string, vectors: readonly VectorInput[]): void {
  vectors.forEach((v, i) => checkDensePayload(metric, v.payload, `vectors[${i}].sparseValues`));
}

/** The dense values every row of a sparse index keeps (its collection has dimension 1; memory/indexes.ts collectionDimension). */
const SPARSE_ROW = new Float32Array([1]);

/** A sparse index's records as its collection stores them (SPARSE_ROW values): sparse values required, dense values refused (an empty list is none). */
export function sparseRows(vectors: readonly VectorInput[]): VectorInput[] {
  return vectors.map((v, i) => {
    const at = `vectors[${i}]`;
    if (v.values !== undefined && v.values.length > 0)
      throw new SvcError("E_BAD_REQUEST", `${at}.values: a sparse index holds no dense values; send sparseValues only`, {
        field: `${at}.values`,
      });
    if (v.payload === undefined)
      throw new SvcError("E_BAD_REQUEST", `${at}.sparseValues is required: a sparse index holds sparse values`, {
        field: `${at}.sparseValues`,
      });
    return { ...v, values: SPARSE_ROW };
  });
}
const NO_VALUES = new Float32Array(0);

/**
 * A VectorIndex over one local Collection (one node's index, or one shard's replica in cluster mode), ranking by the
 * index's metric. Sparse values (a row's payload) are taken by sparse indexes and dense dotproduct ones only, as
 * Pinecone; a sparse index's records carry sparse values and no dense ones (stored as SPARSE_ROW, answered as []).
 */
export class CollectionIndex implements VectorIndex {
  constructor(
    readonly collection: Collection,
    private readonly now: () => number = Date.now,
    readonly metric: Scoring = "cosine",
    readonly vectorType: "dense" | "sparse" = "dense",
  ) {}

  upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number }> {
    if (this.vectorType === "sparse") return this.collection.upsert(namespace, sparseRows(vectors));
    checkDensePayloads(this.metric, vectors);
    return this.collection.upsert(namespace, vectors);
  }

  private densePayload(payload: Uint8Array | undefined, field: string): void {
    checkDensePayload(this.metric, payload, field);
  }

  delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number }> {
    return this.collection.delete(namespace, req);
  }

  async update(
    namespace: string,
    req: { id: string; values?: ArrayLike<number>; setMetadata?: unknown; payload?: Uint8Array },
  ): Promise<Written> {
    if (this.vectorType === "sparse") {
      if (req.values !== undefined && req.values.length > 0)
        throw new SvcError("E_BAD_REQUEST", "values: a sparse index holds no dense values; update sparseValues", { field: "values" });
      req = { ...req, values: undefined };
    } else this.densePayload(req.payload, "sparseValues");
    await this.collection.update(namespace, req);
    return {};
  }

  updateWhere(namespace: string, req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean }): Promise<{ matched: number }> {
    return this.collection.updateWhere(namespace, { ...req, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
  }

  list(namespace: string, req: IdPageInput & { filter?: unknown }): IdPage {
    return this.collection.list(namespace, { ...req, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
  }

  fetch(namespace: string, ids: readonly string[]): FetchedVector[] {
    const now = this.now();
    const found = this.collection.fetch(namespace, ids).filter((v) => !expired(v.metadata, now));
    return this.vectorType === "sparse" ? found.map((v) => ({ ...v, values: NO_VALUES })) : found;
  }

  query(namespace: string, req: QueryInput): Promise<{ matches: Match[]; scanned: number }> {
    // Every field named, in one order: an object spread with fields added after it took V8's slow property paths on
    // every query (there, and on each read of the input in the reader: ~3% of a served query's CPU).
    return this.collection.query(namespace, {
      vector: req.vector,
      bits: req.bits,
      id: req.id,
      topK: req.topK,
      filter: liveFilter(this.collection, namespace, req.filter, this.now()),
      includeValues: req.includeValues,
      includeMetadata: req.includeMetadata,
      includePayload: req.includePayload,
      candidates: req.candidates,
      rescore: req.rescore,
      exact: req.exact,
      sparseVector: req.sparseVector,
      sparseIndex: this.vectorType === "sparse",
      scoring: this.metric,
      probe: req.probe,
    } satisfies Record<keyof QueryInput, unknown>); // a field added to QueryInput must be passed on here
  }

  stats(filter?: unknown): IndexStats {
    const s = this.collection.stats(filter);
    return { ...s, metric: this.metric, dimension: this.vectorType === "sparse" ? 0 : s.dimension };
  }

  count(namespace: string, filter?: unknown): number {
    return this.collection.count(namespace, filter);
  }
}
