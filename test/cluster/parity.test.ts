/**
 * Pinecone parity in cluster mode (issue 33 items 3 and 4) on a real 3-node svc cluster (3 NATS
 * servers, `svc serve --cluster` processes), through the official Pinecone client.
 * Backups: a backup taken while upserts go on (through every node, shard snapshots and purges
 * running under small thresholds) holds every write acknowledged before the backup was asked for
 * and none sent after it was created or acknowledged after it was Ready; it is listed and described
 * from every node; restored into a new index it answers the brute-force top-k of exactly that state.
 * Plus the 4xx: a deleted index, a taken name, a deleted backup.
 * Sparse: a sparse-dense dotproduct index and a sparse-only index answer the same upserts, fetches
 * and queries in the cluster as on one node (an in-process server here), scores to float precision.
 */
import { Pinecone } from "@pinecone-database/pinecone";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/app/start-server.js";
import { mulberry32 as uint32s } from "../../src/kernels/random.js";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

const DIM = 16;
const BATCH = 20;

/** Uniform in [0, 1), seeded (src/kernels/random.ts mulberry32). */
function mulberry32(seed: number): () => number {
  const next = uint32s(seed);
  return () => next() / 4294967296;
}
const f32 = (v: number[]) => Array.from(Float32Array.from(v));
const cosine = (a: number[], b: number[]) => {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return d / Math.sqrt(na * nb);
};

interface Batch {
  k: number;
  records: Array<{ id: string; values: number[]; metadata: { batch: number } }>;
  sentAt: number;
  ackedAt?: number;
}

