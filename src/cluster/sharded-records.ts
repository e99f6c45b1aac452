/**
 * @module sharded-records — a tenant's records in cluster mode: `ShardedRecordStore implements
 * RecordStore` over the tenant's records entry of the catalog (ClusterIndexRecord kind "records"),
 * whose shards the shard hosts serve like an index's (record-shard.ts adds BM25 and the record reads).
 * Requests go through ShardedIndex (replicas, failover, deadlines, E_OUTCOME_UNKNOWN); a record lives
 * on shard shardOf(id). Reads fan out and merge here: cosine matches by score, ts order by ts, counts
 * and facets summed. BM25 is ranked as one index would: each shard's statistics of the query's terms
 * are summed first, then every shard scores with those (so idf and the average length are the
 * whole namespace's) and the hits merge by score.
 */
import type { Bm25Hit, Bm25Stats } from "../encoder/bm25.js";
import type { Metadata } from "../engine/filter/metadata.js";
import type { Predicate } from "../memory/record-fields.js";
import type { ReadRow, RecordStore, StoredRow } from "../memory/record-store.js";
import type { ReadOptions, Written } from "../memory/vector-index.js";
import type { ClusterIndexes } from "./catalog.js";
import type { ShardedIndex } from "./sharded-index.js";
import { f32Bytes, shardOf } from "./shards.js";

/** Records per `rows` request: a record's payload is at most 128 KiB (text + meta), usually far less; replies stay under max_payload for records of up to ~10 KiB. */
const ROWS_PER_REQUEST = 100;

