/** @module shared-heap — one shared WebAssembly.Memory and a first-fit allocator over it. */
import { SvcError } from "../errors.js";
import { invariant } from "../invariant.js";

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
 * A released block merges with the free blocks on either side (and a free block that
 * reaches the bump pointer lowers it), so free space never stays cut into pieces that
 * no later block fits: a WebAssembly.Memory never shrinks, and without merging a steady
 * mix of sizes (encode buffers, query tables, arenas that grow by copying) pushed the top
 * up for ever (issue 20.8: 73 MB of memory for ~2 MB of rows after 4 minutes of soak).
 */
export class SharedHeap {
  readonly memory: WebAssembly.Memory;
  private top = HEAP_BASE;
  private readonly free = new Map<number, number>(); // ptr -> size, released blocks (never adjacent to each other or to top)
  private readonly freeEnds = new Map<number, number>(); // ptr + size -> ptr, of the same blocks
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
    const size = this.sizes.get(ptr);
    if (size === undefined) throw new SvcError("E_KERNEL", `release of unknown block ${ptr}`);
    this.sizes.delete(ptr);
    let start = ptr;
    let end = ptr + size;
    const before = this.freeEnds.get(start);
    if (before !== undefined) {
      this.unfree(before, start - before);
      start = before;
    }
    const after = this.free.get(end);
    if (after !== undefined) {
      this.unfree(end, after);
      end += after;
    }
    invariant(end <= this.top, "shared-heap: a block past the bump pointer");
    if (end === this.top) this.top = start;
    else this.addFree(start, end - start);
  }

  /** Free blocks (for tests and metrics): ascending, each as [ptr, size]. */
  freeBlocks(): Array<[number, number]> {
    return [...this.free].sort((a, b) => a[0] - b[0]);
  }

  /** The bump pointer: every block lies below it. */
  get end(): number {
    return this.top;
  }

  private addFree(ptr: number, size: number): void {
    invariant(!this.freeEnds.has(ptr) && !this.free.has(ptr + size), "shared-heap: two adjacent free blocks (release merges them)");
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
    if (grant < pages)
      throw new SvcError("E_OUT_OF_MEMORY", `shared memory would exceed ${MAX_PAGES * PAGE} bytes`, { details: { requested: end } });
    this.memory.grow(grant);
  }
}
