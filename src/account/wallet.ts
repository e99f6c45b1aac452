/** @module wallet — one prepaid wallet per tenant: credits and charges on a write-ahead log, balances in memory, checkpoints. */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { rename } from "node:fs/promises";
import { join } from "node:path";
import { lockDir, writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { fsyncDir } from "../store/scan.js";
import { Wal, type WalPosition } from "../store/wal.js";
import { costOf, NANO_PER_USD, type PriceTable, type Usage } from "./prices.js";

/** WAL frame types of the ledger. Never renumber. */
const CREDIT = 1;
const CHARGE = 2;

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

interface Account {
  /** nano-USD. */
  balance: number;
  credited: number;
  spent: number;
  /** Newest last, at most RECENT entries. */
  recent: UsageEntry[];
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

/**
 * Charges are deducted from the in-memory balance at once (real time: the next request sees
 * them) and appended to the ledger; `charge` resolves when the frame is durable (group
 * commit shares the fsync between concurrent requests). A request is refused with
 * E_WALLET_EMPTY when the balance is not positive before it runs; the request that crosses
 * zero completes, so a balance can end slightly below zero.
 */
export class Wallets {
  private readonly accounts = new Map<string, Account>();
  private walBytesAtCheckpoint = 0;
  private checkpointing: Promise<void> | null = null;

  private constructor(
    private readonly dir: string,
    readonly prices: PriceTable,
    private wal: Wal,
  ) {}

  static async open(dir: string, prices: PriceTable): Promise<Wallets> {
    mkdirSync(dir, { recursive: true });
    // One ledger writer: a second server on the same data dir is refused (E_CONFLICT).
    lockDir(dir);
    try {
      const cpPath = join(dir, "wallets.json");
      const cp = existsSync(cpPath) ? (JSON.parse(readFileSync(cpPath, "utf8")) as { wal: WalPosition; accounts: Record<string, Account> }) : null;
      const w = new Wallets(dir, prices, undefined as unknown as Wal);
      for (const [t, a] of Object.entries(cp?.accounts ?? {})) w.accounts.set(t, a);
      const { wal } = await Wal.open(join(dir, "wal"), {
        from: cp?.wal,
        onFrame: (f) => (f.type === CREDIT ? w.applyCredit(f.body as CreditFrame) : w.applyCharge(f.body as ChargeFrame)),
      });
      w.wal = wal;
      w.walBytesAtCheckpoint = wal.stats.bytes;
      return w;
    } catch (err) {
      rmSync(join(dir, "LOCK"), { force: true });
      throw err;
    }
  }

  /** Throws E_WALLET_EMPTY unless the tenant's balance is positive; a tenant seen for the first time is credited first. */
  async check(tenant: string): Promise<void> {
    const a = this.accounts.get(tenant) ?? (await this.signUp(tenant));
    if (a.balance <= 0) {
      throw new SvcError("E_WALLET_EMPTY", `the wallet of tenant '${tenant}' is empty (balance ${(a.balance / NANO_PER_USD).toFixed(6)} USD); add credit to continue`, { field: "wallet" });
    }
  }

  /** Deduct an operation's price; resolves once the charge is durable. Returns the cost in nano-USD. */
  async charge(tenant: string, op: string, usage: Usage): Promise<number> {
    if (!this.accounts.has(tenant)) await this.signUp(tenant);
    const n = costOf(this.prices, op, usage);
    const frame: ChargeFrame = { t: tenant, op, n, w: usage.written ?? 0, s: usage.scanned ?? 0, ts: Date.now() };
    this.applyCharge(frame);
    await this.append(CHARGE, frame);
    return n;
  }

  /** Add credit (USD) to a tenant's wallet. */
  async credit(tenant: string, usd: number, why: string): Promise<void> {
    if (!Number.isFinite(usd) || usd <= 0) throw new SvcError("E_BAD_REQUEST", "credit must be a positive number of USD", { field: "usd" });
    if (!this.accounts.has(tenant)) await this.signUp(tenant);
    const frame: CreditFrame = { t: tenant, n: Math.round(usd * NANO_PER_USD), why, ts: Date.now() };
    this.applyCredit(frame);
    await this.append(CREDIT, frame);
  }

  async view(tenant: string, limit = 20): Promise<WalletView> {
    const a = this.accounts.get(tenant) ?? (await this.signUp(tenant));
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

  async close(): Promise<void> {
    await this.checkpoint();
    await this.wal.close();
    rmSync(join(this.dir, "LOCK"), { force: true });
  }

  /** Write balances and the log position they include, then drop older log segments. */
  checkpoint(): Promise<void> {
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
    const a = this.account(f.t);
    a.balance += f.n;
    a.credited += f.n;
    this.remember(a, { ts: f.ts, op: `credit:${f.why}`, cost: -f.n, written: 0, scanned: 0 });
  }

  private applyCharge(f: ChargeFrame): void {
    const a = this.account(f.t);
    a.balance -= f.n;
    a.spent += f.n;
    this.remember(a, { ts: f.ts, op: f.op, cost: f.n, written: f.w, scanned: f.s });
  }

  private remember(a: Account, e: UsageEntry): void {
    a.recent.push(e);
    if (a.recent.length > RECENT * 2) a.recent.splice(0, a.recent.length - RECENT);
  }
}
