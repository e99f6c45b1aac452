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
import { f32Bytes, shardOf, type ShardOp } from "./shards.js";

/** Records per `rows` request: a record's payload is at most 128 KiB (text + meta), usually far less; replies stay under max_payload for records of up to ~10 KiB. */
const ROWS_PER_REQUEST = 100;

type OrderRow = { id: string; value: number; metadata?: Metadata; payload?: Uint8Array };

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Per shard, the stream sequence of the last write this node made there (any tenant store of the same
 * catalog entry shares it): a read through this node waits for it on that shard, so a client sees its
 * own writes through the node it wrote through without sending x-svc-after (as on one node). Through
 * another node it passes x-svc-after; replicas apply a frame within milliseconds of its acknowledgement.
 */
const lastWrites = new WeakMap<ShardedIndex["record"], number[]>();

export class ShardedRecordStore implements RecordStore {
  private readonly written: number[];

  constructor(private readonly ix: ShardedIndex) {
    let w = lastWrites.get(ix.record);
    if (w === undefined) lastWrites.set(ix.record, (w = new Array<number>(ix.record.shards).fill(0)));
    this.written = w;
  }

  /** Shard by shard (each shard's sequence is kept for this node's later reads); the highest sequence. */
  async upsert(ns: string, rows: readonly StoredRow[]): Promise<Written> {
    const groups = this.byShard(rows, (r) => r.id);
    const seqs = await Promise.all(
      [...groups].map(async ([s, g]) =>
        this.wrote(
          s,
          (
            await this.ix.upsert(
              ns,
              g.map((r) => ({ id: r.id, values: r.values, metadata: r.metadata, payload: r.payload })),
            )
          ).seq,
        ),
      ),
    );
    return { seq: Math.max(0, ...seqs) };
  }

  async delete(ns: string, ids: readonly string[]): Promise<{ deleted: number } & Written> {
    const replies = await Promise.all(
      [...this.byShard(ids, (id) => id)].map(async ([s, g]) => {
        const r = await this.ix.call<{ deleted: number; seq: number }>(s, "delete", { ns, ids: g });
        return { deleted: r.deleted, seq: this.wrote(s, r.seq) };
      }),
    );
    return { deleted: replies.reduce((n, r) => n + r.deleted, 0), seq: Math.max(0, ...replies.map((r) => r.seq)) };
  }

  async deleteAll(ns: string): Promise<Written> {
    return this.everyShard("delete", { ns, deleteAll: true });
  }

  /** Every shard moves its part in one logged step (a reader may see some shards moved and others not, for the moment between their steps). */
  async move(from: string, to: string): Promise<Written> {
    return this.everyShard("move", { from, to });
  }

  private async everyShard(op: "delete" | "move", args: Record<string, unknown>): Promise<Written> {
    const seqs = await Promise.all(
      Array.from({ length: this.ix.record.shards }, async (_, s) => this.wrote(s, (await this.ix.call<{ seq: number }>(s, op, args)).seq)),
    );
    return { seq: Math.max(0, ...seqs) };
  }

  private wrote(shard: number, seq: number | undefined): number {
    if (typeof seq === "number" && seq > this.written[shard]!) this.written[shard] = seq;
    return seq ?? 0;
  }

