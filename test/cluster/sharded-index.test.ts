/**
 * Sharded vector indexes (cluster/catalog.ts, shard-host.ts, sharded-index.ts) on a real 3-server
 * JetStream cluster, three svc "nodes" in this process (each its own NATS connection, NodeRegistry,
 * ClusterIndexes and data dir): an index created on one node, written through another and read through
 * the third answers exactly as one local Collection holding the same data; a node that stops hands its
 * shards to the others, which catch up from the stream; a deleted index goes from every node.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterIndexes } from "../../src/cluster/catalog.js";
import { NodeRegistry } from "../../src/cluster/nodes.js";
import { ShardedIndex } from "../../src/cluster/sharded-index.js";
import { shardOf, type ClusterIndexRecord } from "../../src/cluster/shards.js";
import { Collection, type Match } from "../../src/engine/collection.js";
import { checkSparse, sparseBytes } from "../../src/engine/sparse.js";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import type { VectorIndex } from "../../src/memory/vector-index.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const DIM = 64;
const N = 2000;
const T = "acme";
const root = mkdtempSync(join(tmpdir(), "svc-sharded-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1_000_000 });

interface Node {
  id: string;
  nc: NatsConnection;
  registry: NodeRegistry;
  indexes: ClusterIndexes;
  dir: string;
  stopped: boolean;
}

let cluster: NatsCluster;
const nodes: Node[] = [];
let reference: Collection;
/** Every node's expiry clock runs this far ahead of Date.now (the expiry test moves it). */
const clock = { offset: 0 };

const until = async (cond: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
};

async function startNode(i: number): Promise<Node> {
  const id = `n${i}`;
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const registry = await NodeRegistry.join(
    nc,
    { id, url: `http://127.0.0.1:${9000 + i}`, startedAt: Date.now() },
    { heartbeatMs: 200, ttlMs: 2000 },
  );
  const dir = join(root, id);
  const indexes = await ClusterIndexes.open({ nc, registry, dataDir: dir, kernels, pool, now: () => Date.now() + clock.offset });
  return { id, nc, registry, indexes, dir, stopped: false };
}

async function stopNode(n: Node): Promise<void> {
  if (n.stopped) return;
  n.stopped = true;
  await n.registry.leave();
  await n.indexes.close();
  await n.nc.close();
}

/** Deterministic pseudo-random vectors and metadata. */
function data(): Array<{ id: string; values: number[]; metadata: Record<string, unknown> }> {
  const rnd = fc.sample(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: DIM, maxLength: DIM }), {
    numRuns: N,
    seed: 23,
  });
  return rnd.map((values, i) => ({
    id: `v${i}`,
    values: values.map((x, j) => (j === 0 ? x + 0.001 : x)),
    metadata: { group: i % 5, tag: i % 2 === 0 ? "a" : "b", n: i },
  }));
}

const use = <R>(n: Node, fn: (ix: VectorIndex) => R | Promise<R>) => n.indexes.use(T, "vecs", fn);
/** Exact cosine on both sides: every row is a candidate and rescored (so the 1-bit stage cannot differ between 500 and 2,000 rows). */
const exact = { exact: true, candidates: N, rescore: N };

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-shards");
  for (let i = 0; i < 3; i++) nodes.push(await startNode(i));
  await until(() => nodes.every((n) => n.registry.live.length === 3));
  reference = await Collection.open(join(root, "reference"), { kernels, pool, dimension: DIM, durability: "none" });
}, 60_000);

