/** @module filter-cache — one partition's recent filters: the rows each matched and, once a selective filter repeats, those rows' 1-bit codes gathered contiguously. */
import type { Kernels, RowsRef } from "../../kernels/abi.js";
import { RoaringBitmap32 } from "../roaring.js";
import type { Filter } from "./parse.js";

/**
 * Why: a filter keeping 1% of 1M rows matched 10,000 rows scattered over the 128 MB of codes; evaluating it (~0.1 ms)
 * and scanning them by the row list (~0.4-0.7 ms: a cache and TLB miss a row) were most of a filtered query. Agents
 * repeat their filters (a user, a tenant, a kind), so a partition keeps the last FILTER_CACHE_ENTRIES filters' matches,
 * and from a filter's second query at one partition version a contiguous copy of its rows' codes, which a sequential
 * scan reads at ~12 ns a row.
 * Writes (Partition.version) only append rows and add tombstones: a row's metadata never changes, and no tombstone is
 * lifted. So a cached bitmap stays right for a later version once the new tombstones are taken out and the filter is
 * evaluated over the appended rows alone (a filter's matches within a universe are its matches within each part of it);
 * gathered codes are dropped at any new version (a write frees them at the next lookup: until then, or until the
 * partition closes, they stay held, at most GATHER_BYTES).
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
  /** Queries that asked for this filter at this version (the first evaluated it). */
  uses: number;
  /** Gathered: `list` (the rows, ascending) and their codes at `codes` (list.length rows, in that order). */
  list: Uint32Array | null;
  codes: number;
  bytes: number;
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
    if (state.version !== this.version) {
      // gathered codes hold the rows of an older version: free them all now
      for (const e of this.entries.values()) this.release(e);
      this.version = state.version;
    }
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
        hit.uses = 0;
      }
      hit.uses++;
      return { matches: hit.matches, key };
    }
    const matches = evaluate(null);
    if (this.entries.size >= FILTER_CACHE_ENTRIES) this.drop(this.entries.keys().next().value!);
    this.entries.set(key, {
      matches,
      version: state.version,
      rowCount: state.rows,
      tombs: state.tombstones.size,
      uses: 1,
      list: null,
      codes: 0,
      bytes: 0,
    });
    return { matches, key };
  }

  /**
   * The gathered codes of the filter `key` (returned by matches() for this version), gathering them from `arena` on its
   * second use when it matched GATHER_MIN_ROWS..GATHER_MAX_ROWS rows; null otherwise. Valid until the next call into
   * this cache: scan them synchronously.
   */
  gathered(key: string | null, arena: RowsRef): { rows: Uint32Array; codes: number } | null {
    const e = key === null ? undefined : this.entries.get(key);
    if (e === undefined || e.version !== this.version) return null;
    if (e.list !== null) return { rows: e.list, codes: e.codes };
    const n = e.matches.size;
    const bytes = n * arena.words * 8;
    if (e.uses < 2 || n < GATHER_MIN_ROWS || n > GATHER_MAX_ROWS || bytes > GATHER_BYTES) return null;
    for (const other of this.entries.values()) {
      if (this.bytes + bytes <= GATHER_BYTES) break;
      if (other !== e) this.release(other);
    }
    const heap = this.kernels.heap;
    const rows = e.matches.toUint32Array();
    const list = heap.put(rows);
    const codes = heap.alloc(bytes);
    try {
      this.kernels.gatherRows(arena, list, n, codes);
    } catch (err) {
      heap.release(codes);
      throw err;
    } finally {
      heap.release(list);
    }
    e.list = rows;
    e.codes = codes;
    e.bytes = bytes;
    this.bytes += bytes;
    return { rows, codes };
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
    if (e.list === null) return;
    this.kernels.heap.release(e.codes);
    this.bytes -= e.bytes;
    e.list = null;
    e.codes = 0;
    e.bytes = 0;
  }
}