  private byShard<T>(items: readonly T[], id: (x: T) => string): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const x of items) {
      const s = shardOf(id(x), this.ix.record.shards);
      const g = groups.get(s);
      if (g === undefined) groups.set(s, [x]);
      else g.push(x);
    }
    return groups;
  }

  /** The same read to every shard, each waiting for `after` and for this node's last write there. */
  private all<T>(op: ShardOp, args: Record<string, unknown>, read: ReadOptions): Promise<T[]> {
    return Promise.all(Array.from({ length: this.ix.record.shards }, (_, s) => this.one<T>(s, op, args, read)));
  }

  private one<T>(shard: number, op: ShardOp, args: Record<string, unknown>, read: ReadOptions): Promise<T> {
    const after = Math.max(read.after ?? 0, this.written[shard]!);
    return this.ix.call<T>(shard, op, args, after > 0 ? after : undefined);
  }

  async fetch(ns: string, ids: readonly string[], read: ReadOptions = {}): Promise<ReadRow[]> {
    const calls: Array<Promise<ReadRow[]>> = [];
    for (const [s, g] of this.byShard(ids, (id) => id))
      for (let i = 0; i < g.length; i += ROWS_PER_REQUEST)
        calls.push(this.one<ReadRow[]>(s, "rows", { ns, ids: g.slice(i, i + ROWS_PER_REQUEST) }, read));
    const found = new Map<string, ReadRow>();
    for (const part of await Promise.all(calls)) for (const v of part) found.set(v.id, v);
    return ids.map((id) => found.get(id)).filter((v): v is ReadRow => v !== undefined);
  }

  /** Each shard's best topK (metadata only), merged by score; payloads fetched for the winners only (replies stay small). */
  async search(
    ns: string,
    req: { vector: Float32Array; topK: number; filter?: unknown; payload: boolean },
    read: ReadOptions = {},
  ): Promise<{ matches: Array<ReadRow & { score: number }>; scanned: number }> {
    const parts = await this.all<{ matches: Array<ReadRow & { score: number }>; scanned: number }>(
      "search",
      { ns, vector: f32Bytes(req.vector), topK: req.topK, filter: req.filter },
      read,
    );
    const matches = parts
      .flatMap((p) => p.matches)
      .sort((a, b) => b.score - a.score || byId(a, b))
      .slice(0, req.topK);
    const scanned = parts.reduce((n, p) => n + p.scanned, 0);
    if (!req.payload) return { matches, scanned };
    const rows = new Map(
      (
        await this.fetch(
          ns,
          matches.map((m) => m.id),
          read,
        )
      ).map((v) => [v.id, v]),
    );
    return { matches: matches.filter((m) => rows.has(m.id)).map((m) => ({ ...m, ...rows.get(m.id)! })), scanned };
  }

  /** Each shard's first `limit` by ts descending, merged (the first `limit` of the union are among them); rows fetched for those only. */
  async order(
    ns: string,
    req: { filter?: unknown; limit: number; rows: boolean; payload?: boolean },
    read: ReadOptions = {},
  ): Promise<OrderRow[]> {
    const parts = await this.all<OrderRow[]>(
      "order",
      { ns, filter: req.filter, limit: req.limit, rows: req.rows && req.payload === false },
      read,
    );
    const top = parts
      .flat()
      .sort((a, b) => b.value - a.value)
      .slice(0, req.limit);
    if (!req.rows || req.payload === false) return top;
    const rows = new Map(
      (
        await this.fetch(
          ns,
          top.map((r) => r.id),
          read,
        )
      ).map((v) => [v.id, v]),
    );
    return top
      .filter((r) => rows.has(r.id))
      .map((r) => ({
        id: r.id,
        value: r.value,
        metadata: rows.get(r.id)!.metadata,
        ...(rows.get(r.id)!.payload === undefined ? {} : { payload: rows.get(r.id)!.payload }),
      }));
  }

  async ids(ns: string, filter: unknown, read: ReadOptions = {}): Promise<string[]> {
    return (await this.all<string[]>("ids", { ns, filter }, read)).flat();
  }

  async count(ns: string, filter: unknown, read: ReadOptions = {}): Promise<number> {
    return (await this.all<number>("count", { ns, filter }, read)).reduce((n, x) => n + x, 0);
  }

  async facet(ns: string, field: string, filter: unknown, read: ReadOptions = {}): Promise<Record<string, number>> {
    const out: Record<string, number> = Object.create(null);
    for (const part of await this.all<Record<string, number>>("facet", { ns, field, filter }, read))
      for (const [k, n] of Object.entries(part)) out[k] = (out[k] ?? 0) + n;
    return { ...out };
  }

  async range(ns: string, field: string, filter: unknown, read: ReadOptions = {}): Promise<{ min: number; max: number } | null> {
    const parts = (await this.all<{ min: number; max: number } | null>("range", { ns, field, filter }, read)).filter((r) => r !== null);
    return parts.length === 0 ? null : { min: Math.min(...parts.map((r) => r.min)), max: Math.max(...parts.map((r) => r.max)) };
  }

  async namespaces(read: ReadOptions = {}): Promise<string[]> {
    return [...new Set((await this.all<string[]>("namespaces", {}, read)).flat())].sort();
  }

  /** Two rounds: the shards' statistics of the query's terms, summed; then each shard's best `depth` scored with them, merged by score (ties by id). */
  async lexical(ns: string, text: string, depth: number, pred: Predicate, now: number, read: ReadOptions = {}): Promise<Bm25Hit[]> {
    const stats = await this.all<Bm25Stats>("lexStats", { ns, text }, read);
    const corpus: Bm25Stats = { n: 0, totalLength: 0, df: Object.create(null) as Record<string, number> };
    for (const s of stats) {
      corpus.n += s.n;
      corpus.totalLength += s.totalLength;
      for (const [t, df] of Object.entries(s.df)) corpus.df[t] = (corpus.df[t] ?? 0) + df;
    }
    if (corpus.n === 0) return [];
    const parts = await this.all<Bm25Hit[]>("lexSearch", { ns, text, depth, pred, now, corpus }, read);
    return parts
      .flat()
      .sort((a, b) => b.score - a.score || byId(a, b))
      .slice(0, depth);
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
