/** @module reference — plain scalar reference kernels; tests prove the fast paths equal them. */

// Deliberately naive: one lane at a time, sorted-insertion top-k, dense Hadamard matrix.
// Same contracts as the fast kernels in scan.ts, bundle.ts and rotate.ts.

export function refDistance(a: usize, b: usize, words: i32): u32 {
  let d: u32 = 0;
  for (let i = 0; i < words; i++) {
    let x = load<u64>(a + (<usize>i << 3)) ^ load<u64>(b + (<usize>i << 3));
    for (let bit = 0; bit < 64; bit++) d += <u32>((x >>> <u64>bit) & 1);
  }
  return d;
}

/** Insert key into the ascending array out[0..size) of capacity k; returns the new size. */
function insertSorted(out: usize, size: i32, k: i32, key: u64): i32 {
  if (size == k && key >= load<u64>(out + (<usize>(k - 1) << 3))) return size;
  let i = size < k ? size : k - 1;
  while (i > 0 && load<u64>(out + (<usize>(i - 1) << 3)) > key) {
    store<u64>(out + (<usize>i << 3), load<u64>(out + (<usize>(i - 1) << 3)));
    i--;
  }
  store<u64>(out + (<usize>i << 3), key);
  return size < k ? size + 1 : size;
}

@inline function keyOf(d: u32, r: i32): u64 {
  return (<u64>d << 32) | <u64><u32>r;
}

export function refHammingTopK(base: usize, words: i32, start: i32, end: i32, q: usize, k: i32, out: usize): i32 {
  let size = 0;
  for (let r = start; r < end; r++) {
    size = insertSorted(out, size, k, keyOf(refDistance(base + <usize>r * (<usize>words << 3), q, words), r));
  }
  return size;
}

export function refHammingTopKMasked(base: usize, words: i32, start: i32, end: i32, q: usize, k: i32, out: usize, mask: usize): i32 {
  let size = 0;
  for (let r = start; r < end; r++) {
    let bit = (load<u8>(mask + (<usize>r >>> 3)) >>> <u8>(r & 7)) & 1;
    if (bit) size = insertSorted(out, size, k, keyOf(refDistance(base + <usize>r * (<usize>words << 3), q, words), r));
  }
  return size;
}

export function refHammingTopKList(base: usize, words: i32, list: usize, n: i32, q: usize, k: i32, out: usize): i32 {
  let size = 0;
  for (let i = 0; i < n; i++) {
    let r = load<i32>(list + (<usize>i << 2));
    size = insertSorted(out, size, k, keyOf(refDistance(base + <usize>r * (<usize>words << 3), q, words), r));
  }
  return size;
}

export function refBind(a: usize, b: usize, out: usize, words: i32): void {
  for (let i = 0; i < words; i++) {
    let o = <usize>i << 3;
    store<u64>(out + o, load<u64>(a + o) ^ load<u64>(b + o));
  }
}

export function refBundleAdd(counters: usize, row: usize, dim: i32, weight: i32): void {
  for (let j = 0; j < dim; j++) {
    let bit = (load<u8>(row + (<usize>j >>> 3)) >>> <u8>(j & 7)) & 1;
    let p = counters + (<usize>j << 2);
    store<i32>(p, load<i32>(p) + (bit ? weight : -weight));
  }
}

export function refBundleThreshold(counters: usize, dim: i32, tie: usize, out: usize, words: i32): void {
  for (let w = 0; w < words; w++) store<u64>(out + (<usize>w << 3), 0);
  for (let j = 0; j < dim; j++) {
    let c = load<i32>(counters + (<usize>j << 2));
    let tieBit = (load<u8>(tie + (<usize>j >>> 3)) >>> <u8>(j & 7)) & 1;
    if (c > 0 || (c == 0 && tieBit)) {
      let p = out + (<usize>(j >>> 6) << 3);
      store<u64>(p, load<u64>(p) | ((<u64>1) << <u64>(j & 63)));
    }
  }
}

/**
 * Dense reference of encodeF32 for one vector: writes the P rotated f64 coordinates to
 * `rotated` (dense Hadamard matrix, O(P^2)) and the packed sign bits to `out`.
 * Returns 0, or 1 when the input holds NaN or ±Infinity.
 */
export function refEncodeF32(src: usize, dim: i32, P: i32, signs: usize, rotated: usize, tmp: usize, out: usize, words: i32): i32 {
  let norm2: f64 = 0;
  for (let j = 0; j < dim; j++) {
    let v = <f64>load<f32>(src + (<usize>j << 2));
    if (isNaN(v) || !isFinite(v)) return 1;
    norm2 += v * v;
  }
  let inv: f64 = norm2 > 0 ? 1.0 / Math.sqrt(norm2) : 0;
  for (let j = 0; j < P; j++) {
    store<f64>(rotated + (<usize>j << 3), j < dim ? <f64>load<f32>(src + (<usize>j << 2)) * inv : 0);
  }
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < P; i++) {
      let s: f64 = 0;
      for (let j = 0; j < P; j++) {
        let h: f64 = (popcnt<i32>(i & j) & 1) ? -1 : 1;
        s += h * <f64>load<f32>(signs + (<usize>(round * P + j) << 2)) * load<f64>(rotated + (<usize>j << 3));
      }
      store<f64>(tmp + (<usize>i << 3), s);
    }
    memory.copy(rotated, tmp, <usize>P << 3);
  }
  for (let w = 0; w < words; w++) store<u64>(out + (<usize>w << 3), 0);
  for (let j = 0; j < dim; j++) {
    if (load<f64>(rotated + (<usize>j << 3)) > 0) {
      let p = out + (<usize>(j >>> 6) << 3);
      store<u64>(p, load<u64>(p) | ((<u64>1) << <u64>(j & 63)));
    }
  }
  return 0;
}

/** Scalar dotNorm: four f64 accumulators by j % 4, added as (a0 + a1) + (a2 + a3), the fast path's order. */
export function refDotNorm(q: usize, x: usize, dim: i32, out: usize): void {
  let d0: f64 = 0, d1: f64 = 0, d2: f64 = 0, d3: f64 = 0;
  let n0: f64 = 0, n1: f64 = 0, n2: f64 = 0, n3: f64 = 0;
  for (let j = 0; j < dim; j++) {
    let xj = <f64>load<f32>(x + (<usize>j << 2));
    let qj = <f64>load<f32>(q + (<usize>j << 2));
    let lane = j & 3;
    if (lane == 0) { d0 += xj * qj; n0 += xj * xj; }
    else if (lane == 1) { d1 += xj * qj; n1 += xj * xj; }
    else if (lane == 2) { d2 += xj * qj; n2 += xj * xj; }
    else { d3 += xj * qj; n3 += xj * xj; }
  }
  store<f64>(out, (d0 + d1) + (d2 + d3));
  store<f64>(out, (n0 + n1) + (n2 + n3), 8);
}
