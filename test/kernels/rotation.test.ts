import { describe, expect, it } from "vitest";
import { Kernels, wordsFor } from "../../src/kernels/abi.js";
import { Rotation } from "../../src/kernels/rotation.js";
import { mulberry32 } from "./helpers.js";

const kernels = Kernels.create();
const heap = kernels.heap;

function gaussian(rand: () => number, n: number, sparsity = 0): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (sparsity && rand() / 2 ** 32 < sparsity) continue;
    const u = (rand() + 1) / 2 ** 32,
      v = rand() / 2 ** 32;
    out[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  return out;
}

describe("float32 -> bits", () => {
  it("fast FWHT encoding equals the dense reference (away from zero crossings)", () => {
    const rand = mulberry32(3);
    for (const dim of [1, 5, 64, 100, 256, 300]) {
      const rot = new Rotation(kernels, dim, 42);
      const w = wordsFor(dim);
      const x = gaussian(rand, dim);
      const out = heap.alloc(w * 8),
        refOut = heap.alloc(w * 8);
      const rotated = heap.alloc(rot.P * 8),
        tmp = heap.alloc(rot.P * 8);
      rot.encode(x, out);
      const src = heap.put(x);
      expect(kernels.encodeReference(src, dim, rot, rotated, tmp, refOut)).toBe(true);
      const y = new Float64Array(heap.memory.buffer, rotated, rot.P);
      const bits = heap.bytes();
      const scale = Math.sqrt(rot.P) ** 3; // three unnormalized transforms of a unit vector
      for (let j = 0; j < dim; j++) {
        if (Math.abs(y[j]!) < 1e-4 * scale) continue; // sign of a near-zero coordinate is rounding
        const bit = (p: number) => (bits[p + (j >> 3)]! >> (j & 7)) & 1;
        expect(bit(out)).toBe(bit(refOut));
        expect(bit(out)).toBe(y[j]! > 0 ? 1 : 0);
      }
      for (let j = dim; j < w * 64; j++) expect((bits[out + (j >> 3)]! >> (j & 7)) & 1).toBe(0);
    }
  });

  it("is deterministic in the seed, scale-invariant, and writes the normalized input", () => {
    const rand = mulberry32(4);
    const dim = 1024,
      n = 3,
      w = wordsFor(dim);
    const x = gaussian(rand, dim * n);
    const a = heap.alloc(n * w * 8),
      b = heap.alloc(n * w * 8),
      c = heap.alloc(n * w * 8),
      norm = heap.alloc(n * dim * 4);
    new Rotation(kernels, dim, 9).encode(x, a, norm);
    new Rotation(kernels, dim, 9).encode(
      x.map((v) => v * 3.5),
      b,
    );
    new Rotation(kernels, dim, 10).encode(x, c);
    const bytes = heap.bytes();
    expect(bytes.slice(a, a + n * w * 8)).toEqual(bytes.slice(b, b + n * w * 8));
    expect(bytes.slice(a, a + n * w * 8)).not.toEqual(bytes.slice(c, c + n * w * 8));
    const normed = new Float32Array(heap.memory.buffer, norm, n * dim);
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = 0; j < dim; j++) s += normed[i * dim + j]! ** 2;
      expect(s).toBeCloseTo(1, 4);
    }
  });

  it("copyRotated puts lastRotated's coordinates in shared memory and returns a view of them there", () => {
    for (const dim of [1024, 13]) {
      const rot = new Rotation(kernels, dim, 7);
      const out = heap.alloc(wordsFor(dim) * 8);
      const to = heap.alloc(dim * 4);
      rot.encode(gaussian(mulberry32(dim), dim), out);
      const view = rot.copyRotated(to);
      expect(view.buffer).toBe(heap.memory.buffer);
      expect(view.byteOffset).toBe(to);
      expect(Array.from(view)).toEqual(Array.from(rot.lastRotated()));
      expect(view.some((v) => v !== 0)).toBe(true);
      heap.release(out);
      heap.release(to);
      rot.dispose();
    }
  });

  it("rotation keeps angular structure on sparse vectors where plain signs fail", () => {
    // Sparse non-negative vectors: plain sign bits are almost all 1 or 0 and lose the angle.
    const rand = mulberry32(5);
    const dim = 256,
      w = wordsFor(dim),
      pairs = 200;
    const rot = new Rotation(kernels, dim, 1);
    let errRot = 0,
      errPlain = 0;
    for (let p = 0; p < pairs; p++) {
      const u = gaussian(rand, dim, 0.9).map(Math.abs),
        v = gaussian(rand, dim, 0.9).map(Math.abs);
      let dot = 0,
        nu = 0,
        nv = 0;
      for (let j = 0; j < dim; j++) {
        dot += u[j]! * v[j]!;
        nu += u[j]! ** 2;
        nv += v[j]! ** 2;
      }
      const angle = Math.acos(Math.min(1, dot / Math.sqrt(nu * nv))) / Math.PI;
      const ru = heap.alloc(w * 8),
        rv = heap.alloc(w * 8);
      rot.encode(u, ru);
      rot.encode(v, rv);
      errRot += Math.abs(kernels.hamming(ru, rv, w) / dim - angle);
      let plain = 0;
      for (let j = 0; j < dim; j++) plain += Number(u[j]! > 0) ^ Number(v[j]! > 0);
      errPlain += Math.abs(plain / dim - angle);
    }
    // Hamming/dim estimates angle/pi (SimHash) only after rotation
    expect(errRot / pairs).toBeLessThan(0.05);
    expect(errPlain / pairs).toBeGreaterThan(2 * (errRot / pairs));
  });

  it("NaN or Infinity -> E_NON_FINITE naming the vector; wrong length -> E_DIMENSION", () => {
    const rot = new Rotation(kernels, 8, 1);
    const out = heap.alloc(3 * 16);
    const x = new Float32Array(24).fill(1);
    x[13] = Number.NaN;
    expect(() => rot.encode(x, out)).toThrowError(expect.objectContaining({ code: "E_NON_FINITE", field: "vectors[1].values" }));
    x[13] = Infinity;
    expect(() => rot.encode(x, out)).toThrowError(expect.objectContaining({ code: "E_NON_FINITE" }));
    expect(() => rot.encode(new Float32Array(7), out)).toThrowError(expect.objectContaining({ code: "E_DIMENSION" }));
    expect(() => new Rotation(kernels, 0, 1)).toThrowError(expect.objectContaining({ code: "E_DIMENSION" }));
    // a huge but finite value is fine (norm is summed in f64)
    expect(() => rot.encode(new Float32Array(8).fill(3e38), out)).not.toThrow();
  });
});
