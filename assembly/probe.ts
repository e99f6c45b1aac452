/** @module probe — a pure streaming read of a byte range: the memory-bandwidth ceiling a scan can approach. */

/** XOR-folds `bytes` (a multiple of 128) from ptr as two interleaved streams; returns the fold so no load is dead. */
export function readProbe(ptr: usize, bytes: usize): i64 {
  let a = i64x2.splat(0), b = a, c = a, d = a;
  let half = (bytes >> 8) << 7; // bytes per stream, a multiple of 128
  let p = ptr, p2 = ptr + half;
  for (let end = ptr + half; p < end; p += 128, p2 += 128) {
    a = v128.xor(a, v128.xor(v128.load(p), v128.load(p, 16)));
    b = v128.xor(b, v128.xor(v128.load(p, 32), v128.load(p, 48)));
    c = v128.xor(c, v128.xor(v128.load(p, 64), v128.load(p, 80)));
    d = v128.xor(d, v128.xor(v128.load(p, 96), v128.load(p, 112)));
    a = v128.xor(a, v128.xor(v128.load(p2), v128.load(p2, 16)));
    b = v128.xor(b, v128.xor(v128.load(p2, 32), v128.load(p2, 48)));
    c = v128.xor(c, v128.xor(v128.load(p2, 64), v128.load(p2, 80)));
    d = v128.xor(d, v128.xor(v128.load(p2, 96), v128.load(p2, 112)));
  }
  let x = v128.xor(v128.xor(a, b), v128.xor(c, d));
  return i64x2.extract_lane(x, 0) ^ i64x2.extract_lane(x, 1);
}