type OrderRow = { id: string; value: number; metadata?: Metadata; payload?: Uint8Array };

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class ShardedRecordStore implements RecordStore {
  constructor(private readonly ix: ShardedIndex) {}

  async upsert(ns: string, rows: readonly StoredRow[]): Promise<Written> {
    const { seq } = await this.ix.upsert(ns, rows.map((r) => ({ id: r.id, values: r.values, metadata: r.metadata, payload: r.payload })));
    return { seq };
  }

  async delete(ns: string, ids: readonly string[]): Promise<{ deleted: number } & Written> {
    return this.ix.delete(ns, { ids });
  }

  async deleteAll(ns: string): Promise<Written> {
    const { seq } = await this.ix.delete(ns, { deleteAll: true });
    return { seq };
  }

  /** Every shard moves its part in one logged step (a reader may see some shards moved and others not, for the moment between their steps). */
  async move(from: string, to: string): Promise<Written> {
    const replies = await Promise.all(Array.from({ length: this.ix.record.shards }, (_, s) => this.ix.call<{ seq: number }>(s, "move", { from, to })));
    return { seq: Math.max(0, ...replies.map((r) => r.seq ?? 0)) };
  }

  async fetch(ns: string, ids: readonly string[], read: ReadOptions = {}): Promise<ReadRow[]> {
    const groups = new Map<number, string[]>();
    for (const id of ids) {
      const s = shardOf(id, this.ix.record.shards);
      const g = groups.get(s);
      if (g === undefined) groups.set(s, [id]);
      else g.push(id);
    }
    const calls: Array<Promise<ReadRow[]>> = [];
    for (const [s, g] of groups) for (let i = 0; i < g.length; i += ROWS_PER_REQUEST) calls.push(this.ix.call<ReadRow[]>(s, "rows", { ns, ids: g.slice(i, i + ROWS_PER_REQUEST) }, read.after));
    const found = new Map<string, ReadRow>();
    for (const part of await Promise.all(calls)) for (const v of part) found.set(v.id, v);
    return ids.map((id) => found.get(id)).filter((v): v is ReadRow => v !== undefined);
  }

  /** Each shard's best topK (metadata only), merged by score; payloads fetched for the winners only (replies stay small). */
  async search(ns: string, req: { vector: Float32Array; topK: number; filter?: unknown; payload: boolean }, read: ReadOptions = {}): Promise<{ matches: Array<ReadRow & { score: number }>; scanned: number }> {
    const parts = await this.ix.callAll<{ matches: Array<ReadRow & { score: number }>; scanned: number }>("search", { ns, vector: f32Bytes(req.vector), topK: req.topK, filter: req.filter }, read.after);
    const matches = parts.flatMap((p) => p.matches).sort((a, b) => b.score - a.score || byId(a, b)).slice(0, req.topK);
    const scanned = parts.reduce((n, p) => n + p.scanned, 0);
    if (!req.payload) return { matches, scanned };
    const rows = new Map((await this.fetch(ns, matches.map((m) => m.id), read)).map((v) => [v.id, v]));
    return { matches: matches.filter((m) => rows.has(m.id)).map((m) => ({ ...m, ...rows.get(m.id)! })), scanned };
  }

  /** Each shard's first `limit` by ts descending, merged (the first `limit` of the union are among them); rows fetched for those only. */
  async order(ns: string, req: { filter?: unknown; limit: number; rows: boolean; payload?: boolean }, read: ReadOptions = {}): Promise<OrderRow[]> {
    const parts = await this.ix.callAll<OrderRow[]>("order", { ns, filter: req.filter, limit: req.limit, rows: req.rows && req.payload === false }, read.after);
    const top = parts.flat().sort((a, b) => b.value - a.value).slice(0, req.limit);
    if (!req.rows || req.payload === false) return top;
    const rows = new Map((await this.fetch(ns, top.map((r) => r.id), read)).map((v) => [v.id, v]));
    return top.filter((r) => rows.has(r.id)).map((r) => ({ id: r.id, value: r.value, metadata: rows.get(r.id)!.metadata, ...(rows.get(r.id)!.payload === undefined ? {} : { payload: rows.get(r.id)!.payload }) }));
  }

  async ids(ns: string, filter: unknown, read: ReadOptions = {}): Promise<string[]> {
    return (await this.ix.callAll<string[]>("ids", { ns, filter }, read.after)).flat();
  }

  async count(ns: string, filter: unknown, read: ReadOptions = {}): Promise<number> {
    return this.ix.count(ns, filter, read);
  }

  async facet(ns: string, field: string, filter: unknown, read: ReadOptions = {}): Promise<Record<string, number>> {
    const out: Record<string, number> = Object.create(null);
    for (const part of await this.ix.callAll<Record<string, number>>("facet", { ns, field, filter }, read.after)) for (const [k, n] of Object.entries(part)) out[k] = (out[k] ?? 0) + n;
    return { ...out };
  }

  async range(ns: string, field: string, filter: unknown, read: ReadOptions = {}): Promise<{ min: number; max: number } | null> {
    const parts = (await this.ix.callAll<{ min: number; max: number } | null>("range", { ns, field, filter }, read.after)).filter((r) => r !== null);
    return parts.length === 0 ? null : { min: Math.min(...parts.map((r) => r.min)), max: Math.max(...parts.map((r) => r.max)) };
  }

  async namespaces(read: ReadOptions = {}): Promise<string[]> {
    return [...new Set((await this.ix.callAll<string[]>("namespaces", {}, read.after)).flat())].sort();
  }

  /** Two rounds: the shards' statistics of the query's terms, summed; then each shard's best `depth` scored with them, merged by score (ties by id). */
  async lexical(ns: string, text: string, depth: number, pred: Predicate, now: number, read: ReadOptions = {}): Promise<Bm25Hit[]> {
    const stats = await this.ix.callAll<Bm25Stats>("lexStats", { ns, text }, read.after);
    const corpus: Bm25Stats = { n: 0, totalLength: 0, df: Object.create(null) as Record<string, number> };
    for (const s of stats) {
      corpus.n += s.n;
      corpus.totalLength += s.totalLength;
      for (const [t, df] of Object.entries(s.df)) corpus.df[t] = (corpus.df[t] ?? 0) + df;
    }
    if (corpus.n === 0) return [];
    const parts = await this.ix.callAll<Bm25Hit[]>("lexSearch", { ns, text, depth, pred, now, corpus }, read.after);
    return parts.flat().sort((a, b) => b.score - a.score || byId(a, b)).slice(0, depth);
  }

  /** Reads made with `after` (a write's seq) see that write; without, whatever the replica asked has applied (cluster mode's contract, as for indexes). */
  async settled(): Promise<void> {}

  async close(): Promise<void> {}
}

/** RecordServiceOptions.stores of a cluster node: each tenant's records entry of the catalog (created on first write), `dimension` the encoder's. */
export function recordStores(catalog: ClusterIndexes, dimension: number): (tenant: string, create: boolean) => Promise<RecordStore | null> {
  return async (tenant, create) => {
    const ix = await catalog.recordShards(tenant, dimension, create);
    return ix === null ? null : new ShardedRecordStore(ix);
  };
}