afterAll(async () => {
  for (const n of nodes) await stopNode(n).catch(() => undefined);
  await reference?.close();
  await pool.close();
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("sharded vector indexes on three nodes", () => {
  let lastSeq = 0;
  const queries = fc
    .sample(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: DIM, maxLength: DIM }), { numRuns: 6, seed: 7 })
    .map((q) => q.map((x, j) => (j === 1 ? x + 0.01 : x)));
  const filters: unknown[] = [undefined, { group: { $in: [1, 3] } }, { tag: "a", n: { $gte: 500 } }];

  /**
   * Every query x filter through node `n` equals the reference's exact top-k: the same scores, best
   * first, with the same ids and metadata. Equal scores: one collection leaves their order open and the
   * merge orders them by id, so ids are compared as sets per score; at the k-th score a tie may be cut
   * differently, so there the ids must only be among the reference's at that score.
   */
  const sameTopK = async (n: Node) => {
    const byScore = (ms: Match[]) => {
      const m = new Map<number, string[]>();
      for (const x of ms)
        m.set(x.score, [...(m.get(x.score) ?? []), `${x.id}:${JSON.stringify(x.metadata)}:${JSON.stringify(x.values)}`].sort());
      return m;
    };
    for (const vector of queries) {
      for (const filter of filters) {
        const q = { vector, topK: 15, filter, includeMetadata: true, includeValues: true, ...exact };
        const want = (await reference.query("ns", { ...q, topK: 40 })).matches;
        const got = (await use(n, (ix) => ix.query("ns", q, { after: lastSeq }))).matches;
        expect(got.map((m) => m.score)).toEqual(want.slice(0, 15).map((m) => m.score));
        expect(got).toEqual([...got].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1)));
        const w = byScore(want);
        const last = got.at(-1)!.score;
        for (const [score, ids] of byScore(got)) {
          if (score === last) expect(w.get(score)).toEqual(expect.arrayContaining(ids));
          else expect(ids).toEqual(w.get(score));
        }
      }
    }
  };

  it("creates an index once across nodes (409 on a second create anywhere); every node lists it", async () => {
    const r = await nodes[0]!.indexes.create(T, { name: "vecs", dimension: DIM });
    expect(r).toMatchObject({ name: "vecs", dimension: DIM, metric: "cosine" });
    await expect(nodes[1]!.indexes.create(T, { name: "vecs", dimension: DIM })).rejects.toMatchObject({
      code: "E_CONFLICT",
      field: "name",
    });
    await expect(nodes[2]!.indexes.create(T, { name: "bad", dimension: DIM, spec: { shards: 65 } })).rejects.toMatchObject({
      code: "E_BAD_REQUEST",
      field: "spec.shards",
    });
    await until(() =>
      nodes.every(
        (n) =>
          n.indexes
            .list(T)
            .map((x) => x.name)
            .join() === "vecs",
      ),
    );
    expect((await nodes[2]!.indexes.describe(T, "vecs")).name).toBe("vecs");
    // 4 shards x 2 replicas over 3 nodes: every shard is open on exactly 2 nodes
    await until(() => nodes.reduce((k, n) => k + n.indexes.shards.shards.length, 0) === 8);
  }, 30_000);

  it("upserts 2,000 vectors through node 2; queries through node 3 match one local collection exactly", async () => {
    const vectors = data();
    for (let i = 0; i < N; i += 500) {
      const batch = vectors.slice(i, i + 500);
      const w = await use(nodes[1]!, (ix) => ix.upsert("ns", batch));
      expect(w.upsertedCount).toBe(batch.length);
      expect(w.seq).toBeGreaterThan(lastSeq);
      lastSeq = w.seq!;
      await reference.upsert("ns", batch);
    }
    await reference.settled();
    const stats = await use(nodes[2]!, (ix) => ix.stats(undefined, { after: lastSeq }));
    expect(stats).toEqual(reference.stats());
    expect(stats.namespaces).toEqual({ ns: { vectorCount: N } });
    expect(await use(nodes[2]!, (ix) => ix.count("ns", { group: 2 }, { after: lastSeq }))).toBe(reference.count("ns", { group: 2 }));
    await sameTopK(nodes[2]!);
    // by the id of a stored vector
    const want = await reference.query("ns", { id: "v17", topK: 5, ...exact });
    const got = await use(nodes[0]!, (ix) => ix.query("ns", { id: "v17", topK: 5, ...exact }, { after: lastSeq }));
    expect(got.matches).toEqual(want.matches);
    expect(got.scanned).toBe(N);
  }, 60_000);

  it("fetch, update and delete by ids and by filter agree with the local collection", async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `v${i * 31}`).concat(["missing"]);
    const fetched = await use(nodes[0]!, (ix) => ix.fetch("ns", ids, { after: lastSeq }));
    expect(fetched.map((v) => ({ id: v.id, values: Array.from(v.values), metadata: v.metadata }))).toEqual(
      reference.fetch("ns", ids).map((v) => ({ id: v.id, values: Array.from(v.values), metadata: v.metadata })),
    );

    for (let i = 0; i < 10; i++) {
      const req = { id: `v${i * 7}`, values: Array.from({ length: DIM }, (_, j) => (j === i ? 1 : 0.01)), setMetadata: { group: 9 } };
      lastSeq = Math.max(lastSeq, (await use(nodes[2]!, (ix) => ix.update("ns", req))).seq!);
      await reference.update("ns", req);
    }
    const del = Array.from({ length: 100 }, (_, i) => `v${1000 + i}`);
    const d1 = await use(nodes[0]!, (ix) => ix.delete("ns", { ids: del }));
    lastSeq = Math.max(lastSeq, d1.seq!);
    await reference.delete("ns", { ids: del });
    const d2 = await use(nodes[1]!, (ix) => ix.delete("ns", { filter: { group: 4 } }));
    lastSeq = Math.max(lastSeq, d2.seq!);
    const r2 = await reference.delete("ns", { filter: { group: 4 } });
    expect(d2.deleted).toBe(r2.deleted);
    await reference.settled();

    expect((await use(nodes[2]!, (ix) => ix.stats(undefined, { after: lastSeq }))).namespaces).toEqual(reference.stats().namespaces);
    expect((await use(nodes[1]!, (ix) => ix.stats({ group: 9 }, { after: lastSeq }))).totalVectorCount).toBe(
      reference.stats({ group: 9 }).totalVectorCount,
    );
    const after = await use(nodes[1]!, (ix) => ix.fetch("ns", ["v7", "v1000", "v4"], { after: lastSeq }));
    expect(after.map((v) => [v.id, v.metadata.group])).toEqual([["v7", 9]]);
    await sameTopK(nodes[0]!);
  }, 60_000);

  it("lists ids page by page and updates by filter exactly as the local collection", async () => {
    for (const [prefix, limit] of [
      ["", 97],
      ["v1", 13],
      ["v19", 4],
      ["nope", 5],
    ] as const) {
      const got: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const page = await use(nodes[pages % 3]!, (ix) => ix.list("ns", { prefix, after, limit }, { after: lastSeq }));
        expect(page.ids.length).toBeLessThanOrEqual(limit);
        got.push(...page.ids);
        if (!page.more) break;
        after = page.ids.at(-1);
      }
      const want = reference
        .ids("ns")
        .filter((id) => id.startsWith(prefix))
        .sort();
      expect(got).toEqual(want);
    }
    const filtered = await use(nodes[1]!, (ix) => ix.list("ns", { limit: 1000, filter: { group: 9 } }, { after: lastSeq }));
    expect(filtered.ids).toEqual(reference.ids("ns", { group: 9 }).sort());

    const dry = await use(nodes[0]!, (ix) => ix.updateWhere("ns", { filter: { group: 2 }, setMetadata: { seen: true }, dryRun: true }));
    expect(dry.matched).toBe(reference.count("ns", { group: 2 }));
    const w = await use(nodes[2]!, (ix) => ix.updateWhere("ns", { filter: { group: 2 }, setMetadata: { seen: true } }));
    lastSeq = Math.max(lastSeq, w.seq!);
    expect(w.matched).toBe((await reference.updateWhere("ns", { filter: { group: 2 }, setMetadata: { seen: true } })).matched);
    await reference.settled();
    expect(await use(nodes[1]!, (ix) => ix.count("ns", { seen: true }, { after: lastSeq }))).toBe(reference.count("ns", { seen: true }));
    await expect(
      use(nodes[0]!, (ix) => ix.updateWhere("ns", { filter: { group: 1 }, setMetadata: { bad: { nested: 1 } } })),
    ).rejects.toMatchObject({ code: "E_METADATA" });

    // sparse values: a cosine index refuses them before anything is logged (Pinecone: dotproduct and sparse indexes only)
    const sparse = data()
      .slice(0, 40)
      .map((v, i) => ({
        id: `sp${i}`,
        values: v.values,
        payload: sparseBytes(checkSparse({ indices: [i % 7, 100 + i], values: [1 + (i % 3), 0.5] }, "s")),
      }));
    await expect(use(nodes[0]!, (ix) => ix.upsert("sp", sparse))).rejects.toMatchObject({
      code: "E_BAD_REQUEST",
      field: "vectors[0].sparseValues",
    });
    // the whole batch is judged before any shard writes: the plain vectors of a batch with one sparse vector are not written either
    const mixed = [
      ...data()
        .slice(0, 12)
        .map((v, i) => ({ ...v, id: `mx${i}` })),
      { ...sparse[3]!, id: "mx-sparse" },
    ];
    await expect(use(nodes[1]!, (ix) => ix.upsert("sp", mixed))).rejects.toMatchObject({
      code: "E_BAD_REQUEST",
      field: "vectors[12].sparseValues",
    });
    await expect(
      use(nodes[1]!, (ix) => ix.query("sp", { vector: queries[0]!, sparseVector: { indices: [2], values: [1] }, topK: 3 })),
    ).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "sparseVector" });
    expect(await use(nodes[2]!, (ix) => ix.count("sp", undefined, { after: lastSeq }))).toBe(0);
    // sparse indexes are served in cluster mode too (test/cluster/parity.test.ts compares them with one node): created and dropped here
    expect(await nodes[1]!.indexes.create(T, { name: "sparse", dimension: undefined, vectorType: "sparse" })).toMatchObject({
      vectorType: "sparse",
      dimension: 0,
    });
    await nodes[1]!.indexes.delete(T, "sparse");
    // on a dotproduct index sparse values travel as the row's payload to the shards; a hybrid query (dense dot + sparse dot) merges like a dense one
    await nodes[0]!.indexes.create(T, { name: "dots", dimension: DIM, metric: "dotproduct", spec: { shards: 3 } });
    const dotSeq = (await nodes[0]!.indexes.use(T, "dots", (ix) => ix.upsert("sp", sparse))).seq!;
    const hq = { vector: queries[0]!, sparseVector: { indices: [2, 3, 105], values: [1, 2, 4] }, topK: 10, includeMetadata: true }; // values: msgpack drops the sign of -0
    const q0 = queries[0]!.map(Math.fround);
    /** Brute force: dense dot + the sparse dot of row i's {i % 7: 1 + i % 3, 100 + i: 0.5} with the query's {2: 1, 3: 2, 105: 4}. */
    const sparseDotOf = (i: number) =>
      (i % 7 === 2 ? 1 + (i % 3) : 0) + (i % 7 === 3 ? 2 * (1 + (i % 3)) : 0) + (100 + i === 105 ? 0.5 * 4 : 0);
    const dotRef = sparse
      .map((v, i) => ({ id: v.id, score: (v.values as number[]).reduce((s, x, j) => s + Math.fround(x) * q0[j]!, 0) + sparseDotOf(i) }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    const hybrid = await nodes[1]!.indexes.use(T, "dots", (ix) => ix.query("sp", hq, { after: dotSeq }));
    expect(hybrid.matches.map((m) => m.id)).toEqual(dotRef.slice(0, 10).map((r) => r.id));
    hybrid.matches.forEach((m, i) => expect(m.score).toBeCloseTo(dotRef[i]!.score, 4));
    expect(Array.from((await nodes[2]!.indexes.use(T, "dots", (ix) => ix.fetch("sp", ["sp5"], { after: dotSeq })))[0]!.payload!)).toEqual(
      Array.from(sparse[5]!.payload),
    );
    await nodes[0]!.indexes.delete(T, "dots");
    expect(await use(nodes[1]!, (ix) => ix.count("ns", { bad: { $exists: true } }, { after: lastSeq }))).toBe(0);
  }, 60_000);

  it("answers with the same 4xx as one node, naming the caller's field", async () => {
    const vectors = data().slice(0, 10);
    vectors[7] = { ...vectors[7]!, values: vectors[7]!.values.slice(0, 3) };
    const err = await use(nodes[1]!, (ix) => ix.upsert("ns", vectors)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect(err).toMatchObject({ code: "E_DIMENSION", field: "vectors[7].values" });
    expect((err as Error).message).toContain("vectors[7].values");
    // the whole batch failed, as on one collection: no shard wrote its part (v4 and v9 were deleted above and stay deleted)
    expect(await use(nodes[0]!, (ix) => ix.count("ns", undefined, { after: lastSeq }))).toBe(reference.count("ns"));
    expect(await use(nodes[0]!, (ix) => ix.fetch("ns", ["v4", "v9"], { after: lastSeq }))).toEqual([]);
    await expect(use(nodes[2]!, (ix) => ix.update("ns", { id: "nope", setMetadata: { a: 1 } }))).rejects.toMatchObject({
      code: "E_NOT_FOUND",
      field: "id",
    });
    await expect(
      use(nodes[0]!, (ix) => ix.query("ns", { vector: queries[0]!, topK: 5, filter: { n: { $bogus: 1 } } })),
    ).rejects.toMatchObject({ code: "E_FILTER", field: "filter.n.$bogus" });
    await expect(use(nodes[0]!, (ix) => ix.query("ns", { id: "nope", topK: 5 }))).rejects.toMatchObject({
      code: "E_NOT_FOUND",
      field: "id",
    });
    await expect(nodes[0]!.indexes.use(T, "nope", () => 1)).rejects.toMatchObject({ code: "E_NOT_FOUND", field: "name" });
  }, 30_000);

  it("expired vectors (svc_expires_at) are hidden at once on every shard, and each shard's first owner sweeps them", async () => {
    const at = Date.now() + 600_000;
    const vectors = data()
      .slice(0, 40)
      .map((v, i) => ({ ...v, metadata: { ...v.metadata, ...(i % 2 === 0 ? { svc_expires_at: at } : {}) } }));
    const seq = (await use(nodes[1]!, (ix) => ix.upsert("exp", vectors))).seq!;
    const ids = vectors.map((v) => v.id);
    const q = { vector: queries[0]!, topK: 100 };
    expect((await use(nodes[0]!, (ix) => ix.query("exp", q, { after: seq }))).matches).toHaveLength(40);
    clock.offset = 700_000;
    const live = ids.filter((_, i) => i % 2 === 1).sort();
    expect((await use(nodes[0]!, (ix) => ix.query("exp", q, { after: seq }))).matches.map((m) => m.id).sort()).toEqual(live);
    expect((await use(nodes[2]!, (ix) => ix.fetch("exp", ids, { after: seq }))).map((v) => v.id).sort()).toEqual(live);
    expect(await use(nodes[2]!, (ix) => ix.count("exp", undefined, { after: seq }))).toBe(40); // hidden, not yet deleted
    const per = await Promise.all(nodes.map((n) => n.indexes.shards.sweep()));
    const swept = per.reduce((a, b) => a + b, 0);
    expect(swept).toBe(20); // one deleter per shard
    const after = await use(nodes[1]!, (ix) => ix.upsert("exp", [vectors[1]!])); // a write whose seq follows the sweeps' deletes on every shard it touches
    for (const n of nodes) {
      await until(() =>
        [...n.indexes.shards.shards].every((k) => n.indexes.shards.replica(k)!.count("exp", { svc_expires_at: { $exists: true } }) === 0),
      );
    }
    expect(await use(nodes[0]!, (ix) => ix.count("exp", undefined, { after: after.seq }))).toBe(20);
    // the reference gets the same namespace history, so later stats compare equal
    await use(nodes[0]!, (ix) => ix.delete("exp", { deleteAll: true }));
    await reference.upsert("exp", vectors);
    await reference.delete("exp", { deleteAll: true });
    clock.offset = 0;
  }, 30_000);

  it("splits upserts and fetches that exceed NATS max_payload into several requests per shard", async () => {
    const wide = 1024;
    await nodes[2]!.indexes.create(T, { name: "wide", dimension: wide, spec: { shards: 2 } });
    // 600 x 1024 float32 = 2.4 MiB: over 1 MiB per shard, so each shard's part goes as several requests
    const vectors = Array.from({ length: 600 }, (_, i) => ({
      id: `w${i}`,
      values: Array.from({ length: wide }, (_, j) => Math.sin(i * 7 + j) + (j === 0 ? 2 : 0)),
      metadata: { i },
    }));
    const w = await nodes[0]!.indexes.use(T, "wide", (ix) => ix.upsert("", vectors));
    expect(w.upsertedCount).toBe(600);
    const ids = vectors.map((v) => v.id);
    const got = await nodes[1]!.indexes.use(T, "wide", (ix) => ix.fetch("", ids, { after: w.seq }));
    expect(got.map((v) => v.id)).toEqual(ids);
    expect(
      got.every(
        (v, i) => v.metadata.i === i && v.values.length === wide && Math.abs(v.values[5]! - Math.fround(Math.sin(i * 7 + 5))) === 0,
      ),
    ).toBe(true);
    expect((await nodes[1]!.indexes.use(T, "wide", (ix) => ix.stats(undefined, { after: w.seq }))).totalVectorCount).toBe(600);
    await nodes[1]!.indexes.delete(T, "wide");
  }, 60_000);

  it("a euclidean index: every shard scores squared distances and the merge keeps the smallest first (the brute-force top-k)", async () => {
    await nodes[0]!.indexes.create(T, { name: "eucl", dimension: DIM, metric: "euclidean", spec: { shards: 3 } });
    const vectors = Array.from({ length: 300 }, (_, i) => ({
      id: `e${i}`,
      values: Array.from({ length: DIM }, (_, j) => Math.fround((0.5 + (i % 6) / 2) * Math.sin(i * 3.7 + j * 1.3))),
    }));
    const w = await nodes[1]!.indexes.use(T, "eucl", (ix) => ix.upsert("", vectors));
    expect((await nodes[2]!.indexes.use(T, "eucl", (ix) => ix.stats(undefined, { after: w.seq }))).metric).toBe("euclidean");
    for (const q of queries.slice(0, 3)) {
      const truth = vectors
        .map((v) => ({ id: v.id, d: v.values.reduce((s, x, j) => s + (x - Math.fround(q[j]!)) ** 2, 0) }))
        .sort((a, b) => a.d - b.d);
      for (const opts of [{ exact: true }, {}]) {
        const got = (await nodes[2]!.indexes.use(T, "eucl", (ix) => ix.query("", { vector: q, topK: 10, ...opts }, { after: w.seq })))
          .matches;
        expect(got.map((m) => m.id)).toEqual(truth.slice(0, 10).map((t) => t.id));
        got.forEach((m, i) => expect(m.score).toBeCloseTo(truth[i]!.d, 4));
      }
    }
    await nodes[0]!.indexes.delete(T, "eucl");
  }, 60_000);

  it("spreads ids evenly over the shards", () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[shardOf(`v${i}`, 4)]!++;
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
    const evens = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i += 2) evens[shardOf(`v${i}`, 4)]!++;
    expect(evens.every((c) => c > 300)).toBe(true);
  });

  it("a shard no node serves is 503 E_SHARD_UNAVAILABLE with a retry hint", async () => {
    const ghost: ClusterIndexRecord = {
      ...(await nodes[0]!.indexes.describe(T, "vecs")),
      tenant: T,
      shards: 2,
      replicas: 2,
      incarnation: "000000000000",
    };
    const ix = new ShardedIndex(nodes[0]!.nc, ghost, { unavailableAfterMs: 300 });
    const err = await ix.count("ns").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "E_SHARD_UNAVAILABLE", details: { retryAfterSeconds: 2 } });
    expect((err as SvcError).status).toBe(503);
  });

  it("keeps answering when a node stops: its shards move to the others, which catch up from the stream", async () => {
    const gone = nodes[2]!;
    const before = gone.indexes.shards.shards.length;
    expect(before).toBeGreaterThan(0);
    await stopNode(gone);
    // the other replica of every shard still answers at once
    await sameTopK(nodes[0]!);
    // two live nodes, two replicas: both now hold all four shards
    await until(() => nodes[0]!.indexes.shards.shards.length === 4 && nodes[1]!.indexes.shards.shards.length === 4);
    // a write and a read through the survivors, then the same answers as one collection
    const more = data()
      .slice(0, 50)
      .map((v) => ({ ...v, id: `w${v.id}` }));
    lastSeq = Math.max(lastSeq, (await use(nodes[1]!, (ix) => ix.upsert("ns", more))).seq!);
    await reference.upsert("ns", more);
    await reference.settled();
    await sameTopK(nodes[0]!);
    await sameTopK(nodes[1]!);
    expect((await use(nodes[0]!, (ix) => ix.stats(undefined, { after: lastSeq }))).namespaces).toEqual(reference.stats().namespaces);
  }, 60_000);

  it("a restarted node takes its shards back: each replica resumes from its files and catches up from the stream", async () => {
    // its replicas' files stayed when it stopped (close keeps them; only a shard given up is removed)
    expect(existsSync(join(nodes[2]!.dir, "cluster", "shards", T, "vecs"))).toBe(true);
    const back = await startNode(2);
    nodes[2] = back;
    await until(() => nodes.every((n) => n.registry.live.length === 3));
    const incarnation = nodes[0]!.indexes.shards.shards[0]!.split(".")[2]!; // placement keys: <tenant>.<index>.<incarnation>.<shard>
    const key = (s: number) => `${T}.vecs.${incarnation}.${s}`;
    const mine = [0, 1, 2, 3].filter((s) => back.registry.owners(key(s), 2).includes("n2"));
    await until(() => back.indexes.shards.shards.length === mine.length);
    const all = reference.ids("ns");
    for (const s of mine) {
      const c = back.indexes.shards.replica(key(s))!;
      await c.settled();
      const want = all.filter((id) => shardOf(id, 4) === s).sort();
      expect(c.ids("ns").sort()).toEqual(want);
    }
    // and the nodes that held its shards meanwhile gave back what they no longer own
    await until(() => nodes.reduce((k, n) => k + n.indexes.shards.shards.length, 0) === 8);
  }, 60_000);

  it("deleting the index drops it from every node and removes the shards' files", async () => {
    await nodes[1]!.indexes.configure(T, "vecs", { deletionProtection: "enabled" });
    await expect(nodes[0]!.indexes.delete(T, "vecs")).rejects.toMatchObject({ code: "E_DELETION_PROTECTED" });
    await nodes[0]!.indexes.configure(T, "vecs", { deletionProtection: "disabled", tags: { team: "x" } });
    expect((await nodes[1]!.indexes.describe(T, "vecs")).tags).toEqual({ team: "x" });
    await nodes[0]!.indexes.delete(T, "vecs");
    const live = nodes.filter((n) => !n.stopped);
    // every live node drops it from its catalog, closes its shards and removes their files
    await until(() =>
      live.every(
        (n) => n.indexes.list(T).length === 0 && n.indexes.shards.shards.length === 0 && !existsSync(join(n.dir, "cluster", "shards", T)),
      ),
    );
    await expect(nodes[1]!.indexes.use(T, "vecs", () => 1)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    // a new index of the same name starts empty (a new incarnation: the old frames are never seen)
    await nodes[1]!.indexes.create(T, { name: "vecs", dimension: DIM, spec: { shards: 2 } });
    expect((await use(nodes[0]!, (ix) => ix.stats())).totalVectorCount).toBe(0);
  }, 30_000);
});
