/** @module filter-cache — one partition's recent filters: the rows each matched and, for a selective filter, those rows' 1-bit codes gathered contiguously. */
import { invariant } from "../../invariant.js";
import type { Kernels, RowsRef } from "../../kernels/abi.js";
import { RoaringBitmap32 } from "../roaring.js";
import type { Filter } from "./parse.js";

/**
 * Why: a filter keeping 1% of 1M rows matched 10,000 rows scattered over the 128 MB of codes; evaluating it (~0.1 ms)
 * and scanning them by the row list (~0.4-0.7 ms: a cache and TLB miss a row) were most of a filtered query. Agents
 * repeat their filters (a user, a tenant, a kind), so a partition keeps the last FILTER_CACHE_ENTRIES filters' matches,
 * and from a selective filter's first query a contiguous copy of its rows' codes, which a sequential scan reads at ~12 ns
 * a row. Gathering reads the scattered rows the list scan would, and measured no slower than that scan (a 1% filter at
 * 1M: first query 0.72-0.85 ms p50 gathered against 0.98-1.18 by the list), so a filter is not made to wait for a
 * second query.
 * Writes (Partition.version) only append rows and add tombstones: a row's metadata never changes, and no tombstone is
 * lifted. So a cached bitmap stays right for a later version once the new tombstones are taken out and the filter is
 * evaluated over the appended rows alone (a filter's matches within a universe are its matches within each part of it).
 * Gathered codes are brought up to date the same way at the filter's next query (gathered()): the rows tombstoned since
 * are squeezed out of the copy in place, the appended rows that match are gathered onto its end (the copy keeps
 * headroom for them), so the copy stays in ascending row order and a query under ingest still scans it sequentially.
 * Row numbers are a partition's for good (its arena only ever appends; growth moves the block, not the rows): a
 * compaction or index build that renumbers rows builds a fresh Partition with a fresh FilterCache, and the old
 * partition's cache is cleared when it closes, so gathered codes never meet another row layout.
 */
export const FILTER_CACHE_ENTRIES = 16;
/** Filters longer than this (as FILTER keys: JSON) are not cached: a long $in list costs as much to hash as to evaluate. */
export const FILTER_KEY_MAX = 4096;
/** Codes are gathered for filters matching at least this many rows: fewer scattered rows cost less than ~0.05 ms to scan. */
export const GATHER_MIN_ROWS = 1024;
/** ... and at most this many (the pool's DEFAULT_LIST_INLINE_BELOW): the gathered rows are scanned in the calling thread, with no await between lookup and scan. */
export const GATHER_MAX_ROWS = 16_384;
/** Bytes of gathered codes one partition holds at most (16,384 rows of 1024 bits: 2 MiB); the least recently used give way. */
export const GATHER_BYTES = 8 << 20;

/** What a cached bitmap was evaluated against: the partition's version, its row count and tombstone count then. */
export interface PartitionState {
  version: number;
  rows: number;
  tombstones: RoaringBitmap32;
}

interface Entry {
  matches: RoaringBitmap32;
  /** The PartitionState `matches` is right for (its tombstone count as `tombs`). */
  version: number;
  rowCount: number;
  tombs: number;
  /** Gathered: `list` (the rows, ascending) and their codes at `codes` (list.length rows, in that order, room for `capacity`). */
  list: Uint32Array | null;
  codes: number;
  capacity: number;
  bytes: number;
  /** The entry's `version` and `rowCount` when `list` was last made right (older than `version`: brought up to date at the next gathered()). */
  listVersion: number;
  listRows: number;
}

/** Rows of room a gathered copy of n rows gets: an eighth more, so appended matches seldom move the whole copy. */
function capacityFor(n: number): number {
  return Math.min(GATHER_MAX_ROWS, n + (n >> 3));
}

/** The cache key of a parsed filter, or null when too long to be worth it. Equal keys evaluate alike: fields and values are JSON (so 1, "1" and true differ). */
export function filterKey(filter: Filter): string | null {
  const key = keyOf(filter);
  return key.length <= FILTER_KEY_MAX ? key : null;
}

