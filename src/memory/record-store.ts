/**
 * @module record-store — where one tenant's records live: `RecordStore`, what the record service
 * (records.ts) asks of it, and `LocalRecordStore`, one Collection on this node with its BM25 indexes.
 * In cluster mode the store is cluster/sharded-records.ts (shards on the replicated log).
 */
import type { Bm25Hit } from "../encoder/bm25.js";
import type { Collection } from "../engine/collection.js";
import type { Metadata } from "../engine/filter/metadata.js";
import { LexicalCache } from "./record-lexical.js";
import type { Predicate, Row } from "./record-fields.js";
import type { ReadOptions, Written } from "./vector-index.js";

/** What records need of a text encoder (src/encoder/): a fixed dimension and batch encoding to unit vectors. */
export interface Embedder {
  readonly dimension: number;
  /** n texts -> n * dimension floats, each row L2-normalized. */
  encodeBatch(texts: string[]): Float32Array;
}

/** A record as written: its id, the embedding of its text (unit length), metadata {kind, tags, ts, exp?} and payload (record-fields.ts). */
export interface StoredRow {
  id: string;
  values: Float32Array;
  text: string;
  metadata: Metadata;
  payload: Uint8Array;
}

/** A record as read: metadata and (when asked for) payload. */
export interface ReadRow {
  id: string;
  metadata: Metadata;
  payload?: Uint8Array;
}

/**
 * One tenant's records (a Collection's operations, by namespace). Writes resolve once acknowledged;
 * `seq` (cluster mode) is what a read passes as `after` to see them. Filters are engine filters.
 */
export interface RecordStore {
  upsert(ns: string, rows: readonly StoredRow[]): Promise<Written>;
  delete(ns: string, ids: readonly string[]): Promise<{ deleted: number } & Written>;
  deleteAll(ns: string): Promise<Written>;
  /** `to` becomes what `from` was, `from` empty (an import's staging namespace moved into place). */
  move(from: string, to: string): Promise<Written>;
  fetch(ns: string, ids: readonly string[], read?: ReadOptions): Promise<ReadRow[]>;
  /** The best `topK` by cosine to `vector`, best first, with payloads when `payload`; `scanned`: rows considered. */
  search(
    ns: string,
    req: { vector: Float32Array; topK: number; filter?: unknown; payload: boolean },
    read?: ReadOptions,
  ): Promise<{ matches: Array<ReadRow & { score: number }>; scanned: number }>;
  /** The first `limit` rows by metadata field `ts`, largest first (ties in no set order). */
  order(
    ns: string,
    req: { filter?: unknown; limit: number; rows: boolean; payload?: boolean },
    read?: ReadOptions,
  ): Promise<Array<{ id: string; value: number; metadata?: Metadata; payload?: Uint8Array }>>;
  ids(ns: string, filter: unknown, read?: ReadOptions): Promise<string[]>;
  count(ns: string, filter: unknown, read?: ReadOptions): Promise<number>;
  facet(ns: string, field: string, filter: unknown, read?: ReadOptions): Promise<Record<string, number>>;
  range(ns: string, field: string, filter: unknown, read?: ReadOptions): Promise<{ min: number; max: number } | null>;
  namespaces(read?: ReadOptions): Promise<string[]>;
  /** The BM25 ranking of `text` over the namespace, best `depth` among the records `pred` keeps at `now`. */
  lexical(ns: string, text: string, depth: number, pred: Predicate, now: number, read?: ReadOptions): Promise<Bm25Hit[]>;
  /** Every write acknowledged before the call is visible to the reads made after it resolves. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Embed the rows' texts and upsert them (one write): what ingest and import write through. */
export async function writeRows(
  s: RecordStore,
  encoder: Embedder,
  ns: string,
  rows: ReadonlyArray<Row & { id: string }>,
): Promise<{ ids: string[]; count: number } & Written> {
  const vectors = encoder.encodeBatch(rows.map((r) => r.text));
  const dim = encoder.dimension;
  const w = await s.upsert(
    ns,
    rows.map((r, i) => ({
      id: r.id,
      values: vectors.subarray(i * dim, (i + 1) * dim),
      text: r.text,
      metadata: r.metadata,
      payload: r.payload,
    })),
  );
  return { ids: rows.map((r) => r.id), count: rows.length, ...(w.seq === undefined ? {} : { seq: w.seq }) };
}

/** A tenant's records on this node: one Collection (its namespaces are the record namespaces) and the BM25 indexes kept by its writes. */
export class LocalRecordStore implements RecordStore {
  readonly lexicon: LexicalCache;

