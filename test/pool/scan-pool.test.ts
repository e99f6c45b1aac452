import { afterAll, describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { Rotation } from "../../src/kernels/rotation.js";
import { ScanPool, mergeTopK, stripeBounds } from "../../src/pool/scan-pool.js";
import { duplicateRows, mulberry32, randomArena, randomQuery } from "../kernels/helpers.js";

const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
afterAll(() => pool.close());

describe("ScanPool", () => {
  const arena = randomArena(kernels, 20_000, 1024, 77);
  duplicateRows(kernels, arena, 4999); // ties across stripe boundaries
  const rand = mulberry32(8);

  it("striped single queries equal the in-thread scan", async () => {
    for (let i = 0; i < 10; i++) {
      const q = i % 2 ? arena.rowPtr(rand() % arena.count) : randomQuery(kernels, 1024, arena.words, rand());
      for (const k of [1, 10, 100]) {
        expect(await pool.topK(arena, q, k)).toEqual(kernels.topK(arena, 0, arena.count, q, k, "reference"));
      }
    }
  });

  it("masked queries split across workers equal the masked reference", async () => {
    const mask = kernels.heap.calloc(Math.ceil(arena.count / 64) * 8);
    const bytes = kernels.heap.bytes();
    for (let r = 0; r < arena.count; r++) if (rand() % 100 === 0) bytes[mask + (r >> 3)]! |= 1 << (r & 7);
    const q = randomQuery(kernels, 1024, arena.words, 5);
    expect(await pool.topK(arena, q, 10, { mask })).toEqual(kernels.topKMasked(arena, 0, arena.count, q, 10, mask, "reference"));
  });

  it("batches go to workers whole (query-table path at 40 queries) and equal per-query scans", async () => {
    const nq = 40;
    const queries = kernels.heap.alloc(nq * arena.rowBytes);
    for (let j = 0; j < nq; j++) {
      const q = randomQuery(kernels, 1024, arena.words, 100 + j);
      kernels.heap.bytes().copyWithin(queries + j * arena.rowBytes, q, q + arena.rowBytes);
    }
    const batch = await pool.topKBatch(arena, queries, nq, 10);
    expect(batch).toHaveLength(nq);
    batch.forEach((res, j) => expect(res).toEqual(kernels.topK(arena, 0, arena.count, queries + j * arena.rowBytes, 10)));
  });

  it("concurrent topKShared callers (gathered into batches of every size) get each query's exact top-k", async () => {
    // the first runs striped; the rest wait for freed workers: 10 as single scans, or 70 as two blocked scans of 32 and 6 singles
    for (const n of [1, 11, 71]) {
      const qs = Array.from({ length: n }, (_, j) => randomQuery(kernels, 1024, arena.words, 300 + j));
      const ks = qs.map((_, j) => 1 + (j % 3) * 7);
      const got = await Promise.all(qs.map((q, j) => pool.topKShared(arena, q, ks[j]!)));
      got.forEach((res, j) => expect(res).toEqual(kernels.topK(arena, 0, arena.count, qs[j]!, ks[j]!, "reference")));
    }
  });

  it("each live worker reports its V8 heap (ScanPool.workerHeaps, by thread id)", async () => {
    await pool.topK(arena, randomQuery(kernels, 1024, arena.words, 9), 10);
    const deadline = Date.now() + 10_000;
    while (pool.workerHeaps().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const heaps = pool.workerHeaps();
    expect(heaps.map((h) => h.threadId).sort()).toEqual(pool.workers.map((w) => w.threadId).sort());
    for (const h of heaps) {
      expect(h.used).toBeGreaterThan(0);
      expect(h.used).toBeLessThanOrEqual(h.total);
    }
  });

  it("batches over stripes smaller than k still merge correctly", async () => {
    const small = randomArena(kernels, 70, 256, 12); // stripes of 64 and 6 rows
    const queries = kernels.heap.alloc(3 * small.rowBytes);
    for (let j = 0; j < 3; j++) {
      const q = randomQuery(kernels, 256, small.words, 200 + j);
      kernels.heap.bytes().copyWithin(queries + j * small.rowBytes, q, q + small.rowBytes);
    }
    const batch = await pool.topKBatch(small, queries, 3, 50);
    batch.forEach((res, j) => expect(res).toEqual(kernels.topK(small, 0, 70, queries + j * small.rowBytes, 50, "reference")));
  });

  it("candidate lists split over the workers equal the in-thread list scan", async () => {
    for (const n of [3, 300, 7001]) {
      const ids = Uint32Array.from({ length: n }, () => rand() % arena.count);
      const uniq = Uint32Array.from(new Set(ids));
      const list = kernels.heap.put(uniq);
      const q = randomQuery(kernels, 1024, 16, rand());
      const split = await pool.topKList(arena, list, uniq.length, q, 10);
      expect(split).toEqual(kernels.topKList(arena, list, uniq.length, q, 10, "reference"));
      kernels.heap.release(list);
      kernels.heap.release(q);
    }
  });

  it("encode split over the workers gives the same rows as encoding in-thread", async () => {
    const dim = 300;
    const rotation = new Rotation(kernels, dim, 99);
    const next = mulberry32(5);
    const vectors = Float32Array.from({ length: 700 * dim }, () => next() / 2 ** 32 - 0.5);
    const split = await pool.encode(rotation, dim, vectors);
    const rowBytes = Math.ceil(dim / 128) * 16;
    const out = kernels.heap.alloc(700 * rowBytes);
    rotation.encode(vectors, out);
    expect(split).toEqual(kernels.heap.bytes().slice(out, out + 700 * rowBytes));
    kernels.heap.release(out);
    rotation.dispose();
  });

  it("small collections run in-thread with the same answer", async () => {
    const small = randomArena(kernels, 500, 256, 3);
    const q = randomQuery(kernels, 256, small.words, 4);
    expect(await pool.topK(small, q, 5)).toEqual(kernels.topK(small, 0, 500, q, 5, "reference"));
  });

  it("accepts query bytes, and refuses a query of the wrong width with E_DIMENSION", async () => {
    const q = kernels.heap.bytes().slice(arena.rowPtr(42), arena.rowPtr(42) + arena.rowBytes);
    const res = await pool.topK(arena, q, 3);
    expect(res.rows[0]).toBe(42);
    expect(res.dists[0]).toBe(0);
    await expect(pool.topK(arena, new Uint8Array(64), 3)).rejects.toMatchObject({ code: "E_DIMENSION", field: "vector" });
  });

  it("an SvcError raised inside a worker keeps its code; the pool keeps serving", async () => {
    const q = randomQuery(kernels, 1024, arena.words, 6);
    await expect(pool.topK(arena, q, 0)).rejects.toMatchObject({ code: "E_TOP_K" });
    // a mask pointer past the end of memory traps inside the worker's kernel
    await expect(pool.topK(arena, q, 5, { stripes: 2, mask: 0x7ffffff0 })).rejects.toMatchObject({ code: "E_KERNEL" });
    expect(await pool.topK(arena, q, 5, { stripes: 2 })).toEqual(kernels.topK(arena, 0, arena.count, q, 5));
  });

  it("a worker that dies fails its task with E_WORKER_FAILED and is replaced", async () => {
    const big = randomArena(kernels, 400_000, 1024, 9);
    const q = randomQuery(kernels, 1024, big.words, 10);
    // The workers are told to stop first; topK posts its stripes synchronously, before the
    // pool hears of their exit, so the stripes land on dying workers.
    const dying = pool.workers.map((w) => w.terminate());
    const pending = pool.topK(big, q, 10).then(
      () => undefined,
      (err: unknown) => err,
    );
    await Promise.all(dying);
    expect(await pending).toMatchObject({ code: "E_WORKER_FAILED" });
    // the pool replaces dead workers; the next query answers correctly
    expect(await pool.topK(big, q, 10)).toEqual(kernels.topK(big, 0, big.count, q, 10));
    big.dispose();
  });
});

describe("stripes and merge", () => {
  it("stripes cover [0, n) without overlap, aligned to 64 rows", () => {
    for (const [n, parts] of [
      [0, 2],
      [1, 2],
      [63, 2],
      [64, 2],
      [1000, 3],
      [1_000_003, 2],
    ] as const) {
      const b = stripeBounds(n, parts);
      expect(b[0]![0]).toBe(0);
      expect(b[b.length - 1]![1]).toBe(n);
      for (let i = 1; i < b.length; i++) {
        expect(b[i]![0]).toBe(b[i - 1]![1]);
        expect(b[i]![0] % 64).toBe(0);
      }
    }
  });
  it("merge keeps distance-then-row order", () => {
    const m = mergeTopK(
      [
        { rows: Uint32Array.of(5, 9), dists: Uint32Array.of(1, 3) },
        { rows: Uint32Array.of(2, 7), dists: Uint32Array.of(3, 3) },
      ],
      3,
    );
    expect(Array.from(m.rows)).toEqual([5, 2, 7]);
    expect(Array.from(m.dists)).toEqual([1, 3, 3]);
  });
});
