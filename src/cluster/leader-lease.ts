/**
 * @module leader-lease — who leads the replicated home stores (home-stores.ts): a lease decided by
 * folding the stream `svc_home_lease` in order, the same way on every node (as wallet.ts folds the
 * ledger), never by KV compare-and-set (nats-server 2.9.10 lets concurrent ones all win, #4320).
 *
 * Messages (JSON) on `svc_home_lease.leader`: `claim` {node, force?}, `renew` {node, term} and
 * `release` {node, term}. The fold (foldLease, pure) judges each by the stream's own timestamps:
 * - a claim wins when the lease is free, when its node already holds it (a restart), when the
 *   holder's last renew is more than LEASE_TTL_MS older than the claim, or when it is forced
 *   (`take`: an operator's tool, no CLI flag sets it); the winner's term is the claim's stream sequence, so terms only grow;
 * - a renew from the holder (same term) refreshes it; a renew of a later term is taken as it is
 *   (a fold that starts after the claim, the stream keeps only the last messages);
 * - a release by the holder frees the lease (clean shutdown: the others take over at once).
 * Concurrent claims are all stored; the first in stream order wins, the rest lose on every node.
 * The holder renews every RENEW_MS; the others claim once its renewals stop for LEASE_TTL_MS.
 * The lease decides who may write; the stores' fences (jetstream-log.ts `fence`) make a deposed
 * holder's writes fail.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { EventEmitter } from "node:events";
import { parseStoredJson } from "../safe-values.js";
import { CLOCK_SKEW_MS } from "./jetstream-log.js";
import { untilQuorum } from "./quorum.js";
import { StreamTail } from "./stream-tail.js";

export const LEASE_STREAM = "svc_home_lease";
const SUBJECT = `${LEASE_STREAM}.leader`;
/** A holder whose last renew (stream timestamp) is older than this has lost the lease to the next claim (ms). */
export const LEASE_TTL_MS = 5000;
/** How often the holder renews, and the others look whether the lease is free (ms). */
export const RENEW_MS = 1000;
/** Messages kept on the subject (about that many seconds of renewals): the fold of a new node starts from these. */
const KEEP = 600;

export interface LeaseState {
  /** The holder's node id, or null. */
  holder: string | null;
  /** The holder's term: the stream sequence of its winning claim (0: none yet). */
  term: number;
  /** Stream timestamp (ms) of the last message that counted: the holder's claim or renew, or (before the first) any message. */
  seenAt: number;
  /** False until the fold saw a claim win or a renew: a fold starting mid-history takes no claim for won before. */
  known: boolean;
}

export type LeaseMessage = { op: "claim"; node: string; force?: boolean } | { op: "renew" | "release"; node: string; term: number };

/** The lease after message `m`, stored at stream sequence `seq` at stream time `ts` (ms). Pure: every node folds alike. */
export function foldLease(s: LeaseState, m: LeaseMessage, seq: number, ts: number): LeaseState {
  if (m.op === "claim") {
    const free = s.known ? s.holder === null || s.holder === m.node : false;
    if (m.force || free || ts > s.seenAt + LEASE_TTL_MS) return { holder: m.node, term: seq, seenAt: ts, known: true };
    return s.known ? s : { ...s, seenAt: ts };
  }
  if (m.op === "renew") {
    if (m.term > s.term || (m.term === s.term && m.node === s.holder)) return { holder: m.node, term: m.term, seenAt: ts, known: true };
    return s;
  }
  if (m.term === s.term && m.node === s.holder) return { holder: null, term: s.term, seenAt: ts, known: true };
  return s;
}

function parseMessage(data: Uint8Array): LeaseMessage | null {
  try {
    const v = parseStoredJson(new TextDecoder().decode(data)) as Record<string, unknown>;
    if (typeof v?.node !== "string" || v.node === "") return null;
    if (v.op === "claim") return { op: "claim", node: v.node, force: v.force === true };
    if ((v.op === "renew" || v.op === "release") && Number.isSafeInteger(v.term)) return { op: v.op, node: v.node, term: v.term as number };
    return null;
  } catch {
    return null;
  }
}

export interface LeaderLeaseOptions {
  /** Claim the lease at start even while another node holds it (a forced claim; `svc serve --take-home` no longer sets it). */
  take?: boolean;
  /** Replicas of the stream (default 3). */
  replicas?: number;
  /** Claim when the lease is free (default true; false: this node follows only). */
  candidate?: boolean;
}

/** The lease as this node folds it; emits `change` (LeaseState) whenever the holder or term changes. */
export class LeaderLease extends EventEmitter {
  private s: LeaseState = { holder: null, term: 0, seenAt: 0, known: false };
  private tail: StreamTail | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Local time (ms) of the last renew (or winning claim) of this node that JetStream acknowledged. */
  private renewedAt = 0;
  /** Local time (ms) the fold last moved: how long the lease has looked unrenewed from here. */
  private movedAt = Date.now();
  private busy = false;

