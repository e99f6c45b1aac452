/** @module data — seeded benchmark data: random 1-bit rows and queries near existing rows. */
import { mulberry32, randomBytes } from "../src/kernels/random.js";

/** n packed rows of `rowBytes` bytes each (all bits random; dims are multiples of 128 here). */
export function makeRows(n: number, rowBytes: number, seed: number): Uint8Array {
  return randomBytes(seed, n * rowBytes);
}

/**
 * nq queries, each a copy of a random stored row with `flipFraction` of its bits flipped,
 * so every query has a true near neighbour (as real workloads do).
 */
export function makeQueries(rows: Uint8Array, n: number, rowBytes: number, nq: number, seed: number, flipFraction = 0.15): Uint8Array {
  const next = mulberry32(seed);
  const out = new Uint8Array(nq * rowBytes);
  const bits = rowBytes * 8;
  for (let j = 0; j < nq; j++) {
    const src = next() % n;
    out.set(rows.subarray(src * rowBytes, (src + 1) * rowBytes), j * rowBytes);
    for (let f = 0; f < bits * flipFraction; f++) {
      const b = next() % bits;
      out[j * rowBytes + (b >> 3)]! ^= 1 << (b & 7);
    }
  }
  return out;
}
