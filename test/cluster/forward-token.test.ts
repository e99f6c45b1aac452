/**
 * The forwarding secret (cluster/forward-token.ts) against a real 3-server JetStream cluster: nodes
 * starting at once all take the same secret (the first proposal in stream order; a KV create-once
 * could let several win on nats-server 2.9.10, #4320), a cluster of an older release keeps the
 * secret its KV bucket held, and later nodes read the same one.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FORWARD_TOKEN_SUBJECT, forwardToken } from "../../src/cluster/forward-token.js";
import { LEASE_STREAM, LeaderLease } from "../../src/cluster/leader-lease.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

let cluster: NatsCluster;

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-fwd-token");
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe("forwarding secret", () => {
  /** svc_home_lease as a node's start leaves it (created by the lease), emptied first when it exists. */
  async function freshLeaseStream(c: NatsConnection): Promise<void> {
    await (await jetstreamManager(c)).streams.delete(LEASE_STREAM).catch(() => undefined);
    const lease = await LeaderLease.open(c, "probe", { replicas: 3, candidate: false });
    await lease.close();
  }

  it("six nodes starting at once on a new cluster all take the same secret, and later nodes too", async () => {
    const conns = await Promise.all([0, 1, 2].map((i) => cluster.connect(i)));
    await freshLeaseStream(conns[0]!);
    const tokens = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => forwardToken(conns[i % 3]!)));
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await forwardToken(await cluster.connect(2))).toBe(tokens[0]);
  }, 60_000);

  it("an upgraded cluster keeps the secret its KV bucket held", async () => {
    const conns = await Promise.all([0, 1, 2].map((i) => cluster.connect(i)));
    const kv = await new Kvm(conns[0]!).create("svc_cluster", { replicas: 3, history: 1 });
    await kv.put("forward-token", "the-old-secret");
    await freshLeaseStream(conns[0]!);
    const tokens = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => forwardToken(conns[i % 3]!)));
    expect(new Set(tokens)).toEqual(new Set(["the-old-secret"]));
  }, 60_000);

  it("with several proposals stored, every node takes the first in stream order", async () => {
    const conns = await Promise.all([0, 1, 2].map((i) => cluster.connect(i)));
    // the subject holds the previous test's proposal; two more (as racing nodes would store them) change nothing
    const js = jetstream(conns[1]!);
    await js.publish(FORWARD_TOKEN_SUBJECT, "second");
    await js.publish(FORWARD_TOKEN_SUBJECT, "third");
    const tokens = await Promise.all(conns.map((c) => forwardToken(c)));
    expect(tokens).toEqual(["the-old-secret", "the-old-secret", "the-old-secret"]);
  }, 60_000);
});
