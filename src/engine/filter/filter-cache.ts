/** @module filter-cache — one partition's recent filters: the rows each matched and, once a selective filter repeats, those rows' 1-bit codes gathered contiguously. */
import type { Kernels, RowsRef } from "../../kernels/abi.js";
import type { RoaringBitmap32 } from "../roaring.js";
import type { Filter } from "./parse.js";

/**
 * Why: a filter keeping 1% of 1M rows matched 10,000 rows scattered over the 128 MB of codes; evaluating it (~0.1 ms)
 * and scanning them by the row list (~0.4-0.7 ms: a cache and TLB miss a row) were most of a filtered query. Agents
 * repeat their filters (a user, a tenant, a kind), so a partition keeps the last FILTER_CACHE_ENTRIES filters' matches,
 * and from a filter's second query a contiguous copy of its rows' codes, which a sequential scan reads at ~12 ns a row.
 * Everything is valid for one partition `version` only (rows, tombstones and metadata: Partition.version): a write
 * drops it all at the next lookup (until then, or until the partition closes, stale codes stay held: at most GATHER_BYTES).
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

interface Entry {
  matches: RoaringBitmap32;
  /** Queries that asked for this filter at this version (the first evaluated it). */
  uses: number;
  /** Gathered: `rows` (ascending) and their codes at `codes` (rows.length rows, in that order). */
  rows: Uint32Array | null;
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

  /** Rows matching `filter` at partition `version`: cached, else `evaluate()` (kept; the caller must not change it). */
  matches(filter: Filter, version: number, evaluate: () => RoaringBitmap32): { matches: RoaringBitmap32; key: string | null } {
    const key = filterKey(filter);
    if (key === null) return { matches: evaluate(), key };
    if (version !== this.version) {
      this.clear();
      this.version = version;
    }
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      hit.uses++;
      return { matches: hit.matches, key };
    }
    const matches = evaluate();
    if (this.entries.size >= FILTER_CACHE_ENTRIES) this.drop(this.entries.keys().next().value!);
    this.entries.set(key, { matches, uses: 1, rows: null, codes: 0, bytes: 0 });
    return { matches, key };
  }

  /**
   * The gathered codes of the filter `key` (returned by matches() for this version), gathering them from `arena` on its
   * second use when it matched GATHER_MIN_ROWS..GATHER_MAX_ROWS rows; null otherwise. Valid until the next call into
   * this cache: scan them synchronously.
   */
  gathered(key: string | null, arena: RowsRef): { rows: Uint32Array; codes: number } | null {
    const e = key === null ? undefined : this.entries.get(key);
    if (e === undefined) return null;
    if (e.rows !== null) return { rows: e.rows, codes: e.codes };
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
    e.rows = rows;
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
    if (e.rows === null) return;
    this.kernels.heap.release(e.codes);
    this.bytes -= e.bytes;
    e.rows = null;
    e.codes = 0;
    e.bytes = 0;
  }
}
