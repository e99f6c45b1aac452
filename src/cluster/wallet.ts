/**
 * @module cluster/wallet — the prepaid wallets shared by every node, as a ledger stream: every
 * change (open, hold, free, settle, charge, credit) is a message on subject `svc_ledger.<tenant>` of
 * the replicated JetStream stream `svc_ledger`, and every node folds the whole stream, in stream
 * order, into the same balances. The outcome of a change is decided by the fold at the change's
 * place in the stream (a hold is granted only if the balance less the holds before it covers it;
 * a settle or charge takes at most what the other holds leave), so concurrent changes from any
 * number of nodes are serialized by the stream's Raft log: no two holds take the same money and a
 * balance never goes below zero. A node publishes a change, waits for JetStream's ack (a quorum has
 * it) and for its own fold to reach the acked sequence, then reads the outcome.
 *
 * Why not compare-and-set on a KV entry: nats-server before 2.9.21 (Debian ships 2.9.10) checks a
 * clustered stream's expected-last-subject-sequence only before proposing the write, so concurrent
 * `kv.update`s naming the same revision can all succeed (nats-server#4320): lost updates, measured
 * here as 11 of 15 concurrent charges lost. The stream's order is what Raft does guarantee.
 *
 * Exactly once: each change has an id; a publish retried after a lost ack may be stored twice, and
 * the fold ignores a change whose kind and id it already applied (kept for the last DONE_KEEP changes
 * of a tenant). No `Nats-Msg-Id`: see jetstream-log.ts FRAME_HEADER for why.
 */
import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { costOf, NANO_PER_USD, type PriceTable, type Usage } from "../account/prices.js";
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
} from "../account/wallet-book.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { untilQuorum, within } from "./quorum.js";
import type { Snapshot, Snapshots } from "./snapshots.js";
import { StreamTail } from "./stream-tail.js";

/** The ledger stream; a tenant's changes are the subject `<stream>.<tenant>`. */
export const LEDGER_STREAM = "svc_ledger";
/** A tenant as a subject token. */
const TENANT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
/** Applied change keys a tenant remembers for deduplication. */
const DONE_KEEP = 4096;
/** The ledger's snapshots cover the whole stream (snapshots.ts names them by this filter). */
export const LEDGER_SUBJECTS = `${LEDGER_STREAM}.>`;
/** A node writes a snapshot of its fold after this many changes, unless another node's is that recent. */
export const LEDGER_SNAPSHOT_EVERY = 10_000;

/**
 * One change, as the JSON body of a ledger message. Amounts in integer nano-USD, times in ms since
 * the epoch (the publishing node's clock); `su` is the signup credit a tenant gets when this is its
 * first change (the publisher's price table, so every node folds the same number).
 */
export type LedgerChange =
  | { k: "open"; id: string; ts: number; su: number }
  | { k: "hold"; id: string; ts: number; su: number; op: string; n: number; exp: number }
  | { k: "free"; id: string; ts: number; su: number }
  | { k: "settle" | "charge"; id: string; ts: number; su: number; op: string; n: number; w: number; s: number }
  | { k: "credit"; id: string; ts: number; su: number; n: number; why: string };

/** What the fold decided for a change this node waits for. */
type Outcome = { granted: true } | { granted: false; balance: number; held: number } | { charged: number } | Record<string, never>;

interface Folded extends Account {
  /** Open holds: id -> [nano-USD, expires at]. */
  holds: Map<string, [number, number]>;
  /** Keys (`<kind>:<id>`) of applied changes, oldest first, at most DONE_KEEP. */
  done: Set<string>;
}

export interface ClusterWalletsOptions {
  /** Replicas of the stream (default 3). */
  replicas?: number;
  /** A hold not settled or released within this long stops holding (default 120 s): a node that died mid-operation frees its holds. */
  holdTtlMs?: number;
  /** How long one publish waits for its ack before it is retried with the same message id (default 2000 ms). */
  ackTimeoutMs?: number;
  /** How long a change keeps retrying before E_NO_QUORUM (default 15 s: longer than a stream leader election). */
  quorumTimeoutMs?: number;
  /**
   * Fold snapshots (snapshots.ts, kind `ledger`): a node starts from the newest and folds only the
   * changes after it, writes one every `every` changes (default LEDGER_SNAPSHOT_EVERY) and purges
   * the stream below the older one. Absent: the stream keeps every change and is folded whole.
   */
  snapshots?: { store: Snapshots; every?: number };
}

