/** @module query-table — blocked multi-query scan by table lookup: one table per block of up to 32 queries. */
import { heapOffer, heapSortAscending, packKey } from "./topk";

// For a block of up to 32 queries, entry (g, v) of the table holds, in 32 byte lanes,
// popcnt(v ^ byte g of query j) for j = 0..31. A row's distances to all 32 queries are then
// the lane-wise sum of one 32-byte entry per row byte: 128 lookups for a 1024-bit row instead
// of 16 POPCNTs per (row, query) pair, which is what V8 gives us in place of VPOPCNTQ.
// Entries are 32 bytes at table + g*8192 + v*32; a table is rowBytes * 8 KiB (1 MiB for
// 1024 bits: it lives in L2). Distances are summed in u8 lanes over 16 row bytes (at most
// 128) and widened to u16, so rows may be up to 4096 bytes (the JS side allows far less).

/** Fill the table for nq <= 32 queries (contiguous rows of rowBytes at `queries`); scratch: 32 bytes. */
export function buildQueryTable(queries: usize, nq: i32, rowBytes: i32, table: usize, scratch: usize): void {
  for (let g = 0; g < rowBytes; g++) {
    for (let j = 0; j < 32; j++) store<u8>(scratch + j, j < nq ? load<u8>(queries + <usize>j * <usize>rowBytes + <usize>g) : 0);
    let q0 = v128.load(scratch), q1 = v128.load(scratch, 16);
    let t = table + (<usize>g << 13);
    for (let v = 0; v < 256; v++) {
      let s = i8x16.splat(<i8>v);
      v128.store(t + (<usize>v << 5), i8x16.popcnt(v128.xor(s, q0)));
      v128.store(t + (<usize>v << 5), i8x16.popcnt(v128.xor(s, q1)), 16);
    }
  }
}

/**
 * Top-k over rows [start, end) for the nq <= 32 queries of a built table; heap j at
 * heaps + j*k*8 (k = heap slots). scratch: 128 bytes. Returns the shared heap size.
 */
export function scanQueryTable(base: usize, rowBytes: i32, start: i32, end: i32, table: usize, nq: i32, k: i32, heaps: usize, scratch: usize): i32 {
  let size = 0;
  let heapBytes = <usize>k << 3;
  let lanes: u32 = nq >= 32 ? 0xffffffff : (<u32>1 << <u32>nq) - 1;
  let b0 = i16x8.splat(0x7fff), b1 = b0, b2 = b0, b3 = b0; // per-lane bounds: k-th best distance
  let rb = <usize>rowBytes;
  let p = base + <usize>start * rb;
  for (let r = start; r < end; r++, p += rb) {
    let s0 = i16x8.splat(0), s1 = s0, s2 = s0, s3 = s0;
    for (let g: usize = 0; g < rb; g += 16) {
      let tg = table + (g << 13);
      let w0 = load<u64>(p + g), w1 = load<u64>(p + g, 8);
      let a0 = i8x16.splat(0), a1 = a0;
      // Written out byte by byte: v128.load's offset must be a literal, and the two table
      // halves (a0: queries 0-15, a1: 16-31) share one index computation per byte.
      let o: usize;
      o = tg + <usize>((w0 << 5) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 0)); a1 = i8x16.add(a1, v128.load(o, 16));
      o = tg + <usize>((w0 >> 3) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 8192)); a1 = i8x16.add(a1, v128.load(o, 8208));
      o = tg + <usize>((w0 >> 11) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 16384)); a1 = i8x16.add(a1, v128.load(o, 16400));
      o = tg + <usize>((w0 >> 19) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 24576)); a1 = i8x16.add(a1, v128.load(o, 24592));
      o = tg + <usize>((w0 >> 27) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 32768)); a1 = i8x16.add(a1, v128.load(o, 32784));
      o = tg + <usize>((w0 >> 35) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 40960)); a1 = i8x16.add(a1, v128.load(o, 40976));
      o = tg + <usize>((w0 >> 43) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 49152)); a1 = i8x16.add(a1, v128.load(o, 49168));
      o = tg + <usize>((w0 >> 51) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 57344)); a1 = i8x16.add(a1, v128.load(o, 57360));
      o = tg + <usize>((w1 << 5) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 65536)); a1 = i8x16.add(a1, v128.load(o, 65552));
      o = tg + <usize>((w1 >> 3) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 73728)); a1 = i8x16.add(a1, v128.load(o, 73744));
      o = tg + <usize>((w1 >> 11) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 81920)); a1 = i8x16.add(a1, v128.load(o, 81936));
      o = tg + <usize>((w1 >> 19) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 90112)); a1 = i8x16.add(a1, v128.load(o, 90128));
      o = tg + <usize>((w1 >> 27) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 98304)); a1 = i8x16.add(a1, v128.load(o, 98320));
      o = tg + <usize>((w1 >> 35) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 106496)); a1 = i8x16.add(a1, v128.load(o, 106512));
      o = tg + <usize>((w1 >> 43) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 114688)); a1 = i8x16.add(a1, v128.load(o, 114704));
      o = tg + <usize>((w1 >> 51) & 0x1fe0); a0 = i8x16.add(a0, v128.load(o, 122880)); a1 = i8x16.add(a1, v128.load(o, 122896));
      s0 = i16x8.add(s0, i16x8.extend_low_i8x16_u(a0));
      s1 = i16x8.add(s1, i16x8.extend_high_i8x16_u(a0));
      s2 = i16x8.add(s2, i16x8.extend_low_i8x16_u(a1));
      s3 = i16x8.add(s3, i16x8.extend_high_i8x16_u(a1));
    }
    let m: u32 = size < k ? lanes : ((<u32>i16x8.bitmask(i16x8.le_s(s0, b0)) | (<u32>i16x8.bitmask(i16x8.le_s(s1, b1)) << 8)
      | (<u32>i16x8.bitmask(i16x8.le_s(s2, b2)) << 16) | (<u32>i16x8.bitmask(i16x8.le_s(s3, b3)) << 24)) & lanes);
    if (m == 0) continue;
    v128.store(scratch, s0); v128.store(scratch, s1, 16); v128.store(scratch, s2, 32); v128.store(scratch, s3, 48);
    while (m != 0) {
      let j = <i32>ctz(m);
      m &= m - 1;
      let h = heaps + <usize>j * heapBytes;
      heapOffer(h, size, k, packKey(<u32>load<u16>(scratch + (<usize>j << 1)), r));
    }
    if (size < k) size++;
    if (size == k) {
      // refresh the bounds from the heap tops (lanes past nq never pass: bound 0 and m masks them)
      for (let j = 0; j < 32; j++) store<u16>(scratch + 64 + (<usize>j << 1), j < nq ? <u16>(load<u64>(heaps + <usize>j * heapBytes) >> 32) : 0);
      b0 = v128.load(scratch, 64); b1 = v128.load(scratch, 80); b2 = v128.load(scratch, 96); b3 = v128.load(scratch, 112);
    }
  }
  let h = heaps;
  for (let j = 0; j < nq; j++, h += heapBytes) heapSortAscending(h, size);
  return size;
}
