/**
 * @module shards — how a cluster index is cut into shards and named on NATS (shared by catalog.ts,
 * shard-host.ts and sharded-index.ts): the catalog record, the shard of a vector id, a shard's
 * placement key, log name and request subject, and the request/reply messages.
 */
import { encode } from "@msgpack/msgpack";
import { fmix32 } from "../encoder/hash.js";
import { SvcError, type ErrorCode, ERRORS } from "../errors.js";
import type { IndexRecord } from "../memory/indexes.js";
import { safeDecoder } from "../safe-values.js";
import { logStreamName } from "./jetstream-log.js";

/** Shards of an index when its create request does not say (`spec.shards`). */
export const DEFAULT_SHARDS = 4;
export const MAX_SHARDS = 64;
/** svc nodes holding a replica of each shard (fewer while fewer nodes are live). */
export const DEFAULT_REPLICAS = 2;
/** Subject prefix of the shards' request-reply subjects: `svc.shard.<tenant>.<index>.<incarnation>.<shard>`. */
export const SHARD_SUBJECT = "svc.shard";
/** The queue group every replica of a shard subscribes in (one replica answers each request). */
export const SHARD_QUEUE = "svc-shard";

/** A cluster index as stored in the catalog bucket (value of key `<tenant>.<name>`, JSON). */
export interface ClusterIndexRecord extends IndexRecord {
  tenant: string;
  /** Fixed at creation: a vector lives on shard shardOf(id, shards). */
  shards: number;
  /** Replicas per shard (svc nodes, not NATS servers). */
  replicas: number;
  /** Random per creation, in every subject of the index, so a re-created name never sees the old one's frames. */
  incarnation: string;
  /**
   * Log streams the shards are spread over (shardStream), fixed at creation; absent on indexes
   * created before issue 31, whose shards all live on `svc_log`.
   */
  streams?: number;
  /** "records": a tenant's records (cluster/sharded-records.ts), not a vector index of the API; its shards answer RECORD_OPS too. */
  kind?: "records";
}

/**
 * The shard of vector `id` among `shards`: FNV-1a (32-bit) of its UTF-8 bytes, then murmur3's fmix32
 * finalizer (FNV's low bits depend only on the bytes' low bits, so ids like v0, v2, v4 would share a
 * shard mod 4), mod shards. Stable across nodes and versions: changing it strands stored vectors.
 */
export function shardOf(id: string, shards: number): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(id, "utf8")) h = Math.imul(h ^ b, 0x01000193);
  return fmix32(h) % shards;
}

/** `<tenant>.<index>.<incarnation>.<shard>`: the shard's placement key (registry.owners) and the tail of its subjects. */
export function shardKey(r: ClusterIndexRecord, shard: number): string {
  return `${r.tenant}.${r.name}.${r.incarnation}.${shard}`;
}

/**
 * The log stream of shard `shard` (jetstream-log.ts logStreamName): with `streams` = k, shard s is
 * on stream (s + o) mod k, o = FNV-1a of the incarnation mod k, so an index's shards go round the
 * streams (4 shards on 3 streams: 2, 1, 1) and small indexes do not all start on the same one;
 * without `streams` (an index from before), `svc_log`.
 */
export function shardStream(r: ClusterIndexRecord, shard: number): string {
  const k = r.streams ?? 1;
  if (k <= 1) return logStreamName(0);
  let h = 0x811c9dc5;
  for (const b of Buffer.from(r.incarnation, "utf8")) h = Math.imul(h ^ b, 0x01000193);
  return logStreamName((shard + ((h >>> 0) % k)) % k);
}

/** The shard's log subject, `<shardStream>.idx.<shardKey>` (what a purge or snapshot of the shard names). */
export function shardLogSubject(r: ClusterIndexRecord, shard: number): string {
  return `${shardStream(r, shard)}.${shardLogName(r, shard)}`;
}

/** The distinct log streams holding the index's shards. */
export function indexStreams(r: ClusterIndexRecord): string[] {
  return [...new Set(Array.from({ length: r.shards }, (_, s) => shardStream(r, s)))];
}

/** The subject filter matching every shard log of the index's incarnation: `svc_log.idx.<tenant>.<index>.<incarnation>.>` (with the stream name in front). */
export function indexLogFilter(stream: string, r: ClusterIndexRecord): string {
  return `${stream}.idx.${r.tenant}.${r.name}.${r.incarnation}.>`;
}

/** The shard's log name (jetStreamLog): subject `<shardStream>.idx.<shardKey>`. */
export function shardLogName(r: ClusterIndexRecord, shard: number): string {
  return `idx.${shardKey(r, shard)}`;
}

/** The shard's request subject (every replica subscribes it in SHARD_QUEUE: one of them answers). */
export function shardSubject(r: ClusterIndexRecord, shard: number): string {
  return `${SHARD_SUBJECT}.${shardKey(r, shard)}`;
}

/** The request subject of one node's replica of the shard (no queue group): a sender picks the replica. */
export function replicaSubject(r: ClusterIndexRecord, shard: number, node: string): string {
  return `${shardSubject(r, shard)}.${node}`;
}