export class ClusterWallets extends WalletAccounts<Folded> implements WalletBook {
  /** Changes this node published, and how many of them a hold refused at its place in the stream after the local check let it through. */
  readonly stats = { published: 0, refusedInStream: 0 };
  private readonly offline = new Set<string>();
  private readonly holdIds = new WeakMap<Reservation, string>();
  /** Changes this node waits for (by key) and, once folded, their outcomes. */
  private readonly waiting = new Map<string, Outcome | null>();
  private tail: StreamTail | null = null;
  /** The sequence of the last change folded (or of the snapshot the fold started from). */
  private folded = 0;
  private sinceSnapshot = 0;
  private snapshotting = false;

  private constructor(
    private readonly js: JetStreamClient,
    readonly prices: PriceTable,
    private readonly settings: Required<Omit<ClusterWalletsOptions, "replicas" | "snapshots">>,
    private readonly snapshots: ClusterWalletsOptions["snapshots"],
  ) {
    super();
  }

  /** Create the stream when absent, fold it to its current end, and keep folding what follows. */
  static async open(nc: NatsConnection, prices: PriceTable, opts: ClusterWalletsOptions = {}): Promise<ClusterWallets> {
    const settings = {
      holdTtlMs: opts.holdTtlMs ?? 120_000,
      ackTimeoutMs: opts.ackTimeoutMs ?? 2000,
      quorumTimeoutMs: opts.quorumTimeoutMs ?? 15_000,
    };
    const jsm = await jetstreamManager(nc);
    const info = await untilQuorum(
      "open the ledger",
      settings.quorumTimeoutMs,
      async () => {
        const existing = await jsm.streams.info(LEDGER_STREAM).catch((e: unknown) => {
          if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return null;
          throw e;
        });
        return (
          existing ??
          (await jsm.streams.add({
            name: LEDGER_STREAM,
            subjects: [`${LEDGER_STREAM}.>`],
            num_replicas: opts.replicas ?? 3,
            duplicate_window: 120_000 * 1_000_000,
          }))
        );
      },
      { field: "wallet" },
    );
    const w = new ClusterWallets(jetstream(nc), prices, settings, opts.snapshots);
    // Start from the newest fold snapshot that reads and checks, if any.
    const snap = opts.snapshots === undefined ? null : await opts.snapshots.store.newest(LEDGER_SUBJECTS);
    if (snap !== null) w.load(snap);
    // Fold the stream in order for as long as the wallets are open (stream-tail.ts: resumes by itself after a server loss).
    w.tail = new StreamTail(nc, {
      stream: LEDGER_STREAM,
      what: "the ledger",
      start: { after: w.folded },
      catchUp: Math.max(w.folded, info.state.last_seq),
      quorumTimeoutMs: settings.quorumTimeoutMs,
      apiTimeoutMs: settings.ackTimeoutMs,
      onMessage: (m) => w.take(m.seq, m.subject.slice(LEDGER_STREAM.length + 1), m.data),
    });
    try {
      await w.tail.reached(info.state.last_seq);
    } catch (e) {
      await w.tail.stop();
      throw e;
    }
    return w;
  }

  offlineTenants(): { all: boolean; tenants: string[] } {
    return { all: false, tenants: [...this.offline] };
  }

  async reserve(tenant: string, op: string, bound: Usage): Promise<Reservation> {
    const nano = costOf(this.prices, op, bound);
    const a = this.accountOf(tenant);
    // refused here when the balance this node has folded cannot cover it (nothing is written)
    if (a !== undefined) assertCovers(tenant, op, nano, a.balance, heldAt(a, Date.now()));
    const id = newId();
    const ts = Date.now();
    const out = await this.submit(tenant, { k: "hold", id, ts, su: this.signup, op, n: nano, exp: ts + this.settings.holdTtlMs });
    if ("granted" in out && !out.granted) {
      this.stats.refusedInStream++;
      assertCovers(tenant, op, nano, out.balance, out.held);
    }
    const r: Reservation = { tenant, nano, open: true };
    this.holdIds.set(r, id);
    return r;
  }

