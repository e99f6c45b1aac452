import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { RowFile } from "../../src/engine/row-file.js";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { SvcError } from "../../src/errors.js";

const root = mkdtempSync(join(tmpdir(), "svc-collection-"));
let kernels: Kernels;
let pool: ScanPool;
let n = 0;
const fresh = (opts: { dimension?: number; metric?: "cosine" | "hamming"; checkpointBytes?: number } = {}) =>
  Collection.open(join(root, `c${n++}`), {
    kernels,
    pool,
    dimension: opts.dimension ?? 64,
    metric: opts.metric,
    checkpointBytes: opts.checkpointBytes,
  });

beforeAll(() => {
  kernels = Kernels.create();
  pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
});
afterAll(async () => {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Clustered seeded vectors with structure inside each cluster, as embeddings have: a centre
 * (20 of them) plus a point in a 4-d latent space mapped through a random basis, plus a
 * little isotropic noise. (Pure isotropic noise would make all cluster members equidistant.)
 */
function vectors(count: number, dim: number, seed: number): Float32Array[] {
  const next = mulberry32(seed);
  const u = () => next() / 2 ** 32 - 0.5;
  const centres = Array.from({ length: 20 }, () => Float32Array.from({ length: dim }, u));
  const basis = Array.from({ length: 4 }, () => Float32Array.from({ length: dim }, u));
  return Array.from({ length: count }, () => {
    const c = centres[next() % 20]!;
    const z = [u(), u(), u(), u()];
    return Float32Array.from(
      c,
      (x, j) => x + z[0]! * basis[0]![j]! + z[1]! * basis[1]![j]! + z[2]! * basis[2]![j]! + z[3]! * basis[3]![j]! + 0.1 * u(),
    );
  });
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return d / Math.sqrt(na * nb);
}

function expectCode(fn: () => unknown, code: string, field?: string): Promise<void> {
  return Promise.resolve()
    .then(fn)
    .then(
      () => expect.fail(`expected ${code}`),
      (err: unknown) => {
        expect(err).toBeInstanceOf(SvcError);
        expect((err as SvcError).code).toBe(code);
        if (field !== undefined) expect((err as SvcError).field).toBe(field);
      },
    );
}

describe("Collection", () => {
  it("fetch returns the stored float32 values exactly and the metadata; upsert of an id replaces it", async () => {
    const c = await fresh();
    const [a, b] = vectors(2, 64, 1);
    await c.upsert("ns", [{ id: "a", values: Array.from(a!), metadata: { genre: "drama", year: 2001, tags: ["x", "y"], ok: true } }]);
    await c.settled();
    let [got] = c.fetch("ns", ["a", "missing"]);
    expect(got!.values).toEqual(a);
    expect(got!.metadata).toEqual({ genre: "drama", year: 2001, tags: ["x", "y"], ok: true });
    await c.upsert("ns", [{ id: "a", values: b! }]);
    await c.settled();
    [got] = c.fetch("ns", ["a"]);
    expect(got!.values).toEqual(b);
    expect(got!.metadata).toEqual({});
    expect(c.stats().namespaces).toEqual({ ns: { vectorCount: 1 } });
    await c.close();
  });

  it("top-k after 1-bit scan + rescoring matches exact cosine (recall@10 >= 0.97) and scores are cosines", async () => {
    const c = await fresh({ dimension: 1024 });
    // Queries come from the same clusters as the data (held out), as real queries do.
    const all = vectors(3030, 1024, 2);
    const data = all.slice(0, 3000);
    const queries = all.slice(3000);
    await c.upsert(
      "",
      data.map((values, i) => ({ id: `v${i}`, values })),
    );
    await c.settled();
    let hit = 0;
    for (const q of queries) {
      const exact = data
        .map((v, i) => ({ i, s: cosine(q, v) }))
        .sort((x, y) => y.s - x.s)
        .slice(0, 10);
      const { matches } = await c.query("", { vector: q, topK: 10 });
      expect(matches).toHaveLength(10);
      const want = new Set(exact.map((e) => `v${e.i}`));
      hit += matches.filter((m) => want.has(m.id)).length;
      for (const m of matches) expect(m.score).toBeCloseTo(cosine(q, data[Number(m.id.slice(1))]!), 5);
    }
    expect(hit / 300).toBeGreaterThanOrEqual(0.97);
    await c.close();
  });

  it("rescoring reads neighbouring candidates with one pread of their span, and scores them exactly", async () => {
    const c = await fresh({ dimension: 64 });
    const next = mulberry32(9);
    const u = () => next() / 2 ** 32 - 0.5;
    const q = Float32Array.from({ length: 64 }, u);
    // Rows 200..229 are the query plus a little noise (the 30 rescored candidates, side by side); the rest is random.
    const data = Array.from({ length: 600 }, (_, i) => Float32Array.from(q, (x) => (i >= 200 && i < 230 ? x + 0.05 * u() : u())));
    await c.upsert(
      "",
      data.map((values, i) => ({ id: `v${i}`, values })),
    );
    await c.settled();
    const reads = [vi.spyOn(RowFile.prototype, "readRange"), vi.spyOn(RowFile.prototype, "readInto")];
    try {
      const { matches } = await c.query("", { vector: q, topK: 10, rescore: 30 });
      const calls = reads.reduce((n, s) => n + s.mock.calls.length, 0);
      expect(calls).toBeGreaterThan(0);
      expect(calls).toBe(1); // one for the run of close rows, not one per candidate (30)
      const exact = data
        .map((v, i) => ({ id: `v${i}`, s: cosine(q, v) }))
        .sort((x, y) => y.s - x.s)
        .slice(0, 10);
      expect(matches.map((m) => m.id)).toEqual(exact.map((e) => e.id));
      matches.forEach((m, i) => expect(m.score).toBeCloseTo(exact[i]!.s, 5));
    } finally {
      for (const s of reads) s.mockRestore();
      await c.close();
    }
  });

  it("filters: the true top-k among matching rows, via candidate lists (split over the workers when long)", async () => {
    const c = await fresh({ dimension: 256 });
    const all = vectors(40_001, 256, 4);
    const data = all.slice(0, 40_000);
    for (let s = 0; s < data.length; s += 5000) {
      await c.upsert(
        "f",
        data
          .slice(s, s + 5000)
          .map((values, j) => ({ id: `v${s + j}`, values, metadata: { bucket: (s + j) % 100, even: (s + j) % 2 === 0 } })),
      );
    }
    await c.settled();
    const q = all[40_000]!;
    for (const [filter, pred, plan] of [
      [{ bucket: 7 }, (i: number) => i % 100 === 7, "list"],
      [{ bucket: { $lt: 90 }, even: true }, (i: number) => i % 100 < 90 && i % 2 === 0, "list"],
      [{ bucket: { $lt: 90 } }, (i: number) => i % 100 < 90, "list"],
      [{ bucket: { $lt: 10 }, even: false }, (i: number) => i % 100 < 10 && i % 2 === 1, "list"],
    ] as const) {
      const exact = data
        .map((v, i) => ({ i, s: cosine(q, v) }))
        .filter((e) => pred(e.i))
        .sort((x, y) => y.s - x.s)
        .slice(0, 10);
      const res = await c.query("f", { vector: q, topK: 10, filter, includeMetadata: true });
      expect(res.plan).toBe(plan);
      for (const m of res.matches) expect(pred(Number(m.id.slice(1)))).toBe(true);
      const got = new Set(res.matches.map((m) => m.id));
      expect(exact.filter((e) => got.has(`v${e.i}`)).length).toBeGreaterThanOrEqual(9);
    }
    await c.close();
  });

  it("deletes by ids, by filter and all; deleted rows never come back from queries; counts per namespace", async () => {
    const c = await fresh();
    const data = vectors(500, 64, 6);
    await c.upsert(
      "a",
      data.map((values, i) => ({ id: `v${i}`, values, metadata: { k: i % 5 } })),
    );
    await c.upsert(
      "b",
      data.slice(0, 10).map((values, i) => ({ id: `v${i}`, values })),
    );
    expect((await c.delete("a", { ids: ["v0", "v1", "nope"] })).deleted).toBe(3);
    expect((await c.delete("a", { filter: { k: 4 } })).deleted).toBe(100);
    await c.settled();
    expect(c.stats().namespaces).toEqual({ a: { vectorCount: 398 }, b: { vectorCount: 10 } });
    const res = await c.query("a", { vector: data[0]!, topK: 500 });
    expect(res.matches.some((m) => m.id === "v0" || Number(m.id.slice(1)) % 5 === 4)).toBe(false);
    expect(res.matches).toHaveLength(398);
    await c.delete("b", { deleteAll: true });
    await c.settled();
    expect(c.stats().namespaces).toEqual({ a: { vectorCount: 398 } });
    expect((await c.query("b", { vector: data[0]!, topK: 3 })).matches).toEqual([]);
    await c.close();
  });

  it("update replaces values and merges metadata; unknown id is E_NOT_FOUND", async () => {
    const c = await fresh();
    const [a, b] = vectors(2, 64, 7);
    await c.upsert("", [{ id: "x", values: a!, metadata: { keep: "yes", n: 1 } }]);
    await c.update("", { id: "x", setMetadata: { n: 2 } });
    await c.settled();
    expect(c.fetch("", ["x"])[0]).toEqual({ id: "x", values: a, metadata: { keep: "yes", n: 2 }, payload: null });
    const big = new Float32Array(3 * 64);
    big.set(b!, 64);
    await c.update("", { id: "x", values: big.subarray(64, 128) }); // a view into a larger buffer
    await c.settled();
    expect(c.fetch("", ["x"])[0]!.values).toEqual(b);
    await expectCode(() => c.update("", { id: "nope", setMetadata: { n: 1 } }), "E_NOT_FOUND", "id");
    await c.close();
  });

  it("restart: WAL replay without a checkpoint, then from a checkpoint plus later frames", async () => {
    const dir = join(root, "restart");
    const data = vectors(300, 64, 8);
    let c = await Collection.open(dir, { kernels, pool, dimension: 64 });
    await c.upsert(
      "n",
      data.slice(0, 200).map((values, i) => ({ id: `v${i}`, values, metadata: { i } })),
    );
    await c.delete("n", { ids: ["v3"] });
    // No close(): the process "stops" without a checkpoint; the WAL alone must restore it.
    c = await Collection.open(dir, { kernels, pool });
    expect(c.stats().namespaces).toEqual({ n: { vectorCount: 199 } });
    await c.checkpoint();
    await c.upsert(
      "n",
      data.slice(200).map((values, i) => ({ id: `v${200 + i}`, values, metadata: { i: 200 + i } })),
    );
    c = await Collection.open(dir, { kernels, pool });
    expect(c.stats().namespaces).toEqual({ n: { vectorCount: 299 } });
    expect(c.fetch("n", ["v250"])[0]).toEqual({ id: "v250", values: data[250], metadata: { i: 250 }, payload: null });
    expect(c.fetch("n", ["v3"])).toEqual([]);
    const res = await c.query("n", { vector: data[42]!, topK: 1, filter: { i: { $gte: 40, $lte: 45 } } });
    expect(res.matches[0]!.id).toBe("v42");
    await c.close();
  });

  it("compacts between checkpoints once the dead fraction is reached, so overwrites do not pile up rows until the WAL checkpoint", async () => {
    const dir = join(root, `c${n++}`);
    let c = await Collection.open(dir, { kernels, pool, dimension: 4 });
    const live = 1000;
    const rounds = 150; // 150k rows written, ~4.5 MB of WAL: far below the checkpoint's 256 MiB
    for (let r = 0; r < rounds; r++) {
      await c.upsert(
        "",
        Array.from({ length: live }, (_, i) => ({ id: `v${i}`, values: [1, r + 1, i + 1, 2], metadata: { r } })),
      );
    }
    await c.settled();
    await c.close();
    const cp = JSON.parse(readFileSync(join(dir, "checkpoint.json"), "utf8")) as { partitions: { namespace: string; rows: number }[] };
    const rows = cp.partitions.find((p) => p.namespace === "")!.rows;
    expect(rows).toBeGreaterThanOrEqual(live);
    // the dead-fraction trigger (COMPACT_DEAD_FRACTION, checked as overwrites are applied) bounds what piles up, not the 150k rows written
    expect(rows).toBeLessThanOrEqual(live + 131_072);
    // every id still reads back its last write
    c = await Collection.open(dir, { kernels, pool });
    const got = c.fetch(
      "",
      Array.from({ length: live }, (_, i) => `v${i}`),
    );
    expect(got).toHaveLength(live);
    for (const v of got) expect(v.metadata).toEqual({ r: rounds - 1 });
    expect(c.stats().totalVectorCount).toBe(live);
    await c.close();
  });

  it("compaction drops dead rows and keeps every answer", async () => {
    const c = await fresh();
    const data = vectors(3000, 64, 9);
    await c.upsert(
      "",
      data.map((values, i) => ({ id: `v${i}`, values, metadata: { i } })),
    );
    await c.delete("", { filter: { i: { $lt: 2000 } } });
    await c.settled();
    const q = data[2500]!;
    const before = await c.query("", { vector: q, topK: 10, includeMetadata: true });
    const stats = await c.compact("");
    expect(stats).toEqual({ before: 3000, after: 1000 });
    const after = await c.query("", { vector: q, topK: 10, includeMetadata: true });
    expect(after.matches).toEqual(before.matches);
    expect(after.plan).toBe("full");
    await c.close();
    const again = await Collection.open(c.dir, { kernels, pool });
    expect((await again.query("", { vector: q, topK: 10, includeMetadata: true })).matches).toEqual(before.matches);
    await again.close();
  });

  it("writes that land while compaction copies are kept: delete, delete + re-upsert, new ids", async () => {
    // durability "none" acknowledges after the write, so these writes land between compaction's chunks
    const c = await Collection.open(join(root, `c${n++}`), { kernels, pool, dimension: 64, durability: "none" });
    const data = vectors(20_000, 64, 12);
    for (let s = 0; s < data.length; s += 5000)
      await c.upsert(
        "",
        data.slice(s, s + 5000).map((values, i) => ({ id: `v${s + i}`, values })),
      );
    await c.delete("", { filter: undefined, ids: Array.from({ length: 8000 }, (_, i) => `v${i + 10_000}`) });
    const [a, b] = vectors(2, 64, 13);
    const compacting = c.compact("");
    // Issued right away: applied between compaction's chunks (or before it starts copying).
    await c.delete("", { ids: ["v1", "v2"] });
    await c.upsert("", [
      { id: "v1", values: a! },
      { id: "new", values: b! },
    ]);
    await c.upsert("", [{ id: "v3", values: b! }]);
    await compacting;
    await c.settled();
    expect(c.fetch("", ["v1", "v2", "v3", "new"]).map((v) => [v.id, Array.from(v.values)])).toEqual([
      ["v1", Array.from(a!)],
      ["v3", Array.from(b!)],
      ["new", Array.from(b!)],
    ]);
    expect(c.stats().totalVectorCount).toBe(20_000 - 8000 - 1 + 1);
    const top = await c.query("", { vector: a!, topK: 1 });
    expect(top.matches[0]!.id).toBe("v1");
    await c.close();
  });

  it("hamming collections store packed bits and score 1 - 2d/D", async () => {
    const c = await fresh({ dimension: 200, metric: "hamming" });
    const next = mulberry32(10);
    const rows = Array.from({ length: 100 }, () => Uint8Array.from({ length: 25 }, () => next() & 0xff));
    await c.upsert(
      "",
      rows.map((bits, i) => ({ id: `b${i}`, bits })),
    );
    await c.settled();
    const res = await c.query("", { bits: rows[17]!, topK: 2 });
    expect(res.matches[0]).toEqual({ id: "b17", score: 1 });
    expect(c.fetch("", ["b5"])[0]!.values).toEqual(rows[5]);
    await c.close();
  });

  it("rejects bad input with stable codes naming the field, and stores nothing", async () => {
    const c = await fresh({ dimension: 4 });
    await expectCode(() => c.upsert("", [{ id: "a", values: [1, 2, 3] }]), "E_DIMENSION", "vectors[0].values");
    await expectCode(
      () =>
        c.upsert("", [
          { id: "a", values: [1, 2, 3, 4] },
          { id: "b", values: [1, NaN, 3, 4] },
        ]),
      "E_NON_FINITE",
      "vectors[1].values[1]",
    );
    await expectCode(() => c.upsert("", [{ id: "", values: [1, 2, 3, 4] }]), "E_BAD_REQUEST", "vectors[0].id");
    await expectCode(
      () => c.upsert("", [{ id: "a", values: [1, 2, 3, 4], metadata: { x: { nested: 1 } } }]),
      "E_METADATA",
      "vectors[0].metadata.x",
    );
    await expectCode(() => c.query("", { vector: [1, 2, 3, 4], topK: 0 }), "E_TOP_K", "topK");
    await expectCode(() => c.query("", { vector: [1, 2, 3, 4], topK: 1, filter: { x: { $between: 1 } } }), "E_FILTER", "filter.x.$between");
    await c.settled();
    expect(c.stats().totalVectorCount).toBe(0);
    await c.close();
  });

  it("a collection open in another live process is E_CONFLICT; a dead owner's lock is taken over", async () => {
    const c = await fresh();
    await c.close();
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"]);
    writeFileSync(join(c.dir, "LOCK"), String(other.pid));
    await expectCode(() => Collection.open(c.dir, { kernels, pool }), "E_CONFLICT");
    other.kill("SIGKILL");
    await new Promise((r) => other.on("exit", r));
    const again = await Collection.open(c.dir, { kernels, pool });
    expect(readFileSync(join(c.dir, "LOCK"), "utf8")).toBe(String(process.pid));
    await again.close();
    expect(existsSync(join(c.dir, "LOCK"))).toBe(false);
  });

  it("writes become visible after acknowledgement, asynchronously, in order", async () => {
    const c = await fresh();
    c.trackVisibility = true;
    const data = vectors(200, 64, 11);
    await Promise.all(data.map((values, i) => c.upsert("", [{ id: `v${i}`, values }])));
    await c.settled();
    expect(c.stats().totalVectorCount).toBe(200);
    expect(c.visibleDelays).toHaveLength(200);
    for (const d of c.visibleDelays) expect(d).toBeGreaterThanOrEqual(0);
    await c.close();
  });
});
