/**
 * Cluster membership and placement (cluster/nodes.ts) against a real 3-server JetStream cluster: nodes
 * see each other join, a node that leaves or stops beating drops out after its ttl, and rendezvous
 * placement moves only the keys of the node that went; with the nats-server that leads the bucket's
 * stream (and holds one registry's connection) killed, joins, leaves and expiries are still seen.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { NODES_BUCKET, NodeRegistry, rank } from "../../src/cluster/nodes.js";
import { startNatsCluster, waitFor, type NatsCluster } from "./nats-cluster.js";

let cluster: NatsCluster;

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-nodes");
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe("node registry", () => {
  it("sees nodes join, leave and expire", async () => {
    const opts = { heartbeatMs: 200, ttlMs: 1000 };
    const a = await NodeRegistry.join(await cluster.connect(), { id: "a", url: "http://127.0.0.1:1", startedAt: Date.now() }, opts);
    const bConn = await cluster.connect();
    const b = await NodeRegistry.join(bConn, { id: "b", url: "http://127.0.0.1:2", startedAt: Date.now() }, opts);
    const c = await NodeRegistry.join(await cluster.connect(), { id: "c", url: "http://127.0.0.1:3", startedAt: Date.now() }, opts);
    await waitFor(() => a.live.length === 3 && b.live.length === 3 && c.live.length === 3);
    expect(a.live).toEqual(["a", "b", "c"]);
    expect(a.info("b")?.url).toBe("http://127.0.0.1:2");
    // c leaves cleanly: gone at once
    await c.leave();
    await waitFor(() => a.live.length === 2, 2000);
    expect(a.live).toEqual(["a", "b"]);
    // b stops beating without a word (its connection closes): gone after the ttl
    await bConn.close();
    const t0 = Date.now();
    await waitFor(() => a.live.length === 1, 5000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    expect(a.live).toEqual(["a"]);
    expect(a.info("b")).toBeUndefined();
    await a.leave();
    await b.leave();
  }, 30_000);
});

describe("node registry with a nats-server killed", () => {
  it("still sees joins, leaves and expiries after the server leading the bucket and holding a registry's connection is killed", async () => {
    const opts = { heartbeatMs: 300, ttlMs: 5000 };
    const ids = ["k0", "k1", "k2"];
    const regs: NodeRegistry[] = [];
    for (let i = 0; i < 3; i++)
      regs.push(
        await NodeRegistry.join(await cluster.connect(i), { id: ids[i]!, url: `http://127.0.0.1:${10 + i}`, startedAt: Date.now() }, opts),
      );
    const mine = (r: NodeRegistry) => r.live.filter((id) => id.startsWith("k"));
    await waitFor(() => regs.every((r) => mine(r).length === 3), 20_000);
    // The server leading the bucket's stream holds every registry's consumer; registry `victim` is connected to it too.
    const info = await (await jetstreamManager(await cluster.connect())).streams.info(`KV_${NODES_BUCKET}`);
    const leader = Number(info.cluster!.leader!.replace(/^n/, ""));
    const victim = regs[leader]!;
    const [o1, o2] = [regs[(leader + 1) % 3]!, regs[(leader + 2) % 3]!];
    cluster.kill(leader);
    // a node joining afterwards (on a live server) is seen by all, the victim included once it reconnected
    const dConn = await cluster.connect((leader + 1) % 3);
    // (joining retries while JetStream elects new leaders, as ClusterNode does at start)
    let d: NodeRegistry | undefined;
    await waitFor(
      () => d !== undefined,
      30_000,
      async () => {
        d = await NodeRegistry.join(dConn, { id: "k3", url: "http://127.0.0.1:13", startedAt: Date.now() }, opts).catch(() => undefined);
      },
    );
    await waitFor(() => [victim, o1, o2].every((r) => r.live.includes("k3")), 30_000);
    expect(victim.info("k3")?.url).toBe("http://127.0.0.1:13");
    // a clean leave is seen as a delete, before its registration could have expired (ttl 5 s)
    await o2.leave();
    const left = Date.now();
    await waitFor(() => [victim, o1, d!].every((r) => !r.live.includes(o2.self.id)), 15_000);
    expect(Date.now() - left).toBeLessThan(opts.ttlMs);
    // a node that stops beating (its connection closes) expires on every node
    await dConn.close();
    await waitFor(() => [victim, o1].every((r) => !r.live.includes("k3")), 20_000);
    // and the survivors still see each other beating
    expect(mine(victim)).toEqual([victim.self.id, o1.self.id].sort());
    expect(mine(o1)).toEqual([victim.self.id, o1.self.id].sort());
    cluster.start(leader);
    await cluster.ready();
    await victim.leave();
    await o1.leave();
    await d!.leave();
  }, 120_000);
});

describe("rendezvous placement", () => {
  it("moves only the keys whose owner left, and gives each key r distinct owners", () => {
    const nodes = ["n1", "n2", "n3", "n4"];
    const keys = Array.from({ length: 400 }, (_, i) => `idx.t.x.${i}`);
    const before = keys.map((k) => rank(nodes, k).slice(0, 2));
    for (const o of before) expect(new Set(o).size).toBe(2);
    const after = keys.map((k) =>
      rank(
        nodes.filter((n) => n !== "n3"),
        k,
      ).slice(0, 2),
    );
    let moved = 0;
    keys.forEach((_, i) => {
      const kept = before[i]!.filter((n) => n !== "n3");
      // every owner that is still live keeps the key
      for (const n of kept) expect(after[i]).toContain(n);
      if (kept.length < 2) moved++;
    });
    // about half the keys had n3 as one of 2 owners among 4 nodes
    expect(moved).toBeGreaterThan(120);
    expect(moved).toBeLessThan(280);
    // load is spread: each node owns between 35% and 65% of keys (expected 50%)
    for (const n of nodes) {
      const owned = before.filter((o) => o.includes(n)).length;
      expect(owned).toBeGreaterThan(140);
      expect(owned).toBeLessThan(260);
    }
  });
});