  /** Drop the hold; when the ledger cannot be reached in time it stays until it expires (holdTtlMs). */
  async release(r: Reservation): Promise<void> {
    if (!r.open) return;
    r.open = false;
    await this.submit(r.tenant, { k: "free", id: this.holdIds.get(r)!, ts: Date.now(), su: this.signup }).catch(() => undefined); // as documented: the hold then expires (holdTtlMs)
  }

  async settle(r: Reservation, op: string, usage: Usage): Promise<number> {
    if (!r.open) throw new SvcError("E_INTERNAL", `a reservation of tenant '${r.tenant}' was settled twice`);
    r.open = false;
    return this.debit("settle", r.tenant, this.holdIds.get(r)!, op, usage);
  }

  async charge(tenant: string, op: string, usage: Usage): Promise<number> {
    return this.debit("charge", tenant, newId(), op, usage);
  }

  heldBy(tenant: string): number {
    const a = this.accounts.get(tenant);
    return a === undefined ? 0 : heldAt(a, Date.now());
  }

  async credit(tenant: string, usd: number, why: string): Promise<void> {
    if (!Number.isFinite(usd) || usd <= 0) throw new SvcError("E_BAD_REQUEST", "credit must be a positive number of USD", { field: "usd" });
    await this.submit(tenant, { k: "credit", id: newId(), ts: Date.now(), su: this.signup, n: Math.round(usd * NANO_PER_USD), why });
  }

  /** The tenant's wallet once the fold reached the ledger's end as of the call: every change acknowledged on any node before it shows. */
  async view(tenant: string, limit = 20): Promise<WalletView> {
    if (this.accountOf(tenant) === undefined) await this.submit(tenant, { k: "open", id: newId(), ts: Date.now(), su: this.signup });
    else await this.caughtUp();
    return viewOf(tenant, this.accounts.get(tenant)!, limit);
  }

  /** Resolves once the fold reached the stream's last sequence as of the call; 503 E_NOT_CAUGHT_UP when it did not within the quorum timeout. */
  private async caughtUp(): Promise<void> {
    const jsm = await this.js.jetstreamManager(false);
    const last = await untilQuorum(
      "read the ledger",
      this.settings.quorumTimeoutMs,
      async () => (await jsm.streams.info(LEDGER_STREAM)).state.last_seq,
      { field: "wallet" },
    );
    await within(
      this.tail!.reached(last),
      this.settings.quorumTimeoutMs,
      () =>
        new SvcError("E_NOT_CAUGHT_UP", `this node's ledger fold is at ${this.position} of ${last}; retry shortly`, {
          field: "wallet",
          details: { retryAfterSeconds: 1 },
        }),
    );
  }

  /** Stop folding (changes in flight on this node reject). */
  async close(): Promise<void> {
    await this.tail?.stop();
  }

  /** The sequence of the last change folded. */
  get position(): number {
    return this.tail?.position ?? 0;
  }

  private get signup(): number {
    return Math.round(this.prices.signupCredit * NANO_PER_USD);
  }

  private async debit(k: "settle" | "charge", tenant: string, id: string, op: string, usage: Usage): Promise<number> {
    const n = costOf(this.prices, op, usage);
    const out = await this.submit(tenant, { k, id, ts: Date.now(), su: this.signup, op, n, w: usage.written ?? 0, s: usage.scanned ?? 0 });
    return "charged" in out ? out.charged : 0;
  }

  /** The tenant's folded account (undefined before its first change); E_STORE_OFFLINE when the ledger lost one of its changes. */
  private accountOf(tenant: string): Folded | undefined {
    if (!TENANT_TOKEN.test(tenant))
      throw new SvcError("E_BAD_REQUEST", `tenant '${tenant}' is not 1-64 letters, digits, _ and -`, { field: "tenant" });
    if (this.offline.has(tenant))
      throw new SvcError(
        "E_STORE_OFFLINE",
        `a change of tenant '${tenant}' in the ledger stream ${LEDGER_STREAM} does not parse: this wallet is offline`,
        { field: "wallet" },
      );
    return this.accounts.get(tenant);
  }