function keyOf(f: Filter): string {
  switch (f.kind) {
    case "and":
    case "or":
      return `${f.kind}(${f.children.map(keyOf).join(",")})`;
    case "in":
      return `${f.negate ? "nin" : "in"}${JSON.stringify(f.field)}${JSON.stringify(f.values)}`;
    case "range":
      return `range${JSON.stringify(f.field)}${f.minInclusive ? "[" : "("}${f.min},${f.max}${f.maxInclusive ? "]" : ")"}`;
    case "exists":
      return `${f.exists ? "exists" : "absent"}${JSON.stringify(f.field)}`;
  }
}

export class FilterCache {
  /** Map order is recency: a hit moves its entry to the end, eviction takes the first. */
  private readonly entries = new Map<string, Entry>();
  private version = -1;
  private bytes = 0;

  constructor(private readonly kernels: Kernels) {}

  /**
   * Rows matching `filter` in the partition as `state` describes it: cached (brought up to date as above), else
   * `evaluate(null)` over the live rows; `evaluate(universe)` evaluates over those rows only. The bitmap is kept: the
   * caller must not change it.
   */
  matches(
    filter: Filter,
    state: PartitionState,
    evaluate: (universe: RoaringBitmap32 | null) => RoaringBitmap32,
  ): { matches: RoaringBitmap32; key: string | null } {
    const key = filterKey(filter);
    if (key === null) return { matches: evaluate(null), key };
    this.version = state.version;
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      if (hit.version !== state.version) {
        let m = hit.matches;
        if (state.tombstones.size !== hit.tombs) m = RoaringBitmap32.andNot(m, state.tombstones);
        if (state.rows > hit.rowCount) {
          const added = new RoaringBitmap32();
          added.addRange(hit.rowCount, state.rows);
          added.andNotInPlace(state.tombstones);
          m = RoaringBitmap32.or(m, evaluate(added));
        }
        hit.matches = m;
        hit.version = state.version;
        hit.rowCount = state.rows;
        hit.tombs = state.tombstones.size;
      }
      return { matches: hit.matches, key };
    }
    const matches = evaluate(null);
    if (this.entries.size >= FILTER_CACHE_ENTRIES) this.drop(this.entries.keys().next().value!);
    this.entries.set(key, {
      matches,
      version: state.version,
      rowCount: state.rows,
      tombs: state.tombstones.size,
      list: null,
      codes: 0,
      capacity: 0,
      bytes: 0,
      listVersion: -1,
      listRows: 0,
    });
    return { matches, key };
  }

  /**
   * The gathered codes of the filter `key` (returned by matches() for this version): gathered from `arena` on its first
   * use when it matched GATHER_MIN_ROWS..GATHER_MAX_ROWS rows, then kept up to date across writes (above); null
   * otherwise. Valid until the next call into this cache: scan them synchronously.
   */
  gathered(key: string | null, arena: RowsRef): { rows: Uint32Array; codes: number } | null {
    const e = key === null ? undefined : this.entries.get(key);
    if (e === undefined || e.version !== this.version) return null;
    if (e.list !== null && e.listVersion !== e.version) this.update(e, arena);
    if (e.list !== null) return { rows: e.list, codes: e.codes };
    const n = e.matches.size;
    if (n < GATHER_MIN_ROWS || n > GATHER_MAX_ROWS || !this.reserve(e, capacityFor(n), arena)) return null;
    const rows = e.matches.toUint32Array();
    this.gather(e, rows, 0, arena);
    return { rows, codes: e.codes };
  }

  /**
   * Bring e's gathered copy from its list to e.matches: rows of the list no longer matched (tombstoned since) leave
   * the copy, moved down in place; matched rows appended since (at or past listRows) are gathered onto its end. Frees
   * the copy when the filter now matches too few or too many rows, or no room is left.
   */
  private update(e: Entry, arena: RowsRef): void {
    const old = e.list!;
    const rows = e.matches.toUint32Array();
    const n = rows.length;
    if (n < GATHER_MIN_ROWS || n > GATHER_MAX_ROWS) return this.release(e);
    const rowBytes = arena.words * 8;
    invariant(e.bytes === e.capacity * rowBytes, "filter-cache: gathered codes of another row width");
    const heap = this.kernels.heap.bytes();
    // Walk both ascending lists: a row of the old list is kept (its codes moved down to `kept`) or was tombstoned; a
    // matched row below listRows is always in the old list (metadata never changes, tombstones are never lifted).
    let kept = 0;
    let run = -1; // old index where the current run of kept rows starts (moved as one block), -1 between runs
    const flush = (end: number) => {
      const to = kept - (end - run);
      if (to !== run) heap.copyWithin(e.codes + to * rowBytes, e.codes + run * rowBytes, e.codes + end * rowBytes);
      run = -1;
    };
    for (let i = 0; i < old.length; i++) {
      if (kept < n && rows[kept] === old[i]) {
        if (run < 0) run = i;
        kept++;
      } else {
        invariant(kept >= n || rows[kept]! > old[i]!, "filter-cache: a matched row missing from its gathered list");
        if (run >= 0) flush(i);
      }
    }
    if (run >= 0) flush(old.length);
    invariant(kept === n || rows[kept]! >= e.listRows, "filter-cache: a matched old row missing from its gathered list");
    if (n > e.capacity) {
      // Out of room: a bigger block, the kept rows copied over.
      const from = e.codes;
      const fromBytes = e.bytes;
      e.codes = 0;
      this.bytes -= fromBytes;
      e.bytes = 0;
      e.list = null;
      try {
        if (!this.reserve(e, capacityFor(n), arena)) return;
        this.kernels.heap.bytes().copyWithin(e.codes, from, from + kept * rowBytes); // a fresh view: alloc may grow the memory
      } finally {
        this.kernels.heap.release(from);
      }
    }
    this.gather(e, rows, kept, arena);
  }

  /** Allocate e's copy for `capacity` rows, evicting the least recently used copies as needed; false if it cannot fit. */
  private reserve(e: Entry, capacity: number, arena: RowsRef): boolean {
    const bytes = capacity * arena.words * 8;
    if (bytes > GATHER_BYTES) return false;
    for (const other of this.entries.values()) {
      if (this.bytes + bytes <= GATHER_BYTES) break;
      if (other !== e) this.release(other);
    }
    e.codes = this.kernels.heap.alloc(bytes);
    e.capacity = capacity;
    e.bytes = bytes;
    this.bytes += bytes;
    return true;
  }

  /** Gather rows[from..] from the arena into e's copy at position `from` (the rows before are in place); e.list = rows. */
  private gather(e: Entry, rows: Uint32Array, from: number, arena: RowsRef): void {
    const n = rows.length - from;
    if (n > 0) {
      const heap = this.kernels.heap;
      const list = heap.put(rows.subarray(from));
      try {
        this.kernels.gatherRows(arena, list, n, e.codes + from * arena.words * 8);
      } catch (err) {
        this.release(e);
        throw err;
      } finally {
        heap.release(list);
      }
    }
    e.list = rows;
    e.listVersion = e.version;
    e.listRows = e.rowCount;
  }

  /** Bytes of gathered codes held (shared memory). */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Drop everything (a new version, or the partition closing). */
  clear(): void {
    for (const e of this.entries.values()) this.release(e);
    this.entries.clear();
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (e !== undefined) this.release(e);
    this.entries.delete(key);
  }

  private release(e: Entry): void {
    if (e.codes === 0) return;
    this.kernels.heap.release(e.codes);
    this.bytes -= e.bytes;
    e.list = null;
    e.codes = 0;
    e.capacity = 0;
    e.bytes = 0;
  }
}
