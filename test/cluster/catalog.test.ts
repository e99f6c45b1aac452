/**
 * The index catalog under concurrency (issue 31 item 8), on a real 3-server JetStream cluster
 * (Debian's nats-server 2.9.10, whose KV compare-and-set lets concurrent writers naming one revision
 * all succeed: nats-server#4320). Three svc "nodes" in this process, each connected to its own
 * nats-server: concurrent creates of one name from all three give exactly one winner and 409s for the
 * rest, every node agreeing on the winner; concurrent configures lose no change; a delete racing a
 * configure either wins or answers 409; a catalog written by an older version to the KV bucket
 * `svc_catalog` is taken over once, and an index deleted after that never comes back. And the log
 * streams (item 7): new indexes spread their shards over svc_log, svc_log_1, svc_log_2, whose leaders
 * start on three different servers; a delete purges the index's subjects on each; an index from
 * before (no `streams` in its record) keeps writing to svc_log.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterIndexes } from "../../src/cluster/catalog.js";
import { logStreamName, LOG_STREAMS } from "../../src/cluster/jetstream-log.js";
import { NodeRegistry } from "../../src/cluster/nodes.js";
import { indexLogFilter, shardStream, type ClusterIndexRecord } from "../../src/cluster/shards.js";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { startNatsCluster, waitFor, type NatsCluster } from "./nats-cluster.js";

const T = "acme";
const root = mkdtempSync(join(tmpdir(), "svc-catalog-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1_000_000 });
const spec = { serverless: { cloud: "aws", region: "us-east-1" }, shards: 1 };

interface Node {
  nc: NatsConnection;
  registry: NodeRegistry;
  indexes: ClusterIndexes;
}

let cluster: NatsCluster;
const nodes: Node[] = [];

/** Node i talks to nats-server i only (so concurrent writes enter the cluster through different servers). */
async function startNode(i: number, tag = ""): Promise<Node> {
  const nc = await connect({ servers: [cluster.urls[i]!], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const registry = await NodeRegistry.join(
    nc,
    { id: `n${i}${tag}`, url: `http://127.0.0.1:${9100 + i}`, startedAt: Date.now() },
    { heartbeatMs: 200, ttlMs: 2000 },
  );
  const indexes = await ClusterIndexes.open({ nc, registry, dataDir: join(root, `n${i}${tag}`), kernels, pool });
  return { nc, registry, indexes };
}

async function stopNode(n: Node): Promise<void> {
  await n.registry.leave().catch(() => undefined);
  await n.indexes.close();
  await n.nc.close();
}

/** The code of a settled call's failure ("ok" for a success). */
const codeOf = (r: PromiseSettledResult<unknown>) =>
  r.status === "fulfilled" ? "ok" : r.reason instanceof SvcError ? r.reason.code : String(r.reason);

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-catalog");
  for (let i = 0; i < 3; i++) nodes.push(await startNode(i));
  await waitFor(() => nodes.every((n) => n.registry.live.length === 3), 20_000);
}, 60_000);

afterAll(async () => {
  for (const n of nodes) await stopNode(n).catch(() => undefined);
  await pool.close();
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Messages each log stream holds under the index's subjects. */
async function messagesOn(nc: NatsConnection, r: ClusterIndexRecord): Promise<number[]> {
  const jsm = await jetstreamManager(nc);
  return Promise.all(
    Array.from({ length: LOG_STREAMS }, async (_, i) => {
      const info = await jsm.streams.info(logStreamName(i), { subjects_filter: indexLogFilter(logStreamName(i), r) });
      return Object.values(info.state.subjects ?? {}).reduce((n, c) => n + c, 0);
    }),
  );
}

/** The catalog record behind a name (the test reads the fold, which the routes never show). */
const recordOf = (n: Node, name: string) =>
  (n.indexes as unknown as { records: { get(k: string): { value: ClusterIndexRecord } | undefined } }).records.get(`${T}.${name}`)!.value;

const vectors = (n: number, dim: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `v${i}`, values: Array.from({ length: dim }, (_, j) => Math.sin(i + j + 1)) }));