/** The reads a records shard answers besides count (cluster/record-shard.ts). */
export const RECORD_OPS = ["rows", "search", "order", "ids", "facet", "range", "namespaces", "lexStats", "lexSearch"] as const;
export type RecordOp = (typeof RECORD_OPS)[number];

/** `applied`: the replica's applied stream sequence, asked by the shard's snapshot taker before it purges (shard-host.ts). */
export type ShardOp =
  "upsert" | "delete" | "update" | "updateWhere" | "move" | "fetch" | "query" | "stats" | "count" | "list" | "applied" | RecordOp;

/** The ops that write (logged with a deadline and an id; sharded-index.ts, shard-host.ts). */
export function isWrite(op: unknown): op is "upsert" | "delete" | "update" | "updateWhere" | "move" {
  return op === "upsert" || op === "delete" || op === "update" || op === "updateWhere" || op === "move";
}

/**
 * A request to a shard (msgpack): the op, its arguments, for reads the log sequence the shard must
 * have applied first, for writes the deadline (ms since the epoch) its frames carry in the log
 * (jetstream-log.ts DEADLINE_HEADER): a write reaching its shard too late is refused, one stored too
 * late is dropped by every replica.
 */
export interface ShardRequest {
  op: ShardOp;
  args: Record<string, unknown>;
  after?: number;
  deadline?: number;
  /** A write's id (letters, digits, `_`, `-`), the same in every copy sent: its frames' message ids derive from it, so JetStream keeps one. */
  id?: string;
}

/** A shard's reply (msgpack): `{ok: result}` or `{error: {code, message, field?, details?}}`. */
export type ShardReply = { ok: unknown } | { error: { code: string; message: string; field?: string; details?: Record<string, unknown> } };

export function encodeMessage(m: ShardRequest | ShardReply): Uint8Array {
  return encode(m, { ignoreUndefined: true });
}

/** Decoded with the safe decoder (src/safe-values.ts): a `__proto__` key never reaches an object's prototype. */
export function decodeMessage<T>(data: Uint8Array): T {
  return safeDecoder().decode(data) as T;
}

/** Error names of the NATS clients that mean "JetStream or a server is unavailable now" (nats-core, jetstream). */
const NATS_UNAVAILABLE = new Set([
  "JetStreamApiError",
  "JetStreamError",
  "JetStreamStatusError",
  "JetStreamNotEnabled",
  "TimeoutError",
  "NoResponders",
  "RequestError",
  "ConnectionError",
  "ClosedConnectionError",
  "DrainingConnectionError",
]);

/**
 * A shard's answer for a failure; `write`: the request was a write (its outcome may be unknown). A SvcError keeps its
 * code, message and field; NATS unavailable is E_NOT_CAUGHT_UP or E_NO_QUORUM; anything else is E_INTERNAL.
 */
export function errorReply(e: unknown, write = false): ShardReply {
  if (e instanceof SvcError)
    return {
      error: {
        code: e.code,
        message: e.message,
        ...(e.field === undefined ? {} : { field: e.field }),
        ...(e.details === undefined ? {} : { details: e.details }),
      },
    };
  // NATS/JetStream unavailable (a server down or electing: "JetStream system temporarily unavailable", a timeout): not a fault of
  // svc's, so never a 500. A read answers E_NOT_CAUGHT_UP (the sender asks another replica), a write E_NO_QUORUM (outcome unknown).
  if (e instanceof Error && NATS_UNAVAILABLE.has(e.name))
    return write
      ? {
          error: {
            code: "E_NO_QUORUM",
            message: `the shard could not reach JetStream (${e.message}); retry`,
            details: { retryAfterSeconds: 5 },
          },
        }
      : {
          error: {
            code: "E_NOT_CAUGHT_UP",
            message: `the shard could not reach JetStream (${e.message}); retry`,
            details: { retryAfterSeconds: 1 },
          },
        };
  return { error: { code: "E_INTERNAL", message: `shard request failed: ${(e as Error)?.message ?? String(e)}` } };
}

/** The SvcError a shard replied with, re-created on the receiving node (so the client sees the same 4xx as on one node). */
export function replyError(r: { code: string; message: string; field?: string; details?: Record<string, unknown> }): SvcError {
  const code = (Object.hasOwn(ERRORS, r.code) ? r.code : "E_INTERNAL") as ErrorCode;
  return new SvcError(code, r.message, {
    ...(r.field === undefined ? {} : { field: r.field }),
    ...(r.details === undefined ? {} : { details: r.details }),
  });
}

/** Float32 values as msgpack bin (little-endian bytes) and back: vectors cross NATS as bytes, not number arrays. */
export function f32Bytes(v: ArrayLike<number>): Uint8Array {
  const f = v instanceof Float32Array ? v : Float32Array.from(v);
  return new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
}

export function bytesF32(b: unknown): unknown {
  if (!(b instanceof Uint8Array) || b.byteLength % 4 !== 0) return b;
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