  /** Publish a change (retried until acked), wait until the fold reached it, and return what the fold decided. */
  private async submit(tenant: string, c: LedgerChange): Promise<Outcome> {
    this.accountOf(tenant);
    const key = `${c.k}:${c.id}`;
    this.waiting.set(key, null);
    try {
      const seq = await untilQuorum(
        `tenant '${tenant}' wallet`,
        this.settings.quorumTimeoutMs,
        async () => {
          const ack = await this.js.publish(`${LEDGER_STREAM}.${tenant}`, JSON.stringify(c), { timeout: this.settings.ackTimeoutMs });
          return ack.seq;
        },
        { field: "wallet" },
      );
      this.stats.published++;
      await this.tail!.reached(seq);
      const out = this.waiting.get(key) ?? {};
      if (out === UNKNOWN)
        throw new SvcError(
          "E_OUTCOME_UNKNOWN",
          `tenant '${tenant}' wallet: this node caught up from a snapshot past the change, so its outcome is not known here; retry`,
          { field: "wallet", details: { retryAfterSeconds: 1 } },
        );
      return out;
    } finally {
      this.waiting.delete(key);
    }
  }

  /**
   * The tail's message at `seq`. The stream has no limits and deletes nothing, so a sequence past
   * folded + 1 means a purge took the changes between (this node was behind it): start again from
   * the newest snapshot, which covers them (the purge goes only below the older one), or fail the
   * tail (E_STORE_OFFLINE) when none does — never fold past a hole.
   */
  private async take(seq: number, tenant: string, data: Uint8Array): Promise<void> {
    if (this.snapshots !== undefined && seq > this.folded + 1) {
      const snap = await this.snapshots.store.newest(LEDGER_SUBJECTS);
      if (snap === null || snap.seq < seq - 1)
        throw new SvcError(
          "E_STORE_OFFLINE",
          `the ledger ${LEDGER_STREAM} has no change ${this.folded + 1}..${seq - 1} and no snapshot covering them`,
          { field: "wallet" },
        );
      this.load(snap);
    }
    if (seq <= this.folded) return;
    this.fold(tenant, data);
    this.folded = seq;
    if (this.snapshots !== undefined && ++this.sinceSnapshot >= (this.snapshots.every ?? LEDGER_SNAPSHOT_EVERY) && !this.snapshotting)
      void this.snapshot();
  }

  /**
   * Write the fold at this sequence as the ledger's newest snapshot (unless another node wrote one
   * within the last half interval), then purge the stream below the older one (snapshots.ts).
   */
  private async snapshot(): Promise<void> {
    const snaps = this.snapshots!;
    this.snapshotting = true;
    this.sinceSnapshot = 0;
    try {
      const seq = this.folded;
      const data = Buffer.from(JSON.stringify(this.state()));
      const newest = (await snaps.store.list(LEDGER_SUBJECTS))[0];
      if (newest === undefined || newest.seq < seq - (snaps.every ?? LEDGER_SNAPSHOT_EVERY) / 2) {
        await snaps.store.write({
          stream: LEDGER_STREAM,
          subject: LEDGER_SUBJECTS,
          seq,
          floor: seq + 1,
          kind: "ledger",
          files: [{ path: "fold.json", data }],
        });
      }
      await snaps.store.purgeBelow(LEDGER_STREAM, LEDGER_SUBJECTS);
    } catch {
      // not now (no quorum, a snapshot that did not check): the next interval tries again
    } finally {
      this.snapshotting = false;
    }
  }

  /** The fold as JSON-able data (FORMAT.md "Snapshots", kind `ledger`). */
  private state(): unknown {
    const accounts = [...this.accounts].map(([t, a]) => [t, { ...a, holds: [...a.holds], done: [...a.done] }]);
    return { seq: this.folded, accounts, offline: [...this.offline] };
  }

