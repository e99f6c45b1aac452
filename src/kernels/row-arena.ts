/** @module row-arena — packed 1-bit rows stored contiguously in the shared memory. */
import { SvcError } from "../errors.js";
import { invariant } from "../invariant.js";
import { wordsFor, type RowsRef } from "./abi.js";
import type { SharedHeap } from "./shared-heap.js";

/**
 * Rows of `dimBits` bits, each padded to `words` u64 lanes (a multiple of 128 bits).
 * Growth moves the block (copy, then release the old one), so read `base` per scan. A scan
 * in flight holds a pin: a block replaced while pinned is released when the last pin
 * goes, so readers of a snapshot (base, count) never see freed memory.
 */
export class RowArena implements RowsRef {
  readonly dimBits: number;
  readonly words: number;
  base: number;
  count = 0;
  capacity: number;
  private readonly heap: SharedHeap;
  private pins = 0;
  private retired: number[] = [];

  constructor(heap: SharedHeap, dimBits: number, capacity = 1024) {
    if (!Number.isInteger(dimBits) || dimBits < 1)
      throw new SvcError("E_DIMENSION", `dimension must be a positive integer, got ${dimBits}`, { field: "dimension" });
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
      this.retire(this.base);
      this.base = base;
      this.capacity = capacity;
    }
    const ptr = this.rowPtr(this.count);
    this.count += n;
    invariant(this.count <= this.capacity, "row-arena: rows past the block's capacity");
    return ptr;
  }

  /** Append packed rows (n * rowBytes bytes, padding bits zero). */
  append(packed: Uint8Array): void {
    if (packed.byteLength % this.rowBytes !== 0) {
      throw new SvcError("E_DIMENSION", `packed rows must be a multiple of ${this.rowBytes} bytes, got ${packed.byteLength}`, {
        field: "rows",
      });
    }
    const ptr = this.reserve(packed.byteLength / this.rowBytes);
    this.heap.bytes().set(packed, ptr);
  }

  /** A snapshot of the rows for one scan; call the returned function when the scan is done. */
  pin(): { rows: RowsRef; unpin: () => void } {
    this.pins++;
    let done = false;
    return {
      rows: { base: this.base, words: this.words, count: this.count },
      unpin: () => {
        if (done) return;
        done = true;
        invariant(this.pins > 0, "row-arena: an unpin without a pin");
        if (--this.pins === 0) for (const ptr of this.retired.splice(0)) this.heap.release(ptr);
      },
    };
  }

  /** Free the rows (now, or when the last pin goes). */
  dispose(): void {
    this.retire(this.base);
    this.base = 0;
    this.capacity = 0;
    this.count = 0;
  }

  private retire(ptr: number): void {
    invariant(this.pins >= 0 && (this.pins > 0 || this.retired.length === 0), "row-arena: retired blocks kept with no pin");
    if (this.pins > 0) this.retired.push(ptr);
    else this.heap.release(ptr);
  }
}