describe("log streams", () => {
  it("the log streams start with their leaders on three different servers", async () => {
    const jsm = await jetstreamManager(nodes[0]!.nc);
    const leaders = await Promise.all(
      Array.from({ length: LOG_STREAMS }, async (_, i) => (await jsm.streams.info(logStreamName(i))).cluster?.leader),
    );
    expect(new Set(leaders).size).toBe(3);
  });

  it("a new index's shards go round the streams, its writes land there, and a delete purges each stream", async () => {
    await nodes[0]!.indexes.create(T, { name: "spread", dimension: 8, metric: "cosine", spec: { ...spec, shards: 6 } });
    const r = recordOf(nodes[0]!, "spread");
    expect(r.streams).toBe(LOG_STREAMS);
    expect(new Set(Array.from({ length: 6 }, (_, s) => shardStream(r, s))).size).toBe(3);
    await waitFor(() => nodes.every((n) => n.indexes.list(T).some((x) => x.name === "spread")), 10_000);
    await nodes[1]!.indexes.use(T, "spread", (ix) => ix.upsert("", vectors(60, 8)));
    const before = await messagesOn(nodes[0]!.nc, r);
    expect(before.every((n) => n > 0)).toBe(true);
    await nodes[2]!.indexes.delete(T, "spread");
    expect(await messagesOn(nodes[0]!.nc, r)).toEqual([0, 0, 0]);
  }, 60_000);
});

