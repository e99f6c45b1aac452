/** @module record-filters — a record predicate as an engine filter, with expired records hidden at read time (`exp` <= now). */
import type { Metadata } from "../engine/filter/metadata.js";
import type { Predicate } from "./record-fields.js";
import type { RecordStore } from "./record-store.js";
import type { ReadOptions } from "./vector-index.js";

/** The engine filter for a predicate, plus "not expired" at `now` (ms). */
export function liveFilter(p: Predicate, now: number): Record<string, unknown> {
  return { $and: [{ $or: [{ exp: { $exists: false } }, { exp: { $gt: now } }] }, ...clauses(p)] };
}

/**
 * The engine filter of a query: the predicate, plus "not expired" only while the namespace holds an expired
 * record (until the sweeper deletes it); undefined when that leaves nothing. So a query without a predicate
 * takes the unfiltered plans (the full scan or the approximate index) instead of a row list of every record
 * (at 100k records the list scan took 2.3 ms p50 of the vector query's 3.7; bench/RESULTS.md "records-mode").
 */
export async function readFilter(
  s: RecordStore,
  ns: string,
  p: Predicate,
  now: number,
  read: ReadOptions,
): Promise<Record<string, unknown> | undefined> {
  if ((await s.count(ns, { exp: { $lte: now } }, read)) > 0) return liveFilter(p, now);
  const and = clauses(p);
  return and.length === 0 ? undefined : { $and: and };
}

/** The predicate's engine clauses (kind, tags, ts). */
function clauses(p: Predicate): Record<string, unknown>[] {
  const and: Record<string, unknown>[] = [];
  if (p.kind) and.push({ kind: { $in: p.kind } });
  if (p.tagsAny) and.push({ tags: { $in: p.tagsAny } });
  for (const t of p.tagsAll ?? []) and.push({ tags: { $eq: t } });
  if (p.tsGte !== undefined || p.tsLt !== undefined)
    and.push({ ts: { ...(p.tsGte === undefined ? {} : { $gte: p.tsGte }), ...(p.tsLt === undefined ? {} : { $lt: p.tsLt }) } });
  return and;
}

/** True when the record's `exp` (ms) is at or before `now`: hidden from reads, deleted by the sweeper. */
export function isExpired(m: Metadata, now: number): boolean {
  return typeof m.exp === "number" && m.exp <= now;
}
