/** @module wallet — one prepaid wallet per tenant: credits and charges on a write-ahead log, balances in memory, checkpoints. */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { decode } from "@msgpack/msgpack";
import { lockDir, writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { reportDamage, reportWalLosses } from "../store/damage.js";
import { fsyncDir, readFully } from "../store/scan.js";
import { FRAME_OVERHEAD } from "../store/segment.js";
import { parseStoredJson } from "../safe-values.js";
import { quarantineAndRewrite, salvageElements, tryParse, type StoreRepair } from "../store/salvage-json.js";
import { Wal, type WalPosition } from "../store/wal.js";
import { costOf, NANO_PER_USD, type PriceTable, type Usage } from "./prices.js";

/** WAL frame types of the ledger. Never renumber. */
const CREDIT = 1;
const CHARGE = 2;
/** The ledger's name in the damage register. */
const LEDGER = "wallet-ledger";

interface CreditFrame { t: string; n: number; why: string; ts: number }
interface ChargeFrame { t: string; op: string; n: number; w: number; s: number; ts: number }

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
interface UsageBucket { t: number; ops: Record<string, [number, number]> }

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
/** Checkpoint the balances once this many ledger bytes were written since the last one. */
const CHECKPOINT_BYTES = 8 << 20;

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
  /** Release `r` and charge the actual cost (never below zero); resolves once durable with the nano-USD charged. */
  settle(r: Reservation, op: string, usage: Usage): Promise<number>;
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

/**
 * Charges are deducted from the in-memory balance at once (real time: the next request sees
 * them) and appended to the ledger; a charge resolves when its frame is durable (group commit
 * shares the fsync between concurrent requests). A metered operation first reserves its price
 * bound (`reserve`): refused with E_WALLET_EMPTY unless the balance minus what operations in
 * flight hold covers it, so concurrent operations cannot spend the same money. `settle` then
 * charges the actual cost (never more than the balance minus the other holds: a balance never
 * goes below zero) and `release` drops a hold without charging. Holds live in memory only.
 */
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

export class Wallets extends WalletAccounts implements WalletBook {
  /** nano-USD held per tenant by open reservations. */
  private readonly held = new Map<string, number>();
  private walBytesAtCheckpoint = 0;
  private checkpointing: Promise<void> | null = null;
  private offline: { all: boolean; tenants: Set<string> } = { all: false, tenants: new Set() };

  private constructor(
    private readonly dir: string,
    readonly prices: PriceTable,
    private wal: Wal,
  ) {
    super();
  }

  static async open(dir: string, prices: PriceTable): Promise<Wallets> {
    mkdirSync(dir, { recursive: true });
    // One ledger writer: a second server on the same data dir is refused (E_CONFLICT).
    lockDir(dir);
    try {
      const w = new Wallets(dir, prices, undefined as unknown as Wal);
      const cpPath = join(dir, "wallets.json");
      const cp = existsSync(cpPath) ? readCheckpoint(cpPath) : null;
      if (cp instanceof Error) {
        // Balances before the log's position live only in the checkpoint: never guess them.
        w.offline = { all: true, tenants: new Set() };
        reportDamage({ store: LEDGER, file: relative(dirname(dir), cpPath), kind: "unreadable", dropped: 0, offline: true, detail: `${cp.message}; every wallet is offline (metered requests answer 503 E_STORE_OFFLINE) until the file is restored` });
        return w;
      }
      for (const [t, a] of Object.entries(cp?.accounts ?? {})) w.accounts.set(t, a);
      const { wal, report } = await Wal.open(join(dir, "wal"), {
        from: cp?.wal,
        salvage: true,
        onFrame: (f) => (f.type === CREDIT ? w.applyCredit(f.body as CreditFrame) : w.applyCharge(f.body as ChargeFrame)),
      });
      w.wal = wal;
      w.walBytesAtCheckpoint = wal.stats.bytes;
      const lost = report.damaged.filter((d) => !d.beforeFrom);
      // A lost frame credited or charged someone: take that tenant's wallet offline rather than serve a guessed balance.
      for (const d of lost) {
        const t = await tenantOfDamagedFrame(d.file, d.offset, d.bytes);
        if (t !== null && w.accounts.has(t)) w.offline.tenants.add(t);
        else w.offline.all = true;
      }
      reportWalLosses(LEDGER, dirname(dir), report, true);
      return w;
    } catch (err) {
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /** Tenants whose wallet is offline because the ledger lost a frame of theirs (all: the frame's tenant is unknown, or the checkpoint is unreadable). */
  offlineTenants(): { all: boolean; tenants: string[] } {
    return { all: this.offline.all, tenants: [...this.offline.tenants] };
  }

  private assertOnline(tenant: string): void {
    if (this.offline.all || this.offline.tenants.has(tenant)) {
      throw new SvcError("E_STORE_OFFLINE", `the wallet ledger lost a frame${this.offline.all ? "" : ` of tenant '${tenant}'`}: this wallet is offline until \`svc repair\` (GET /v1/health names the damage)`, { field: "wallet" });
    }
  }

  /**
   * Hold the most operation `op` can cost with at most `bound` usage (a tenant seen for the first time is
   * credited first). Throws E_WALLET_EMPTY unless the unheld balance is positive and covers it.
   */
  async reserve(tenant: string, op: string, bound: Usage): Promise<Reservation> {
    this.assertOnline(tenant);
    const a = this.accounts.get(tenant) ?? (await this.signUp(tenant));
    const nano = costOf(this.prices, op, bound);
    // Synchronous from here to the hold: no other operation can take the same money.
    const held = this.held.get(tenant) ?? 0;
    assertCovers(tenant, op, nano, a.balance, held);
    this.held.set(tenant, held + nano);
    return { tenant, nano, open: true };
  }

  /** Drop a reservation without charging (the operation failed). Idempotent. */
  release(r: Reservation): void {
    if (!r.open) return;
    r.open = false;
    const left = (this.held.get(r.tenant) ?? 0) - r.nano;
    if (left > 0) this.held.set(r.tenant, left);
    else this.held.delete(r.tenant);
  }

  /** Release `r` and charge the operation's actual cost; resolves once the charge is durable. Returns the nano-USD charged. */
  async settle(r: Reservation, op: string, usage: Usage): Promise<number> {
    if (!r.open) throw new SvcError("E_INTERNAL", `a reservation of tenant '${r.tenant}' was settled twice`);
    this.release(r);
    return this.debit(r.tenant, op, usage);
  }

  /** Charge an operation without a reservation (never below zero, as `settle`); resolves once the charge is durable. Returns the nano-USD charged. */
  async charge(tenant: string, op: string, usage: Usage): Promise<number> {
    this.assertOnline(tenant);
    if (!this.accounts.has(tenant)) await this.signUp(tenant);
    return this.debit(tenant, op, usage);
  }

  /** nano-USD held by open reservations of a tenant. */
  heldBy(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  /**
   * The actual cost, capped at the balance other operations do not hold: with a true price bound
   * the cap never bites; without one (a route that declares no usage bound) the wallet still never
   * goes below zero, and the ledger records what was taken.
   */
  private async debit(tenant: string, op: string, usage: Usage): Promise<number> {
    const a = this.accounts.get(tenant)!;
    const n = Math.min(costOf(this.prices, op, usage), Math.max(0, a.balance - (this.held.get(tenant) ?? 0)));
    const frame: ChargeFrame = { t: tenant, op, n, w: usage.written ?? 0, s: usage.scanned ?? 0, ts: Date.now() };
    this.applyCharge(frame);
    await this.append(CHARGE, frame);
    return n;
  }

  /** Add credit (USD) to a tenant's wallet. */
  async credit(tenant: string, usd: number, why: string): Promise<void> {
    if (!Number.isFinite(usd) || usd <= 0) throw new SvcError("E_BAD_REQUEST", "credit must be a positive number of USD", { field: "usd" });
    this.assertOnline(tenant);
    if (!this.accounts.has(tenant)) await this.signUp(tenant);
    const frame: CreditFrame = { t: tenant, n: Math.round(usd * NANO_PER_USD), why, ts: Date.now() };
    this.applyCredit(frame);
    await this.append(CREDIT, frame);
  }

  async view(tenant: string, limit = 20): Promise<WalletView> {
    this.assertOnline(tenant);
    return viewOf(tenant, this.accounts.get(tenant) ?? (await this.signUp(tenant)), limit);
  }

  async close(): Promise<void> {
    if (this.wal === undefined) {
      // Opened offline (unreadable checkpoint): nothing was written, the damaged file stays for repair.
      rmSync(join(this.dir, "LOCK"), { force: true });
      return;
    }
    await this.checkpoint();
    await this.wal.close();
    rmSync(join(this.dir, "LOCK"), { force: true });
  }

  /**
   * Write balances and the log position they include, then drop older log segments. Skipped while a
   * ledger frame is lost (a wallet is offline): the damaged segment stays for `svc repair`.
   */
  checkpoint(): Promise<void> {
    if (this.offline.all || this.offline.tenants.size > 0) return this.wal.sync();
    this.checkpointing ??= (async () => {
      await this.wal.sync();
      const pos = this.wal.position;
      const bytes = this.wal.stats.bytes;
      const body = Buffer.from(JSON.stringify({ version: 1, wal: pos, accounts: Object.fromEntries(this.accounts) }));
      await writeDurable(join(this.dir, "wallets.json.tmp"), body);
      await rename(join(this.dir, "wallets.json.tmp"), join(this.dir, "wallets.json"));
      await fsyncDir(this.dir);
      this.walBytesAtCheckpoint = bytes;
      await this.wal.dropBefore(pos);
    })().finally(() => (this.checkpointing = null));
    return this.checkpointing;
  }

  private async signUp(tenant: string): Promise<Account> {
    const frame: CreditFrame = { t: tenant, n: Math.round(this.prices.signupCredit * NANO_PER_USD), why: "signup", ts: Date.now() };
    if (!this.accounts.has(tenant)) {
      this.applyCredit(frame);
      await this.append(CREDIT, frame);
    }
    return this.accounts.get(tenant)!;
  }

  private async append(type: number, frame: CreditFrame | ChargeFrame): Promise<void> {
    await this.wal.append(type, frame);
    if (this.wal.stats.bytes - this.walBytesAtCheckpoint > CHECKPOINT_BYTES && this.checkpointing === null) void this.checkpoint().catch(() => {});
  }

  private account(t: string): Account {
    let a = this.accounts.get(t);
    if (a === undefined) {
      a = { balance: 0, credited: 0, spent: 0, recent: [] };
      this.accounts.set(t, a);
    }
    return a;
  }

  private applyCredit(f: CreditFrame): void {
    addCredit(this.account(f.t), f);
  }

  private applyCharge(f: ChargeFrame): void {
    addCharge(this.account(f.t), f);
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

/**
 * `svc repair` of `<dir>/wallets.json` (dir = <data>/wallet): rewritten only when the log position
 * and every account still parse (the damage was in the framing); an account that cannot be read is
 * a balance nothing else holds, so then the file is left as it is (restore it from a backup).
 */
export function repairLedgerCheckpoint(dir: string): StoreRepair | null {
  const path = join(dir, "wallets.json");
  if (!existsSync(path)) return null;
  const file = "wallet/wallets.json";
  const cp = readCheckpoint(path);
  if (!(cp instanceof Error)) return { store: LEDGER, file, action: "ok", kept: Object.keys(cp.accounts).length, dropped: 0, detail: "readable" };
  const text = readFileSync(path, "utf8");
  const wal = tryParse(`{${(/"wal"\s*:\s*\{[^{}]*\}/.exec(text) ?? ["x"])[0]}}`) as { wal?: WalPosition } | undefined;
  const parts = salvageElements(text, "accounts") ?? [];
  const accounts: Record<string, Account> = {};
  for (const p of parts) Object.assign(accounts, tryParse(`{${p}}`) ?? {});
  const candidate = JSON.stringify({ version: 1, wal: wal?.wal, accounts });
  const readable = Object.keys(accounts).length === parts.length && parts.length > 0 && !(readCheckpointText(candidate, path) instanceof Error);
  if (!readable) return { store: LEDGER, file, action: "refused", kept: 0, dropped: 0, detail: `${cp.message}; an account or the log position cannot be read, and a balance is never guessed: restore ${file} from a backup (the wallets stay offline)` };
  const backup = quarantineAndRewrite(path, candidate);
  return { store: LEDGER, file, action: "rewritten", kept: parts.length, dropped: 0, backup, detail: cp.message };
}

/** The ledger checkpoint, or the reason it cannot be read. */
function readCheckpoint(path: string): { wal: WalPosition; accounts: Record<string, Account> } | Error {
  return readCheckpointText(readFileSync(path, "utf8"), path);
}

function readCheckpointText(text: string, path: string): { wal: WalPosition; accounts: Record<string, Account> } | Error {
  try {
    const cp = parseStoredJson(text) as { wal?: WalPosition; accounts?: unknown };
    const ok = typeof cp === "object" && cp !== null && typeof cp.wal === "object" && cp.wal !== null && Number.isSafeInteger(cp.wal.segment) && Number.isSafeInteger(cp.wal.offset) && typeof cp.accounts === "object" && cp.accounts !== null;
    if (!ok) return new Error(`${path} is not a ledger checkpoint ({version, wal, accounts})`);
    for (const [t, a] of Object.entries(cp.accounts as Record<string, Account>)) {
      if (typeof a !== "object" || a === null || !Number.isFinite(a.balance) || !Number.isFinite(a.credited) || !Number.isFinite(a.spent) || !Array.isArray(a.recent)) return new Error(`${path}: the account of '${t}' is malformed`);
    }
    return cp as { wal: WalPosition; accounts: Record<string, Account> };
  } catch (e) {
    return new Error(`${path} is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
}

/**
 * The tenant a damaged ledger frame most likely belonged to: when the region is one frame whose
 * body still decodes to a map with a string `t`. The caller accepts it only for a tenant the
 * ledger knows; anything else (null) takes every wallet offline.
 */
async function tenantOfDamagedFrame(file: string, offset: number, bytes: number): Promise<string | null> {
  if (bytes < FRAME_OVERHEAD + 2 || bytes > 1 << 20) return null;
  try {
    const buf = Buffer.alloc(bytes);
    const fh = await open(file, "r");
    try {
      await readFully(fh, buf, 0, bytes, offset, file);
    } finally {
      await fh.close();
    }
    if (buf.readUInt32LE(4) + FRAME_OVERHEAD !== bytes) return null; // the length does not span exactly this region
    const body = decode(buf.subarray(FRAME_OVERHEAD + 1)) as { t?: unknown };
    return typeof body === "object" && body !== null && typeof body.t === "string" ? body.t : null;
  } catch {
    return null;
  }
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
