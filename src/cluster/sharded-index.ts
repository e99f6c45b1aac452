/**
 * @module sharded-index — one cluster index as a VectorIndex, usable on any node: each call goes over
 * NATS request-reply to the shards it concerns (subject `svc.shard.<tenant>.<index>.<incarnation>.<shard>`,
 * answered by one live replica in the queue group; shard-host.ts). Writes go to the shards of their ids
 * (an upsert is split per shard and into requests under NATS max_payload) and return the highest
 * stream sequence acknowledged; queries fan out to every shard and the top-k are merged here (cosine
 * scores are comparable across shards); delete by filter, stats and counts go to every shard and sum.
 */
import { RequestError, type NatsConnection } from "@nats-io/transport-node";
import type { FetchedVector, IdPage, IdPageInput, Match, QueryInput, VectorInput } from "../engine/collection.js";
import { mergePages } from "../engine/id-order.js";
import { checkId, checkTopK, rowBytesOf } from "../engine/input-checks.js";
import { checkUpsert } from "../engine/writer.js";
import { SvcError } from "../errors.js";
import type { IndexStats, ReadOptions, VectorIndex, Written } from "../memory/vector-index.js";
import { bytesF32, decodeMessage, encodeMessage, f32Bytes, replyError, shardOf, shardSubject, type ClusterIndexRecord, type ShardOp, type ShardReply } from "./shards.js";

export interface ShardedIndexOptions {
  /** How long one read request waits for its reply (default 5000 ms; a shard waits at most CATCH_UP_MS for `after`). */
  readTimeoutMs?: number;
  /** How long one write request waits (default 20000 ms: longer than the log's E_NO_QUORUM wait, so that error arrives first). */
  writeTimeoutMs?: number;
  /** How long a shard with no replica answering (no responders, or a read timing out) is retried before E_SHARD_UNAVAILABLE (default 5000 ms). */
  unavailableAfterMs?: number;
}

/** Room per request for the envelope, the namespace and headers, under the server's max_payload. */
const ENVELOPE_BYTES = 4096;

export class ShardedIndex implements VectorIndex {
  private readonly readTimeoutMs: number;
  private readonly writeTimeoutMs: number;
  private readonly unavailableAfterMs: number;

  constructor(
    private readonly nc: NatsConnection,
    readonly record: ClusterIndexRecord,
    opts: ShardedIndexOptions = {},
  ) {
    this.readTimeoutMs = opts.readTimeoutMs ?? 5000;
    this.writeTimeoutMs = opts.writeTimeoutMs ?? 20_000;
    this.unavailableAfterMs = opts.unavailableAfterMs ?? 5000;
  }

