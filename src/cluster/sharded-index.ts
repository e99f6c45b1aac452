/**
 * @module sharded-index — one cluster index as a VectorIndex, usable on any node: each call goes over
 * NATS request-reply to the shards it concerns: to one replica's own subject
 * (`svc.shard.<tenant>.<index>.<incarnation>.<shard>.<node>`), live replicas heard from most recently
 * first, then to the queue group of every replica (shard-host.ts). Writes go to the shards of their ids
 * (an upsert is split per shard and into requests under NATS max_payload) and return the highest
 * stream sequence acknowledged; queries fan out to every shard and the top-k are merged here (cosine
 * scores are comparable across shards); delete by filter, stats and counts go to every shard and sum.
 */
import { RequestError, type NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import type { FetchedVector, IdPage, IdPageInput, Match, QueryInput, VectorInput } from "../engine/collection.js";
import { mergePages } from "../engine/id-order.js";
import { checkId, checkTopK, rowBytesOf } from "../engine/input-checks.js";
import { checkUpsert } from "../engine/writer.js";
import { collectionDimension } from "../memory/indexes.js";
import { ERRORS, SvcError } from "../errors.js";
import {
  checkDensePayloads,
  sparseRows,
  type IndexStats,
  type ReadOptions,
  type VectorIndex,
  type Written,
} from "../memory/vector-index.js";
import { CLOCK_SKEW_MS } from "./jetstream-log.js";
import {
  bytesF32,
  decodeMessage,
  encodeMessage,
  f32Bytes,
  isWrite,
  replyError,
  shardOf,
  shardSubject,
  type ClusterIndexRecord,
  type ShardOp,
  type ShardReply,
} from "./shards.js";

export interface ShardedIndexOptions {
  /** How long one read request waits for a replica's reply before it asks the next replica (default 2500 ms; a shard waits at most CATCH_UP_MS for `after`). */
  readTimeoutMs?: number;
  /**
   * A write's deadline, from when it is sent (default 12000 ms: longer than a stream leader
   * election, ~5-9 s on nats-server 2.9). Its frames carry it into the log; a frame the stream
   * stores later is dropped by every replica. With no answer by deadline + CLOCK_SKEW_MS the
   * answer is 503 E_OUTCOME_UNKNOWN; E_NO_QUORUM from the shard is passed on only at that time
   * too, so a write the client makes next is stored after the deadline and can never be overtaken.
   */
  writeWindowMs?: number;
  /** How long a shard with no replica answering (no responders, or reads timing out) is retried before E_SHARD_UNAVAILABLE (default 10000 ms). */
  unavailableAfterMs?: number;
}

/** Live nodes holding a replica of a shard, to ask first (best first); the queue group is asked after them. */
export type ReplicasOf = (shard: number) => readonly string[];

/** How long one try of a write waits for its answer before a copy goes to the next replica (ms; the last try waits until deadline + CLOCK_SKEW_MS). */
const WRITE_TRY_MS = 4000;
/** Room per request for the envelope, the namespace and headers, under the server's max_payload. */
const ENVELOPE_BYTES = 4096;

export class ShardedIndex implements VectorIndex {
  private readonly readTimeoutMs: number;
  private readonly writeWindowMs: number;
  private readonly unavailableAfterMs: number;

  /** "sparse" for a sparse index (its records hold sparse values only); absent: dense. */
  get vectorType(): "sparse" | undefined {
    return this.record.vectorType === "sparse" ? "sparse" : undefined;
  }

  constructor(
    private readonly nc: NatsConnection,
    readonly record: ClusterIndexRecord,
    opts: ShardedIndexOptions = {},
    private readonly replicasOf: ReplicasOf = () => [],
  ) {
    this.readTimeoutMs = opts.readTimeoutMs ?? 2500;
    this.writeWindowMs = opts.writeWindowMs ?? 12_000;
    this.unavailableAfterMs = opts.unavailableAfterMs ?? 10_000;
  }

  async upsert(namespace: string, vectors: readonly VectorInput[]): Promise<{ upsertedCount: number } & Written> {
    // The whole batch first, as one collection checks it: a bad vector fails the batch before any shard has written its part.
    // A sparse index's rows are checked as its shards store them (memory/vector-index.ts sparseRows); they are sent as given.
    const dimension = collectionDimension(this.record);
    const rows = this.record.vectorType === "sparse" ? sparseRows(vectors) : vectors;
    checkUpsert(namespace, rows, { rowBytes: rowBytesOf(dimension, true), dimension, cosine: true });
    if (this.record.kind !== "records" && this.record.vectorType !== "sparse") checkDensePayloads(this.record.metric, vectors); // a record's payload is its text, not sparse values
    const budget = this.payloadBudget();
    // Per shard: requests of at most `budget` estimated bytes, each remembering the callers' indices (errors name those).
    const requests: Array<{ shard: number; vectors: unknown[]; at: number[]; bytes: number }> = [];
    const open = new Map<number, (typeof requests)[number]>();
    vectors.forEach((v, i) => {
      const shard = shardOf(v.id, this.record.shards);
      const wire = { ...v, values: isNumbers(v.values) ? f32Bytes(v.values) : v.values };
      const bytes =
        Buffer.byteLength(v.id) +
        (wire.values instanceof Uint8Array ? wire.values.byteLength : 0) +
        (v.metadata === undefined ? 0 : (JSON.stringify(v.metadata)?.length ?? 0)) +
        (v.payload?.byteLength ?? 0) +
        32;
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
      requests.map((r) =>
        this.request<{ upsertedCount: number; seq: number }>(
          r.shard,
          "upsert",
          { ns: namespace, vectors: r.vectors },
          undefined,
          "vectors",
          r.at,
        ),
      ),
    );
    return { upsertedCount: replies.reduce((n, r) => n + r.upsertedCount, 0), seq: maxSeq(replies) };
  }

  async delete(
    namespace: string,
    req: { ids?: readonly string[]; filter?: unknown; deleteAll?: boolean },
  ): Promise<{ deleted: number } & Written> {
    let replies: Array<{ deleted: number; seq: number }>;
    if (req.ids !== undefined && Array.isArray(req.ids) && req.ids.length > 0 && req.filter === undefined && !req.deleteAll) {
      const groups = this.group(req.ids, "ids");
      replies = await Promise.all(
        [...groups].map(([shard, g]) =>
          this.request<{ deleted: number; seq: number }>(shard, "delete", { ns: namespace, ids: g.items }, undefined, "ids", g.at),
        ),
      );
    } else if (req.ids !== undefined) {
      // ids that are not a non-empty array of ids (or given with filter/deleteAll): one shard names the error as a collection does
      replies = [await this.request(0, "delete", { ns: namespace, ids: req.ids, filter: req.filter, deleteAll: req.deleteAll })];
    } else {
      replies = await this.all<{ deleted: number; seq: number }>("delete", { ns: namespace, filter: req.filter, deleteAll: req.deleteAll });
    }
    return { deleted: replies.reduce((n, r) => n + r.deleted, 0), seq: maxSeq(replies) };
  }

  async update(
    namespace: string,
    req: { id: string; values?: ArrayLike<number>; setMetadata?: unknown; payload?: Uint8Array },
  ): Promise<Written> {
    const shard = shardOf(checkId(req?.id, "id"), this.record.shards);
    const r = await this.request<{ seq: number }>(shard, "update", {
      ns: namespace,
      id: req.id,
      values: isNumbers(req.values) ? f32Bytes(req.values) : req.values,
      setMetadata: req.setMetadata,
      payload: req.payload,
    });
    return { seq: r.seq };
  }

  /** Every shard, each counting and merging on its own rows (the filter is checked by each alike; a bad one fails on all). */
  async updateWhere(
    namespace: string,
    req: { filter: unknown; setMetadata?: unknown; dryRun?: boolean },
  ): Promise<{ matched: number } & Written> {
    const replies = await this.all<{ matched: number; seq: number }>("updateWhere", {
      ns: namespace,
      filter: req.filter,
      setMetadata: req.setMetadata,
      dryRun: req.dryRun,
    });
    return { matched: replies.reduce((n, r) => n + r.matched, 0), seq: maxSeq(replies) };
  }

  /** Each shard's first `limit` ids past `after`, merged: the first `limit` of the union are among them. */
  async list(namespace: string, req: IdPageInput & { filter?: unknown }, read: ReadOptions = {}): Promise<IdPage> {
    const pages = await this.all<IdPage>(
      "list",
      { ns: namespace, prefix: req.prefix, after: req.after, limit: req.limit, filter: req.filter },
      read.after,
    );
    return mergePages(pages, req.limit);
  }

  async fetch(namespace: string, ids: readonly string[], read: ReadOptions = {}): Promise<FetchedVector[]> {
    const groups = this.group(ids, "ids");
    // Replies carry the vectors: keep each under max_payload.
    const per = Math.max(1, Math.floor(this.payloadBudget() / (this.record.dimension * 4 + 2048)));
    const calls: Array<Promise<Array<{ id: string; values: unknown; metadata: Record<string, unknown>; payload?: Uint8Array | null }>>> =
      [];
    for (const [shard, g] of groups) {
      for (let i = 0; i < g.items.length; i += per)
        calls.push(
          this.request(shard, "fetch", { ns: namespace, ids: g.items.slice(i, i + per) }, read.after, "ids", g.at.slice(i, i + per)),
        );
    }
    const byId = new Map<string, FetchedVector>();
    for (const part of await Promise.all(calls))
      for (const v of part)
        byId.set(v.id, {
          id: v.id,
          values: bytesF32(v.values) as Float32Array,
          metadata: (v.metadata ?? {}) as FetchedVector["metadata"],
          payload: v.payload ?? null,
        });
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
      // euclidean scores are squared distances, smaller first
      .sort(
        (a, b) => (this.record.metric === "euclidean" ? a.score - b.score : b.score - a.score) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
      )
      .slice(0, req.topK);
    return { matches, scanned: parts.reduce((n, p) => n + p.scanned, 0) };
  }

  async stats(filter?: unknown, read: ReadOptions = {}): Promise<IndexStats> {
    const parts = await this.all<IndexStats>("stats", { filter }, read.after);
    const namespaces: Record<string, { vectorCount: number }> = Object.create(null);
    let total = 0;
    for (const p of parts) {
      for (const [ns, { vectorCount }] of Object.entries(p.namespaces))
        namespaces[ns] = { vectorCount: (namespaces[ns]?.vectorCount ?? 0) + vectorCount };
      total += p.totalVectorCount;
    }
    return {
      dimension: this.vectorType === "sparse" ? 0 : this.record.dimension,
      metric: this.record.metric,
      namespaces,
      totalVectorCount: total,
    };
  }

  async count(namespace: string, filter?: unknown, read: ReadOptions = {}): Promise<number> {
    return (await this.all<number>("count", { ns: namespace, filter }, read.after)).reduce((n, c) => n + c, 0);
  }

  /** One request to shard `shard` with this index's replica choice, failover, deadlines and errors (records: sharded-records.ts). */
  call<T>(shard: number, op: ShardOp, args: Record<string, unknown>, after?: number, field?: string, at?: number[]): Promise<T> {
    return this.request<T>(shard, op, args, after, field, at);
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
   * One request to one shard, to its replicas' own subjects (replicasOf: live, freshest first) and
   * then its queue group. It moves on to the next at no responders (that replica does not serve the
   * shard: definite), at a timeout (a replica frozen, or the request lost with a NATS server), and
   * for reads at E_NOT_CAUGHT_UP (a replica catching up): so it goes on through another replica
   * within a try's timeout. Reads give up after unavailableAfterMs: 503 E_SHARD_UNAVAILABLE with
   * Retry-After. A write carries its deadline (writeWindowMs) and an id, the same in every copy
   * sent: its frames' message ids derive from the id, so JetStream keeps one whichever replicas
   * ran it, and a frame stored after the deadline is dropped by every replica. So a write may be
   * sent again until the deadline; with no answer by deadline + CLOCK_SKEW_MS it is 503
   * E_OUTCOME_UNKNOWN, and an E_NO_QUORUM reply is passed on only at that time (then a write the
   * client makes next is stored after the deadline and cannot be overtaken). An error the shard
   * answered is re-thrown as the same SvcError; with `field`/`at`, an element path `<field>[j]` of
   * the shard's part is renamed to the caller's index `<field>[at[j]]`.
   */
  private async request<T>(
    shard: number,
    op: ShardOp,
    args: Record<string, unknown>,
    after?: number,
    field?: string,
    at?: number[],
  ): Promise<T> {
    const subject = shardSubject(this.record, shard);
    const write = isWrite(op);
    const start = Date.now();
    const deadline = start + this.writeWindowMs;
    const data = encodeMessage({
      op,
      args,
      ...(after === undefined ? {} : { after }),
      ...(write ? { deadline, id: randomBytes(9).toString("base64url") } : {}),
    });
    // new tries until then; a write's last try waits for its answer until deadline + CLOCK_SKEW_MS
    const giveUpAt = Math.min(start + this.unavailableAfterMs, write ? deadline - CLOCK_SKEW_MS : Infinity);
    // reads start at a random replica (spreading the load), writes at the first
    const offset = write ? 0 : Math.floor(Math.random() * 4);
    /** A write some copy of which may have run: its end is unknown until deadline + CLOCK_SKEW_MS. */
    let maybeRan = false;
    const unknown = async (error: SvcError): Promise<never> => {
      const wait = deadline + CLOCK_SKEW_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      throw error;
    };
    const outcomeUnknown = (cause: unknown) =>
      new SvcError(
        "E_OUTCOME_UNKNOWN",
        `shard ${shard} of index '${this.record.name}' did not answer the write by its deadline (${(cause as Error)?.message ?? cause}); it may have taken effect, but never after a later acknowledged write to the same id; retry`,
        { details: { retryAfterSeconds: 1 }, cause },
      );
    let last: unknown;
    for (let attempt = 0; ; attempt++) {
      const replicas = this.replicasOf(shard);
      const targets = [...replicas.map((n) => `${subject}.${n}`), subject];
      const target = targets[(attempt + (replicas.length === 0 ? 0 : offset % replicas.length)) % targets.length]!;
      const lastTry = write && Date.now() + this.readTimeoutMs >= giveUpAt;
      let reply: ShardReply;
      try {
        const timeout = !write ? this.readTimeoutMs : lastTry ? Math.max(100, deadline + CLOCK_SKEW_MS - Date.now()) : WRITE_TRY_MS;
        reply = decodeMessage<ShardReply>((await this.nc.request(target, data, { timeout })).data);
      } catch (e) {
        last = e;
        const noResponders = e instanceof RequestError && e.isNoResponders();
        if (write && !noResponders) maybeRan = true;
        if (Date.now() >= giveUpAt || lastTry) {
          if (maybeRan) return unknown(outcomeUnknown(e));
          break;
        }
        // every target said no responders: pause before the next round
        if (noResponders && (attempt + 1) % targets.length === 0) await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if ("error" in reply) {
        const err = renamed(replyError(reply.error), field, at);
        if (write && err.code === "E_NO_QUORUM") return unknown(err);
        // this copy failed for want of the cluster (refused as too late, closing, ...): an earlier copy may have run
        if (write && maybeRan && ERRORS[err.code].status >= 500) return unknown(outcomeUnknown(err));
        if (!write && err.code === "E_NOT_CAUGHT_UP" && Date.now() < giveUpAt && attempt < targets.length) {
          last = err;
          continue;
        }
        throw err;
      }
      return reply.ok as T;
    }
    throw new SvcError(
      "E_SHARD_UNAVAILABLE",
      `shard ${shard} of index '${this.record.name}' has no live replica answering (${(last as Error)?.message ?? last}); retry shortly`,
      { details: { retryAfterSeconds: 2 }, cause: last },
    );
  }

  /** Request bytes available for vectors under the server's max_payload. */
  private payloadBudget(): number {
    return Math.max(64 * 1024, (this.nc.info?.max_payload ?? 1024 * 1024) - ENVELOPE_BYTES);
  }
}

function isNumbers(v: unknown): v is ArrayLike<number> {
  return v instanceof Float32Array || (Array.isArray(v) && v.every((x) => typeof x === "number"));
}

function maxSeq(replies: Array<{ seq: number }>): number {
  return replies.reduce((m, r) => Math.max(m, r.seq ?? 0), 0);
}

/** `e` with `<field>[j]` (in its field and message) renamed to `<field>[at[j]]`. */
function renamed(e: SvcError, field: string | undefined, at: number[] | undefined): SvcError {
  if (field === undefined || at === undefined) return e;
  const re = new RegExp(`${field}\\[(\\d+)\\]`, "g");
  const fix = (s: string) => s.replace(re, (m, j: string) => (at[Number(j)] === undefined ? m : `${field}[${at[Number(j)]}]`));
  return new SvcError(e.code, fix(e.message), {
    ...(e.field === undefined ? {} : { field: fix(e.field) }),
    ...(e.details === undefined ? {} : { details: e.details }),
  });
}
