/**
 * @module vector-index — what the HTTP index routes and the MCP tools call on one vector index
 * (`VectorIndex`), and its local implementation over one Collection (`CollectionIndex`). Cluster
 * mode implements the same interface over shards on other nodes (cluster/sharded-index.ts), so a
 * result may be a promise. Expiry (`svc_expires_at`) is applied here: queries and fetches never
 * see an expired vector.
 */
import type { Collection, FetchedVector, IdPage, IdPageInput, Match, QueryInput, VectorInput } from "../engine/collection.js";

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
  upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number } & Written>;
  delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number } & Written>;
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

/** A VectorIndex over one local Collection (one node's index, or one shard's replica in cluster mode). */
export class CollectionIndex implements VectorIndex {
  constructor(
    readonly collection: Collection,
    private readonly now: () => number = Date.now,
  ) {}

  upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number }> {
    return this.collection.upsert(namespace, vectors);
  }

  delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number }> {
    return this.collection.delete(namespace, req);
  }

  async update(namespace: string, req: { id: string; values?: ArrayLike<number>; setMetadata?: unknown; payload?: Uint8Array }): Promise<Written> {
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
    return this.collection.fetch(namespace, ids).filter((v) => !expired(v.metadata, now));
  }

  query(namespace: string, req: QueryInput): Promise<{ matches: Match[]; scanned: number }> {
    return this.collection.query(namespace, { ...req, filter: liveFilter(this.collection, namespace, req.filter, this.now()) });
  }

  stats(filter?: unknown): IndexStats {
    return this.collection.stats(filter);
  }

  count(namespace: string, filter?: unknown): number {
    return this.collection.count(namespace, filter);
  }
}
