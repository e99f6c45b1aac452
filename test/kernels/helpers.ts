/** @module helpers — seeded fixtures shared by the kernel and pool tests. */
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32, randomBytes } from "../../src/kernels/random.js";
import { RowArena } from "../../src/kernels/row-arena.js";

/** n random rows of dimBits bits (padding bits zero), appended to a new arena. */
export function randomArena(kernels: Kernels, n: number, dimBits: number, seed: number): RowArena {
  const arena = new RowArena(kernels.heap, dimBits, Math.max(1, n));
  const bytes = randomBytes(seed, n * arena.rowBytes);
  for (let r = 0; r < n; r++) clearPadding(bytes.subarray(r * arena.rowBytes, (r + 1) * arena.rowBytes), dimBits);
  arena.append(bytes);
  return arena;
}

/** A random query row in shared memory (padding zero); returns its pointer. */
export function randomQuery(kernels: Kernels, dimBits: number, words: number, seed: number): number {
  const bytes = randomBytes(seed, words * 8);
  clearPadding(bytes, dimBits);
  return kernels.heap.put(bytes);
}

export function clearPadding(row: Uint8Array, dimBits: number): void {
  for (let b = dimBits; b < row.length * 8; b++) row[b >> 3]! &= ~(1 << (b & 7));
}

/** A row that duplicates rows so ties are certain: row i copies row i % period. */
export function duplicateRows(kernels: Kernels, arena: RowArena, period: number): void {
  const bytes = kernels.heap.bytes();
  for (let r = period; r < arena.count; r++)
    bytes.copyWithin(arena.rowPtr(r), arena.rowPtr(r % period), arena.rowPtr(r % period) + arena.rowBytes);
}

export { mulberry32 };