describe("Pinecone parity in cluster mode", () => {
  let c: SvcCluster;
  const saved = { min: process.env.SVC_SNAPSHOT_MIN_BYTES, check: process.env.SVC_SNAPSHOT_CHECK_MS };
  const pcOn = (node: number) => new Pinecone({ apiKey: c.adminKey, controllerHostUrl: `${c.urls[node]}/v1`, maxRetries: 0 });

  beforeAll(async () => {
    // small thresholds: shards snapshot (and purge below) while the test writes, so copies start from a snapshot plus a tail
    process.env.SVC_SNAPSHOT_MIN_BYTES = String(16 << 10);
    process.env.SVC_SNAPSHOT_CHECK_MS = "300";
    c = await startSvcCluster(3);
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
    for (const [k, v] of [
      ["SVC_SNAPSHOT_MIN_BYTES", saved.min],
      ["SVC_SNAPSHOT_CHECK_MS", saved.check],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  });

  it("a backup taken while upserts go on holds exactly the writes before its point, and restores into a new index with the same top-k", async () => {
    await pcOn(0).createIndex({
      name: "films",
      dimension: DIM,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
      timeout: 20_000,
    });
    const on = (node: number, name = "films") => pcOn(node).index({ host: `${c.urls[node]}/v1/indexes/${name}` });
    const next = mulberry32(33);
    const vec = () => Array.from({ length: DIM }, () => next() * 2 - 1);
    const batches: Batch[] = [];
    let stop = false;
    // the writer: one batch of new ids at a time, through nodes 0, 1, 2 in turn, each acknowledged before the next is sent
    let writeError: unknown = null;
    const writer = (async () => {
      for (let k = 0; !stop && k < 2000; k++) {
        const b: Batch = {
          k,
          records: Array.from({ length: BATCH }, (_, j) => ({ id: `b${k}-${j}`, values: vec(), metadata: { batch: k } })),
          sentAt: Date.now(),
        };
        batches.push(b);
        await on(k % 3).upsert({ records: b.records });
        b.ackedAt = Date.now();
      }
    })().catch((e: unknown) => {
      writeError = e; // a failed test stops the cluster under it: never an unhandled rejection
    });
    await until(
      "40 batches acknowledged",
      async () => (batches.filter((b) => b.ackedAt !== undefined).length >= 40 ? true : undefined),
      60_000,
    );

    const askedAt = Date.now();
    const backup = await pcOn(1).createBackup({ indexName: "films", name: "mid-write", description: "while upserts go on" });
    const answeredAt = Date.now();
    expect(backup).toMatchObject({ sourceIndexName: "films", name: "mid-write", dimension: DIM, metric: "cosine" });
    const done = await until(
      "backup Ready",
      async () => {
        const b = await callNode(c.urls[2]!, "GET", `/v1/backups/${backup.backupId}`, undefined, c.adminKey);
        return b.body?.status === "Initializing" ? undefined : b.body;
      },
      60_000,
    );
    const readyAt = Date.now();
    expect({ status: done.status, error: done.error }).toEqual({ status: "Ready", error: undefined });
    const ready = await pcOn(2).describeBackup(backup.backupId);
    // writes go on a little after the backup is Ready, then stop
    await until("5 more batches", async () => (batches.filter((b) => (b.ackedAt ?? 0) > readyAt).length >= 5 ? true : undefined), 30_000);
    stop = true;
    await writer;
    expect(writeError).toBe(null);

    // every node lists and describes it (the records are cluster-wide)
    for (const i of [0, 1, 2]) {
      expect((await pcOn(i).listBackups({ indexName: "films" })).data!.map((b) => b.backupId)).toEqual([backup.backupId]);
      expect(await pcOn(i).describeBackup(backup.backupId)).toMatchObject({ backupId: backup.backupId, status: "Ready" });
    }

    const restored = await pcOn(2).createIndexFromBackup({ backupId: backup.backupId, name: "films-restored" });
    expect(restored.indexId).toBe("films-restored");
    expect(await pcOn(2).describeRestoreJob(restored.restoreJobId)).toMatchObject({
      status: "Completed",
      targetIndexName: "films-restored",
    });
    expect(await pcOn(0).describeIndex("films-restored")).toMatchObject({ dimension: DIM, metric: "cosine" });

    // What the restored index holds, read through node 0: every id ever written, fetched.
    const all = batches.flatMap((b) => b.records);
    const held = new Map<string, number[]>();
    for (let i = 0; i < all.length; i += 100) {
      const ids = all.slice(i, i + 100).map((r) => r.id);
      const got = await until("fetch", () => on(0, "films-restored").fetch({ ids }), 20_000);
      for (const [id, r] of Object.entries(got.records)) held.set(id, r.values!);
    }
    const before = batches.filter((b) => b.ackedAt !== undefined && b.ackedAt < askedAt);
    const after = batches.filter((b) => b.sentAt > answeredAt || (b.ackedAt ?? Infinity) > readyAt);
    console.log(
      `backup: ${before.length} batches acked before it, ${after.length} after, ${held.size} vectors in the copy, Ready ${readyAt - answeredAt} ms after create answered (create took ${answeredAt - askedAt} ms)`,
    );
    expect(before.length).toBeGreaterThanOrEqual(40);
    expect(after.length).toBeGreaterThanOrEqual(5);
    for (const b of before) for (const r of b.records) expect(held.get(r.id), r.id).toEqual(f32(r.values));
    for (const b of after) for (const r of b.records) expect(held.has(r.id), r.id).toBe(false);
    // the batches in flight around the cut: each vector either absent or whole
    for (const r of all) if (held.has(r.id)) expect(held.get(r.id)).toEqual(f32(r.values));
    expect(ready.recordCount).toBe(held.size);
    expect((await on(1, "films-restored").describeIndexStats()).totalRecordCount).toBe(held.size);

    // the restored index answers the brute-force top-k of exactly that state, through every node
    const state = all.filter((r) => held.has(r.id));
    for (let t = 0; t < 5; t++) {
      const q = vec();
      const want = state
        .map((r) => ({ id: r.id, score: cosine(f32(r.values), f32(q)) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10);
      const got = await on(t % 3, "films-restored").query({ vector: q, topK: 10 });
      expect(got.matches.map((m) => m.id)).toEqual(want.map((m) => m.id));
      got.matches.forEach((m, i) => expect(m.score).toBeCloseTo(want[i]!.score, 4));
    }

    // the restored index takes writes like any other
    await on(1, "films-restored").upsert({ records: [{ id: "new-after-restore", values: vec() }] });
    expect(Object.keys((await on(2, "films-restored").fetch({ ids: ["new-after-restore"] })).records)).toEqual(["new-after-restore"]);

    // a taken name is 409, nothing changes; a deleted backup is 404 on every node
    const taken = await callNode(c.urls[0]!, "POST", `/v1/backups/${backup.backupId}/create-index`, { name: "films" }, c.adminKey);
    expect(taken.status).toBe(409);
    await pcOn(0).deleteBackup(backup.backupId);
    for (const i of [0, 1, 2])
      expect((await callNode(c.urls[i]!, "GET", `/v1/backups/${backup.backupId}`, undefined, c.adminKey)).status).toBe(404);
  }, 240_000);

  it("a backup of a deleted index is 404; of a missing backup 404; a malformed id 400", async () => {
    await pcOn(0).createIndex({
      name: "gone",
      dimension: DIM,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
    });
    await pcOn(0).deleteIndex("gone");
    const r = await callNode(c.urls[1]!, "POST", "/v1/indexes/gone/backups", {}, c.adminKey);
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: "E_NOT_FOUND", field: "name" });
    const missing = await callNode(c.urls[2]!, "GET", "/v1/backups/00000000-0000-4000-8000-000000000000", undefined, c.adminKey);
    expect(missing.status).toBe(404);
    const bad = await callNode(c.urls[2]!, "GET", "/v1/backups/not-an-id", undefined, c.adminKey);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "backup_id" });
  }, 60_000);
  it("sparse-dense and sparse-only indexes: upserts, fetches and queries answer as on one node", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-parity-one-"));
    const one = await startServer({ dataDir: dir, port: 0, directorySeed: null });
    try {
      const key = (await one.keys.create({ tenant: "parity" })).key;
      const single = new Pinecone({ apiKey: key, controllerHostUrl: `${one.url}/v1`, maxRetries: 0 });
      const SPEC = { serverless: { cloud: "aws" as const, region: "us-east-1" } };
      const next = mulberry32(3303);
      const rand = () => next();
      type Sparse = { indices: number[]; values: number[] };
      const sparse = (n: number): Sparse => {
        const m = new Map<number, number>();
        while (m.size < n) m.set(Math.floor(500 * rand() ** 3), Math.fround(0.05 + 3 * rand()));
        const indices = [...m.keys()].sort((a, b) => a - b);
        return { indices, values: indices.map((i) => m.get(i)!) };
      };
      const D = 8;
      const dense = () => Array.from({ length: D }, () => rand() * 2 - 1);
      const hybrid = Array.from({ length: 300 }, (_, i) => ({
        id: `h${i}`,
        values: dense(),
        sparseValues: sparse(3 + Math.floor(20 * rand())),
        metadata: { part: i % 3 },
      }));
      const lexical = Array.from({ length: 300 }, (_, i) => ({
        id: `s${i}`,
        sparseValues: sparse(3 + Math.floor(20 * rand())),
        metadata: { part: i % 3 },
      }));
      const nodes = [pcOn(0), pcOn(1), pcOn(2)];
      for (const pc of [single, nodes[0]!]) {
        await pc.createIndex({ name: "hybrid", dimension: D, metric: "dotproduct", spec: SPEC, waitUntilReady: true });
        await pc.createIndex({ name: "lexical", vectorType: "sparse", metric: "dotproduct", spec: SPEC, waitUntilReady: true });
      }
      const ixOne = (name: string) => single.index({ host: `${one.url}/v1/indexes/${name}` });
      const ixAt = (node: number, name: string) => nodes[node]!.index({ host: `${c.urls[node]}/v1/indexes/${name}` });
      for (let i = 0; i < 300; i += 100) {
        await ixOne("hybrid").upsert({ records: hybrid.slice(i, i + 100) });
        await ixAt((i / 100) % 3, "hybrid").upsert({ records: hybrid.slice(i, i + 100) });
        await ixOne("lexical").upsert({ records: lexical.slice(i, i + 100) });
        await ixAt((i / 100 + 1) % 3, "lexical").upsert({ records: lexical.slice(i, i + 100) });
      }
      expect(await nodes[1]!.describeIndex("lexical")).toMatchObject({ vectorType: "sparse", metric: "dotproduct" });
      for (const name of ["hybrid", "lexical"]) {
        const a = await ixOne(name).describeIndexStats();
        const b = await ixAt(2, name).describeIndexStats();
        expect({ n: b.totalRecordCount, d: b.dimension }).toEqual({ n: a.totalRecordCount, d: a.dimension });
      }
      const sameFetch = async (name: string, ids: string[]) => {
        const a = (await ixOne(name).fetch({ ids })).records;
        const b = (await ixAt(1, name).fetch({ ids })).records;
        expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
        for (const id of ids)
          expect({ values: b[id]!.values, sparse: b[id]!.sparseValues }).toEqual({ values: a[id]!.values, sparse: a[id]!.sparseValues });
      };
      await sameFetch("hybrid", ["h0", "h17", "h299"]);
      await sameFetch("lexical", ["s0", "s42", "s299"]);
      let compared = 0;
      for (let t = 0; t < 8; t++) {
        const filter = t % 2 === 0 ? undefined : { part: { $ne: 1 } };
        const q = { vector: dense(), sparseVector: sparse(6), topK: 10, ...(filter ? { filter } : {}) };
        const a = await ixOne("hybrid").query(q);
        const b = await ixAt(t % 3, "hybrid").query(q);
        expect(b.matches.map((m) => m.id)).toEqual(a.matches.map((m) => m.id));
        b.matches.forEach((m, i) => expect(m.score).toBeCloseTo(a.matches[i]!.score!, 4));
        const sq = { sparseVector: sparse(8), topK: 10, ...(filter ? { filter } : {}) };
        const sa = await ixOne("lexical").query(sq as never);
        const sb = await ixAt((t + 1) % 3, "lexical").query(sq as never);
        expect(sb.matches.map((m) => m.id)).toEqual(sa.matches.map((m) => m.id));
        sb.matches.forEach((m, i) => expect(m.score).toBeCloseTo(sa.matches[i]!.score!, 4));
        compared += a.matches.length + sa.matches.length;
      }
      expect(compared).toBeGreaterThan(100);
      // a sparse index refuses dense values, as on one node
      const bad = await callNode(
        c.urls[0]!,
        "POST",
        "/v1/indexes/lexical/vectors/upsert",
        { vectors: [{ id: "x", values: [1, 2] }] },
        c.adminKey,
      );
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "vectors[0].values" });
    } finally {
      await one.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
