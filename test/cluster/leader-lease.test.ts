/**
 * The leader lease of the replicated home stores (cluster/leader-lease.ts): the fold's rules (pure),
 * and against a real 3-server JetStream cluster: concurrent starts elect exactly one holder that every
 * node agrees on (no KV compare-and-set: nats-server 2.9.10 lets concurrent ones all win, #4320); a
 * release hands over at once; a holder that stops renewing (its connection gone) is replaced after
 * the TTL; a forced claim (`--take-home`) takes it.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { foldLease, LEASE_TTL_MS, LeaderLease, type LeaseState } from "../../src/cluster/leader-lease.js";
import { startNatsCluster, waitFor, type NatsCluster } from "./nats-cluster.js";

const empty: LeaseState = { holder: null, term: 0, seenAt: 0, known: true };

describe("foldLease", () => {
  it("the first claim of a free lease wins; later claims lose while the holder renews, win once it stopped for the TTL", () => {
    let s = foldLease(empty, { op: "claim", node: "a" }, 1, 1000);
    s = foldLease(s, { op: "claim", node: "b" }, 2, 1001);
    expect(s).toMatchObject({ holder: "a", term: 1 });
    s = foldLease(s, { op: "renew", node: "a", term: 1 }, 3, 4000);
    s = foldLease(s, { op: "claim", node: "b" }, 4, 4000 + LEASE_TTL_MS);
    expect(s).toMatchObject({ holder: "a", term: 1 });
    s = foldLease(s, { op: "claim", node: "b" }, 5, 4001 + LEASE_TTL_MS);
    expect(s).toMatchObject({ holder: "b", term: 5 });
    // the deposed holder's renew and release count for nothing
    expect(foldLease(s, { op: "renew", node: "a", term: 1 }, 6, 9500)).toBe(s);
    expect(foldLease(s, { op: "release", node: "a", term: 1 }, 6, 9500)).toBe(s);
    // a release frees it at once; a forced claim takes it from a live holder
    expect(foldLease(s, { op: "release", node: "b", term: 5 }, 6, 9500)).toMatchObject({ holder: null });
    expect(foldLease(s, { op: "claim", node: "c", force: true }, 7, 9500)).toMatchObject({ holder: "c", term: 7 });
    // the holder's own claim (a restart) wins at once
    expect(foldLease(s, { op: "claim", node: "b" }, 8, 9500)).toMatchObject({ holder: "b", term: 8 });
  });

  it("a fold that starts mid-history takes no claim for won until a renew (or the TTL) says so", () => {
    let s: LeaseState = { holder: null, term: 0, seenAt: 0, known: false };
    s = foldLease(s, { op: "claim", node: "loser" }, 50, 1000);
    expect(s.holder).toBe(null);
    s = foldLease(s, { op: "renew", node: "w", term: 40 }, 51, 1500);
    expect(s).toMatchObject({ holder: "w", term: 40, known: true });
  });
});

let cluster: NatsCluster;
const conns: NatsConnection[] = [];

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-lease");
  for (let i = 0; i < 3; i++) conns.push(await cluster.connect(i));
}, 60_000);

afterAll(async () => {
  for (const c of conns) await c.close().catch(() => undefined);
  await cluster?.stop();
});

/** Every lease agrees on one holder (and term) in `ids`. */
async function agreed(leases: LeaderLease[], ids: string[]): Promise<LeaseState> {
  await waitFor(
    () => leases.every((l) => l.leader !== null && ids.includes(l.leader) && l.leader === leases[0]!.leader && l.term === leases[0]!.term),
    20_000,
  );
  const s = leases[0]!.state;
  expect(ids).toContain(s.holder);
  return s;
}

describe("the leader lease on a real cluster", () => {
  it("concurrent starts elect exactly one holder, five rounds; a release hands over at once", async () => {
    const terms = new Set<number>();
    for (let round = 0; round < 5; round++) {
      const ids = Array.from({ length: 6 }, (_, i) => `r${round}n${i}`);
      const leases = await Promise.all(ids.map((id, i) => LeaderLease.open(conns[i % 3]!, id, { replicas: 3 })));
      const s = await agreed(leases, ids);
      // every claim was judged alike: only the holder believes it holds the lease
      expect(leases.filter((l) => l.leader === l.self).map((l) => l.self)).toEqual([s.holder]);
      expect(terms.has(s.term)).toBe(false);
      terms.add(s.term);
      // the holder leaves cleanly: another takes over within the renew period (no TTL wait)
      const holder = leases.find((l) => l.self === s.holder)!;
      const t0 = Date.now();
      await holder.close();
      const rest = leases.filter((l) => l !== holder);
      const next = await agreed(
        rest,
        ids.filter((id) => id !== s.holder),
      );
      expect(next.term).toBeGreaterThan(s.term);
      expect(Date.now() - t0).toBeLessThan(LEASE_TTL_MS);
      for (const l of rest) await l.close();
    }
  }, 180_000);

  it("a holder that stops renewing is replaced after the TTL; a forced claim takes a live lease", async () => {
    const own = await cluster.connect(0);
    const a = await LeaderLease.open(own, "ta", { replicas: 3 });
    await waitFor(() => a.leader === "ta", 20_000);
    const b = await LeaderLease.open(conns[1]!, "tb", { replicas: 3 });
    expect(b.leader).toBe("ta");
    const t0 = Date.now();
    await own.close(); // no release, no more renewals: as a killed process
    await waitFor(() => b.leader === "tb", 30_000);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(LEASE_TTL_MS - 1000);
    expect(took).toBeLessThan(LEASE_TTL_MS + 8000);
    const c = await LeaderLease.open(conns[2]!, "tc", { replicas: 3, take: true });
    expect(c.leader).toBe("tc");
    await waitFor(() => b.leader === "tc", 10_000);
    await b.close();
    await c.close();
  }, 120_000);
});
