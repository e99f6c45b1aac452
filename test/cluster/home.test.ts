/**
 * The home lease (cluster/home.ts) against a real 3-server JetStream cluster: the first node creates
 * it, the others read the same lease and forwarding secret, and a move (`take`) is seen by every node,
 * also after the nats-server leading the `svc_cluster` bucket (and holding one node's connection) was
 * killed.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLUSTER_BUCKET, HomeLease } from "../../src/cluster/home.js";
import { startNatsCluster, waitFor, type NatsCluster } from "./nats-cluster.js";

let cluster: NatsCluster;

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-home");
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe("home lease", () => {
  it("is one lease for all nodes, and a move is seen by every node after the bucket's leader server is killed", async () => {
    const leases: HomeLease[] = [];
    for (let i = 0; i < 3; i++) leases.push(await HomeLease.open(await cluster.connect(i), `h${i}`, { replicas: 3 }));
    expect(leases.map((l) => l.node)).toEqual(["h0", "h0", "h0"]);
    expect(new Set(leases.map((l) => l.token)).size).toBe(1);
    const info = await (await jetstreamManager(await cluster.connect(0))).streams.info(`KV_${CLUSTER_BUCKET}`);
    const leader = Number(info.cluster!.leader!.replace(/^n/, ""));
    cluster.kill(leader);
    // an operator moves the home to a new node (on a live server), retrying while JetStream elects new leaders
    const moves: string[] = [];
    leases[leader]!.on("change", (id: string) => moves.push(id));
    const moverConn = await cluster.connect((leader + 1) % 3);
    let mover: HomeLease | undefined;
    await waitFor(
      () => mover !== undefined,
      30_000,
      async () => {
        mover ??= await HomeLease.open(moverConn, "h3", { take: true, replicas: 3 }).catch(() => undefined);
      },
    );
    expect(mover!.node).toBe("h3");
    await waitFor(() => leases.every((l) => l.node === "h3"), 30_000);
    expect(moves).toEqual(["h3"]);
    for (const l of [...leases, mover!]) await l.close();
    cluster.start(leader);
    await cluster.ready();
  }, 120_000);
});