  private constructor(
    private readonly js: JetStreamClient,
    readonly self: string,
    private readonly candidate: boolean,
  ) {
    super();
  }

  static async open(nc: NatsConnection, self: string, opts: LeaderLeaseOptions = {}): Promise<LeaderLease> {
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    const info = await untilQuorum(
      "open the home lease",
      15_000,
      async () => {
        const existing = await jsm.streams.info(LEASE_STREAM).catch((e: unknown) => {
          if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return null;
          throw e;
        });
        return (
          existing ??
          (await jsm.streams.add({
            name: LEASE_STREAM,
            subjects: [`${LEASE_STREAM}.>`],
            num_replicas: opts.replicas ?? 3,
            max_msgs_per_subject: KEEP,
            duplicate_window: 120_000 * 1_000_000,
          }))
        );
      },
      { field: "home" },
    );
    const lease = new LeaderLease(jetstream(nc, { timeout: 2000 }), self, opts.candidate ?? true);
    // Nothing was ever dropped from a stream whose first sequence is 1: the fold starts from the beginning and knows the lease.
    if (info.state.first_seq <= 1) lease.s.known = true;
    lease.tail = new StreamTail(nc, {
      stream: LEASE_STREAM,
      subject: SUBJECT,
      what: "the home lease",
      catchUp: info.state.last_seq,
      onMessage: (m) => {
        const msg = parseMessage(m.data);
        if (msg !== null) lease.apply(foldLease(lease.s, msg, m.seq, m.info.timestampNanos / 1e6));
      },
    });
    try {
      await lease.tail.reached(info.state.last_seq);
    } catch (e) {
      await lease.tail.stop();
      throw e;
    }
    lease.movedAt = Date.now();
    if (opts.take) await lease.claim(true);
    lease.timer = setInterval(() => void lease.tick(), RENEW_MS);
    lease.timer.unref();
    void lease.tick();
    return lease;
  }

  /** The lease as folded so far. */
  get state(): Readonly<LeaseState> {
    return this.s;
  }

  /** The holder's node id, or null while the lease is free. */
  get leader(): string | null {
    return this.s.holder;
  }

  get term(): number {
    return this.s.term;
  }

  /**
   * This node holds the lease and renewed it less than LEASE_TTL_MS - RENEW_MS ago by its own clock:
   * a node frozen past that (SIGSTOP) serves nothing until its fold shows it still holds the lease.
   */
  get serving(): boolean {
    return this.s.holder === this.self && Date.now() - this.renewedAt < LEASE_TTL_MS - RENEW_MS;
  }

  /** Publish a claim and wait until the fold has judged it; true when this node won. */
  async claim(force = false): Promise<boolean> {
    const ack = await this.js.publish(SUBJECT, JSON.stringify({ op: "claim", node: this.self, ...(force ? { force: true } : {}) }));
    await this.tail!.reached(ack.seq);
    const won = this.s.holder === this.self && this.s.term === ack.seq;
    if (won) this.renewedAt = Date.now();
    return won;
  }

  /** Stop renewing and following; the holder releases the lease first (the others take over at once). */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.s.holder === this.self)
      await this.js
        .publish(SUBJECT, JSON.stringify({ op: "release", node: this.self, term: this.s.term }), { timeout: 2000 })
        .catch(() => undefined); // unreleased, the lease expires unrenewed and another node takes it then
    await this.tail?.stop();
  }

  private apply(next: LeaseState): void {
    const prev = this.s;
    this.s = next;
    if (next.seenAt !== prev.seenAt) this.movedAt = Date.now();
    if (next.holder !== prev.holder || next.term !== prev.term) this.emit("change", next);
  }

  /** Renew when holding; claim when the lease is free or its holder stopped renewing (by this node's clock, with the skew allowed). */
  private async tick(): Promise<void> {
    if (this.stopped || this.busy) return;
    this.busy = true;
    try {
      if (this.s.holder === this.self) {
        const term = this.s.term;
        const sent = Date.now();
        const ack = await this.js.publish(SUBJECT, JSON.stringify({ op: "renew", node: this.self, term }), { timeout: RENEW_MS });
        // counted only once the fold took it: a holder thawed after a freeze sees the claim that deposed it first
        await this.tail!.reached(ack.seq);
        if (this.s.holder === this.self && this.s.term === term) this.renewedAt = sent;
      } else if (this.candidate && ((this.s.known && this.s.holder === null) || Date.now() - this.movedAt > LEASE_TTL_MS + CLOCK_SKEW_MS)) {
        await this.claim();
      }
    } catch {
      // a NATS outage: tried again next tick
    } finally {
      this.busy = false;
    }
  }
}
