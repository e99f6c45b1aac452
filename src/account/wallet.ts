/** @module wallet — one prepaid wallet per tenant: credits and charges on a write-ahead log, balances in memory, checkpoints. */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { decode } from "@msgpack/msgpack";
import { lockDir, writeDurable } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { reportWalLosses } from "../store/damage.js";
import { stderrReporter, type Reporter } from "../store/reporter.js";
import { fsyncDir, readFully } from "../store/scan.js";
import { FRAME_OVERHEAD } from "../store/segment.js";
import { parseStoredJson } from "../safe-values.js";
import { quarantineAndRewrite, salvageElements, tryParse, type StoreRepair } from "../store/salvage-json.js";
import { Wal, type WalPosition } from "../store/wal.js";
import { costOf, NANO_PER_USD, type PriceTable, type Usage } from "./prices.js";
import {
  addCharge,
  addCredit,
  assertCovers,
  viewOf,
  WalletAccounts,
  type Account,
  type Reservation,
  type WalletBook,
  type WalletView,
} from "./wallet-book.js";

/** WAL frame types of the ledger. Never renumber. */
const CREDIT = 1;
const CHARGE = 2;
/** The ledger's name in the damage register. */
const LEDGER = "wallet-ledger";

interface CreditFrame {
  t: string;
  n: number;
  why: string;
  ts: number;
}
interface ChargeFrame {
  t: string;
  op: string;
  n: number;
  w: number;
  s: number;
  ts: number;
}

/** Checkpoint the balances once this many ledger bytes were written since the last one. */
const CHECKPOINT_BYTES = 8 << 20;

/**
 * Charges are deducted from the in-memory balance at once (real time: the next request sees
 * them) and appended to the ledger; a charge resolves when its frame is durable (group commit
 * shares the fsync between concurrent requests). A metered operation first reserves its price
 * bound (`reserve`): refused with E_WALLET_EMPTY unless the balance minus what operations in
 * flight hold covers it, so concurrent operations cannot spend the same money. `settle` then
 * charges the actual cost (never more than the balance minus the other holds: a balance never
 * goes below zero) and `release` drops a hold without charging. Holds live in memory only.
 */
