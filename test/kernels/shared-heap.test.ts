import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { HEAP_BASE, SharedHeap } from "../../src/kernels/shared-heap.js";
import { RowArena } from "../../src/kernels/row-arena.js";
import { randomBytes } from "../../src/kernels/random.js";

describe("SharedHeap", () => {
  it("allocates aligned, reuses released blocks, and folds the top back", () => {
    const heap = new SharedHeap();
    const a = heap.alloc(10),
      b = heap.alloc(100),
      c = heap.alloc(1);
    expect(a).toBe(HEAP_BASE);
    for (const p of [a, b, c]) expect(p % 16).toBe(0);
    expect(b - a).toBe(16);
    heap.release(b);
    expect(heap.alloc(50)).toBe(b); // first fit inside the released block; 48 bytes stay free at b + 64
    heap.release(c); // c was the top block: the top folds back over c and the free 48 bytes below it
    expect(heap.used).toBe(16 + 64);
    expect(heap.alloc(16)).toBe(b + 64);
    expect(() => heap.release(12345)).toThrowError(expect.objectContaining({ code: "E_KERNEL" }));
  });

  it("merges a released block with free neighbours, so a hole serves a block as large as the blocks it held", () => {
    const heap = new SharedHeap();
    const a = heap.alloc(64),
      b = heap.alloc(32),
      c = heap.alloc(48);
    heap.alloc(16); // keeps a..c off the top
    heap.release(a);
    heap.release(c);
    heap.release(b); // joins a (before) and c (after): one hole of 144 bytes
    expect(heap.alloc(144)).toBe(a);
    expect(heap.used).toBe(144 + 16);
  });

  it("keeps live blocks disjoint and in use exactly, and folds back to empty, over random alloc/release (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 300 }), fc.nat()), { maxLength: 200 }), (ops) => {
        const heap = new SharedHeap();
        const live = new Map<number, number>(); // ptr -> requested bytes
        for (const [grow, bytes, pick] of ops) {
          if (grow || live.size === 0) {
            const p = heap.alloc(bytes);
            expect(p % 16).toBe(0);
            for (const [q, n] of live) expect(p + bytes <= q || q + n <= p).toBe(true);
            live.set(p, bytes);
          } else {
            const p = [...live.keys()][pick % live.size]!;
            heap.release(p);
            live.delete(p);
          }
          expect(heap.used).toBe([...live.values()].reduce((t, n) => t + Math.max(16, Math.ceil(n / 16) * 16), 0));
        }
        for (const p of live.keys()) heap.release(p);
        expect(heap.used).toBe(0);
        expect(heap.alloc(1)).toBe(HEAP_BASE);
      }),
      { seed: 24, numRuns: 200 },
    );
  });

  it("grows the shared memory without moving blocks; views follow the growth", () => {
    const heap = new SharedHeap();
    const before = heap.memory.buffer.byteLength;
    const first = heap.put(Uint8Array.of(1, 2, 3));
    const big = heap.alloc(before * 2);
    expect(heap.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(Array.from(heap.bytes().subarray(first, first + 3))).toEqual([1, 2, 3]);
    heap.bytes()[big + before * 2 - 1] = 7;
    expect(heap.bytes()[big + before * 2 - 1]).toBe(7);
  });

  it("merges a released block with free neighbours on both sides, so a block as large as both fits where they were", () => {
    // issue 20.8: unmerged pieces never fit a larger block, so the top (and the memory, which never shrinks) kept rising
    for (const order of [
      [0, 1, 2],
      [2, 1, 0],
      [0, 2, 1],
    ]) {
      const heap = new SharedHeap();
      const blocks = [heap.alloc(1000), heap.alloc(1000), heap.alloc(1000)];
      const pin = heap.alloc(16); // keeps the three off the top
      const end = heap.end;
      for (const i of order) heap.release(blocks[i]!);
      expect(heap.freeBlocks()).toEqual([[blocks[0], 3024]]);
      expect(heap.alloc(3000)).toBe(blocks[0]);
      expect(heap.end).toBe(end);
      heap.release(blocks[0]!);
      heap.release(pin);
      expect(heap.end).toBe(HEAP_BASE);
      expect(heap.freeBlocks()).toEqual([]);
    }
  });

  it("property: under any alloc/release sequence blocks never overlap, free space is fully merged, and releasing all empties the heap", () => {
    const heap = new SharedHeap(); // one memory for every run: each run ends with the heap empty
    const op = fc.oneof(fc.record({ alloc: fc.integer({ min: 1, max: 5000 }) }), fc.record({ release: fc.nat() }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        expect(heap.end).toBe(HEAP_BASE);
        const live = new Map<number, number>(); // ptr -> bytes asked
        for (const o of ops) {
          if ("alloc" in o) {
            const ptr = heap.alloc(o.alloc);
            expect(ptr % 16).toBe(0);
            live.set(ptr, o.alloc);
          } else if (live.size > 0) {
            const ptr = [...live.keys()][o.release % live.size]!;
            live.delete(ptr);
            heap.release(ptr);
          }
          const spans = [
            ...[...live].map(([p, n]) => [p, Math.ceil(Math.max(n, 16) / 16) * 16, "live"] as const),
            ...heap.freeBlocks().map(([p, n]) => [p, n, "free"] as const),
          ].sort((x, y) => x[0] - y[0]);
          for (let i = 1; i < spans.length; i++) {
            const [p0, n0, k0] = spans[i - 1]!;
            const [p1, , k1] = spans[i]!;
            expect(p0 + n0).toBeLessThanOrEqual(p1); // no overlap
            if (k0 === "free" && k1 === "free") expect(p0 + n0).toBeLessThan(p1); // two free blocks never touch
          }
          const last = spans.at(-1);
          if (last !== undefined) {
            expect(last[0] + last[1]).toBeLessThanOrEqual(heap.end);
            if (last[2] === "free") expect(last[0] + last[1]).toBeLessThan(heap.end); // a free block never touches the top
          }
        }
        for (const ptr of live.keys()) heap.release(ptr);
        expect(heap.end).toBe(HEAP_BASE);
        expect(heap.freeBlocks()).toEqual([]);
      }),
      { seed: 2008, numRuns: 150 },
    );
  });

  it("refuses to grow past 4 GiB with E_OUT_OF_MEMORY", () => {
    const heap = new SharedHeap();
    expect(() => heap.alloc(5 * 2 ** 30)).toThrowError(expect.objectContaining({ code: "E_OUT_OF_MEMORY" }));
  });
});

