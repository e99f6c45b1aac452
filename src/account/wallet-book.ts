/**
 * @module wallet-book — what every wallet store shares: the `WalletBook` interface the server uses,
 * an account (balances, recent entries, usage series) and the fold of a credit or a charge into it,
 * the views and series read from accounts, and the cover check of a reservation. The local ledger
 * (wallet.ts `Wallets`) and cluster mode's ledger stream (cluster/wallet.ts `ClusterWallets`) build on it.
 */
import { SvcError } from "../errors.js";
import { NANO_PER_USD, type PriceTable, type Usage } from "./prices.js";

export interface UsageEntry {
  ts: number;
  op: string;
  /** nano-USD (negative for credits). */
  cost: number;
  written: number;
  scanned: number;
}

export interface Account {
  /** nano-USD. */
  balance: number;
  credited: number;
  spent: number;
  /** Newest last, at most RECENT entries. */
  recent: UsageEntry[];
  /** Charges per minute (the last MINUTE_BUCKETS) and per hour (the last HOUR_BUCKETS), oldest first; absent in older checkpoints. */
  minutes?: UsageBucket[];
  hours?: UsageBucket[];
}

/** Charges of one time bucket: start (epoch ms) and, per operation, [nano-USD, calls]. */
interface UsageBucket {
  t: number;
  ops: Record<string, [number, number]>;
}

export type UsageGrain = "minute" | "hour" | "day";
const GRAIN_MS: Record<UsageGrain, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const MINUTE_BUCKETS = 24 * 60;
const HOUR_BUCKETS = 92 * 24;
/** How many buckets of each grain `usage` can answer (what the kept series covers). */
export const USAGE_MAX_BUCKETS: Record<UsageGrain, number> = { minute: MINUTE_BUCKETS, hour: HOUR_BUCKETS, day: HOUR_BUCKETS / 24 };

export interface UsageSeries {
  grain: UsageGrain;
  /** Operations present in the series, most expensive first. */
  ops: string[];
  /** Consecutive buckets, oldest first, the last one holding now; empty buckets included. */
  buckets: Array<{ start: number; ops: Record<string, { costUsd: number; calls: number }> }>;
}

const RECENT = 100;

export interface WalletView {
  tenant: string;
  balanceUsd: number;
  creditedUsd: number;
  spentUsd: number;
  recent: Array<{ ts: number; op: string; costUsd: number; written: number; scanned: number }>;
}

/** Money held for one operation in flight (nano-USD), from `reserve` until `settle` or `release`. */
export interface Reservation {
  readonly tenant: string;
  readonly nano: number;
  /** False once settled or released. */
  open: boolean;
}

/**
 * What the server needs of a wallet store: the local `Wallets` (ledger WAL) and cluster mode's
 * `ClusterWallets` (a ledger stream every node folds) both serve it, with the same prices and semantics. Money moves only
 * through the promise-returning methods (await them); the others answer from memory.
 */
export interface WalletBook {
  readonly prices: PriceTable;
  /** Tenants whose wallet cannot be served (a lost ledger frame); `all`: every wallet. */
  offlineTenants(): { all: boolean; tenants: string[] };
  /** Hold the most `op` can cost with at most `bound` usage; E_WALLET_EMPTY unless the unheld balance is positive and covers it. */
  reserve(tenant: string, op: string, bound: Usage): Promise<Reservation>;
  /** Drop a reservation without charging. Idempotent; never throws. */
  release(r: Reservation): void | Promise<void>;
  /**
   * Release `r` and charge the actual cost (never below zero); resolves once durable with the nano-USD charged.
   * `read`: the caller does not wait for it (a read's reply, invoke.ts): a store may write it with others.
   */
  settle(r: Reservation, op: string, usage: Usage, read?: boolean): Promise<number>;
  /** Charge without a reservation (never below zero); resolves once durable with the nano-USD charged. */
  charge(tenant: string, op: string, usage: Usage): Promise<number>;
  /** nano-USD held by open reservations of a tenant. */
  heldBy(tenant: string): number;
  credit(tenant: string, usd: number, why: string): Promise<void>;
  view(tenant: string, limit?: number): Promise<WalletView>;
  /** Balances without creating the wallet (null when the tenant was never seen). */
  peek(tenant: string): Omit<WalletView, "recent"> | null;
  tenants(): string[];
  /** Charges over time by operation (see Wallets.usage). */
  usage(tenant: string, grain: UsageGrain, count: number, now?: number): UsageSeries;
  close(): Promise<void>;
}

/** What both wallet stores (this file's Wallets, cluster/wallet.ts's ClusterWallets) read the same way: the tenants' accounts. */
export abstract class WalletAccounts<A extends Account = Account> {
  protected readonly accounts = new Map<string, A>();

  /** Balance and totals of a tenant's wallet without creating it (null when the tenant was never seen): for admin listings. */
  peek(tenant: string): Omit<WalletView, "recent"> | null {
    const a = this.accounts.get(tenant);
    if (a === undefined) return null;
    return { tenant, balanceUsd: a.balance / NANO_PER_USD, creditedUsd: a.credited / NANO_PER_USD, spentUsd: a.spent / NANO_PER_USD };
  }

