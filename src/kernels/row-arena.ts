/** @module row-arena — packed 1-bit rows stored contiguously in the shared memory. */
import { SvcError } from "../errors.js";
import { wordsFor, type RowsRef } from "./abi.js";
import type { SharedHeap } from "./shared-heap.js";

/**
 * Rows of `dimBits` bits, each padded to `words` u64 lanes (a multiple of 128 bits).
 * Growth moves the block (copy, then release the old one), so read `base` per scan and
 * never grow an arena while a scan of it is in flight: a worker would read a released block.
 */
export class RowArena implements RowsRef {
  readonly dimBits: number;
  readonly words: number;
  base: number;
  count = 0;
  capacity: number;
  private readonly heap: SharedHeap;

  constructor(heap: SharedHeap, dimBits: number, capacity = 1024) {
    if (!Number.isInteger(dimBits) || dimBits < 1) throw new SvcError("E_DIMENSION", `dimension must be a positive integer, got ${dimBits}`, { field: "dimension" });
    this.heap = heap;
    this.dimBits = dimBits;
    this.words = wordsFor(dimBits);
    this.capacity = Math.max(1, capacity);
    this.base = heap.alloc(this.capacity * this.rowBytes);
  }

  get rowBytes(): number {
    return this.words * 8;
  }

  /** Pointer of row r. */
  rowPtr(r: number): number {
    return this.base + r * this.rowBytes;
  }

  /** Make room for n more rows; returns the pointer of the first of them. */
  reserve(n: number): number {
    if (this.count + n > this.capacity) {
      const capacity = Math.max(this.count + n, Math.ceil(this.capacity * 1.5));
      const base = this.heap.alloc(capacity * this.rowBytes);
      const bytes = this.heap.bytes();
      bytes.copyWithin(base, this.base, this.base + this.count * this.rowBytes);
      this.heap.release(this.base);
      this.base = base;
      this.capacity = capacity;
    }
    const ptr = this.rowPtr(this.count);
    this.count += n;
    return ptr;
  }

  /** Append packed rows (n * rowBytes bytes, padding bits zero). */
  append(packed: Uint8Array): void {
    if (packed.byteLength % this.rowBytes !== 0) {
      throw new SvcError("E_DIMENSION", `packed rows must be a multiple of ${this.rowBytes} bytes, got ${packed.byteLength}`, { field: "rows" });
    }
    const ptr = this.reserve(packed.byteLength / this.rowBytes);
    this.heap.bytes().set(packed, ptr);
  }

  dispose(): void {
    this.heap.release(this.base);
  }
}
