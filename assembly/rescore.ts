/** @module rescore — the cosine ranking's float stages: asymmetric estimates of candidate rows by lookup table, and exact dot products against stored float32 values. */

// asymTable: the lookup table asymScores reads, for the query's dim rotated coordinates (f32 at q) and rows of
// rowBytes bytes: at table + 128p, 32 f32 per row byte p (16 for its low nibble, then 16 for its high nibble).
// Entry v of nibble position i (bits 4i..4i+3) = Σ of q over the set bits of v, coordinates past dim counting 0.
// Bit for bit src/engine/estimate.ts fillTable (its reference): each entry summed in f64 in fillTable's order
// (pairs and triples reused: s01 = q0 + q1, s012 = s01 + q2, then + q3), rounded to f32 once at the store.
// Needs dim <= rowBytes·8 (checked by the caller, src/kernels/abi.ts).
export function asymTable(q: usize, dim: i32, rowBytes: i32, table: usize): void {
  let used = (dim + 7) >> 3; // row bytes with a coordinate; the rest of the table is 0
  for (let i = 0; i < used << 1; i++) {
    let j = i << 2;
    let q0: f64 = j < dim ? <f64>load<f32>(q + (<usize>j << 2)) : 0;
    let q1: f64 = j + 1 < dim ? <f64>load<f32>(q + (<usize>j << 2), 4) : 0;
    let q2: f64 = j + 2 < dim ? <f64>load<f32>(q + (<usize>j << 2), 8) : 0;
    let q3: f64 = j + 3 < dim ? <f64>load<f32>(q + (<usize>j << 2), 12) : 0;
    let s01 = q0 + q1, s02 = q0 + q2, s12 = q1 + q2, s012 = s01 + q2;
    let t = table + (<usize>i << 6);
    store<f32>(t, 0);
    store<f32>(t, <f32>q0, 4);
    store<f32>(t, <f32>q1, 8);
    store<f32>(t, <f32>s01, 12);
    store<f32>(t, <f32>q2, 16);
    store<f32>(t, <f32>s02, 20);
    store<f32>(t, <f32>s12, 24);
    store<f32>(t, <f32>s012, 28);
    store<f32>(t, <f32>q3, 32);
    store<f32>(t, <f32>(q0 + q3), 36);
    store<f32>(t, <f32>(q1 + q3), 40);
    store<f32>(t, <f32>(s01 + q3), 44);
    store<f32>(t, <f32>(q2 + q3), 48);
    store<f32>(t, <f32>(s02 + q3), 52);
    store<f32>(t, <f32>(s12 + q3), 56);
    store<f32>(t, <f32>(s012 + q3), 60);
  }
  memory.fill(table + (<usize>used << 7), 0, <usize>(rowBytes - used) << 7);
}

// asymScores: for each of n row ids (u32 at list), the sum over the row's bytes p of
// table[32p + (b & 15)] + table[32p + 16 + (b >> 4)] (f32 entries, summed in f64 as the JS
// reference does), written as f64 at out. The table is built by asymTable.
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

