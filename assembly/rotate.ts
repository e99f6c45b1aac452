/** @module rotate — float32 vectors to sign bits through a seeded randomized Hadamard rotation. */

// Rotation R = H D3 H D2 H D1 on P = 2^m >= dim coordinates (zero padded), where Di are
// the seeded ±1 diagonals stored as 3*P f32 at `signs` and H is the unnormalized
// Walsh–Hadamard transform. Signs of R x are invariant to positive scaling, so the bits
// equal those of R(x/|x|); the normalized input is still written out for rescoring.

/**
 * In place: x = H (diag * x), the unnormalized fast Walsh–Hadamard transform of P f32
 * values (P a power of two, >= 4) after an elementwise multiply by the P f32 at `diag`.
 */
export function fwht(x: usize, P: i32, diag: usize): void {
  // The multiply and h = 1, 2 stay inside one v128: v * signs + swapped(v) gives (a + b, a - b) exactly.
  let sign1 = f32x4(1, -1, 1, -1);
  let sign2 = f32x4(1, 1, -1, -1);
  let bytes = <usize>P << 2;
  for (let o: usize = 0; o < bytes; o += 16) {
    let v = f32x4.mul(v128.load(x + o), v128.load(diag + o));
    v = f32x4.add(f32x4.mul(v, sign1), v128.shuffle<f32>(v, v, 1, 0, 3, 2));
    v = f32x4.add(f32x4.mul(v, sign2), v128.shuffle<f32>(v, v, 2, 3, 0, 1));
    v128.store(x + o, v);
  }
  // Stages h and 2h fused (radix 4): the same additions in the same order as two radix-2 stages, so the same
  // bits, with half the loads and stores of x.
  let h = 4;
  for (; h * 4 <= P; h <<= 2) {
    let hb = <usize>h << 2;
    for (let i: usize = 0; i < bytes; i += hb << 2) {
      for (let o = i; o < i + hb; o += 16) {
        let a = v128.load(x + o), b = v128.load(x + o + hb);
        let c = v128.load(x + o + 2 * hb), d = v128.load(x + o + 3 * hb);
        let s0 = f32x4.add(a, b), d0 = f32x4.sub(a, b);
        let s1 = f32x4.add(c, d), d1 = f32x4.sub(c, d);
        v128.store(x + o, f32x4.add(s0, s1));
        v128.store(x + o + hb, f32x4.add(d0, d1));
        v128.store(x + o + 2 * hb, f32x4.sub(s0, s1));
        v128.store(x + o + 3 * hb, f32x4.sub(d0, d1));
      }
    }
  }
  if (h < P) {
    // one radix-2 stage left (P / 4 an odd power of two)
    let hb = <usize>h << 2;
    for (let i: usize = 0; i < bytes; i += hb << 1) {
      for (let o = i; o < i + hb; o += 16) {
        let a = v128.load(x + o), b = v128.load(x + o + hb);
        v128.store(x + o, f32x4.add(a, b));
        v128.store(x + o + hb, f32x4.sub(a, b));
      }
    }
  }
}

/** Pack the signs of dim f32 at x (> 0 -> 1) into `words` u64 lanes at row; padding bits zero. */
function packSigns(x: usize, dim: i32, row: usize, words: i32): void {
  let zero = f32x4.splat(0);
  for (let w = 0; w < words; w++) {
    let lane: u64 = 0;
    let base = w << 6;
    let m = min(64, dim - base);
    let b = 0;
    for (; b + 4 <= m; b += 4) {
      let gt = f32x4.gt(v128.load(x + (<usize>(base + b) << 2)), zero);
      lane |= <u64>i32x4.bitmask(gt) << <u64>b;
    }
    for (; b < m; b++) {
      if (load<f32>(x + (<usize>(base + b) << 2)) > 0) lane |= (<u64>1) << <u64>b;
    }
    store<u64>(row + (<usize>w << 3), lane);
  }
}

/**
 * Encode n vectors of `dim` f32 (at src, row-major) into packed rows of `words` lanes at out.
 * scratch holds P f32. If normOut != 0 the L2-normalized inputs are written there (n*dim f32).
 * Returns -1 on success, or the index of the first vector holding NaN or ±Infinity
 * (vectors before it are encoded; nothing is written for it or after it).
 * A zero vector encodes to all-zero bits.
 */
export function encodeF32(src: usize, n: i32, dim: i32, P: i32, signs: usize, scratch: usize, out: usize, words: i32, normOut: usize): i32 {
  let rowBytes = <usize>words << 3;
  for (let i = 0; i < n; i++) {
    let x = src + (<usize>i * <usize>dim << 2);
    // f64 sum of squares: finite unless some value is NaN or ±Infinity (f32 squares cannot overflow f64)
    let acc = f64x2.splat(0);
    let j = 0;
    for (; j + 4 <= dim; j += 4) {
      let v = v128.load(x + (<usize>j << 2));
      let lo = f64x2.promote_low_f32x4(v);
      let hi = f64x2.promote_low_f32x4(v128.shuffle<f32>(v, v, 2, 3, 0, 1));
      acc = f64x2.add(acc, f64x2.add(f64x2.mul(lo, lo), f64x2.mul(hi, hi)));
    }
    let norm2 = f64x2.extract_lane(acc, 0) + f64x2.extract_lane(acc, 1);
    for (; j < dim; j++) {
      let v = <f64>load<f32>(x + (<usize>j << 2));
      norm2 += v * v;
    }
    if (!isFinite(norm2)) return i;
    if (normOut) {
      let inv: f32 = norm2 > 0 ? <f32>(1.0 / Math.sqrt(norm2)) : 0;
      let dst = normOut + (<usize>i * <usize>dim << 2);
      for (let j = 0; j < dim; j++) store<f32>(dst + (<usize>j << 2), load<f32>(x + (<usize>j << 2)) * inv);
    }
    // signs are invariant to positive scaling: rotate x itself
    memory.copy(scratch, x, <usize>dim << 2);
    memory.fill(scratch + (<usize>dim << 2), 0, <usize>(P - dim) << 2);
    for (let round = 0; round < 3; round++) fwht(scratch, P, signs + (<usize>(round * P) << 2));
    packSigns(scratch, dim, out + <usize>i * rowBytes, words);
  }
  return -1;
}
