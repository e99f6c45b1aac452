/** @module record-fields — one record as stored (indexed metadata + msgpack payload) and as shown, its typed predicate, and the checks of record input. */
import { randomBytes } from "node:crypto";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import type { Metadata } from "../engine/filter/metadata.js";
import { SvcError } from "../errors.js";
import { checkValue, decodeMsgpack } from "../safe-values.js";

/** Records per ingest call (and per write of an import). */
export const MAX_ITEMS = 1000;
export const MAX_TEXT_BYTES = 64 * 1024;
export const MAX_META_BYTES = 64 * 1024;
export const MAX_TAGS = 64;
export const DAY_MS = 86_400_000;
export const NAMESPACE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

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
  kind?: string[];
  tagsAny?: string[];
  tagsAll?: string[];
  tsGte?: number;
  tsLt?: number;
}

// ---- rows and views ------------------------------------------------------------------------

export interface Row {
  text: string;
  metadata: Metadata;
  payload: Uint8Array;
}

export function toRow(item: unknown, field: string, now: number): Row {
  if (typeof item !== "object" || item === null || Array.isArray(item))
    throw new SvcError("E_BAD_REQUEST", `${field} must be an object {kind, text, tags, ts, meta, ttlDays}`, { field });
  const it = item as Record<string, unknown>;
  const kind = it.kind;
  if (typeof kind !== "string" || kind === "" || kind.length > 128)
    throw new SvcError("E_BAD_REQUEST", `${field}.kind must be a non-empty string of at most 128 characters`, { field: `${field}.kind` });
  const text = it.text;
  if (typeof text !== "string" || text.trim() === "")
    throw new SvcError("E_BAD_REQUEST", `${field}.text must be a non-empty string`, { field: `${field}.text` });
  if (Buffer.byteLength(text) > MAX_TEXT_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field}.text is over ${MAX_TEXT_BYTES} bytes`, { field: `${field}.text` });
  const tags = it.tags === undefined ? [] : stringList(it.tags, `${field}.tags`, MAX_TAGS);
  const ts = it.ts === undefined ? now : it.ts;
  if (typeof ts !== "number" || !Number.isSafeInteger(ts) || ts < 0)
    throw new SvcError("E_BAD_REQUEST", `${field}.ts must be a non-negative integer (epoch ms)`, { field: `${field}.ts` });
  const meta = it.meta === undefined ? {} : it.meta;
  if (typeof meta !== "object" || meta === null || Array.isArray(meta))
    throw new SvcError("E_BAD_REQUEST", `${field}.meta must be an object`, { field: `${field}.meta` });
  checkValue(meta, `${field}.meta`);
  let ttlDays: number | undefined;
  if (it.ttlDays !== undefined) {
    ttlDays = it.ttlDays as number;
    if (typeof ttlDays !== "number" || !Number.isInteger(ttlDays) || ttlDays <= 0 || ttlDays > 36_500)
      throw new SvcError("E_BAD_REQUEST", `${field}.ttlDays must be an integer in [1, 36500]`, { field: `${field}.ttlDays` });
  }
  const payload = msgpackEncode({
    text,
    meta: meta as Record<string, unknown>,
    ...(ttlDays === undefined ? {} : { ttlDays }),
  } satisfies Payload);
  if (payload.byteLength > MAX_TEXT_BYTES + MAX_META_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field}.meta is over ${MAX_META_BYTES} bytes`, { field: `${field}.meta` });
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
  if (!NAMESPACE_RE.test(ns))
    throw new SvcError(
      "E_BAD_REQUEST",
      "namespace must be 1-128 characters of letters, digits, '_', '.', ':' and '-', starting with a letter or digit",
      { field: "namespace" },
    );
}

export function newId(): string {
  return `rec_${randomBytes(8).toString("hex")}`;
}

export function predicate(q: Record<string, unknown>, names: { tsGte?: string; tsLt?: string } = {}): Predicate {
  const gte = names.tsGte ?? "tsGte";
  const lt = names.tsLt ?? "tsLt";
  const p: Predicate = {
    kind: q.kind === undefined ? undefined : stringList(q.kind, "kind", 100),
    tagsAny: q.tagsAny === undefined ? undefined : stringList(q.tagsAny, "tagsAny", 100),
    tagsAll: q.tagsAll === undefined ? undefined : stringList(q.tagsAll, "tagsAll", 100),
    tsGte: q.tsGte === undefined ? undefined : int(q.tsGte, gte),
    tsLt: q.tsLt === undefined ? undefined : int(q.tsLt, lt),
  };
  if (p.tsGte !== undefined && p.tsLt !== undefined && p.tsGte >= p.tsLt)
    throw new SvcError("E_BAD_REQUEST", `${gte} must be below ${lt}`, { field: gte });
  return p;
}

export function stringList(v: unknown, field: string, max: number): string[] {
  if (!Array.isArray(v) || v.length > max)
    throw new SvcError("E_BAD_REQUEST", `${field} must be an array of at most ${max} strings`, { field });
  v.forEach((s, i) => {
    if (typeof s !== "string" || s === "" || s.length > 256)
      throw new SvcError("E_BAD_REQUEST", `${field}[${i}] must be a non-empty string of at most 256 characters`, {
        field: `${field}[${i}]`,
      });
  });
  return v as string[];
}

function int(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v))
    throw new SvcError("E_BAD_REQUEST", `${field} must be an integer (epoch ms)`, { field });
  return v;
}

export function intIn(v: unknown, field: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    throw new SvcError(field === "topK" ? "E_TOP_K" : "E_BAD_REQUEST", `${field} must be an integer in [${min}, ${max}]`, { field });
  return v;
}

export function bool(v: unknown, field: string, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") throw new SvcError("E_BAD_REQUEST", `${field} must be a boolean`, { field });
  return v;
}
