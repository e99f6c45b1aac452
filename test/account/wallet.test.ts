import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { costOf, parsePrices, type PriceTable } from "../../src/account/prices.js";
import { Wallets } from "../../src/account/wallet.js";
import type { WalletView } from "../../src/account/wallet-book.js";
import { SvcError } from "../../src/errors.js";

// Prices chosen so every cost is a whole number of nano-USD:
// upsert 100_000 + 10_000 per vector written, query 200_000 + 2_000 per vector scanned, anything else 1_000.
const PRICES: PriceTable = parsePrices({
  signupCredit: 0.01,
  requests: { upsert: 0.0001, query: 0.0002 },
  defaultRequest: 0.000001,
  per1kWritten: 0.01,
  per1kScanned: 0.002,
});
const nano = (usd: number) => Math.round(usd * 1e9);

let dir: string;
const open: Wallets[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-wallet-"));
});
afterEach(async () => {
  for (const w of open.splice(0)) await w.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function openWallets(prices = PRICES): Promise<Wallets> {
  const w = await Wallets.open(dir, prices);
  open.push(w);
  return w;
}

async function rejection(p: Promise<unknown>): Promise<SvcError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError);
    return err as SvcError;
  }
  throw new Error("expected a rejection");
}

/** A crash-like reopen: a second instance replays what the first wrote, without the first being closed. */
async function reopenWithoutClose(): Promise<WalletView> {
  const w = await Wallets.open(dir, PRICES);
  return w.view("acme", 100);
}

