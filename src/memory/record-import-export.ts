/** @module record-import-export — a namespace's records out (every live record, for a .svc container) and in (replace through a staging namespace, or merge). */
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { MAX_ITEMS, restoredRow, toView, type ContainerRecord } from "./record-fields.js";
import { liveFilter } from "./record-filters.js";
import { writeRows, type Embedder, type RecordStore } from "./record-store.js";
import type { ReadOptions } from "./vector-index.js";

/** Namespaces an import fills before it is moved into place; never valid as user namespaces (a store drops them when it opens). */
export const STAGING_PREFIX = "~import~";
/** Records per page of an export. */
const PAGE = 10_000;

/** Every live record of a namespace at `now` (ms) with its expiry, oldest first (ties by id): what an export writes. */
export async function exportRecords(s: RecordStore, ns: string, now: number, read: ReadOptions): Promise<ContainerRecord[]> {
  const out: ContainerRecord[] = [];
  let tsLt: number | undefined;
  // Pages of 10k by ts descending; a page ending inside a ts group is cut before that group.
  for (;;) {
    const rows = await s.order(ns, { filter: liveFilter({ tsLt }, now), limit: PAGE, rows: true }, read);
    let page = rows;
    if (rows.length === PAGE) {
      const last = rows.at(-1)!.value;
      page = rows.filter((r) => r.value !== last);
      if (page.length === 0)
        throw new SvcError("E_CONFLICT", `more than 10,000 records share ts ${last}; cannot page through them`, { field: "ts" });
    }
    for (const r of page)
      out.push({
        ...toView(r.id, r.metadata!, r.payload, true, true),
        ...(typeof r.metadata!.exp === "number" ? { exp: r.metadata!.exp } : {}),
      });
    if (rows.length < PAGE) break;
    tsLt = page.at(-1)!.value;
  }
  return out.sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Replace (schema 1) or merge into (schema 2) a namespace with exported records. Replace
 * writes everything into a staging namespace first and then moves it into place in one
 * logged step, so the namespace is either untouched or fully replaced (in cluster mode: per
 * shard, each shard's move one logged step).
 */
export async function importRecords(
  s: RecordStore,
  encoder: Embedder,
  ns: string,
  records: ContainerRecord[],
  mode: "replace" | "merge",
): Promise<number> {
  const target = mode === "replace" ? `${STAGING_PREFIX}${ns}~${randomBytes(4).toString("hex")}` : ns;
  try {
    for (let i = 0; i < records.length; i += MAX_ITEMS) {
      const rows = records.slice(i, i + MAX_ITEMS).map((r) => ({ ...restoredRow(r), id: r.id }));
      await writeRows(s, encoder, target, rows);
    }
    if (mode === "replace") await s.move(target, ns);
  } catch (err) {
    if (mode === "replace") await s.deleteAll(target).catch(() => {}); // the staging namespace is dropped at the next open anyway
    throw err;
  }
  return records.length;
}