describe("the index catalog under concurrency", () => {
  it("N concurrent creates of one name from three nodes: exactly one winner, 409 E_CONFLICT for the rest, every node agrees", async () => {
    const ROUNDS = Number(process.env.CATALOG_ROUNDS ?? 12);
    const PER_NODE = 4;
    const winners: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const name = `race-${round}`;
      const calls = nodes.flatMap((n) =>
        Array.from({ length: PER_NODE }, (_, k) =>
          n.indexes.create(T, { name, dimension: 8 + k, metric: "cosine", spec, tags: { by: `${nodes.indexOf(n)}-${k}` } }),
        ),
      );
      const results = await Promise.allSettled(calls);
      const codes = results.map(codeOf);
      winners.push(codes.filter((c) => c === "ok").length);
      expect(codes.filter((c) => c !== "ok" && c !== "E_CONFLICT")).toEqual([]);
      // every node sees the same record: the winner's
      const won = results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<{ tags: Record<string, string> }> | undefined;
      const seen = await Promise.all(nodes.map((n) => n.indexes.describe(T, name)));
      for (const s of seen) expect(s).toEqual(seen[0]);
      if (won !== undefined) expect(seen[0]!.tags).toEqual(won.value.tags);
    }
    expect(winners).toEqual(Array(ROUNDS).fill(1));
  }, 120_000);

  it("concurrent configures from three nodes lose no change", async () => {
    await nodes[0]!.indexes.create(T, { name: "tagged", dimension: 8, metric: "cosine", spec });
    const ROUNDS = 5;
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.allSettled(
        nodes.flatMap((n, i) => [0, 1].map((k) => n.indexes.configure(T, "tagged", { tags: { [`r${round}n${i}k${k}`]: "x" } }))),
      );
      // a configure that kept losing the race may answer 409 (the client retries); one that answered ok is never lost
      expect(results.map(codeOf).filter((c) => c !== "ok" && c !== "E_CONFLICT")).toEqual([]);
      const ok = results.flatMap((r, j) => (r.status === "fulfilled" ? [`r${round}n${Math.floor(j / 2)}k${j % 2}`] : []));
      expect(ok.length).toBeGreaterThan(0);
      const tags = (await nodes[(round + 1) % 3]!.indexes.describe(T, "tagged")).tags;
      for (const t of ok) expect(tags?.[t]).toBe("x");
    }
  }, 60_000);

  it("a delete racing a configure that enables protection: either the delete wins or it answers 409, never both applied", async () => {
    for (let round = 0; round < 4; round++) {
      const name = `guard-${round}`;
      await nodes[0]!.indexes.create(T, { name, dimension: 8, metric: "cosine", spec });
      await waitFor(() => nodes.every((n) => n.indexes.list(T).some((r) => r.name === name)), 10_000);
      const [del, conf] = await Promise.allSettled([
        nodes[1]!.indexes.delete(T, name),
        nodes[2]!.indexes.configure(T, name, { deletionProtection: "enabled" }),
      ]);
      const exists = await nodes[0]!.indexes.describe(T, name).then(
        (r) => r,
        (e: unknown) => (e instanceof SvcError && e.code === "E_NOT_FOUND" ? null : Promise.reject(e)),
      );
      if (del.status === "fulfilled") expect(exists).toBeNull();
      else {
        expect(codeOf(del)).toMatch(/^E_CONFLICT$|^E_DELETION_PROTECTED$/);
        expect(exists?.deletionProtection).toBe("enabled");
      }
      if (conf.status === "fulfilled") expect(del.status === "rejected" || exists === null).toBe(true);
    }
  }, 60_000);

  it("a catalog in the KV bucket svc_catalog (older versions) is taken over once; an index deleted after that stays deleted", async () => {
    const nc = await cluster.connect();
    const kv = await new Kvm(nc).create("svc_catalog", { replicas: 3, history: 1 });
    const old = {
      name: "legacy",
      dimension: 16,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      deletionProtection: "disabled",
      tags: { from: "kv" },
      createdAt: 1_767_225_600_000,
      tenant: T,
      shards: 2,
      replicas: 2,
      incarnation: "0123456789ab",
    };
    await kv.put(`${T}.legacy`, JSON.stringify(old));
    await kv.put(`${T}.legacy2`, JSON.stringify({ ...old, name: "legacy2", incarnation: "ba9876543210" }));
    // a node started now (as after an upgrade) takes the bucket's records over
    const late = await startNode(0, "b");
    try {
      expect(late.indexes.list(T).map((r) => r.name)).toEqual(expect.arrayContaining(["legacy", "legacy2"]));
      await waitFor(() => nodes.every((n) => n.indexes.list(T).some((r) => r.name === "legacy")), 10_000);
      expect((await nodes[1]!.indexes.describe(T, "legacy")).tags).toEqual({ from: "kv" });
      // an index from before keeps its shards on svc_log
      expect(recordOf(nodes[1]!, "legacy").streams).toBeUndefined();
      await waitFor(() => nodes.every((n) => n.indexes.list(T).some((r) => r.name === "legacy2")), 10_000);
      await nodes[1]!.indexes.use(T, "legacy2", (ix) => ix.upsert("", vectors(20, 16)));
      const on = await messagesOn(nodes[0]!.nc, recordOf(nodes[0]!, "legacy2"));
      expect(on[0]).toBeGreaterThan(0);
      expect(on.slice(1)).toEqual([0, 0]);
      // node 2 reads its shard replica, which applies the acknowledged write a moment later (no x-svc-after token here: docs/API.md; Node 24 CI once read it first)
      let fetched: string[] = [];
      const fetchV3 = async () => {
        fetched = (await nodes[2]!.indexes.use(T, "legacy2", (ix) => ix.fetch("", ["v3"]))).map((v) => v.id);
      };
      await waitFor(() => fetched.length > 0, 10_000, fetchV3);
      expect(fetched).toEqual(["v3"]);
      await nodes[2]!.indexes.delete(T, "legacy");
    } finally {
      await stopNode(late);
    }
    // the bucket still holds it; a node starting again does not bring it back
    const again = await startNode(1, "c");
    try {
      expect(again.indexes.list(T).map((r) => r.name)).not.toContain("legacy");
      expect(again.indexes.list(T).map((r) => r.name)).toContain("legacy2");
      await expect(again.indexes.describe(T, "legacy")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    } finally {
      await stopNode(again);
    }
  }, 60_000);
});
