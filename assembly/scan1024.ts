/** @module scan1024 — 1024-bit scans unrolled for TurboFan: single query (query in locals, two streams) and blocked multi-query (row in locals). */
import { heapOffer, heapSortAscending, packKey } from "./topk";

// Measured on the 2-core target (see bench/RESULTS.md): keeping the 16 query lanes in
// locals avoids TurboFan spilling every load, and two streams (first and second half of
// the range) keep more cache misses in flight than one. Row order inside the heap does
// not matter: keys compare (distance, row), so ties still resolve to the lower row.

@inline function rowDist(p: usize, q0: u64, q1: u64, q2: u64, q3: u64, q4: u64, q5: u64, q6: u64, q7: u64,
  q8: u64, q9: u64, q10: u64, q11: u64, q12: u64, q13: u64, q14: u64, q15: u64): u32 {
  let d: u64 = popcnt<u64>(load<u64>(p) ^ q0);
  d += popcnt<u64>(load<u64>(p, 8) ^ q1);
  d += popcnt<u64>(load<u64>(p, 16) ^ q2);
  d += popcnt<u64>(load<u64>(p, 24) ^ q3);
  d += popcnt<u64>(load<u64>(p, 32) ^ q4);
  d += popcnt<u64>(load<u64>(p, 40) ^ q5);
  d += popcnt<u64>(load<u64>(p, 48) ^ q6);
  d += popcnt<u64>(load<u64>(p, 56) ^ q7);
  d += popcnt<u64>(load<u64>(p, 64) ^ q8);
  d += popcnt<u64>(load<u64>(p, 72) ^ q9);
  d += popcnt<u64>(load<u64>(p, 80) ^ q10);
  d += popcnt<u64>(load<u64>(p, 88) ^ q11);
  d += popcnt<u64>(load<u64>(p, 96) ^ q12);
  d += popcnt<u64>(load<u64>(p, 104) ^ q13);
  d += popcnt<u64>(load<u64>(p, 112) ^ q14);
  d += popcnt<u64>(load<u64>(p, 120) ^ q15);
  return <u32>d;
}

/** Top-k over rows [start, end) of 128-byte rows; heap receives ascending keys; returns count. */
export function scan1024(base: usize, start: i32, end: i32, q: usize, k: i32, heap: usize): i32 {
  let q0 = load<u64>(q), q1 = load<u64>(q, 8), q2 = load<u64>(q, 16), q3 = load<u64>(q, 24);
  let q4 = load<u64>(q, 32), q5 = load<u64>(q, 40), q6 = load<u64>(q, 48), q7 = load<u64>(q, 56);
  let q8 = load<u64>(q, 64), q9 = load<u64>(q, 72), q10 = load<u64>(q, 80), q11 = load<u64>(q, 88);
  let q12 = load<u64>(q, 96), q13 = load<u64>(q, 104), q14 = load<u64>(q, 112), q15 = load<u64>(q, 120);
  let size = 0;
  let bound = u32.MAX_VALUE; // distance of the current k-th best once the heap is full
  let half = (end - start) >> 1;
  let ra = start, rb = start + half;
  let pa = base + (<usize>ra << 7), pb = base + (<usize>rb << 7);
  for (let i = 0; i < half; i++, ra++, rb++, pa += 128, pb += 128) {
    let da = rowDist(pa, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    let db = rowDist(pb, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    if (da <= bound) {
      size = heapOffer(heap, size, k, packKey(da, ra));
      if (size == k) bound = <u32>(load<u64>(heap) >> 32);
    }
    if (db <= bound) {
      size = heapOffer(heap, size, k, packKey(db, rb));
      if (size == k) bound = <u32>(load<u64>(heap) >> 32);
    }
  }
  // odd count: the last row of the second stream
  for (; rb < end; rb++, pb += 128) {
    let db = rowDist(pb, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15);
    if (db <= bound) size = heapOffer(heap, size, k, packKey(db, rb));
  }
  heapSortAscending(heap, size);
  return size;
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
      let d = rowDist(q, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15);
      // every heap has the same size; when full, reject on distance before building a key
      if (size < k || d <= <u32>(load<u64>(h) >> 32)) heapOffer(h, size, k, packKey(d, r));
    }
    if (size < k) size++;
  }
  let h = heaps;
  for (let j = 0; j < nq; j++, h += heapBytes) heapSortAscending(h, size);
  return size;
}