describe("RowArena", () => {
  it("keeps rows intact across growth (the block moves, the bytes do not change)", () => {
    const kernels = Kernels.create();
    const arena = new RowArena(kernels.heap, 200, 2);
    const data = randomBytes(5, 7 * arena.rowBytes);
    for (let r = 0; r < 7; r++) arena.append(data.subarray(r * arena.rowBytes, (r + 1) * arena.rowBytes));
    expect(arena.count).toBe(7);
    expect(arena.capacity).toBeGreaterThanOrEqual(7);
    expect(kernels.heap.bytes().slice(arena.base, arena.base + 7 * arena.rowBytes)).toEqual(data);
    expect(() => arena.append(new Uint8Array(arena.rowBytes + 1))).toThrowError(expect.objectContaining({ code: "E_DIMENSION" }));
  });
});

describe("ABI check", () => {
  it("refuses a module whose ABI_VERSION differs, with E_ABI", () => {
    // A hand-assembled module: imports a shared memory, exports abiVersion() returning 2 (an older ABI).
    const bytes = Uint8Array.from([
      0x00,
      0x61,
      0x73,
      0x6d,
      0x01,
      0x00,
      0x00,
      0x00,
      0x01,
      0x05,
      0x01,
      0x60,
      0x00,
      0x01,
      0x7f, // type: () -> i32
      0x02,
      0x12,
      0x01,
      0x03,
      0x65,
      0x6e,
      0x76,
      0x06,
      0x6d,
      0x65,
      0x6d,
      0x6f,
      0x72,
      0x79,
      0x02,
      0x03,
      0x01,
      0x80,
      0x80,
      0x04, // import env.memory shared 1..65536
      0x03,
      0x02,
      0x01,
      0x00, // one function of type 0
      0x07,
      0x0e,
      0x01,
      0x0a,
      0x61,
      0x62,
      0x69,
      0x56,
      0x65,
      0x72,
      0x73,
      0x69,
      0x6f,
      0x6e,
      0x00,
      0x00, // export "abiVersion"
      0x0a,
      0x06,
      0x01,
      0x04,
      0x00,
      0x41,
      0x02,
      0x0b, // body: i32.const 2
    ]);
    const wrong = new WebAssembly.Module(bytes);
    expect(() => Kernels.create(new SharedHeap(), wrong)).toThrowError(expect.objectContaining({ code: "E_ABI" }));
    expect(() => Kernels.create(new SharedHeap())).not.toThrow();
  });
});