  /** Replace the fold with a snapshot's (changes this node waits for that it covers get an unknown outcome). */
  private load(snap: Snapshot): void {
    const file = snap.kind === "ledger" ? snap.files.find((f) => f.path === "fold.json") : undefined;
    if (file === undefined) throw new SvcError("E_STORE_OFFLINE", `ledger snapshot at ${snap.seq} holds no fold`, { field: "wallet" });
    const s = parseStoredJson(new TextDecoder().decode(file.data)) as {
      accounts: Array<[string, Folded & { holds: Array<[string, [number, number]]>; done: string[] }]>;
      offline: string[];
    };
    this.accounts.clear();
    for (const [t, a] of s.accounts) this.accounts.set(t, { ...a, holds: new Map(a.holds), done: new Set(a.done) });
    this.offline.clear();
    for (const t of s.offline) this.offline.add(t);
    for (const k of this.waiting.keys()) if (this.waiting.get(k) === null) this.waiting.set(k, UNKNOWN);
    this.folded = snap.seq;
  }

  /** Apply one change: the same on every node, from the message alone. */
  private fold(tenant: string, data: Uint8Array): void {
    const c = parseChange(data);
    if (c === null) {
      this.offline.add(tenant);
      return;
    }
    let a = this.accounts.get(tenant);
    if (a === undefined) {
      a = { balance: 0, credited: 0, spent: 0, recent: [], holds: new Map(), done: new Set() };
      this.accounts.set(tenant, a);
      addCredit(a, { n: c.su, why: "signup", ts: c.ts });
    }
    const key = `${c.k}:${c.id}`;
    if (a.done.has(key)) return; // a retried change the stream kept twice
    a.done.add(key);
    if (a.done.size > DONE_KEEP) a.done.delete(a.done.values().next().value!);
    for (const [id, [, exp]] of a.holds) if (exp <= c.ts) a.holds.delete(id);
    let out: Outcome = {};
    switch (c.k) {
      case "hold": {
        const held = heldAt(a, c.ts);
        const free = a.balance - held;
        if (free > 0 && free >= c.n) {
          a.holds.set(c.id, [c.n, c.exp]);
          out = { granted: true };
        } else out = { granted: false, balance: a.balance, held };
        break;
      }
      case "free":
        a.holds.delete(c.id);
        break;
      case "settle":
      case "charge": {
        if (c.k === "settle") a.holds.delete(c.id);
        const charged = Math.min(c.n, Math.max(0, a.balance - heldAt(a, c.ts)));
        addCharge(a, { op: c.op, n: charged, w: c.w, s: c.s, ts: c.ts });
        out = { charged };
        break;
      }
      case "credit":
        addCredit(a, c);
        break;
      case "open":
        break;
    }
    if (this.waiting.has(key)) this.waiting.set(key, out);
  }
}

/** The outcome of a change a snapshot covered before this node folded it. */
const UNKNOWN: Outcome = Object.freeze({}) as Outcome;

function newId(): string {
  return randomBytes(8).toString("hex");
}

/** nano-USD held by the holds of `a` that have not expired at `now`. */
function heldAt(a: Folded, now: number): number {
  let held = 0;
  for (const [n, exp] of a.holds.values()) if (exp > now) held += n;
  return held;
}

/** A ledger message's change, or null when it is not one (that tenant's wallet goes offline on every node alike). */
export function parseChange(data: Uint8Array): LedgerChange | null {
  try {
    const c = parseStoredJson(new TextDecoder().decode(data)) as LedgerChange;
    if (
      typeof c !== "object" ||
      c === null ||
      typeof c.id !== "string" ||
      !Number.isFinite(c.ts) ||
      !Number.isSafeInteger(c.su) ||
      c.su < 0
    )
      return null;
    const amount = (x: unknown) => Number.isSafeInteger(x) && (x as number) >= 0;
    switch (c.k) {
      case "open":
      case "free":
        return c;
      case "hold":
        return typeof c.op === "string" && amount(c.n) && Number.isFinite(c.exp) ? c : null;
      case "settle":
      case "charge":
        return typeof c.op === "string" && amount(c.n) && amount(c.w) && amount(c.s) ? c : null;
      case "credit":
        return typeof c.why === "string" && amount(c.n) ? c : null;
      default:
        return null;
    }
  } catch {
    return null;
  }
}