  async upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number } & Written> {
    // The whole batch first, as one collection checks it: a bad vector fails the batch before any shard has written its part.
    checkUpsert(namespace, vectors, { rowBytes: rowBytesOf(this.record.dimension, true), dimension: this.record.dimension, cosine: true });
    const budget = this.payloadBudget();
    // Per shard: requests of at most `budget` estimated bytes, each remembering the callers' indices (errors name those).
    const requests: Array<{ shard: number; vectors: unknown[]; at: number[]; bytes: number }> = [];
    const open = new Map<number, (typeof requests)[number]>();
    vectors.forEach((v, i) => {
      const shard = shardOf(v.id, this.record.shards);
      const wire = { ...v, values: isNumbers(v.values) ? f32Bytes(v.values) : v.values };
      const bytes = Buffer.byteLength(v.id) + (wire.values instanceof Uint8Array ? wire.values.byteLength : 0) + (v.metadata === undefined ? 0 : JSON.stringify(v.metadata)?.length ?? 0) + 32;
      let req = open.get(shard);
      if (req === undefined || (req.bytes + bytes > budget && req.vectors.length > 0)) {
        req = { shard, vectors: [], at: [], bytes: 0 };
        requests.push(req);
        open.set(shard, req);
      }
      req.vectors.push(wire);
      req.at.push(i);
      req.bytes += bytes;
    });
    const replies = await Promise.all(
      requests.map((r) => this.request<{ upsertedCount: number; seq: number }>(r.shard, "upsert", { ns: namespace, vectors: r.vectors }, undefined, "vectors", r.at)),
    );
    return { upsertedCount: replies.reduce((n, r) => n + r.upsertedCount, 0), seq: maxSeq(replies) };
  }

  async delete(namespace: string, req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean }): Promise<{ deleted: number } & Written> {
    let replies: Array<{ deleted: number; seq: number }>;
    if (req.ids !== undefined && Array.isArray(req.ids) && req.ids.length > 0 && req.filter === undefined && !req.deleteAll) {
      const groups = this.group(req.ids, "ids");
      replies = await Promise.all([...groups].map(([shard, g]) => this.request<{ deleted: number; seq: number }>(shard, "delete", { ns: namespace, ids: g.items }, undefined, "ids", g.at)));
    } else if (req.ids !== undefined) {
      // ids that are not a non-empty array of ids (or given with filter/deleteAll): one shard names the error as a collection does
      replies = [await this.request(0, "delete", { ns: namespace, ids: req.ids, filter: req.filter, deleteAll: req.deleteAll })];
    } else {
      replies = await this.all<{ deleted: number; seq: number }>("delete", { ns: namespace, filter: req.filter, deleteAll: req.deleteAll });
    }
    return { deleted: replies.reduce((n, r) => n + r.deleted, 0), seq: maxSeq(replies) };
  }

  async update(namespace: string, req: { id: string; values?: ArrayLike<number>; setMetadata?: unknown; payload?: Uint8Array }): Promise<Written> {
    const shard = shardOf(checkId(req?.id, "id"), this.record.shards);
    const r = await this.request<{ seq: number }>(shard, "update", { ns: namespace, id: req.id, values: isNumbers(req.values) ? f32Bytes(req.values) : req.values, setMetadata: req.setMetadata, payload: req.payload });
    return { seq: r.seq };
  }

  /** Every shard, each counting and merging on its own rows (the filter is checked by each alike; a bad one fails on all). */
  async updateWhere(namespace: string, req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean }): Promise<{ matched: number } & Written> {
    const replies = await this.all<{ matched: number; seq: number }>("updateWhere", { ns: namespace, filter: req.filter, setMetadata: req.setMetadata, dryRun: req.dryRun });
    return { matched: replies.reduce((n, r) => n + r.matched, 0), seq: maxSeq(replies) };
  }

  /** Each shard's first `limit` ids past `after`, merged: the first `limit` of the union are among them. */
  async list(namespace: string, req: IdPageInput & { filter?: unknown }, read: ReadOptions = {}): Promise<IdPage> {
    const pages = await this.all<IdPage>("list", { ns: namespace, prefix: req.prefix, after: req.after, limit: req.limit, filter: req.filter }, read.after);
    return mergePages(pages, req.limit);
  }

  async fetch(namespace: string, ids: readonly string[], read: ReadOptions = {}): Promise<FetchedVector[]> {
    const groups = this.group(ids, "ids");
    // Replies carry the vectors: keep each under max_payload.
    const per = Math.max(1, Math.floor(this.payloadBudget() / (this.record.dimension * 4 + 2048)));
    const calls: Array<Promise<Array<{ id: string; values: unknown; metadata: Record<string, unknown>; payload?: Uint8Array | null }>>> = [];
    for (const [shard, g] of groups) {
      for (let i = 0; i < g.items.length; i += per) calls.push(this.request(shard, "fetch", { ns: namespace, ids: g.items.slice(i, i + per) }, read.after, "ids", g.at.slice(i, i + per)));
    }
    const byId = new Map<string, FetchedVector>();
    for (const part of await Promise.all(calls)) for (const v of part) byId.set(v.id, { id: v.id, values: bytesF32(v.values) as Float32Array, metadata: (v.metadata ?? {}) as FetchedVector["metadata"], payload: v.payload ?? null });
    return ids.map((id) => byId.get(id)).filter((v): v is FetchedVector => v !== undefined);
  }

  async query(namespace: string, req: QueryInput, read: ReadOptions = {}): Promise<{ matches: Match[]; scanned: number }> {
    checkTopK(req.topK);
    let vector = req.vector;
    if (req.id !== undefined && vector === undefined) {
      // By the id of a stored vector: its values from its shard, then a query by vector on every shard.
      const [found] = await this.fetch(namespace, [checkId(req.id, "id")], read);
      if (found === undefined) throw new SvcError("E_NOT_FOUND", `no vector '${req.id}' in namespace '${namespace}'`, { field: "id" });
      vector = found.values as Float32Array;
    }
    const q = { ...req, id: undefined, vector: isNumbers(vector) ? f32Bytes(vector) : vector };
    const parts = await this.all<{ matches: Match[]; scanned: number }>("query", { ns: namespace, req: q }, read.after);
    const matches = parts
      .flatMap((p) => p.matches)
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, req.topK);
    return { matches, scanned: parts.reduce((n, p) => n + p.scanned, 0) };
  }

  async stats(filter?: unknown, read: ReadOptions = {}): Promise<IndexStats> {
    const parts = await this.all<IndexStats>("stats", { filter }, read.after);
    const namespaces: Record<string, { vectorCount: number }> = Object.create(null);
    let total = 0;
    for (const p of parts) {
      for (const [ns, { vectorCount }] of Object.entries(p.namespaces)) namespaces[ns] = { vectorCount: (namespaces[ns]?.vectorCount ?? 0) + vectorCount };
      total += p.totalVectorCount;
    }
    return { dimension: this.record.dimension, metric: this.record.metric, namespaces, totalVectorCount: total };
  }

  async count(namespace: string, filter?: unknown, read: ReadOptions = {}): Promise<number> {
    return (await this.all<number>("count", { ns: namespace, filter }, read.after)).reduce((n, c) => n + c, 0);
  }

  /** `items` (ids) by shard, each with the callers' indices. */
  private group(items: readonly string[], field: string): Map<number, { items: string[]; at: number[] }> {
    const groups = new Map<number, { items: string[]; at: number[] }>();
    items.forEach((id, i) => {
      const shard = shardOf(checkId(id, `${field}[${i}]`), this.record.shards);
      let g = groups.get(shard);
      if (g === undefined) groups.set(shard, (g = { items: [], at: [] }));
      g.items.push(id);
      g.at.push(i);
    });
    return groups;
  }

  private all<T>(op: ShardOp, args: Record<string, unknown>, after?: number): Promise<T[]> {
    return Promise.all(Array.from({ length: this.record.shards }, (_, s) => this.request<T>(s, op, args, after)));
  }

  /**
   * One request to one shard. No responders (no replica subscribed: down, or still opening) and read
   * timeouts are retried for unavailableAfterMs, then 503 E_SHARD_UNAVAILABLE with Retry-After. An
   * error the shard answered is re-thrown as the same SvcError; with `field`/`at`, an element path
   * `<field>[j]` of the shard's part is renamed to the caller's index `<field>[at[j]]`.
   */
  private async request<T>(shard: number, op: ShardOp, args: Record<string, unknown>, after?: number, field?: string, at?: number[]): Promise<T> {
    const subject = shardSubject(this.record, shard);
    const write = op === "upsert" || op === "delete" || op === "update" || op === "updateWhere";
    const data = encodeMessage({ op, args, ...(after === undefined ? {} : { after }) });
    const deadline = Date.now() + this.unavailableAfterMs;
    for (;;) {
      let reply: ShardReply;
      try {
        reply = decodeMessage<ShardReply>((await this.nc.request(subject, data, { timeout: write ? this.writeTimeoutMs : this.readTimeoutMs })).data);
      } catch (e) {
        // A write that timed out may have been applied: not retried (the client retries; upserts are idempotent by id).
        const retry = (e instanceof RequestError && e.isNoResponders()) || (!write && isTimeout(e));
        if (!retry || Date.now() >= deadline) {
          throw new SvcError("E_SHARD_UNAVAILABLE", `shard ${shard} of index '${this.record.name}' has no live replica answering (${(e as Error).message}); retry shortly`, { details: { retryAfterSeconds: 2 }, cause: e });
        }
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if ("error" in reply) throw renamed(replyError(reply.error), field, at);
      return reply.ok as T;
    }
  }

  /** Request bytes available for vectors under the server's max_payload. */
  private payloadBudget(): number {
    return Math.max(64 * 1024, (this.nc.info?.max_payload ?? 1024 * 1024) - ENVELOPE_BYTES);
  }
}

function isNumbers(v: unknown): v is ArrayLike<number> {
  return v instanceof Float32Array || (Array.isArray(v) && v.every((x) => typeof x === "number"));
}

function isTimeout(e: unknown): boolean {
  return e instanceof Error && (e.name === "TimeoutError" || (e.cause instanceof Error && e.cause.name === "TimeoutError") || /timeout/i.test(e.message));
}

function maxSeq(replies: Array<{ seq: number }>): number {
  return replies.reduce((m, r) => Math.max(m, r.seq ?? 0), 0);
}

/** `e` with `<field>[j]` (in its field and message) renamed to `<field>[at[j]]`. */
function renamed(e: SvcError, field: string | undefined, at: number[] | undefined): SvcError {
  if (field === undefined || at === undefined) return e;
  const re = new RegExp(`${field}\\[(\\d+)\\]`, "g");
  const fix = (s: string) => s.replace(re, (m, j: string) => (at[Number(j)] === undefined ? m : `${field}[${at[Number(j)]}]`));
  return new SvcError(e.code, fix(e.message), { ...(e.field === undefined ? {} : { field: fix(e.field) }), ...(e.details === undefined ? {} : { details: e.details }) });
}
