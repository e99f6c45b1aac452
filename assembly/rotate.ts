/** @module rotate — float32 vectors to sign bits through a seeded randomized Hadamard rotation. */

// Rotation R = H D3 H D2 H D1 on P = 2^m >= dim coordinates (zero padded), where Di are
// the seeded ±1 diagonals stored as 3*P f32 at `signs` and H is the unnormalized
// Walsh–Hadamard transform. Signs of R x are invariant to positive scaling, so the bits
// equal those of R(x/|x|); the normalized input is still written out for rescoring.

/** In-place unnormalized fast Walsh–Hadamard transform of P f32 values (P a power of two). */
export function fwht(x: usize, P: i32): void {
  let h = 1;
  // h = 1 and 2: scalar butterflies (pairs inside one v128)
  for (; h < 4 && h < P; h <<= 1) {
    for (let i = 0; i < P; i += h << 1) {
      for (let j = i; j < i + h; j++) {
        let pa = x + (<usize>j << 2), pb = x + (<usize>(j + h) << 2);
        let a = load<f32>(pa), b = load<f32>(pb);
        store<f32>(pa, a + b);
        store<f32>(pb, a - b);
      }
    }
  }
  for (; h < P; h <<= 1) {
    for (let i = 0; i < P; i += h << 1) {
      for (let j = i; j < i + h; j += 4) {
        let pa = x + (<usize>j << 2), pb = x + (<usize>(j + h) << 2);
        let a = v128.load(pa), b = v128.load(pb);
        v128.store(pa, f32x4.add(a, b));
        v128.store(pb, f32x4.sub(a, b));
      }
    }
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
    let norm2: f64 = 0;
    for (let j = 0; j < dim; j++) {
      let v = <f64>load<f32>(x + (<usize>j << 2));
      norm2 += v * v;
    }
    if (!isFinite(norm2)) return i; // any NaN or ±Infinity makes the f64 sum non-finite
    let inv: f32 = norm2 > 0 ? <f32>(1.0 / Math.sqrt(norm2)) : 0;
    for (let j = 0; j < dim; j++) {
      let v = load<f32>(x + (<usize>j << 2)) * inv;
      store<f32>(scratch + (<usize>j << 2), v);
      if (normOut) store<f32>(normOut + ((<usize>i * <usize>dim + <usize>j) << 2), v);
    }
    for (let j = dim; j < P; j++) store<f32>(scratch + (<usize>j << 2), 0);
    for (let round = 0; round < 3; round++) {
      let s = signs + (<usize>(round * P) << 2);
      for (let j = 0; j < P; j += 4) {
        let p = scratch + (<usize>j << 2);
        v128.store(p, f32x4.mul(v128.load(p), v128.load(s + (<usize>j << 2))));
      }
      fwht(scratch, P);
    }
    let row = out + <usize>i * rowBytes;
    for (let w = 0; w < words; w++) {
      let lane: u64 = 0;
      let base = w << 6;
      let m = min(64, dim - base);
      for (let b = 0; b < m; b++) {
        if (load<f32>(scratch + (<usize>(base + b) << 2)) > 0) lane |= (<u64>1) << <u64>b;
      }
      store<u64>(row + (<usize>w << 3), lane);
    }
  }
  return -1;
}