  constructor(readonly collection: Collection) {
    this.lexicon = new LexicalCache(collection);
  }

  async upsert(ns: string, rows: readonly StoredRow[]): Promise<Written> {
    await this.collection.upsert(
      ns,
      rows.map((r) => ({ id: r.id, values: r.values, metadata: r.metadata, payload: r.payload })),
    );
    this.lexicon.add(ns, rows);
    return {};
  }

  async delete(ns: string, ids: readonly string[]): Promise<{ deleted: number }> {
    const { deleted } = await this.collection.delete(ns, { ids });
    this.lexicon.remove(ns, ids);
    return { deleted };
  }

  async deleteAll(ns: string): Promise<Written> {
    await this.collection.delete(ns, { deleteAll: true });
    this.lexicon.drop(ns);
    return {};
  }

  async move(from: string, to: string): Promise<Written> {
    await this.collection.moveNamespace(from, to);
    this.lexicon.drop(from);
    this.lexicon.drop(to);
    return {};
  }

  async fetch(ns: string, ids: readonly string[]): Promise<ReadRow[]> {
    return this.collection
      .rows(ns, ids)
      .map((v) => ({ id: v.id, metadata: v.metadata, ...(v.payload === null ? {} : { payload: v.payload }) }));
  }

  async search(
    ns: string,
    req: { vector: Float32Array; topK: number; filter?: unknown; payload: boolean },
  ): Promise<{ matches: Array<ReadRow & { score: number }>; scanned: number }> {
    const res = await this.collection.query(ns, {
      vector: req.vector,
      topK: req.topK,
      filter: req.filter,
      includeMetadata: true,
      includePayload: req.payload,
    });
    return {
      matches: res.matches.map((m) => ({
        id: m.id,
        score: m.score,
        metadata: m.metadata!,
        ...(m.payload === undefined ? {} : { payload: m.payload }),
      })),
      scanned: res.scanned,
    };
  }

  async order(
    ns: string,
    req: { filter?: unknown; limit: number; rows: boolean; payload?: boolean },
  ): Promise<Array<{ id: string; value: number; metadata?: Metadata; payload?: Uint8Array }>> {
    return this.collection.order(ns, {
      field: "ts",
      filter: req.filter,
      limit: req.limit,
      includeMetadata: req.rows,
      includePayload: req.rows && (req.payload ?? true),
    });
  }

  async ids(ns: string, filter: unknown): Promise<string[]> {
    return this.collection.ids(ns, filter);
  }

  async count(ns: string, filter: unknown): Promise<number> {
    return this.collection.count(ns, filter);
  }

  async facet(ns: string, field: string, filter: unknown): Promise<Record<string, number>> {
    return this.collection.facet(ns, field, filter);
  }

  async range(ns: string, field: string, filter: unknown): Promise<{ min: number; max: number } | null> {
    return this.collection.range(ns, field, filter);
  }

  async namespaces(): Promise<string[]> {
    return this.collection.namespaces();
  }

  async lexical(ns: string, text: string, depth: number, pred: Predicate, now: number): Promise<Bm25Hit[]> {
    return (await this.lexicon.get(ns)).search(text, depth, pred, now);
  }

  settled(): Promise<void> {
    return this.collection.settled();
  }

  close(): Promise<void> {
    return this.collection.close();
  }
}
