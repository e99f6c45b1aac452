/** @module rotation — the seeded randomized-Hadamard rotation tables that float encoding uses. */
import { SvcError } from "../errors.js";
import type { Kernels } from "./abi.js";
import { randomSigns } from "./random.js";

/** Largest supported float dimension (P = 65536 f32 scratch = 256 KiB). */
export const MAX_FLOAT_DIM = 65536;

/**
 * P = the power of two >= dim (at least 4); three seeded ±1 diagonals of P f32 each live
 * in shared memory, plus P f32 of scratch. Same (dim, seed) -> same rotation -> same bits.
 */
export class Rotation {
  readonly dim: number;
  readonly P: number;
  readonly signs: number;
  readonly scratch: number;
  private readonly kernels: Kernels;

  constructor(kernels: Kernels, dim: number, seed: number) {
    if (!Number.isInteger(dim) || dim < 1 || dim > MAX_FLOAT_DIM) {
      throw new SvcError("E_DIMENSION", `dimension must be an integer in [1, ${MAX_FLOAT_DIM}], got ${dim}`, { field: "dimension" });
    }
    this.kernels = kernels;
    this.dim = dim;
    this.P = Math.max(4, 2 ** Math.ceil(Math.log2(dim)));
    this.signs = kernels.heap.put(randomSigns(seed, 3 * this.P));
    this.scratch = kernels.heap.alloc(this.P * 4);
  }

  /**
   * Encode n vectors (row-major f32, n * dim values) into packed rows at `out`.
   * With `normOut`, the L2-normalized vectors are written there too.
   */
  encode(vectors: Float32Array, out: number, normOut = 0): void {
    if (vectors.length % this.dim !== 0) {
      throw new SvcError("E_DIMENSION", `got ${vectors.length} values, not a multiple of dimension ${this.dim}`, { field: "values" });
    }
    const src = this.kernels.heap.put(vectors);
    try {
      this.kernels.encode(src, vectors.length / this.dim, this.dim, this, out, normOut);
    } finally {
      this.kernels.heap.release(src);
    }
  }

  /**
   * The rotated coordinates (dim f32) of the last vector encode() processed: the query side
   * of asymmetric scoring. Read it right after encoding one vector, before any other encode.
   */
  lastRotated(): Float32Array {
    return this.kernels.heap.f32(this.scratch, this.dim).slice();
  }

  /**
   * lastRotated() copied to `to` in shared memory (dim f32) instead, returned as a view there: where the asymTable kernel
   * reads it, with no copy out of shared memory and back (a query's slice() and copy-in were ~2-6% of its engine CPU).
   */
  copyRotated(to: number): Float32Array {
    const heap = this.kernels.heap;
    heap.bytes().copyWithin(to, this.scratch, this.scratch + this.dim * 4);
    return heap.f32(to, this.dim);
  }

  dispose(): void {
    this.kernels.heap.release(this.signs);
    this.kernels.heap.release(this.scratch);
  }
}
