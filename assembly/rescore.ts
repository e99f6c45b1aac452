/** @module rescore — the cosine ranking's float stages: asymmetric estimates of candidate rows by lookup table, and exact dot products against stored float32 values. */

// asymScores: for each of n row ids (u32 at list), the sum over the row's bytes p of
// table[32p + (b & 15)] + table[32p + 16 + (b >> 4)] (f32 entries, summed in f64 as the JS
// reference does), written as f64 at out. The table is built by the caller (src/engine/estimate.ts).
export function asymScores(base: usize, rowBytes: i32, list: usize, n: i32, table: usize, out: usize): void {
  for (let i = 0; i < n; i++) {
    let row = base + <usize>load<u32>(list + (<usize>i << 2)) * <usize>rowBytes;
    let s: f64 = 0;
    for (let p = 0; p < rowBytes; p++) {
      let b = <u32>load<u8>(row + <usize>p);
      let t = table + (<usize>p << 7);
      s += <f64>load<f32>(t + (<usize>(b & 15) << 2)) + <f64>load<f32>(t + 64 + (<usize>(b >> 4) << 2));
    }
    store<f64>(out + (<usize>i << 3), s);
  }
}

// dotNorm: f64 at out = Σ q[j]·x[j], at out + 8 = Σ x[j]² over dim f32 at q and x. Products of
// two f32 are exact in f64; element j accumulates in lane j % 4 and the lanes add as
// (l0 + l1) + (l2 + l3), so refDotNorm (reference.ts) gives the same bits.
export function dotNorm(q: usize, x: usize, dim: i32, out: usize): void {
  let dLo = f64x2.splat(0);
  let dHi = f64x2.splat(0);
  let nLo = f64x2.splat(0);
  let nHi = f64x2.splat(0);
  let j = 0;
  let end4 = dim & ~3;
  for (; j < end4; j += 4) {
    let o = <usize>j << 2;
    let xv = v128.load(x + o);
    let qv = v128.load(q + o);
    let xl = f64x2.promote_low_f32x4(xv);
    let xh = f64x2.promote_low_f32x4(i32x4.shuffle(xv, xv, 2, 3, 0, 1));
    let ql = f64x2.promote_low_f32x4(qv);
    let qh = f64x2.promote_low_f32x4(i32x4.shuffle(qv, qv, 2, 3, 0, 1));
    dLo = f64x2.add(dLo, f64x2.mul(xl, ql));
    dHi = f64x2.add(dHi, f64x2.mul(xh, qh));
    nLo = f64x2.add(nLo, f64x2.mul(xl, xl));
    nHi = f64x2.add(nHi, f64x2.mul(xh, xh));
  }
  let d0 = f64x2.extract_lane(dLo, 0), d1 = f64x2.extract_lane(dLo, 1), d2 = f64x2.extract_lane(dHi, 0), d3 = f64x2.extract_lane(dHi, 1);
  let n0 = f64x2.extract_lane(nLo, 0), n1 = f64x2.extract_lane(nLo, 1), n2 = f64x2.extract_lane(nHi, 0), n3 = f64x2.extract_lane(nHi, 1);
  for (; j < dim; j++) {
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
