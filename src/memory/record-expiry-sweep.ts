/** @module record-expiry-sweep — deletes expired records from this node's records collections (reads hide them at once; this frees them). */
import { STAGING_PREFIX } from "./record-import-export.js";
import type { LocalRecordStore } from "./record-store.js";

/** Expired records are deleted by the sweeper this often (reads hide them at once). */
export const SWEEP_MS = 60_000;

/** Delete the records whose `exp` is at or before `now` (ms) in the given stores (null: one that failed to open); staging namespaces are the import's. */
export async function sweepExpired(stores: ReadonlyArray<Promise<LocalRecordStore | null>>, now: () => number): Promise<number> {
  let n = 0;
  for (const p of stores) {
    const s = await p;
    if (s === null) continue;
    const c = s.collection;
    for (const ns of c.namespaces()) {
      if (ns.startsWith(STAGING_PREFIX)) continue;
      const ids = c.ids(ns, { exp: { $lte: now() } });
      if (ids.length > 0) n += (await s.delete(ns, ids)).deleted;
    }
  }
  return n;
}
