/** @module record-fields — one record as stored (indexed metadata + msgpack payload) and as shown, its typed predicate and requests (as the route checked them: tools/record-ops.ts). */
import { randomBytes } from "node:crypto";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import type { Metadata } from "../engine/filter/metadata.js";
import { SvcError } from "../errors.js";
import { checkValue, decodeMsgpack } from "../safe-values.js";
import { MAX_RECORD_META_BYTES, MAX_RECORD_TEXT_BYTES, RECORD_NAMESPACE_RE } from "../input-rules.js";

// The input rules are input-rules.ts's (the route checks them: tools/record-ops.ts); these names are kept for this layer's readers.
export {
  MAX_RECORD_ITEMS as MAX_ITEMS,
  MAX_RECORD_META_BYTES as MAX_META_BYTES,
  MAX_RECORD_TAGS as MAX_TAGS,
  MAX_RECORD_TEXT_BYTES as MAX_TEXT_BYTES,
  RECORD_NAMESPACE_RE as NAMESPACE_RE,
} from "../input-rules.js";
export const DAY_MS = 86_400_000;

/** A record as the API shows it. `text` and `meta` only when asked for (queries) or always (get, export). */
export interface RecordView {
  id: string;
  kind: string;
  tags: string[];
  ts: number;
  text?: string;
  meta?: Record<string, unknown>;
  ttlDays?: number;
  score?: number;
}

/** A record as stored in records.nmm and in a container (RecordView plus its absolute expiry). */
export type ContainerRecord = RecordView & { exp?: number };

/** The row: indexed metadata {kind, tags, ts, exp?} + payload msgpack {text, meta, ttlDays?}. */
interface Payload {
  text: string;
  meta: Record<string, unknown>;
  ttlDays?: number;
}

/** Typed predicates shared by query, timeline and forget. */
export interface Predicate {
  kind?: readonly string[];
  tagsAny?: readonly string[];
  tagsAll?: readonly string[];
  tsGte?: number;
  tsLt?: number;
}

// ---- rows and views ------------------------------------------------------------------------

export interface Row {
  text: string;
  metadata: Metadata;
  payload: Uint8Array;
}

/** One record to ingest, as the route checked it (tools/record-ops.ts `recordItem`: kind, text, tags, ts, ttlDays in range). */
export interface RecordInput {
  kind: string;
  text: string;
  tags?: string[];
  ts?: number;
  meta?: Record<string, unknown>;
  ttlDays?: number;
}

/**
 * The row of a checked record. What stays here is what the request schema cannot say: the stored payload (text
 * and meta as msgpack) fits MAX_TEXT_BYTES + MAX_META_BYTES. `field` names the item in that refusal (`items[3]`).
 */
export function toRow(item: RecordInput, field: string, now: number): Row {
  const { kind, text, tags = [], ts = now, meta = {}, ttlDays } = item;
  checkValue(meta, `${field}.meta`);
  const payload = msgpackEncode({ text, meta, ...(ttlDays === undefined ? {} : { ttlDays }) } satisfies Payload);
  if (payload.byteLength > MAX_RECORD_TEXT_BYTES + MAX_RECORD_META_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field}.meta is over ${MAX_RECORD_META_BYTES} bytes`, { field: `${field}.meta` });
  const metadata: Metadata = { kind, tags, ts, ...(ttlDays === undefined ? {} : { exp: now + ttlDays * DAY_MS }) };
  return { text, metadata, payload };
}

/** A record from a container, written back with its own id, ts and expiry. */
export function restoredRow(r: ContainerRecord): Row {
  const payload = msgpackEncode({
    text: r.text!,
    meta: r.meta ?? {},
    ...(r.ttlDays === undefined ? {} : { ttlDays: r.ttlDays }),
  } satisfies Payload);
  return { text: r.text!, metadata: { kind: r.kind, tags: r.tags, ts: r.ts, ...(r.exp === undefined ? {} : { exp: r.exp }) }, payload };
}

export function toView(
  id: string,
  m: Metadata,
  payload: Uint8Array | undefined,
  includeText: boolean,
  includeMeta: boolean,
  score?: number,
): RecordView {
  const v: RecordView = { id, kind: m.kind as string, tags: (m.tags as string[] | undefined) ?? [], ts: m.ts as number };
  if (payload !== undefined && (includeText || includeMeta)) {
    const p = decodeMsgpack(payload) as Payload;
    if (includeText) v.text = p.text;
    if (includeMeta) v.meta = p.meta;
    if (includeText && includeMeta && p.ttlDays !== undefined) v.ttlDays = p.ttlDays;
  }
  if (score !== undefined) v.score = score;
  return v;
}

/** The record's text, from its payload. */
export function textOf(payload: Uint8Array): string {
  return (decodeMsgpack(payload) as Payload).text;
}

export function matches(p: Predicate, m: Metadata, now: number): boolean {
  const tags = (m.tags as string[] | undefined) ?? [];
  const ts = m.ts as number;
  if (typeof m.exp === "number" && m.exp <= now) return false;
  if (p.kind && !p.kind.includes(m.kind as string)) return false;
  if (p.tagsAny && !p.tagsAny.some((t) => tags.includes(t))) return false;
  if (p.tagsAll && !p.tagsAll.every((t) => tags.includes(t))) return false;
  if (p.tsGte !== undefined && ts < p.tsGte) return false;
  if (p.tsLt !== undefined && ts >= p.tsLt) return false;
  return true;
}

// ---- input checks ---------------------------------------------------------------------------

export function checkNamespace(ns: string): void {
  if (!RECORD_NAMESPACE_RE.test(ns))
    throw new SvcError(
      "E_BAD_REQUEST",
      "namespace must be 1-128 characters of letters, digits, '_', '.', ':' and '-', starting with a letter or digit",
      { field: "namespace" },
    );
}

export function newId(): string {
  return `rec_${randomBytes(8).toString("hex")}`;
}

/** Query and forget as the route checked them (tools/record-ops.ts). */
export interface QueryRequest extends Predicate {
  text?: string;
  topK?: number;
  includeText?: boolean;
  includeMeta?: boolean;
  mode?: "vector" | "hybrid";
}
export interface ForgetRequest extends Predicate {
  ids?: readonly string[];
}

/**
 * The predicate of a checked request; the one cross-field rule the request schemas cannot say is here: the time
 * window is not empty (`names`: the request's names of tsGte and tsLt, e.g. the timeline's since and until).
 */
export function predicate(q: Predicate, names: { tsGte?: string; tsLt?: string } = {}): Predicate {
  const gte = names.tsGte ?? "tsGte";
  const lt = names.tsLt ?? "tsLt";
  const p: Predicate = { kind: q.kind, tagsAny: q.tagsAny, tagsAll: q.tagsAll, tsGte: q.tsGte, tsLt: q.tsLt };
  if (p.tsGte !== undefined && p.tsLt !== undefined && p.tsGte >= p.tsLt)
    throw new SvcError("E_BAD_REQUEST", `${gte} must be below ${lt}`, { field: gte });
  return p;
}