// dotNormMany: dotNorm of nq queries (f32 rows of dim at qs, qs + dim·4, ...) against one x: f64 at out = Σ x[j]²,
// at out + 8(1 + i) = Σ q_i[j]·x[j], each the same bits as dotNorm(q_i, x) (same lanes, same order). x is widened
// once per 4 floats for up to four queries at a time, and its norm taken once: what an exact scan of many queries
// over the same rows (src/engine/depth.ts) costs per pair is the dot product alone.
export function dotNormMany(qs: usize, nq: i32, x: usize, dim: i32, out: usize): void {
  let end4 = dim & ~3;
  let stride = <usize>dim << 2;
  let nLo = f64x2.splat(0);
  let nHi = f64x2.splat(0);
  for (let j = 0; j < end4; j += 4) {
    let xv = v128.load(x + (<usize>j << 2));
    let xl = f64x2.promote_low_f32x4(xv);
    let xh = f64x2.promote_low_f32x4(i32x4.shuffle(xv, xv, 2, 3, 0, 1));
    nLo = f64x2.add(nLo, f64x2.mul(xl, xl));
    nHi = f64x2.add(nHi, f64x2.mul(xh, xh));
  }
  store<f64>(out, finish(nLo, nHi, x, x, end4, dim));
  let i = 0;
  for (; i + 4 <= nq; i += 4) {
    let q0 = qs + <usize>i * stride, q1 = q0 + stride, q2 = q1 + stride, q3 = q2 + stride;
    let a0 = f64x2.splat(0), b0 = f64x2.splat(0), a1 = f64x2.splat(0), b1 = f64x2.splat(0);
    let a2 = f64x2.splat(0), b2 = f64x2.splat(0), a3 = f64x2.splat(0), b3 = f64x2.splat(0);
    for (let j = 0; j < end4; j += 4) {
      let o = <usize>j << 2;
      let xv = v128.load(x + o);
      let xl = f64x2.promote_low_f32x4(xv);
      let xh = f64x2.promote_low_f32x4(i32x4.shuffle(xv, xv, 2, 3, 0, 1));
      let v0 = v128.load(q0 + o), v1 = v128.load(q1 + o), v2 = v128.load(q2 + o), v3 = v128.load(q3 + o);
      a0 = f64x2.add(a0, f64x2.mul(xl, f64x2.promote_low_f32x4(v0)));
      b0 = f64x2.add(b0, f64x2.mul(xh, f64x2.promote_low_f32x4(i32x4.shuffle(v0, v0, 2, 3, 0, 1))));
      a1 = f64x2.add(a1, f64x2.mul(xl, f64x2.promote_low_f32x4(v1)));
      b1 = f64x2.add(b1, f64x2.mul(xh, f64x2.promote_low_f32x4(i32x4.shuffle(v1, v1, 2, 3, 0, 1))));
      a2 = f64x2.add(a2, f64x2.mul(xl, f64x2.promote_low_f32x4(v2)));
      b2 = f64x2.add(b2, f64x2.mul(xh, f64x2.promote_low_f32x4(i32x4.shuffle(v2, v2, 2, 3, 0, 1))));
      a3 = f64x2.add(a3, f64x2.mul(xl, f64x2.promote_low_f32x4(v3)));
      b3 = f64x2.add(b3, f64x2.mul(xh, f64x2.promote_low_f32x4(i32x4.shuffle(v3, v3, 2, 3, 0, 1))));
    }
    let o = out + 8 + (<usize>i << 3);
    store<f64>(o, finish(a0, b0, q0, x, end4, dim));
    store<f64>(o, finish(a1, b1, q1, x, end4, dim), 8);
    store<f64>(o, finish(a2, b2, q2, x, end4, dim), 16);
    store<f64>(o, finish(a3, b3, q3, x, end4, dim), 24);
  }
  for (; i < nq; i++) {
    let q = qs + <usize>i * stride;
    let a = f64x2.splat(0), b = f64x2.splat(0);
    for (let j = 0; j < end4; j += 4) {
      let o = <usize>j << 2;
      let xv = v128.load(x + o);
      let qv = v128.load(q + o);
      a = f64x2.add(a, f64x2.mul(f64x2.promote_low_f32x4(xv), f64x2.promote_low_f32x4(qv)));
      b = f64x2.add(b, f64x2.mul(f64x2.promote_low_f32x4(i32x4.shuffle(xv, xv, 2, 3, 0, 1)), f64x2.promote_low_f32x4(i32x4.shuffle(qv, qv, 2, 3, 0, 1))));
    }
    store<f64>(out + 8 + (<usize>i << 3), finish(a, b, q, x, end4, dim));
  }
}

// Lanes (l0, l1) = lo, (l2, l3) = hi; the tail from end4 adds q[j]·x[j] to lane j % 4; then (l0 + l1) + (l2 + l3), as dotNorm.
@inline
function finish(lo: v128, hi: v128, q: usize, x: usize, end4: i32, dim: i32): f64 {
  let l0 = f64x2.extract_lane(lo, 0), l1 = f64x2.extract_lane(lo, 1), l2 = f64x2.extract_lane(hi, 0), l3 = f64x2.extract_lane(hi, 1);
  for (let j = end4; j < dim; j++) {
    let p = <f64>load<f32>(x + (<usize>j << 2)) * <f64>load<f32>(q + (<usize>j << 2));
    let lane = j & 3;
    if (lane == 0) l0 += p;
    else if (lane == 1) l1 += p;
    else l2 += p; // the tail has at most 3 elements: lanes 0-2
  }
  return (l0 + l1) + (l2 + l3);
}

