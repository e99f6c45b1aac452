/** @module scan — Hamming top-k scans: range, masked range, candidate list, blocked multi-query. */
import { distWords } from "./distance";
import { heapOffer, heapSortAscending, packKey } from "./topk";
import { multi1024, range1024, scan1024 } from "./scan1024";

// Common contract: rows are `words` u64 lanes each, row r at base + r*words*8.
// `heap` has room for k u64 keys; on return it holds `count` keys in ascending order,
// key = distance << 32 | row. k >= 1 is checked by the caller (src/kernels).

/** Top-k over rows [start, end). */
export function hammingTopK(base: usize, words: i32, start: i32, end: i32, q: usize, k: i32, heap: usize): i32 {
  if (words == 16) return scan1024(base, start, end, q, k, heap);
  let size = offerRange(base, words, start, end, q, k, heap, 0, 0);
  heapSortAscending(heap, size);
  return size;
}

/** Offer rows [start, end) (only those set in `mask` when mask != 0) to a heap holding `size` keys; returns the new size. */
export function offerRange(base: usize, words: i32, start: i32, end: i32, q: usize, k: i32, heap: usize, size: i32, mask: usize): i32 {
  if (start >= end) return size;
  if (mask == 0) {
    if (words == 16) return range1024(base, start, end, q, k, heap, size);
    let stride = <usize>words << 3;
    let p = base + <usize>start * stride;
    for (let r = start; r < end; r++, p += stride) size = heapOffer(heap, size, k, packKey(distWords(p, q, words), r));
    return size;
  }
  let stride = <usize>words << 3;
  let w0 = start >>> 6, w1 = (end - 1) >>> 6;
  for (let w = w0; w <= w1; w++) {
    let bits = load<u64>(mask + (<usize>w << 3));
    if (w == w0) bits &= ~(<u64>0) << <u64>(start & 63);
    if (w == w1 && (end & 63) != 0) bits &= ~(~(<u64>0) << <u64>(end & 63));
    while (bits != 0) {
      let r = (w << 6) + <i32>ctz<u64>(bits);
      bits &= bits - 1;
      size = heapOffer(heap, size, k, packKey(distWords(base + <usize>r * stride, q, words), r));
    }
  }
  return size;
}

/** Top-k over rows in [start, end) whose bit is set in `mask` (bit r of the u64 lanes at mask = row r). */
export function hammingTopKMasked(base: usize, words: i32, start: i32, end: i32, q: usize, k: i32, heap: usize, mask: usize): i32 {
  let size = offerRange(base, words, start, end, q, k, heap, 0, mask);
  heapSortAscending(heap, size);
  return size;
}

/**
 * List scans read each quarter's row AHEAD entries ahead once (its first and last word: both
 * cache lines of a 1024-bit row) before scoring the current ones: WASM has no prefetch, and the out-of-order window holds only
 * ~4 rows of scoring, so without it at most four scattered rows are in flight.
 */
const AHEAD: i32 = 4;
/** Where the read-ahead loads end up, so that the compiler keeps them (never read). */
let touchSink: u64 = 0;

/** Top-k over an explicit list of n row ids (u32 each, any order, no duplicates expected). */
export function hammingTopKList(base: usize, words: i32, list: usize, n: i32, q: usize, k: i32, heap: usize): i32 {
  let stride = <usize>words << 3;
  let size = 0;
  let i = 0;
  // Four streams over the list's quarters: scattered rows miss in cache and TLB, and four
  // independent streams keep four of those misses in flight instead of one.
  let quarter = n >> 2;
  let touched: u64 = 0;
  for (; i < quarter; i++) {
    let l = list + (<usize>i << 2);
    let qb = <usize>quarter << 2;
    if (i + AHEAD < quarter) {
      let la = l + (AHEAD << 2);
      let a0 = base + <usize>load<u32>(la) * stride;
      let a1 = base + <usize>load<u32>(la + qb) * stride;
      let a2 = base + <usize>load<u32>(la + 2 * qb) * stride;
      let a3 = base + <usize>load<u32>(la + 3 * qb) * stride;
      let last = stride - 8; // the row's first and last word: both of its cache lines for 1024 bits, and never past the row
      touched ^= load<u64>(a0) ^ load<u64>(a0 + last) ^ load<u64>(a1) ^ load<u64>(a1 + last) ^ load<u64>(a2) ^ load<u64>(a2 + last) ^ load<u64>(a3) ^ load<u64>(a3 + last);
    }
    let r0 = load<u32>(l);
    let r1 = load<u32>(l + qb);
    let r2 = load<u32>(l + 2 * qb);
    let r3 = load<u32>(l + 3 * qb);
    let d0 = distWords(base + <usize>r0 * stride, q, words);
    let d1 = distWords(base + <usize>r1 * stride, q, words);
    let d2 = distWords(base + <usize>r2 * stride, q, words);
    let d3 = distWords(base + <usize>r3 * stride, q, words);
    size = heapOffer(heap, size, k, packKey(d0, r0));
    size = heapOffer(heap, size, k, packKey(d1, r1));
    size = heapOffer(heap, size, k, packKey(d2, r2));
    size = heapOffer(heap, size, k, packKey(d3, r3));
  }
  i = quarter << 2;
  for (; i < n; i++) {
    let r = load<u32>(list + (<usize>i << 2));
    size = heapOffer(heap, size, k, packKey(distWords(base + <usize>r * stride, q, words), r));
  }
  heapSortAscending(heap, size);
  touchSink ^= touched;
  return size;
}

