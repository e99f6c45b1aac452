/** @module shared-heap — one shared WebAssembly.Memory and a first-fit allocator over it. */
import { SvcError } from "../errors.js";

const PAGE = 65536;
/** Bytes below this are reserved for the module (asconfig memoryBase). */
export const HEAP_BASE = 65536;
/** 4 GiB of 32-bit address space: the maximum declared by build/kernels.wasm. */
export const MAX_PAGES = 65536;
const ALIGN = 16;

/**
 * The allocator's bookkeeping lives in JS (the main thread owns it); workers only
 * read and write memory at pointers handed to them. Blocks are 16-byte aligned.
 * Growth never moves existing blocks, so pointers stay valid; views must be
 * re-taken after growth (`bytes()` etc. do that).
 */
export class SharedHeap {
  readonly memory: WebAssembly.Memory;
  private top = HEAP_BASE;
  /**
   * Released blocks, ptr -> size, and the same by end -> ptr. A released block merges with free neighbours on
   * either side, so the list stays about as long as the holes between live blocks: first-fit walked hundreds of
   * 16-byte fragments per query before (~40 us of each served query, bench/RESULTS.md "served").
   */
  private readonly free = new Map<number, number>();
  private readonly freeEnds = new Map<number, number>();
  private readonly sizes = new Map<number, number>(); // ptr -> size, live blocks
  private cachedBuffer: SharedArrayBuffer | undefined;
  private u8: Uint8Array = new Uint8Array(0);

  constructor(memory?: WebAssembly.Memory) {
    this.memory = memory ?? new WebAssembly.Memory({ initial: HEAP_BASE / PAGE + 16, maximum: MAX_PAGES, shared: true });
  }

  /** Bytes in use or reserved below the bump pointer. */
  get used(): number {
    let freeBytes = 0;
    for (const size of this.free.values()) freeBytes += size;
    return this.top - HEAP_BASE - freeBytes;
  }

  alloc(bytes: number): number {
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
    for (const [ptr, blockSize] of this.free) {
      if (blockSize < size) continue;
      this.unfree(ptr, blockSize);
      if (blockSize > size) this.addFree(ptr + size, blockSize - size);
      this.sizes.set(ptr, size);
      return ptr;
    }
    const ptr = this.top;
    this.ensure(ptr + size);
    this.top = ptr + size;
    this.sizes.set(ptr, size);
    return ptr;
  }

  /** Allocate and zero-fill. */
  calloc(bytes: number): number {
    const ptr = this.alloc(bytes);
    this.bytes().fill(0, ptr, ptr + bytes);
    return ptr;
  }

  release(ptr: number): void {
    let size = this.sizes.get(ptr);
    if (size === undefined) throw new SvcError("E_KERNEL", `release of unknown block ${ptr}`);
    this.sizes.delete(ptr);
    // Merge with the free blocks right after and right before it.
    const after = this.free.get(ptr + size);
    if (after !== undefined) {
      this.unfree(ptr + size, after);
      size += after;
    }
    const before = this.freeEnds.get(ptr);
    if (before !== undefined) {
      this.unfree(before, ptr - before);
      size += ptr - before;
      ptr = before;
    }
    // A block touching the bump pointer folds back into it (its free neighbour below, if any, is merged already).
    if (ptr + size === this.top) this.top = ptr;
    else this.addFree(ptr, size);
  }

  private addFree(ptr: number, size: number): void {
    this.free.set(ptr, size);
    this.freeEnds.set(ptr + size, ptr);
  }

  private unfree(ptr: number, size: number): void {
    this.free.delete(ptr);
    this.freeEnds.delete(ptr + size);
  }

  /** Copy bytes into a new block; returns its pointer. */
  put(data: ArrayBufferView): number {
    const src = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const ptr = this.alloc(src.byteLength);
    this.bytes().set(src, ptr);
    return ptr;
  }

  bytes(): Uint8Array {
    const buffer = this.memory.buffer as unknown as SharedArrayBuffer;
    if (buffer !== this.cachedBuffer || this.u8.byteLength !== buffer.byteLength) {
      this.cachedBuffer = buffer;
      this.u8 = new Uint8Array(buffer);
    }
    return this.u8;
  }

  u32(ptr: number, length: number): Uint32Array {
    return new Uint32Array(this.memory.buffer, ptr, length);
  }

  f32(ptr: number, length: number): Float32Array {
    return new Float32Array(this.memory.buffer, ptr, length);
  }

  private ensure(end: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const pages = Math.ceil((end - have) / PAGE);
    // grow at least 1/8 of the current size to amortize growth
    const want = Math.max(pages, Math.ceil(have / PAGE / 8));
    const grant = Math.min(want, MAX_PAGES - have / PAGE);
    if (grant < pages) throw new SvcError("E_OUT_OF_MEMORY", `shared memory would exceed ${MAX_PAGES * PAGE} bytes`, { details: { requested: end } });
    this.memory.grow(grant);
  }
}
