/**
 * Shared wallets (cluster/wallet.ts, a ledger stream every node folds) on a real 3-server JetStream
 * cluster: each ClusterWallets has its own NATS connection, as one svc node does. Concurrent
 * reserve/settle/release/charge/credit from three nodes on a near-empty wallet never take it below
 * zero, keep credited - spent = balance, record every settled charge exactly once and fold to the
 * same balances on every node; a killed nats-server does not stop them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { parsePrices } from "../../src/account/prices.js";
import { Wallets } from "../../src/account/wallet.js";
import type { WalletBook } from "../../src/account/wallet-book.js";
import { ClusterWallets, LEDGER_STREAM, type ClusterWalletsOptions } from "../../src/cluster/wallet.js";
import { SvcError } from "../../src/errors.js";
import { startNatsCluster, type NatsCluster } from "./nats-cluster.js";

// 1 nano-USD per vector written, 3 per request; signup credit 100 nano: a near-empty wallet.
const PRICES = parsePrices({ signupCredit: 0.0000001, requests: {}, defaultRequest: 0.000000003, per1kWritten: 0.000001, per1kScanned: 0 });
const cost = (written: number) => 3 + written;
const SIGNUP = 100;

let cluster: NatsCluster;
const conns: NatsConnection[] = [];
const wallets: ClusterWallets[] = [];
let observer: ClusterWallets;
const conn = async () => {
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  conns.push(nc);
  return nc;
};
const node = async (opts: ClusterWalletsOptions = {}) => {
  const w = await ClusterWallets.open(await conn(), PRICES, opts);
  wallets.push(w);
  return w;
};
/**
 * Resolves once every open ClusterWallets has folded the ledger to its current end. The end is asked again on a
 * timeout: just after a nats-server is killed a request can go unanswered while the connection moves and the
 * stream elects a leader.
 */
const folded = async () => {
  let last = -1;
  for (let attempt = 0; last < 0; attempt++) {
    try {
      last = (await (await jetstreamManager(conns[0]!, { checkAPI: false })).streams.info(LEDGER_STREAM)).state.last_seq;
    } catch (e) {
      if (attempt === 10 || !(e instanceof Error) || e.name !== "TimeoutError") throw e;
    }
  }
  while (wallets.some((w) => w.position < last)) await new Promise((r) => setTimeout(r, 5));
};
/** Samples every node's view of a tenant every few ms while a run goes on: a balance below zero or holds above it would show. */
const sampler = (tenant: string) => {
  const samples: Array<{ balance: number; held: number }> = [];
  const t = setInterval(() => {
    for (const w of wallets) {
      const p = w.peek(tenant);
      if (p !== null) samples.push({ balance: Math.round(p.balanceUsd * 1e9), held: w.heldBy(tenant) });
    }
  }, 2);
  return { samples, stop: () => clearInterval(t) };
};

beforeAll(async () => {
  cluster = await startNatsCluster(3, "svc-wallet");
  observer = await node();
}, 60_000);

afterAll(async () => {
  for (const w of wallets) await w.close();
  for (const nc of conns) await nc.close().catch(() => undefined);
  await cluster?.stop();
});

type Cmd =
  { kind: "hold"; bound: number; actual: number; settle: boolean } | { kind: "charge"; written: number } | { kind: "credit"; nano: number };
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("hold" as const),
      bound: fc.integer({ min: 0, max: 40 }),
      actual: fc.integer({ min: 0, max: 50 }),
      settle: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("charge" as const), written: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("credit" as const), nano: fc.integer({ min: 1, max: 30 }) }) },
);

interface Outcome {
  op: string;
  charged?: number;
  credited?: number;
  refused?: boolean;
  released?: boolean;
}

