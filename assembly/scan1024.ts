/** @module scan1024 — 1024-bit scans shaped for TurboFan: single query (four streams, half-row blocks) and blocked multi-query. */
import { heapOffer, heapSortAscending, packKey } from "./topk";

// TurboFan hoists every load of a straight-line block to the block's start and spills what
// does not fit in registers. Two things keep the loads next to their use (measured, see
// docs/ARCHITECTURE.md): the query's 16 lanes are locals, and each row is consumed in two
// 512-bit halves with a branch between them (skip the second half when the first already
// exceeds the k-th best distance), which ends the block. Four streams (quarters of the
// range, one row of each per iteration) keep more cache misses in flight than one or two
// (+20% from DRAM, measured). Row order does not matter to the heap: keys compare
// (distance, row), so ties still resolve to the lower row.

/** Distance over 8 lanes (512 bits) at p against 8 query lanes. */
@inline function half(p: usize, q0: u64, q1: u64, q2: u64, q3: u64, q4: u64, q5: u64, q6: u64, q7: u64): u64 {
  return popcnt<u64>(load<u64>(p) ^ q0) + popcnt<u64>(load<u64>(p, 8) ^ q1)
       + popcnt<u64>(load<u64>(p, 16) ^ q2) + popcnt<u64>(load<u64>(p, 24) ^ q3)
       + popcnt<u64>(load<u64>(p, 32) ^ q4) + popcnt<u64>(load<u64>(p, 40) ^ q5)
       + popcnt<u64>(load<u64>(p, 48) ^ q6) + popcnt<u64>(load<u64>(p, 56) ^ q7);
}

// Heap fill of the running single-query scan. A wasm global is per instance, and each
// instance (main thread or worker) runs one scan at a time.
let heapSize = 0;

/**
 * Offer row r at p: the second half is read only if the first half is within the bound.
 * Returns the (possibly lowered) bound.
 */
@inline function offerRow(p: usize, r: i32, bound: u64, heap: usize, k: i32,
  q0: u64, q1: u64, q2: u64, q3: u64, q4: u64, q5: u64, q6: u64, q7: u64,
  q8: u64, q9: u64, q10: u64, q11: u64, q12: u64, q13: u64, q14: u64, q15: u64): u64 {
  let d = half(p, q0, q1, q2, q3, q4, q5, q6, q7);
  if (d <= bound) {
    d += half(p + 64, q8, q9, q10, q11, q12, q13, q14, q15);
    if (d <= bound) {
      heapSize = heapOffer(heap, heapSize, k, packKey(<u32>d, r));
      if (heapSize == k) bound = load<u64>(heap) >> 32;
    }
  }
  return bound;
}

/** Top-k over rows [start, end) of 128-byte rows, as four interleaved streams; heap receives ascending keys; returns count. */
export function scan1024(base: usize, start: i32, end: i32, q: usize, k: i32, heap: usize): i32 {
  let q0 = load<u64>(q), q1 = load<u64>(q, 8), q2 = load<u64>(q, 16), q3 = load<u64>(q, 24);
  let q4 = load<u64>(q, 32), q5 = load<u64>(q, 40), q6 = load<u64>(q, 48), q7 = load<u64>(q, 56);
  let q8 = load<u64>(q, 64), q9 = load<u64>(q, 72), q10 = load<u64>(q, 80), q11 = load<u64>(q, 88);
  let q12 = load<u64>(q, 96), q13 = load<u64>(q, 104), q14 = load<u64>(q, 112), q15 = load<u64>(q, 120);
  heapSize = 0;
  let bound: u64 = u32.MAX_VALUE; // distance of the current k-th best once the heap is full
  let per = (end - start) >> 2; // rows per stream; stream s covers [start + s*per, start + (s+1)*per)
  let stride = <usize>per << 7;
  let r = start;
  let p = base + (<usize>start << 7);
  for (let i = 0; i < per; i++, r++, p += 128) {
    bound = offerRow(p, r, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    bound = offerRow(p + stride, r + per, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    bound = offerRow(p + 2 * stride, r + 2 * per, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    bound = offerRow(p + 3 * stride, r + 3 * per, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
  }
  // the last (end - start) mod 4 rows
  p = base + (<usize>(start + 4 * per) << 7);
  for (r = start + 4 * per; r < end; r++, p += 128) {
    bound = offerRow(p, r, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
  }
  heapSortAscending(heap, heapSize);
  return heapSize;
}

/**
 * Offer rows [start, end) of 128-byte rows to a heap that already holds `size` keys (not
 * sorted afterwards): one range of an inverted file's probe. Returns the new size.
 */
export function range1024(base: usize, start: i32, end: i32, q: usize, k: i32, heap: usize, size: i32): i32 {
  let q0 = load<u64>(q), q1 = load<u64>(q, 8), q2 = load<u64>(q, 16), q3 = load<u64>(q, 24);
  let q4 = load<u64>(q, 32), q5 = load<u64>(q, 40), q6 = load<u64>(q, 48), q7 = load<u64>(q, 56);
  let q8 = load<u64>(q, 64), q9 = load<u64>(q, 72), q10 = load<u64>(q, 80), q11 = load<u64>(q, 88);
  let q12 = load<u64>(q, 96), q13 = load<u64>(q, 104), q14 = load<u64>(q, 112), q15 = load<u64>(q, 120);
  heapSize = size;
  let bound: u64 = size < k ? <u64>u32.MAX_VALUE : load<u64>(heap) >> 32;
  let p = base + (<usize>start << 7);
  for (let r = start; r < end; r++, p += 128) {
    bound = offerRow(p, r, bound, heap, k, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
  }
  return heapSize;
}

/**
 * Blocked multi-query top-k over 128-byte rows: each row is loaded once into locals and
 * compared with all nq queries (read from L1). Heap j at heaps + j*k*8; returns the shared size.
 */
export function multi1024(base: usize, start: i32, end: i32, queries: usize, nq: i32, k: i32, heaps: usize): i32 {
  let size = 0;
  let heapBytes = <usize>k << 3;
  let p = base + (<usize>start << 7);
  for (let r = start; r < end; r++, p += 128) {
    let r0 = load<u64>(p), r1 = load<u64>(p, 8), r2 = load<u64>(p, 16), r3 = load<u64>(p, 24);
    let r4 = load<u64>(p, 32), r5 = load<u64>(p, 40), r6 = load<u64>(p, 48), r7 = load<u64>(p, 56);
    let r8 = load<u64>(p, 64), r9 = load<u64>(p, 72), r10 = load<u64>(p, 80), r11 = load<u64>(p, 88);
    let r12 = load<u64>(p, 96), r13 = load<u64>(p, 104), r14 = load<u64>(p, 112), r15 = load<u64>(p, 120);
    let q = queries;
    let h = heaps;
    for (let j = 0; j < nq; j++, q += 128, h += heapBytes) {
      let d = <u32>(half(q, r0, r1, r2, r3, r4, r5, r6, r7) + half(q + 64, r8, r9, r10, r11, r12, r13, r14, r15));
      // every heap has the same size; when full, reject on distance before building a key
      if (size < k || d <= <u32>(load<u64>(h) >> 32)) heapOffer(h, size, k, packKey(d, r));
    }
    if (size < k) size++;
  }
  let h = heaps;
  for (let j = 0; j < nq; j++, h += heapBytes) heapSortAscending(h, size);
  return size;
}
