/**
 * @module sorted-ids — one partition's ids in id order (id-order.ts), kept incrementally: a sorted run plus a small
 * sorted delta of the rows appended since, merged lazily, so a write costs a list O(delta) instead of a full re-sort.
 */
import { compareIds, type IdPage, type IdPageInput } from "./id-order.js";

/** A UTF-16 code unit where code-unit order and code-point order part (id-order.ts `fix`). */
const HIGH_UNIT = /[\uD800-\uFFFF]/;

/** What the list reads of a partition: rows [0, rows) are append-only; `rowOf(id)` is an id's live row (none once deleted). */
export interface IdRows {
  readonly rows: number;
  readonly liveCount: number;
  idOf(row: number): string;
  rowOf(id: string): number | undefined;
}

/**
 * Invariants: every row in [0, indexed) that was live when it was added sits in `run` or `delta` (each sorted by
 * compareIds) with its row number; an entry is current iff `rowOf(id) === row`, so a deleted or overwritten row
 * stays behind until the next merge drops it and is skipped by `page`. An id has at most one current entry.
 */
export class SortedIds {
  private runIds: string[] = [];
  private runRows = new Uint32Array(0);
  private deltaIds: string[] = [];
  private deltaRows: number[] = [];
  private indexed = 0;

  /** Entries held (current or not). */
  get size(): number {
    return this.runIds.length + this.deltaIds.length;
  }

  /** Take in the rows appended since the last call: sort them into the delta, and merge the delta into the run once it outgrows 1/8 of it (or stale entries outnumber current ones). */
  update(p: IdRows): void {
    if (p.rows < this.indexed) this.reset();
    if (p.rows > this.indexed) {
      const freshIds: string[] = [];
      for (let row = this.indexed; row < p.rows; row++) {
        const id = p.idOf(row);
        if (p.rowOf(id) === row) freshIds.push(id);
      }
      // Without code units from U+D800 up, UTF-16 order is code-point order: the engine's own comparison (no callback) is several times faster.
      if (freshIds.some((id) => HIGH_UNIT.test(id))) freshIds.sort(compareIds);
      else freshIds.sort();
      const fresh = freshIds.map((id) => ({ id, row: p.rowOf(id)! }));
      const ids: string[] = [];
      const rows: number[] = [];
      let i = 0;
      let j = 0;
      while (i < this.deltaIds.length || j < fresh.length) {
        if (j === fresh.length || (i < this.deltaIds.length && compareIds(this.deltaIds[i]!, fresh[j]!.id) <= 0)) {
          ids.push(this.deltaIds[i]!);
          rows.push(this.deltaRows[i++]!);
        } else {
          ids.push(fresh[j]!.id);
          rows.push(fresh[j++]!.row);
        }
      }
      this.deltaIds = ids;
      this.deltaRows = rows;
      this.indexed = p.rows;
    }
    if (this.deltaIds.length > Math.max(256, this.runIds.length / 8) || this.size > 2 * p.liveCount + 1024) this.merge(p);
  }

  /** One merge pass of run and delta, keeping current entries only. */
  private merge(p: IdRows): void {
    const ids: string[] = [];
    const rows: number[] = [];
    let i = 0;
    let j = 0;
    const { runIds, runRows, deltaIds, deltaRows } = this;
    while (i < runIds.length || j < deltaIds.length) {
      let id: string;
      let row: number;
      if (j === deltaIds.length || (i < runIds.length && compareIds(runIds[i]!, deltaIds[j]!) <= 0)) {
        id = runIds[i]!;
        row = runRows[i++]!;
      } else {
        id = deltaIds[j]!;
        row = deltaRows[j++]!;
      }
      if (p.rowOf(id) === row) {
        ids.push(id);
        rows.push(row);
      }
    }
    this.runIds = ids;
    this.runRows = Uint32Array.from(rows);
    this.deltaIds = [];
    this.deltaRows = [];
  }

  private reset(): void {
    this.runIds = [];
    this.runRows = new Uint32Array(0);
    this.deltaIds = [];
    this.deltaRows = [];
    this.indexed = 0;
  }

  /** The page `req` asks for of the current ids `keep` accepts (default all), as id-order.ts `idsAfter` over a sorted list; call `update` first. */
  page(p: IdRows, req: IdPageInput, keep: (id: string, row: number) => boolean = () => true): IdPage {
    const prefix = req.prefix ?? "";
    let i = Math.max(lowerBound(this.runIds, prefix, false), req.after === undefined ? 0 : lowerBound(this.runIds, req.after, true));
    let j = Math.max(lowerBound(this.deltaIds, prefix, false), req.after === undefined ? 0 : lowerBound(this.deltaIds, req.after, true));
    const ids: string[] = [];
    const { runIds, runRows, deltaIds, deltaRows } = this;
    while (i < runIds.length || j < deltaIds.length) {
      let id: string;
      let row: number;
      if (j === deltaIds.length || (i < runIds.length && compareIds(runIds[i]!, deltaIds[j]!) <= 0)) {
        id = runIds[i]!;
        row = runRows[i++]!;
      } else {
        id = deltaIds[j]!;
        row = deltaRows[j++]!;
      }
      if (!id.startsWith(prefix)) break; // both runs are past the prefix's ids from here on (the other run's next id sorts after this one)
      if (p.rowOf(id) !== row || !keep(id, row)) continue;
      if (ids.length === req.limit) return { ids, more: true };
      ids.push(id);
    }
    return { ids, more: false };
  }
}

/** Index of the first element of `sorted` not before `id` (strict: after it). */
function lowerBound(sorted: readonly string[], id: string, strict: boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareIds(sorted[mid]!, id);
    if (c < 0 || (strict && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
