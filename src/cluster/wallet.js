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
 * Exactly once: each change has an id; its message id (`Nats-Msg-Id`) is `<tenant>:<kind>:<id>`, so
 * a publish retried after a lost ack is stored once, and the fold ignores a change whose kind and
 * id it already applied (kept for the last DONE_KEEP changes of a tenant).
 */
import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { randomBytes } from "node:crypto";
import { costOf, NANO_PER_USD } from "../account/prices.js";
import { addCharge, addCredit, assertCovers, viewOf, WalletAccounts, } from "../account/wallet-book.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { untilQuorum } from "./quorum.js";
import { StreamTail } from "./stream-tail.js";
/** The ledger stream; a tenant's changes are the subject `<stream>.<tenant>`. */
export const LEDGER_STREAM = "svc_ledger";
/** A tenant as a subject token. */
const TENANT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
/** Applied change keys a tenant remembers for deduplication. */
const DONE_KEEP = 4096;
export class ClusterWallets extends WalletAccounts {
    js;
    prices;
    settings;
    /** Changes this node published, and how many of them a hold refused at its place in the stream after the local check let it through. */
    stats = { published: 0, refusedInStream: 0 };
    offline = new Set();
    holdIds = new WeakMap();
    /** Changes this node waits for (by key) and, once folded, their outcomes. */
    waiting = new Map();
    tail = null;
    constructor(js, prices, settings) {
        super();
        this.js = js;
        this.prices = prices;
        this.settings = settings;
    }
    /** Create the stream when absent, fold it to its current end, and keep folding what follows. */
    static async open(nc, prices, opts = {}) {
        const settings = { holdTtlMs: opts.holdTtlMs ?? 120_000, ackTimeoutMs: opts.ackTimeoutMs ?? 2000, quorumTimeoutMs: opts.quorumTimeoutMs ?? 15_000 };
        const jsm = await jetstreamManager(nc);
        const info = await untilQuorum("open the ledger", settings.quorumTimeoutMs, async () => {
            const existing = await jsm.streams.info(LEDGER_STREAM).catch((e) => {
                if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)
                    return null;
                throw e;
            });
            return existing ?? (await jsm.streams.add({ name: LEDGER_STREAM, subjects: [`${LEDGER_STREAM}.>`], num_replicas: opts.replicas ?? 3, duplicate_window: 120_000 * 1_000_000 }));
        }, { field: "wallet" });
        const w = new ClusterWallets(jetstream(nc), prices, settings);
        // Fold the stream in order for as long as the wallets are open (stream-tail.ts: resumes by itself after a server loss).
        w.tail = new StreamTail(nc, {
            stream: LEDGER_STREAM,
            what: "the ledger",
            catchUp: info.state.last_seq,
            quorumTimeoutMs: settings.quorumTimeoutMs,
            apiTimeoutMs: settings.ackTimeoutMs,
            onMessage: (m) => w.fold(m.subject.slice(LEDGER_STREAM.length + 1), m.data),
        });
        try {
            await w.tail.reached(info.state.last_seq);
        }
        catch (e) {
            await w.tail.stop();
            throw e;
        }
        return w;
    }
    offlineTenants() {
        return { all: false, tenants: [...this.offline] };
    }
    async reserve(tenant, op, bound) {
        const nano = costOf(this.prices, op, bound);
        const a = this.accountOf(tenant);
        // refused here when the balance this node has folded cannot cover it (nothing is written)
        if (a !== undefined)
            assertCovers(tenant, op, nano, a.balance, heldAt(a, Date.now()));
        const id = newId();
        const ts = Date.now();
        const out = await this.submit(tenant, { k: "hold", id, ts, su: this.signup, op, n: nano, exp: ts + this.settings.holdTtlMs });
        if ("granted" in out && !out.granted) {
            this.stats.refusedInStream++;
            assertCovers(tenant, op, nano, out.balance, out.held);
        }
        const r = { tenant, nano, open: true };
        this.holdIds.set(r, id);
        return r;
    }
    /** Drop the hold; when the ledger cannot be reached in time it stays until it expires (holdTtlMs). */
    async release(r) {
        if (!r.open)
            return;
        r.open = false;
        await this.submit(r.tenant, { k: "free", id: this.holdIds.get(r), ts: Date.now(), su: this.signup }).catch(() => undefined);
    }
    async settle(r, op, usage) {
        if (!r.open)
            throw new SvcError("E_INTERNAL", `a reservation of tenant '${r.tenant}' was settled twice`);
        r.open = false;
        return this.debit("settle", r.tenant, this.holdIds.get(r), op, usage);
    }
    async charge(tenant, op, usage) {
        return this.debit("charge", tenant, newId(), op, usage);
    }
    heldBy(tenant) {
        const a = this.accounts.get(tenant);
        return a === undefined ? 0 : heldAt(a, Date.now());
    }
    async credit(tenant, usd, why) {
        if (!Number.isFinite(usd) || usd <= 0)
            throw new SvcError("E_BAD_REQUEST", "credit must be a positive number of USD", { field: "usd" });
        await this.submit(tenant, { k: "credit", id: newId(), ts: Date.now(), su: this.signup, n: Math.round(usd * NANO_PER_USD), why });
    }
    async view(tenant, limit = 20) {
        if (this.accountOf(tenant) === undefined)
            await this.submit(tenant, { k: "open", id: newId(), ts: Date.now(), su: this.signup });
        return viewOf(tenant, this.accounts.get(tenant), limit);
    }
    /** Stop folding (changes in flight on this node reject). */
    async close() {
        await this.tail?.stop();
    }
    /** The sequence of the last change folded. */
    get position() {
        return this.tail?.position ?? 0;
    }
    get signup() {
        return Math.round(this.prices.signupCredit * NANO_PER_USD);
    }
    async debit(k, tenant, id, op, usage) {
        const n = costOf(this.prices, op, usage);
        const out = await this.submit(tenant, { k, id, ts: Date.now(), su: this.signup, op, n, w: usage.written ?? 0, s: usage.scanned ?? 0 });
        return "charged" in out ? out.charged : 0;
    }
    /** The tenant's folded account (undefined before its first change); E_STORE_OFFLINE when the ledger lost one of its changes. */
    accountOf(tenant) {
        if (!TENANT_TOKEN.test(tenant))
            throw new SvcError("E_BAD_REQUEST", `tenant '${tenant}' is not 1-64 letters, digits, _ and -`, { field: "tenant" });
        if (this.offline.has(tenant))
            throw new SvcError("E_STORE_OFFLINE", `a change of tenant '${tenant}' in the ledger stream ${LEDGER_STREAM} does not parse: this wallet is offline`, { field: "wallet" });
        return this.accounts.get(tenant);
    }
    /** Publish a change (retried with its message id until acked), wait until the fold reached it, and return what the fold decided. */
    async submit(tenant, c) {
        this.accountOf(tenant);
        const key = `${c.k}:${c.id}`;
        this.waiting.set(key, null);
        try {
            const seq = await untilQuorum(`tenant '${tenant}' wallet`, this.settings.quorumTimeoutMs, async () => {
                const ack = await this.js.publish(`${LEDGER_STREAM}.${tenant}`, JSON.stringify(c), { msgID: `${tenant}:${key}`, timeout: this.settings.ackTimeoutMs });
                return ack.seq;
            }, { field: "wallet" });
            this.stats.published++;
            await this.tail.reached(seq);
            return this.waiting.get(key) ?? {};
        }
        finally {
            this.waiting.delete(key);
        }
    }
    /** Apply one change: the same on every node, from the message alone. */
    fold(tenant, data) {
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
        if (a.done.has(key))
            return; // a retried change the stream kept twice
        a.done.add(key);
        if (a.done.size > DONE_KEEP)
            a.done.delete(a.done.values().next().value);
        for (const [id, [, exp]] of a.holds)
            if (exp <= c.ts)
                a.holds.delete(id);
        let out = {};
        switch (c.k) {
            case "hold": {
                const held = heldAt(a, c.ts);
                const free = a.balance - held;
                if (free > 0 && free >= c.n) {
                    a.holds.set(c.id, [c.n, c.exp]);
                    out = { granted: true };
                }
                else
                    out = { granted: false, balance: a.balance, held };
                break;
            }
            case "free":
                a.holds.delete(c.id);
                break;
            case "settle":
            case "charge": {
                if (c.k === "settle")
                    a.holds.delete(c.id);
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
        if (this.waiting.has(key))
            this.waiting.set(key, out);
    }
}
function newId() {
    return randomBytes(8).toString("hex");
}
/** nano-USD held by the holds of `a` that have not expired at `now`. */
function heldAt(a, now) {
    let held = 0;
    for (const [n, exp] of a.holds.values())
        if (exp > now)
            held += n;
    return held;
}
/** A ledger message's change, or null when it is not one (that tenant's wallet goes offline on every node alike). */
export function parseChange(data) {
    try {
        const c = parseStoredJson(new TextDecoder().decode(data));
        if (typeof c !== "object" || c === null || typeof c.id !== "string" || !Number.isFinite(c.ts) || !Number.isSafeInteger(c.su) || c.su < 0)
            return null;
        const amount = (x) => Number.isSafeInteger(x) && x >= 0;
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
    }
    catch {
        return null;
    }
}
//# sourceMappingURL=wallet.js.map