/**
 * Copy the n rows at `list` (u32 row ids, any order) to `out`, one after another (row list[i] at out + i * words * 8).
 * A selective filter's rows are scattered (a cache and TLB miss each); gathered once, the same filter's later scans
 * read them contiguously. Same read-ahead as hammingTopKList: AHEAD rows of each quarter are touched before copying.
 */
export function gatherRows(base: usize, words: i32, list: usize, n: i32, out: usize): void {
  let stride = <usize>words << 3;
  let quarter = n >> 2;
  let qb = <usize>quarter << 2;
  let qo = <usize>quarter * stride;
  let touched: u64 = 0;
  for (let i = 0; i < quarter; i++) {
    let l = list + (<usize>i << 2);
    if (i + AHEAD < quarter) {
      let la = l + (AHEAD << 2);
      let last = stride - 8;
      let a0 = base + <usize>load<u32>(la) * stride;
      let a1 = base + <usize>load<u32>(la + qb) * stride;
      let a2 = base + <usize>load<u32>(la + 2 * qb) * stride;
      let a3 = base + <usize>load<u32>(la + 3 * qb) * stride;
      touched ^= load<u64>(a0) ^ load<u64>(a0 + last) ^ load<u64>(a1) ^ load<u64>(a1 + last) ^ load<u64>(a2) ^ load<u64>(a2 + last) ^ load<u64>(a3) ^ load<u64>(a3 + last);
    }
    let o = out + <usize>i * stride;
    memory.copy(o, base + <usize>load<u32>(l) * stride, stride);
    memory.copy(o + qo, base + <usize>load<u32>(l + qb) * stride, stride);
    memory.copy(o + 2 * qo, base + <usize>load<u32>(l + 2 * qb) * stride, stride);
    memory.copy(o + 3 * qo, base + <usize>load<u32>(l + 3 * qb) * stride, stride);
  }
  for (let i = quarter << 2; i < n; i++) memory.copy(out + <usize>i * stride, base + <usize>load<u32>(list + (<usize>i << 2)) * stride, stride);
  touchSink ^= touched;
}

/**
 * Blocked multi-query scan: nq queries (contiguous rows at `queries`) over rows [start, end)
 * in one pass, so each row is read from memory once for all queries. Heap j is at
 * heaps + j*k*8. Every query sees every row, so all heaps share one size; returns it.
 */
export function hammingTopKMulti(base: usize, words: i32, start: i32, end: i32, queries: usize, nq: i32, k: i32, heaps: usize): i32 {
  if (words == 16) return multi1024(base, start, end, queries, nq, k, heaps);
  let stride = <usize>words << 3;
  let heapBytes = <usize>k << 3;
  let size = 0;
  let p = base + <usize>start * stride;
  for (let r = start; r < end; r++, p += stride) {
    let q = queries;
    let h = heaps;
    if (size < k) {
      for (let j = 0; j < nq; j++, q += stride, h += heapBytes) heapOffer(h, size, k, packKey(distWords(p, q, words), r));
      size++;
    } else {
      for (let j = 0; j < nq; j++, q += stride, h += heapBytes) heapOffer(h, size, k, packKey(distWords(p, q, words), r));
    }
  }
  let h = heaps;
  for (let j = 0; j < nq; j++, h += heapBytes) heapSortAscending(h, size);
  return size;
}

/** Hamming distance of two rows. */
export function hamming(a: usize, b: usize, words: i32): u32 {
  return distWords(a, b, words);
}
