/** @module distance — Hamming distance of two packed rows (any even number of u64 lanes). */

// Rows are `words` little-endian u64 lanes; `words` is even (rows are padded to 128 bits),
// so a 2-lane tail after the 4-lane body is the only remainder case.

@inline export function distWords(a: usize, b: usize, words: i32): u32 {
  let d: u64 = 0;
  let i = 0;
  let end4 = words & ~3;
  for (; i < end4; i += 4) {
    let o = <usize>i << 3;
    d += popcnt<u64>(load<u64>(a + o) ^ load<u64>(b + o))
       + popcnt<u64>(load<u64>(a + o, 8) ^ load<u64>(b + o, 8))
       + popcnt<u64>(load<u64>(a + o, 16) ^ load<u64>(b + o, 16))
       + popcnt<u64>(load<u64>(a + o, 24) ^ load<u64>(b + o, 24));
  }
  if (i < words) {
    let o = <usize>i << 3;
    d += popcnt<u64>(load<u64>(a + o) ^ load<u64>(b + o))
       + popcnt<u64>(load<u64>(a + o, 8) ^ load<u64>(b + o, 8));
  }
  return <u32>d;
}
