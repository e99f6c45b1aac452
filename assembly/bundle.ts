/** @module bundle — XOR binding and majority bundling of packed rows. */

/** out = a XOR b over `words` lanes (words even; out may alias a or b). */
export function bind(a: usize, b: usize, out: usize, words: i32): void {
  let bytes = <usize>words << 3;
  for (let o: usize = 0; o < bytes; o += 16) v128.store(out + o, v128.xor(v128.load(a + o), v128.load(b + o)));
}

/**
 * Add `weight` times a row's bipolar form into i32 counters: counter j += weight if bit j
 * is 1, -= weight if it is 0. weight -1 subtracts a row that was added before.
 */
export function bundleAdd(counters: usize, row: usize, dim: i32, weight: i32): void {
  let pos = i32x4.splat(weight << 1);
  let neg = i32x4.splat(weight);
  let lanes = i32x4(1, 2, 4, 8);
  let j = 0;
  let dim4 = dim & ~3;
  for (; j < dim4; j += 4) {
    let nib = <i32>((load<u8>(row + (<usize>j >>> 3)) >>> <u8>(j & 7)) & 15);
    let set = i32x4.ne(v128.and(i32x4.splat(nib), lanes), i32x4.splat(0)); // -1 where bit set
    let p = counters + (<usize>j << 2);
    v128.store(p, i32x4.add(v128.load(p), i32x4.sub(v128.and(set, pos), neg)));
  }
  for (; j < dim; j++) {
    let bit = (load<u8>(row + (<usize>j >>> 3)) >>> <u8>(j & 7)) & 1;
    let p = counters + (<usize>j << 2);
    store<i32>(p, load<i32>(p) + (bit ? weight : -weight));
  }
}

/**
 * Majority threshold: bit j = counter > 0, or the tie row's bit j when the counter is 0.
 * Writes `words` lanes to out; bits at and past dim are zero. Four counters per step.
 */
export function bundleThreshold(counters: usize, dim: i32, tie: usize, out: usize, words: i32): void {
  let zero = i32x4.splat(0);
  for (let w = 0; w < words; w++) {
    let lane: u64 = 0;
    let base = w << 6;
    let n = min(64, dim - base);
    let tieLane = load<u64>(tie + (<usize>w << 3));
    let b = 0;
    for (; b + 4 <= n; b += 4) {
      let c = v128.load(counters + (<usize>(base + b) << 2));
      let pos = <u64>i32x4.bitmask(i32x4.gt_s(c, zero));
      let ties = <u64>i32x4.bitmask(i32x4.eq(c, zero)) & (tieLane >>> <u64>b);
      lane |= (pos | ties) << <u64>b;
    }
    for (; b < n; b++) {
      let c = load<i32>(counters + (<usize>(base + b) << 2));
      let bit: u64 = c > 0 ? 1 : (c < 0 ? 0 : (tieLane >>> <u64>b) & 1);
      lane |= bit << <u64>b;
    }
    store<u64>(out + (<usize>w << 3), lane);
  }
}