  /** Tenants that have a wallet. */
  tenants(): string[] {
    return [...this.accounts.keys()];
  }

  /**
   * Charges over time by operation: the last `count` buckets of `grain` ending with the one
   * holding `now` (days are UTC days summed from the hourly series). Never creates a wallet.
   */
  usage(tenant: string, grain: UsageGrain, count: number, now = Date.now()): UsageSeries {
    return usageSeries(this.accounts.get(tenant), grain, count, now);
  }
}

/** Apply a credit of `n` nano-USD to an account (the ledger's and cluster mode's fold alike). */
export function addCredit(a: Account, f: { n: number; why: string; ts: number }): void {
  a.balance += f.n;
  a.credited += f.n;
  remember(a, { ts: f.ts, op: `credit:${f.why}`, cost: -f.n, written: 0, scanned: 0 });
}

/** Apply a charge of `n` nano-USD (already capped) to an account: balance, recent entries, usage series. */
export function addCharge(a: Account, f: { op: string; n: number; w: number; s: number; ts: number }): void {
  a.balance -= f.n;
  a.spent += f.n;
  remember(a, { ts: f.ts, op: f.op, cost: f.n, written: f.w, scanned: f.s });
  addToSeries((a.minutes ??= []), GRAIN_MS.minute, MINUTE_BUCKETS, f);
  addToSeries((a.hours ??= []), GRAIN_MS.hour, HOUR_BUCKETS, f);
}

function remember(a: Account, e: UsageEntry): void {
  a.recent.push(e);
  if (a.recent.length > RECENT * 2) a.recent.splice(0, a.recent.length - RECENT);
}

/** Add a charge to its bucket of a series (oldest first, at most `keep` buckets); a charge older than the kept window is dropped. */
function addToSeries(series: UsageBucket[], size: number, keep: number, f: { op: string; n: number; ts: number }): void {
  const t = Math.floor(f.ts / size) * size;
  let i = series.length - 1;
  while (i >= 0 && series[i]!.t > t) i--; // charges arrive in time order, except across a clock step
  let b = i >= 0 && series[i]!.t === t ? series[i]! : undefined;
  if (b === undefined) {
    if (series.length >= keep && i < 0) return;
    b = { t, ops: {} };
    series.splice(i + 1, 0, b);
    if (series.length > keep) series.splice(0, series.length - keep);
  }
  const s = (b.ops[f.op] ??= [0, 0]);
  s[0] += f.n;
  s[1] += 1;
}

/** The last `count` buckets of `grain` of an account's usage series, ending with the one holding `now` (none for no account). */
export function usageSeries(a: Account | undefined, grain: UsageGrain, count: number, now = Date.now()): UsageSeries {
  const size = GRAIN_MS[grain];
  const last = Math.floor(now / size) * size;
  const first = last - (count - 1) * size;
  const sums = new Map<number, Record<string, [number, number]>>();
  for (const b of (grain === "minute" ? a?.minutes : a?.hours) ?? []) {
    const start = Math.floor(b.t / size) * size;
    if (start < first || start > last) continue;
    let into = sums.get(start);
    if (into === undefined) sums.set(start, (into = {}));
    for (const [op, [n, calls]] of Object.entries(b.ops)) {
      const s = (into[op] ??= [0, 0]);
      s[0] += n;
      s[1] += calls;
    }
  }
  const totals = new Map<string, number>();
  const buckets: UsageSeries["buckets"] = [];
  for (let t = first; t <= last; t += size) {
    const ops: Record<string, { costUsd: number; calls: number }> = {};
    for (const [op, [n, calls]] of Object.entries(sums.get(t) ?? {})) {
      ops[op] = { costUsd: n / NANO_PER_USD, calls };
      totals.set(op, (totals.get(op) ?? 0) + n);
    }
    buckets.push({ start: t, ops });
  }
  const ops = [...totals.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map(([op]) => op);
  return { grain, ops, buckets };
}

/** The wallet view of an account: balances in USD and its newest `limit` entries, newest first. */
export function viewOf(tenant: string, a: Account, limit: number): WalletView {
  const usd = (n: number) => n / NANO_PER_USD;
  return {
    tenant,
    balanceUsd: usd(a.balance),
    creditedUsd: usd(a.credited),
    spentUsd: usd(a.spent),
    recent: a.recent
      .slice(-limit)
      .reverse()
      .map((e) => ({ ts: e.ts, op: e.op, costUsd: usd(e.cost), written: e.written, scanned: e.scanned })),
  };
}

/** E_WALLET_EMPTY unless the balance less what operations in flight hold is positive and covers `nano`. */
export function assertCovers(tenant: string, op: string, nano: number, balance: number, held: number): void {
  const free = balance - held;
  if (free > 0 && free >= nano) return;
  const usd = (n: number) => (n / NANO_PER_USD).toFixed(9).replace(/0+$/, "").replace(/\.$/, "");
  throw new SvcError(
    "E_WALLET_EMPTY",
    `the wallet of tenant '${tenant}' cannot pay for this ${op} (up to ${usd(nano)} USD): balance ${usd(balance)} USD, ${usd(held)} USD of it held by operations in flight; add credit to continue`,
    { field: "wallet" },
  );
}