describe("Wallets", () => {
  it("credits a new tenant with the signup credit once", async () => {
    const w = await openWallets();
    const v = await w.view("acme");
    expect(v).toMatchObject({ tenant: "acme", balanceUsd: 0.01, creditedUsd: 0.01, spentUsd: 0 });
    expect(v.recent).toHaveLength(1);
    expect(v.recent[0]).toMatchObject({ op: "credit:signup", costUsd: -0.01, written: 0, scanned: 0 });
    w.release(await w.reserve("acme", "fetch", {}));
    w.release(await w.reserve("acme", "fetch", {}));
    const again = await w.view("acme");
    expect(again.balanceUsd).toBe(0.01);
    expect(again.creditedUsd).toBe(0.01);
    expect(again.recent).toHaveLength(1);
    // tenants are separate
    expect((await w.view("other")).balanceUsd).toBe(0.01);
    expect((await w.view("acme")).balanceUsd).toBe(0.01);
  });

  it("charge deducts exactly costOf() and records the operation", async () => {
    const w = await openWallets();
    expect(costOf(PRICES, "upsert", { written: 50 })).toBe(600_000);
    expect(costOf(PRICES, "query", { scanned: 50 })).toBe(300_000);
    expect(costOf(PRICES, "fetch", {})).toBe(1_000);

    expect(await w.charge("acme", "upsert", { written: 50 })).toBe(600_000);
    expect(await w.charge("acme", "query", { scanned: 50 })).toBe(300_000);
    expect(await w.charge("acme", "fetch", {})).toBe(1_000);
    const v = await w.view("acme");
    expect(nano(v.balanceUsd)).toBe(10_000_000 - 901_000);
    expect(nano(v.spentUsd)).toBe(901_000);
    expect(nano(v.creditedUsd)).toBe(10_000_000);
    // newest first
    expect(v.recent.map((e) => [e.op, nano(e.costUsd), e.written, e.scanned])).toEqual([
      ["fetch", 1_000, 0, 0],
      ["query", 300_000, 0, 50],
      ["upsert", 600_000, 50, 0],
      ["credit:signup", -10_000_000, 0, 0],
    ]);
    expect((await w.view("acme", 2)).recent.map((e) => e.op)).toEqual(["fetch", "query"]);
    // a tenant charged before it was ever checked is signed up first
    await w.charge("fresh", "query", { scanned: 0 });
    expect(nano((await w.view("fresh")).balanceUsd)).toBe(10_000_000 - 200_000);
  });

  it("refuses with E_WALLET_EMPTY when the price bound does not fit the unheld balance (exactly zero included); credit reopens it", async () => {
    // 10_000 nano of credit, 5_000 per request: two requests bring it to exactly 0
    const w = await openWallets(parsePrices({ signupCredit: 0.00001, defaultRequest: 0.000005, requests: {}, per1kWritten: 0.001 }));
    await w.settle(await w.reserve("zero", "op", {}), "op", {});
    await w.settle(await w.reserve("zero", "op", {}), "op", {});
    expect(nano((await w.view("zero")).balanceUsd)).toBe(0);
    const e = await rejection(w.reserve("zero", "op", {}));
    expect(e.code).toBe("E_WALLET_EMPTY");
    expect(e.status).toBe(402);
    expect(e.field).toBe("wallet");
    expect(e.message).toContain("zero");

    // a bound larger than the balance is refused up front (5_000 + 6 written x 1_000 > 10_000); one that fits holds its money
    expect((await rejection(w.reserve("neg", "op", { written: 6 }))).code).toBe("E_WALLET_EMPTY");
    const a = await w.reserve("neg", "op", { written: 5 }); // exactly 10_000: all of it
    expect(w.heldBy("neg")).toBe(10_000);
    expect((await rejection(w.reserve("neg", "op", {}))).code).toBe("E_WALLET_EMPTY"); // held by a
    expect(await w.settle(a, "op", { written: 2 })).toBe(7_000); // the actual cost; the rest is released
    expect(w.heldBy("neg")).toBe(0);
    // a cost over the bound (a route without one) takes what is left, never more
    expect(await w.charge("neg", "op", { written: 100 })).toBe(3_000);
    expect(nano((await w.view("neg")).balanceUsd)).toBe(0);
    expect((await rejection(w.reserve("neg", "op", {}))).code).toBe("E_WALLET_EMPTY");
    const b = await rejection(Promise.resolve().then(() => w.settle(a, "op", {})));
    expect(b.code).toBe("E_INTERNAL"); // settled twice

    await w.credit("neg", 0.00001, "topup");
    w.release(await w.reserve("neg", "op", {}));
    const v = await w.view("neg");
    expect(nano(v.balanceUsd)).toBe(10_000);
    expect(nano(v.creditedUsd)).toBe(20_000);
    expect(v.recent[0]).toMatchObject({ op: "credit:topup", written: 0, scanned: 0 });
    expect(nano(v.recent[0]!.costUsd)).toBe(-10_000);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect((await rejection(w.credit("neg", bad, "x"))).code).toBe("E_BAD_REQUEST");
    }
  });

  it("charges are durable once charge() resolves: a second instance on the same dir (no close) replays the same balance and usage", async () => {
    const w = await openWallets();
    for (let i = 1; i <= 5; i++) await w.charge("acme", "upsert", { written: i * 10 });
    await w.charge("acme", "query", { scanned: 123 });
    const before = await w.view("acme", 100);
    expect(nano(before.balanceUsd)).toBe(10_000_000 - (5 * 100_000 + 150 * 10_000) - (200_000 + 123 * 2_000));
    expect(existsSync(join(dir, "wallets.json"))).toBe(false); // no checkpoint yet: everything comes from the log

    const replayed = await reopenWithoutClose();
    expect(replayed).toEqual(before);
  });

  it("read charges leave the balance at once and are written together, one ledger frame each, in the order applied", async () => {
    const w = await openWallets();
    await w.view("acme");
    await w.view("beta");
    const frames0 = (w as unknown as { wal: { stats: { frames: number; writes: number } } }).wal.stats;
    const reads: Array<Promise<number>> = [];
    for (let i = 0; i < 20; i++)
      reads.push(w.settle(await w.reserve(i % 2 ? "beta" : "acme", "query", { scanned: 10 }), "query", { scanned: i }, true));
    // taken from the balance before anything was written
    expect(nano((await w.view("acme", 100)).spentUsd)).toBe(10 * 200_000 + 2_000 * (0 + 2 + 4 + 6 + 8 + 10 + 12 + 14 + 16 + 18));
    // a write's charge while reads are pending: the reads' frames go first (the log's order is the order applied)
    await w.charge("acme", "upsert", { written: 1 });
    expect(await Promise.all(reads)).toEqual(Array.from({ length: 20 }, (_, i) => 200_000 + 2_000 * i));
    const stats = (w as unknown as { wal: { stats: { frames: number; writes: number } } }).wal.stats;
    expect(stats.frames - frames0.frames).toBe(21);
    expect(stats.writes - frames0.writes).toBeLessThanOrEqual(2);
    // reads settled in separate turns of the event loop, then a crash-like reopen: every charge replayed, none twice
    for (let i = 0; i < 5; i++) {
      await w.settle(await w.reserve("acme", "fetch", {}), "fetch", {}, true);
      await new Promise((r) => setImmediate(r));
    }
    const before = await w.view("acme", 100);
    expect(await reopenWithoutClose()).toEqual(before);
  });

  it("a checkpoint taken while read charges are pending counts each once (before or after its log position, never both)", async () => {
    const w = await openWallets();
    await w.view("acme");
    const pending = Array.from({ length: 3 }, async () => w.settle(await w.reserve("acme", "query", {}), "query", { scanned: 5 }, true));
    await Promise.resolve();
    const cp = w.checkpoint();
    // more reads while the checkpoint waits for its fdatasync
    const more = Array.from({ length: 3 }, async () => w.settle(await w.reserve("acme", "fetch", {}), "fetch", {}, true));
    await Promise.all([cp, ...pending, ...more]);
    expect(existsSync(join(dir, "wallets.json"))).toBe(true);
    const now = await w.view("acme", 100);
    expect(nano(now.spentUsd)).toBe(3 * 210_000 + 3 * 1_000);
    expect(await reopenWithoutClose()).toEqual(now);
    await w.close();
    open.splice(open.indexOf(w), 1);
    expect(await (await openWallets()).view("acme", 100)).toEqual(now);
  });

  it("after a checkpoint and more charges, a reopen has the same balance and usage (no charge counted twice or lost)", async () => {
    const w = await openWallets();
    await w.charge("acme", "upsert", { written: 100 });
    await w.charge("acme", "query", { scanned: 40 });
    await w.checkpoint();
    expect(existsSync(join(dir, "wallets.json"))).toBe(true);
    const atCheckpoint = await w.view("acme", 100);
    expect(await reopenWithoutClose()).toEqual(atCheckpoint);

    await w.charge("acme", "upsert", { written: 7 });
    await w.charge("acme", "fetch", {});
    w.release(await w.reserve("beta", "query", {}));
    await w.charge("beta", "query", { scanned: 1 });
    const after = await w.view("acme", 100);
    expect(nano(after.balanceUsd)).toBe(10_000_000 - (100_000 + 1_000_000) - (200_000 + 80_000) - (100_000 + 70_000) - 1_000);
    expect(after.recent.map((e) => e.op)).toEqual(["fetch", "upsert", "query", "upsert", "credit:signup"]);
    expect(await reopenWithoutClose()).toEqual(after);

    // a second checkpoint, then a clean close and reopen
    await w.checkpoint();
    await w.charge("acme", "query", { scanned: 2 });
    const final = await w.view("acme", 100);
    const beta = await w.view("beta", 100);
    await w.close();
    open.splice(open.indexOf(w), 1);
    const w2 = await openWallets();
    expect(await w2.view("acme", 100)).toEqual(final);
    expect(await w2.view("beta", 100)).toEqual(beta);
    expect(nano(beta.balanceUsd)).toBe(10_000_000 - 202_000);
  });
});