/** Run `cmds` on `w` for `tenant`: each op named uniquely (`<prefix><i>`), `lanes` at a time. */
async function run(w: WalletBook, tenant: string, prefix: string, cmds: Cmd[], lanes: number): Promise<Outcome[]> {
  const out: Outcome[] = [];
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < cmds.length; i = next++) {
      const c = cmds[i]!;
      const op = `${prefix}${i}`;
      if (c.kind === "credit") {
        await w.credit(tenant, c.nano / 1e9, op);
        out.push({ op: `credit:${op}`, credited: c.nano });
      } else if (c.kind === "charge") {
        out.push({ op, charged: await w.charge(tenant, op, { written: c.written }) });
      } else {
        let r;
        try {
          r = await w.reserve(tenant, op, { written: c.bound });
        } catch (e) {
          if (!(e instanceof SvcError) || e.code !== "E_WALLET_EMPTY") throw e;
          out.push({ op, refused: true });
          continue;
        }
        await new Promise((res) => setTimeout(res, 1)); // the operation runs while the money is held
        if (c.settle) out.push({ op, charged: await w.settle(r, op, { written: c.actual }) });
        else {
          await w.release(r);
          out.push({ op, released: true });
        }
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return out;
}

/** The invariants of a tenant's wallet after `outcomes`, on every node, and of every sampled state. */
async function checkLedger(tenant: string, outcomes: Outcome[], samples: Array<{ balance: number; held: number }>) {
  await folded();
  const v = await observer.view(tenant, 1000);
  const n = (usd: number) => Math.round(usd * 1e9);
  const spent = outcomes.reduce((s, o) => s + (o.charged ?? 0), 0);
  const credited = SIGNUP + outcomes.reduce((s, o) => s + (o.credited ?? 0), 0);
  expect(n(v.spentUsd)).toBe(spent);
  expect(n(v.creditedUsd)).toBe(credited);
  expect(n(v.balanceUsd)).toBe(credited - spent);
  expect(n(v.balanceUsd)).toBeGreaterThanOrEqual(0);
  expect(observer.heldBy(tenant)).toBe(0);
  // every node folded the same wallet
  for (const w of wallets) expect(w.peek(tenant)).toEqual(observer.peek(tenant));
  for (const x of samples) {
    expect(x.balance).toBeGreaterThanOrEqual(0);
    expect(x.held).toBeLessThanOrEqual(x.balance);
  }
  // every settled or charged op and every credit is in the wallet exactly once, with what it returned
  for (const o of outcomes) {
    const found = v.recent.filter((x) => x.op === o.op).map((x) => n(x.costUsd));
    if (o.charged !== undefined) expect(found).toEqual([o.charged]);
    else if (o.credited !== undefined) expect(found).toEqual([-o.credited]);
    else expect(found).toEqual([]);
  }
  return v;
}

describe("cluster wallets", () => {
  it("any interleaving from three nodes keeps balance >= 0, holds <= balance, credited - spent = balance, each charge once", async () => {
    const nodes = [await node(), await node(), await node()];
    let runNo = 0;
    const totals = { refused: 0, charged: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(cmd, { maxLength: 8 }), { minLength: 3, maxLength: 3 }),
        fc.integer({ min: 1, max: 3 }),
        async (perNode, lanes) => {
          const tenant = `prop-${runNo++}`;
          const h = sampler(tenant);
          try {
            const outs = await Promise.all(nodes.map((w, i) => run(w, tenant, `n${i}-`, perNode[i]!, lanes)));
            const all = outs.flat();
            if (all.length === 0) return;
            h.stop();
            await checkLedger(tenant, all, h.samples);
            totals.refused += all.filter((o) => o.refused).length;
            totals.charged += all.filter((o) => o.charged !== undefined).length;
          } finally {
            h.stop();
          }
        },
      ),
      { seed: 2301, numRuns: 25, endOnFailure: true },
    );
    // the runs did exercise both sides of the near-empty wallet
    expect(totals.refused).toBeGreaterThan(0);
    expect(totals.charged).toBeGreaterThan(0);
    const late = nodes.reduce((s, w) => s + w.stats.refusedInStream, 0);
    console.log(
      `property: ${totals.charged} charges, ${totals.refused} refusals (${late} decided in the stream after the local check passed)`,
    );
  }, 120_000);

  it("a new tenant seen on three nodes at once gets its signup credit once", async () => {
    const nodes = [await node(), await node(), await node()];
    const views = await Promise.all(nodes.map((w) => w.view("newcomer")));
    for (const v of views) expect(v.creditedUsd * 1e9).toBeCloseTo(SIGNUP, 6);
    await folded();
    const v = await observer.view("newcomer");
    expect(Math.round(v.creditedUsd * 1e9)).toBe(SIGNUP);
    expect(v.recent.filter((x) => x.op === "credit:signup")).toHaveLength(1);
    expect(nodes[2]!.peek("newcomer")?.balanceUsd).toBeCloseTo(SIGNUP / 1e9, 15);
    expect(nodes[0]!.tenants()).toContain("newcomer");
    expect(nodes[1]!.peek("never-seen")).toBeNull();
  }, 30_000);

  it("a hold of a node that died expires; a change that does not parse takes only that wallet offline", async () => {
    const dying = await node({ holdTtlMs: 300 });
    const other = await node();
    await dying.reserve("orphan", "w", { written: SIGNUP - cost(0) }); // holds the whole balance, then the node "dies"
    await expect(other.reserve("orphan", "w", { written: 1 })).rejects.toMatchObject({ code: "E_WALLET_EMPTY" });
    await new Promise((r) => setTimeout(r, 400));
    expect(other.heldBy("orphan")).toBe(0);
    const r = await other.reserve("orphan", "w", { written: SIGNUP - cost(0) });
    expect(await other.settle(r, "w", { written: 10 })).toBe(cost(10));
    expect(other.heldBy("orphan")).toBe(0);
    await jetstream(conns[0]!).publish(`${LEDGER_STREAM}.broken`, "{not json");
    await folded();
    await expect(other.reserve("broken", "w", {})).rejects.toMatchObject({ code: "E_STORE_OFFLINE", field: "wallet" });
    expect(other.offlineTenants()).toEqual({ all: false, tenants: ["broken"] });
    await expect(other.reserve("Not A Tenant", "w", {})).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "tenant" });
  }, 30_000);

  it("usage series hold the charges every node settled", async () => {
    const a = await node();
    const b = await node();
    await a.credit("metered", 1e-6, "test");
    await a.charge("metered", "upsert", { written: 5 });
    await b.charge("metered", "upsert", { written: 7 });
    await b.charge("metered", "search", {});
    await folded();
    const s = a.usage("metered", "minute", 2);
    const last = s.buckets.at(-1)!.ops;
    expect(last.upsert).toEqual({ costUsd: (cost(5) + cost(7)) / 1e9, calls: 2 });
    expect(last.search).toEqual({ costUsd: cost(0) / 1e9, calls: 1 });
    expect(s.ops).toEqual(["upsert", "search"]);
  }, 30_000);

  it("a view through any node shows every change acknowledged anywhere before it", async () => {
    const a = await node();
    const b = await node();
    await a.credit("seen", 1, "test");
    for (let i = 1; i <= 20; i++) {
      await a.charge("seen", "upsert", { written: i });
      const [va, vb] = [await a.view("seen", 1), await b.view("seen", 1)];
      expect(vb.spentUsd, `after charge ${i}`).toBe(va.spentUsd);
    }
  }, 30_000);

  it("keeps serving while one of three nats-servers is killed (the ledger stream's leader)", async () => {
    const nodes = [await node(), await node()];
    const tenant = "failover";
    await nodes[0]!.credit(tenant, 2e-6, "seed");
    const jsm = await jetstreamManager(conns[0]!);
    const leader = (await jsm.streams.info(LEDGER_STREAM)).cluster?.leader ?? "n0";
    const victim = Number(leader.replace(/^n/, ""));
    const h = sampler(tenant);
    const cmds: Cmd[] = Array.from({ length: 40 }, (_, i) =>
      i % 5 === 4 ? { kind: "credit", nano: 20 } : { kind: "hold", bound: 10, actual: 8, settle: i % 3 !== 0 },
    );
    const t0 = Date.now();
    const runs = nodes.map((w, i) => run(w, tenant, `f${i}-`, cmds, 2));
    setTimeout(() => cluster.kill(victim), 30);
    try {
      const outs = (await Promise.all(runs)).flat();
      h.stop();
      const v = await checkLedger(tenant, [...outs, { op: "credit:seed", credited: 2000 }], h.samples);
      expect(outs.filter((o) => o.charged !== undefined).length).toBeGreaterThan(0);
      console.log(`failover: killed ${leader}; ${outs.length} ops in ${Date.now() - t0} ms, balance ${v.balanceUsd * 1e9}`);
    } finally {
      h.stop();
      cluster.start(victim);
      await cluster.ready();
    }
  }, 90_000);

  it("measures reserve+settle latency over the ledger stream vs the local ledger WAL, and two nodes hammering one tenant", async () => {
    const N = 200;
    const pct = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
    const timed = async (w: WalletBook, tenant: string) => {
      await w.credit(tenant, 1, "bench");
      const ms: number[] = [];
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        const r = await w.reserve(tenant, "q", {});
        await w.settle(r, "q", {});
        ms.push(performance.now() - t);
      }
      return ms;
    };
    const dir = mkdtempSync(join(tmpdir(), "svc-wallet-bench-"));
    const local = await Wallets.open(dir, PRICES);
    let localMs: number[];
    try {
      localMs = await timed(local, "bench");
      expect((await local.view("bench")).spentUsd * 1e9).toBeCloseTo(N * cost(0), 3);
    } finally {
      await local.close();
      rmSync(dir, { recursive: true, force: true });
    }
    const one = await node();
    const kvMs = await timed(one, "bench-kv");
    expect(Math.round((await one.view("bench-kv")).spentUsd * 1e9)).toBe(N * cost(0));
    // two nodes hammering one tenant, 2 requests in flight each
    const [a, b] = [await node(), await node()];
    await a.credit("hot", 1, "bench");
    const hammer = (w: WalletBook) =>
      run(
        w,
        "hot",
        "",
        Array.from({ length: N }, () => ({ kind: "hold" as const, bound: 0, actual: 0, settle: true })),
        2,
      );
    const t0 = Date.now();
    await Promise.all([hammer(a), hammer(b)]);
    const wall = Date.now() - t0;
    await folded();
    expect(Math.round(a.peek("hot")!.spentUsd * 1e9)).toBe(2 * N * cost(0));
    const f = (x: number) => x.toFixed(2);
    console.log(
      `reserve+settle p50/p99 ms: local WAL ${f(pct(localMs, 50))}/${f(pct(localMs, 99))}, ledger stream R3 ${f(pct(kvMs, 50))}/${f(pct(kvMs, 99))}; ` +
        `2 nodes x 2 in flight on one tenant: ${2 * N} reserve+settle in ${wall} ms (${Math.round((2 * N * 1000) / wall)}/s), no retries (the stream orders them)`,
    );
    // a node starting now folds the whole ledger before it serves
    const t1 = performance.now();
    const late = await node();
    const openMs = performance.now() - t1;
    expect(late.peek("hot")).toEqual(a.peek("hot"));
    console.log(
      `a new node folded ${late.position} ledger changes in ${openMs.toFixed(0)} ms (${Math.round((late.position * 1000) / openMs)} changes/s)`,
    );
  }, 120_000);
});