// dotF32Many: f64 at out + 8i = an f32 approximation of Σ q_i[j]·x[j] for nq queries (f32 rows of dim at qs, qs + dim·4,
// ...): products and sums in f32, 8 lanes by j % 8 (j < dim & ~7), the lanes added pairwise, then the tail j >= dim & ~7
// in order. Each term sees at most dim/8 + 11 roundings, so |result - exact| <= (dim/8 + 12)·2^-24·Σ|q_i[j]·x[j]| while
// nothing overflows or falls below f32's normal range (the caller's bound, src/engine/depth.ts, allows twice that).
// About twice the pairs per second of dotNormMany: a filter before the exact f64 scores of the few rows that can matter.
export function dotF32Many(qs: usize, nq: i32, x: usize, dim: i32, out: usize): void {
  let end8 = dim & ~7;
  let stride = <usize>dim << 2;
  let i = 0;
  for (; i + 4 <= nq; i += 4) {
    let q0 = qs + <usize>i * stride, q1 = q0 + stride, q2 = q1 + stride, q3 = q2 + stride;
    let a0 = f32x4.splat(0), b0 = f32x4.splat(0), a1 = f32x4.splat(0), b1 = f32x4.splat(0);
    let a2 = f32x4.splat(0), b2 = f32x4.splat(0), a3 = f32x4.splat(0), b3 = f32x4.splat(0);
    for (let j = 0; j < end8; j += 8) {
      let o = <usize>j << 2;
      let xl = v128.load(x + o), xh = v128.load(x + o, 16);
      a0 = f32x4.add(a0, f32x4.mul(xl, v128.load(q0 + o)));
      b0 = f32x4.add(b0, f32x4.mul(xh, v128.load(q0 + o, 16)));
      a1 = f32x4.add(a1, f32x4.mul(xl, v128.load(q1 + o)));
      b1 = f32x4.add(b1, f32x4.mul(xh, v128.load(q1 + o, 16)));
      a2 = f32x4.add(a2, f32x4.mul(xl, v128.load(q2 + o)));
      b2 = f32x4.add(b2, f32x4.mul(xh, v128.load(q2 + o, 16)));
      a3 = f32x4.add(a3, f32x4.mul(xl, v128.load(q3 + o)));
      b3 = f32x4.add(b3, f32x4.mul(xh, v128.load(q3 + o, 16)));
    }
    let o = out + (<usize>i << 3);
    store<f64>(o, <f64>lanes8(a0, b0, q0, x, end8, dim));
    store<f64>(o, <f64>lanes8(a1, b1, q1, x, end8, dim), 8);
    store<f64>(o, <f64>lanes8(a2, b2, q2, x, end8, dim), 16);
    store<f64>(o, <f64>lanes8(a3, b3, q3, x, end8, dim), 24);
  }
  for (; i < nq; i++) {
    let q = qs + <usize>i * stride;
    let a = f32x4.splat(0), b = f32x4.splat(0);
    for (let j = 0; j < end8; j += 8) {
      let o = <usize>j << 2;
      a = f32x4.add(a, f32x4.mul(v128.load(x + o), v128.load(q + o)));
      b = f32x4.add(b, f32x4.mul(v128.load(x + o, 16), v128.load(q + o, 16)));
    }
    store<f64>(out + (<usize>i << 3), <f64>lanes8(a, b, q, x, end8, dim));
  }
}

// The 8 f32 lanes of (a, b) added pairwise, then the tail from end8 in order (f32 throughout).
@inline
function lanes8(a: v128, b: v128, q: usize, x: usize, end8: i32, dim: i32): f32 {
  let s = f32x4.add(a, b);
  let t = (f32x4.extract_lane(s, 0) + f32x4.extract_lane(s, 1)) + (f32x4.extract_lane(s, 2) + f32x4.extract_lane(s, 3));
  for (let j = end8; j < dim; j++) t += load<f32>(x + (<usize>j << 2)) * load<f32>(q + (<usize>j << 2));
  return t;
}

// dotF32Keep: dotF32Many's f32 dot products divided by `norm` (f64, the row's norm), kept where at least the query's
// floor (f64 at floors + 8i): the kept queries' indices as u32 at idx, their scores as f64 at out, in query order;
// returns how many. out holds 8·nq bytes (it is dotF32Many's output first). The filter of src/engine/depth.ts exactBest.
export function dotF32Keep(qs: usize, nq: i32, x: usize, dim: i32, norm: f64, floors: usize, idx: usize, out: usize): i32 {
  dotF32Many(qs, nq, x, dim, out);
  let c = 0;
  for (let i = 0; i < nq; i++) {
    let s = load<f64>(out + (<usize>i << 3)) / norm;
    if (s >= load<f64>(floors + (<usize>i << 3))) {
      store<u32>(idx + (<usize>c << 2), <u32>i);
      store<f64>(out + (<usize>c << 3), s);
      c++;
    }
  }
  return c;
}
