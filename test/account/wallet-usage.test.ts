import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parsePrices } from "../../src/account/prices.js";
import { Wallets } from "../../src/account/wallet.js";
import type { UsageSeries } from "../../src/account/wallet-book.js";

// upsert costs 100_000 nano-USD + 10_000 per vector written; anything else 1_000.
const PRICES = parsePrices({
  signupCredit: 1,
  requests: { upsert: 0.0001 },
  defaultRequest: 0.000001,
  per1kWritten: 0.01,
  per1kScanned: 0,
});

let dir: string;
const open: Wallets[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-wallet-usage-"));
});
afterEach(async () => {
  for (const w of open.splice(0)) await w.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function openWallets(): Promise<Wallets> {
  const w = await Wallets.open(dir, PRICES);
  open.push(w);
  return w;
}

/** Totals per operation over the whole series: [nano-USD, calls]. */
function totals(s: UsageSeries): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const b of s.buckets) {
    for (const [op, v] of Object.entries(b.ops)) {
      const t = (out[op] ??= [0, 0]);
      t[0] += Math.round(v.costUsd * 1e9);
      t[1] += v.calls;
    }
  }
  return out;
}

describe("Wallets.usage: charges over time by operation", () => {
  it("buckets charges per minute, hour and UTC day, dense and oldest first, most expensive operation first", async () => {
    const w = await openWallets();
    await w.charge("t1", "upsert", { written: 10 }); // 200_000
    await w.charge("t1", "upsert", { written: 0 }); // 100_000
    await w.charge("t1", "stats", {}); // 1_000
    await w.credit("t1", 2, "admin"); // credits are not usage
    await w.charge("t2", "stats", {}); // another tenant
    const now = Date.now();
    for (const [grain, size] of [
      ["minute", 60_000],
      ["hour", 3_600_000],
      ["day", 86_400_000],
    ] as const) {
      const s = w.usage("t1", grain, 5, now);
      expect(s.grain).toBe(grain);
      expect(s.ops).toEqual(["upsert", "stats"]);
      expect(s.buckets).toHaveLength(5);
      // consecutive buckets ending with the one holding now
      s.buckets.forEach((b, i) => expect(b.start).toBe(Math.floor(now / size) * size - (4 - i) * size));
      expect(totals(s)).toEqual({ upsert: [300_000, 2], stats: [1_000, 1] });
    }
    expect(totals(w.usage("t2", "hour", 1, now))).toEqual({ stats: [1_000, 1] });
    // a tenant never seen has an empty series and no wallet is opened for it
    const none = w.usage("nobody", "minute", 3, now);
    expect(none.ops).toEqual([]);
    expect(none.buckets.map((b) => b.ops)).toEqual([{}, {}, {}]);
    expect(w.peek("nobody")).toBeNull();
    // buckets before the charges hold nothing
    expect(totals(w.usage("t1", "minute", 2, now - 10 * 60_000))).toEqual({});
  });

  it("keeps the series across a restart: replayed from the ledger, and from the checkpoint", async () => {
    let w = await openWallets();
    await w.charge("t1", "upsert", { written: 5 });
    await w.charge("t1", "stats", {});
    const before = totals(w.usage("t1", "hour", 2));
    expect(before).toEqual({ upsert: [150_000, 1], stats: [1_000, 1] });
    await w.close(); // checkpoint holds the series
    open.splice(0);
    w = await openWallets();
    expect(totals(w.usage("t1", "hour", 2))).toEqual(before);
    await w.charge("t1", "stats", {}); // in the ledger only
    open.splice(0);
    await w.close();
    w = await openWallets();
    expect(totals(w.usage("t1", "hour", 2))).toEqual({ upsert: [150_000, 1], stats: [2_000, 2] });
    expect(w.peek("t1")).toMatchObject({ tenant: "t1", creditedUsd: 1, spentUsd: 0.000152 });
    expect(w.tenants()).toEqual(["t1"]);
  });
});
