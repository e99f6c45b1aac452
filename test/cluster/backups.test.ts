/**
 * Backups in cluster mode (issue 33 item 4) on a real 3-node svc cluster (3 NATS servers, `svc serve
 * --cluster` processes), through the official Pinecone client: a backup taken while upserts go on
 * (through every node, shard snapshots and purges running under small thresholds) holds every write
 * acknowledged before the backup was asked for and none sent after it was created or acknowledged
 * after it was Ready; it is listed and described from every node; restored into a new index it
 * answers the brute-force top-k of exactly that state. Plus the 4xx: a deleted index, a taken name,
 * a deleted backup.
 */
import { Pinecone } from "@pinecone-database/pinecone";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

const DIM = 16;
const BATCH = 20;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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

describe("backups in cluster mode", () => {
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
});