export class Wallets extends WalletAccounts implements WalletBook {
  /** nano-USD held per tenant by open reservations. */
  private readonly held = new Map<string, number>();
  private walBytesAtCheckpoint = 0;
  private checkpointing: Promise<void> | null = null;
  private offline: { all: boolean; tenants: Set<string> } = { all: false, tenants: new Set() };
  /**
   * Read charges already taken from the balances whose frames are not appended yet: appended together, one write,
   * at the end of the event-loop turn that made the first (flushReads), and before any other frame or checkpoint
   * (so the log's order is the order they were applied in). `done` settles once that batch is durable.
   */
  private reads: { frames: ChargeFrame[]; done: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | null = null;

  private constructor(
    private readonly dir: string,
    readonly prices: PriceTable,
    private wal: Wal,
    private readonly reporter: Reporter,
  ) {
    super();
  }

  /** `reporter`: told of ledger damage found on open and of a background checkpoint's failure. */
  static async open(dir: string, prices: PriceTable, reporter: Reporter = stderrReporter): Promise<Wallets> {
    mkdirSync(dir, { recursive: true });
    // One ledger writer: a second server on the same data dir is refused (E_CONFLICT).
    lockDir(dir);
    try {
      const w = new Wallets(dir, prices, undefined as unknown as Wal, reporter);
      const cpPath = join(dir, "wallets.json");
      const cp = existsSync(cpPath) ? readCheckpoint(cpPath) : null;
      if (cp instanceof Error) {
        // Balances before the log's position live only in the checkpoint: never guess them.
        w.offline = { all: true, tenants: new Set() };
        reporter.damage({
          store: LEDGER,
          file: relative(dirname(dir), cpPath),
          kind: "unreadable",
          dropped: 0,
          offline: true,
          detail: `${cp.message}; every wallet is offline (metered requests answer 503 E_STORE_OFFLINE) until the file is restored`,
        });
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
      reportWalLosses(reporter, LEDGER, dirname(dir), report, true);
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
    // A failed ledger write stops every charge, including a read's that did not wait for it (invoke.ts).
    if (this.wal?.failed) throw this.wal.failed;
    if (this.offline.all || this.offline.tenants.has(tenant)) {
      throw new SvcError(
        "E_STORE_OFFLINE",
        `the wallet ledger lost a frame${this.offline.all ? "" : ` of tenant '${tenant}'`}: this wallet is offline until \`svc repair\` (GET /v1/health names the damage)`,
        { field: "wallet" },
      );
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

  /**
   * Release `r` and charge the operation's actual cost; resolves once the charge is durable. Returns the nano-USD charged.
   * `read`: the charge leaves the balance now as any other, and its frame is written with the other reads' charges of
   * this event-loop turn, one write for all (a read's reply does not wait for its charge: invoke.ts).
   */
  async settle(r: Reservation, op: string, usage: Usage, read = false): Promise<number> {
    if (!r.open) throw new SvcError("E_INTERNAL", `a reservation of tenant '${r.tenant}' was settled twice`);
    this.release(r);
    if (!read) return this.debit(r.tenant, op, usage);
    const frame = this.chargeFrame(r.tenant, op, usage);
    this.applyCharge(frame);
    let batch = this.reads;
    if (batch === null) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.reads = batch = { frames: [], done, resolve, reject };
      setImmediate(() => this.flushReads());
    }
    batch.frames.push(frame);
    await batch.done;
    return frame.n;
  }

  /** Append the pending read charges (one write); synchronous up to the append, so positions follow call order. */
  private flushReads(): void {
    const batch = this.reads;
    if (batch === null) return;
    this.reads = null;
    this.wal.appendMany(CHARGE, batch.frames).then(() => batch.resolve(), batch.reject);
    this.checkpointIfDue();
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
    const frame = this.chargeFrame(tenant, op, usage);
    this.applyCharge(frame);
    await this.append(CHARGE, frame);
    return frame.n;
  }

  private chargeFrame(tenant: string, op: string, usage: Usage): ChargeFrame {
    const a = this.accounts.get(tenant)!;
    const n = Math.min(costOf(this.prices, op, usage), Math.max(0, a.balance - (this.held.get(tenant) ?? 0)));
    return { t: tenant, op, n, w: usage.written ?? 0, s: usage.scanned ?? 0, ts: Date.now() };
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
    this.flushReads();
    if (this.offline.all || this.offline.tenants.size > 0) return this.wal.sync();
    this.checkpointing ??= (async () => {
      await this.wal.sync();
      // The balances below hold every charge applied so far: their frames must be before `pos`.
      this.flushReads();
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
    this.flushReads();
    await this.wal.append(type, frame);
    this.checkpointIfDue();
  }

  private checkpointIfDue(): void {
    if (this.wal.stats.bytes - this.walBytesAtCheckpoint > CHECKPOINT_BYTES && this.checkpointing === null)
      void this.checkpoint().catch((err) => this.reporter.background(err, "checkpoint of the wallet ledger")); // only a longer WAL to replay: the next append past the threshold tries again
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
  if (!(cp instanceof Error))
    return { store: LEDGER, file, action: "ok", kept: Object.keys(cp.accounts).length, dropped: 0, detail: "readable" };
  const text = readFileSync(path, "utf8");
  const wal = tryParse(`{${(/"wal"\s*:\s*\{[^{}]*\}/.exec(text) ?? ["x"])[0]}}`) as { wal?: WalPosition } | undefined;
  const parts = salvageElements(text, "accounts") ?? [];
  const accounts: Record<string, Account> = {};
  for (const p of parts) Object.assign(accounts, tryParse(`{${p}}`) ?? {});
  const candidate = JSON.stringify({ version: 1, wal: wal?.wal, accounts });
  const readable =
    Object.keys(accounts).length === parts.length && parts.length > 0 && !(readCheckpointText(candidate, path) instanceof Error);
  if (!readable)
    return {
      store: LEDGER,
      file,
      action: "refused",
      kept: 0,
      dropped: 0,
      detail: `${cp.message}; an account or the log position cannot be read, and a balance is never guessed: restore ${file} from a backup (the wallets stay offline)`,
    };
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
    const ok =
      typeof cp === "object" &&
      cp !== null &&
      typeof cp.wal === "object" &&
      cp.wal !== null &&
      Number.isSafeInteger(cp.wal.segment) &&
      Number.isSafeInteger(cp.wal.offset) &&
      typeof cp.accounts === "object" &&
      cp.accounts !== null;
    if (!ok) return new Error(`${path} is not a ledger checkpoint ({version, wal, accounts})`);
    for (const [t, a] of Object.entries(cp.accounts as Record<string, Account>)) {
      if (
        typeof a !== "object" ||
        a === null ||
        !Number.isFinite(a.balance) ||
        !Number.isFinite(a.credited) ||
        !Number.isFinite(a.spent) ||
        !Array.isArray(a.recent)
      )
        return new Error(`${path}: the account of '${t}' is malformed`);
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
