/**
 * @module stream-tail — the one way cluster mode reads a JetStream stream in order: a log's subject
 * (jetstream-log.ts), a KV bucket's stream (kv-mirror.ts: keys, catalog, node registrations, the
 * home lease) and the wallet ledger (wallet.ts). Every message is handed to `onMessage` once per
 * stream sequence, in stream order, as the stream leader holds it (the committed stream: a
 * consumer's delivery only says when to read, handCommitted), and the tail survives the death of
 * the nats-server its consumer lives on.
 *
 * An ordered consumer (ephemeral, R1, no acks) is created from the sequence after the last one
 * handled, and replaced by a new one from there when any of these says it may be lost:
 * - its iterator ends or fails;
 * - the client reports `reset`, `consumer_not_found`, `consumer_deleted` or `heartbeats_missed`
 *   (the client reports missed heartbeats only after two, i.e. ~2 s at the 1 s heartbeat here);
 * - the connection reconnects (the consumer may have been on the server that went);
 * - nothing arrived for IDLE_CHECK_MS while the stream (or the subject) holds a message past the
 *   last one handled.
 * The client's own recovery was not enough on a 3-server cluster losing a server: an ordered consumer
 * was seen recreated and then stalled for good, and an idle one (and a plain `kv.watch()`) stuck for
 * good without its heartbeats ever reported missing; the idle check is what catches the latter.
 *
 * Why an ordered consumer and not a durable one: every reader already records where it is (a
 * collection's checkpoint, a mirror's or fold's position in memory), and must resume from its own
 * state (a wiped data dir starts over whatever a server-side cursor says), so a durable consumer
 * would be a second copy of that fact, with names to choose, acks to send and dead nodes' consumers
 * to clean up.
 *
 * This merges two tails built apart (jetstream-log's SubjectTail and follow.ts's Follower); where they
 * differed the stricter behaviour is kept, the reasons with each choice below.
 */
import {
  DeliverPolicy,
  jetstream,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type MsgRequest,
  type NextMsgRequest,
  type StoredMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SvcError } from "../errors.js";
import { untilQuorum } from "./quorum.js";

/** After this long without a message, a tail asks the stream whether it missed some (Follower's check; SubjectTail had none). */
export const IDLE_CHECK_MS = 2000;
/** How many messages a tail asks the leader for ahead: a whole-stream tail by sequence past a delivery (the consumer's pending), a one-subject tail deliveries at most. */
const READ_AHEAD = 64;
/** Pause before a new consumer after one ended. */
const RESTART_MS = 250;

export interface StreamTailOptions {
  stream: string;
  /** One subject of the stream (no wildcards), or every subject when absent. */
  subject?: string;
  /**
   * Where to start: after stream sequence `after` (default 0: from the first message), or at the
   * last message of each subject (a KV bucket's current values; resumes by sequence after that).
   */
  start?: { after: number } | "last-per-subject";
  /** Stop once this sequence was handled (a replay that does not follow on); reached() past it rejects. */
  until?: number;
  /**
   * Until sequence `catchUp` (default `until`, else 0) is handled, creating a consumer gives up after
   * `quorumTimeoutMs` (default 15000) with E_NO_QUORUM, which ends the tail: an open must not hang.
   * After it the tail retries for as long as it runs (a follower outlives any outage).
   */
  catchUp?: number;
  quorumTimeoutMs?: number;
  /** Timeout of each JetStream API call (default 2000 ms: a call lost with a killed server costs 2 s, not the client's 5 s). */
  apiTimeoutMs?: number;
  /** Named in errors, e.g. `log svc_log.x` or `the ledger`. */
  what: string;
  /**
   * Called in stream order, once per sequence; the next message waits for the returned promise. A
   * throw ends the tail (reached() rejects with it): a message is handled only once it was applied,
   * never skipped.
   */
  onMessage(m: JsMsg): void | Promise<void>;
}

export class StreamTail {
  private handled: number;
  private stopped = false;
  private failure: Error | null = null;
  private messages: { stop(): void } | null = null;
  private readonly waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly js: JetStreamClient;
  private jsm: JetStreamManager | null = null;
  private readonly connection: AsyncIterable<{ type: string }> & { stop?(): void };
  private readonly idleCheck: NodeJS.Timeout;
  private lastMessageAt = Date.now();
  private checking = false;
  /** Whole-stream tails: the leader's answers asked ahead, by sequence (handWholeStream). */
  private readonly ahead = new Map<number, Promise<StoredMsg | null>>();
  /** The leader's last sequence (of the subject) when the idle check found it past the last handled: run() reads up to it from the leader. */
  private leaderAhead = 0;
  private readonly done: Promise<void>;
  /** Messages a consumer skipped that the tail fetched from the stream leader instead (see handCommitted). */
  gapsFilled = 0;

  /** Start tailing through `nc` (the caller owns it); errors show through reached(). */
  constructor(
    nc: NatsConnection,
    private readonly opts: StreamTailOptions,
  ) {
    this.handled = typeof opts.start === "object" ? opts.start.after : 0;
    this.js = jetstream(nc, { timeout: opts.apiTimeoutMs ?? 2000 });
    const connection = (this.connection = nc.status());
    void (async () => {
      for await (const st of connection) if (st.type === "reconnect") this.messages?.stop();
    })().catch(() => undefined); // the status iterator ends with the connection: nothing is left to restart
    this.idleCheck = setInterval(() => this.checkIdle(), IDLE_CHECK_MS / 4);
    this.idleCheck.unref();
    this.done = this.run();
  }

  /** The stream sequence of the last message handled (0: none yet). */
  get position(): number {
    return this.handled;
  }

  /** Resolves once every message up to `seq` was handled; rejects when the tail failed or stopped first. */
  reached(seq: number): Promise<void> {
    if (this.handled >= seq) return Promise.resolve();
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  /** Stop reading; waiters reject with E_CLOSED. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.idleCheck);
    this.messages?.stop();
    this.connection.stop?.();
    await this.done;
    this.fail(new SvcError("E_CLOSED", `${this.opts.what} is closed`));
  }

  private get finished(): boolean {
    return this.stopped || (this.opts.until !== undefined && this.handled >= this.opts.until);
  }

  private async run(): Promise<void> {
    const catchUp = this.opts.catchUp ?? this.opts.until ?? 0;
    const quorumTimeoutMs = this.opts.quorumTimeoutMs ?? 15_000;
    while (!this.finished) {
      try {
        // the idle check saw the stream hold more than any consumer delivered: read it from the leader first
        if (this.leaderAhead > this.handled) {
          const to = this.leaderAhead;
          this.leaderAhead = 0; // once: if it fails (no leader, a purge), the next idle check asks again
          await this.handCommitted(to);
        }
        if (this.finished) break;
        const first = this.handled === 0 && this.opts.start === "last-per-subject";
        const consumer = await untilQuorum(
          this.opts.what,
          // before catchUp a bounded wait (the open fails); after it, as long as it takes
          this.handled >= catchUp ? Infinity : quorumTimeoutMs,
          () =>
            this.js.consumers.get(this.opts.stream, {
              filter_subjects: this.opts.subject ?? ">",
              ...(first
                ? { deliver_policy: DeliverPolicy.LastPerSubject }
                : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.handled + 1 }),
            }),
          { stopped: () => this.stopped },
        );
        if (this.stopped) break;
        // Pull requests expire every 2 s (Follower's 2 s, not SubjectTail's 5 s), heartbeats every 1 s.
        const messages = await consumer.consume({ max_messages: 256, expires: 2000, idle_heartbeat: 1000 });
        this.messages = messages;
        void (async () => {
          for await (const st of messages.status()) {
            if (
              st.type === "reset" ||
              st.type === "consumer_not_found" ||
              st.type === "consumer_deleted" ||
              st.type === "heartbeats_missed"
            )
              messages.stop();
          }
        })().catch(() => undefined); // the status iterator ends with its consume (stopped): the loop makes the next one
        if (this.stopped) messages.stop();
        this.lastMessageAt = Date.now();
        // a last-per-subject start skips by design, until it delivered each subject's last message (pending 0)
        let sparse = first;
        // a one-subject tail's deliveries not yet handed on, each with its leader read asked (handSubject)
        const window: Delivered[] = [];
        this.jsm ??= await this.js.jetstreamManager(false);
        for await (const m of messages) {
          if (this.stopped) break;
          this.lastMessageAt = Date.now();
          if (m.seq <= this.handled) continue; // a new consumer may repeat what the last one delivered
          if (sparse) {
            // a bucket's current values (last per subject): handed on as delivered
            await this.hand(m);
            if (m.info.pending === 0) sparse = false;
          } else if (this.opts.subject === undefined) await this.handWholeStream(m.seq, m.info.pending);
          else {
            window.push(this.askNext(window.at(-1)?.seq ?? this.handled, m.seq));
            // more deliveries are on their way: ask for them too before waiting for any answer
            if (m.info.pending === 0 || window.length >= READ_AHEAD) await this.handSubject(window.splice(0));
          }
          if (this.finished || this.stopped) break;
        }
      } catch (e) {
        // A missing stream (it will not come back by itself: E_NOT_FOUND), a message its reader refused,
        // no quorum before catchUp: the tail ends. Anything else (a consumer lost mid-read): a new one.
        const fatal = e instanceof Refused || (e instanceof SvcError && (e.code !== "E_NO_QUORUM" || this.handled < catchUp));
        if (this.stopped || fatal) {
          const cause = e instanceof Refused ? e.cause : e;
          this.fail(cause instanceof Error ? cause : new Error(String(cause)));
          this.stopped = true;
          clearInterval(this.idleCheck);
          this.connection.stop?.();
          return;
        }
      } finally {
        this.messages?.stop();
        this.messages = null;
        this.ahead.clear();
      }
      if (!this.finished) await new Promise((r) => setTimeout(r, RESTART_MS));
    }
    clearInterval(this.idleCheck);
  }

  /** Hand `m` to onMessage and count it handled. */
  private async hand(m: JsMsg): Promise<void> {
    try {
      await this.opts.onMessage(m);
    } catch (e) {
      throw new Refused(e);
    }
    this.handled = m.seq;
    this.release();
  }

  /**
   * A delivery at `seq` says the stream holds something there: hand on, from the stream leader (a
   * non-direct STREAM.MSG.GET, which only the leader answers, from the stream as committed), the
   * subject's messages after the last one handled, up to and including the first at or past `seq`.
   * The delivered copy itself is never handed on. Why: an R1 consumer reads its own server's copy
   * of the stream, and on nats-server 2.9.10 that copy was seen to differ from the committed stream
   * at the same sequences (a stream leader frozen or killed with publishes in flight kept them at
   * sequences where the new leader committed others; the nemesis test: a replica reading there
   * applied the old leader's messages and lacked acknowledged writes, while claiming to have
   * applied past them). Consumers were also seen to skip committed messages (SVC_TAIL_GAP below).
   * So every reader folds the leader's messages, the same on every node, and a consumer only says
   * when to ask. The leader holding nothing of the subject from there: not handed on; this
   * consumer ends and a new one starts from the last handled (a leader just elected may not have
   * applied the last committed messages yet: asked again, nothing is dropped on its word alone).
   * No answer (no leader): the same. Cost: one leader round trip per message handed on (handSubject
   * asks them ahead while deliveries come in).
   */
  private async handCommitted(seq: number): Promise<void> {
    this.jsm ??= await this.js.jetstreamManager(false);
    while (!this.finished) {
      const next = await this.jsm.streams.getMessage(this.opts.stream, {
        next_by_subj: this.opts.subject ?? ">",
        seq: this.handled + 1,
      } satisfies NextMsgRequest as unknown as MsgRequest);
      if (next === null)
        throw new Error(
          `${this.opts.what}: the stream leader holds nothing of the subject at or after sequence ${this.handled + 1} (delivered: ${seq})`,
        ); // not an SvcError: not fatal, a new consumer starts
      if (next.seq < seq) this.skipped(next.seq, seq);
      await this.hand(fromStored(next));
      if (next.seq >= seq) return;
    }
  }

  /** The leader's read of the subject's first message after `after`, asked now for the delivery at `seq` (handSubject). */
  private askNext(after: number, seq: number): Delivered {
    const read = this.jsm!.streams.getMessage(this.opts.stream, {
      next_by_subj: this.opts.subject!,
      seq: after + 1,
    } satisfies NextMsgRequest as unknown as MsgRequest);
    read.catch(() => undefined); // awaited in handSubject, or dropped with the consumer: never unhandled
    return { seq, read };
  }

  /**
   * A one-subject tail's deliveries, handed on as handCommitted would one by one, pipelined: each
   * delivery's leader read was asked from the delivery before it (askNext), which is what
   * handCommitted asks once that one was handed on. While every answer is the delivered message they
   * are handed on as they come; from the first that is not (a gap, a divergent copy, no answer)
   * handCommitted goes on one delivery at a time and the reads asked ahead are dropped.
   */
  private async handSubject(window: readonly Delivered[]): Promise<void> {
    let inStep = true;
    for (const { seq, read } of window) {
      if (this.finished) return;
      if (inStep) {
        const next = await read;
        if (next !== null && next.seq === seq) {
          await this.hand(fromStored(next));
          continue;
        }
        inStep = false;
      }
      if (seq > this.handled) await this.handCommitted(seq);
    }
  }

  /**
   * A whole-stream tail (every subject: its sequences follow on one another, but for a purge) reads
   * the same committed messages as handCommitted, pipelined: the leader is asked for each sequence
   * up to `seq` and for up to READ_AHEAD of the `pending` the consumer still holds after it, all at
   * once, and they are handed on in order. A sequence the leader does not hold (a purge, or not
   * applied there yet): handCommitted from there, one at a time.
   */
  private async handWholeStream(seq: number, pending: number): Promise<void> {
    const jsm = this.jsm!; // run() got it before the consumer's first delivery
    const ask = (s: number) => jsm.streams.getMessage(this.opts.stream, { seq: s });
    for (let s = this.handled + 1; s <= Math.min(seq + Math.min(pending, READ_AHEAD), this.handled + 2 * READ_AHEAD); s++) {
      if (this.ahead.has(s)) continue;
      const read = ask(s);
      read.catch(() => undefined); // awaited below, or dropped with the consumer: never unhandled
      this.ahead.set(s, read);
    }
    while (this.handled < seq && !this.finished) {
      const s = this.handled + 1;
      const read = this.ahead.get(s) ?? ask(s);
      this.ahead.delete(s);
      const next = await read;
      if (next === null || next.seq !== s) return this.handCommitted(seq);
      if (s < seq) this.skipped(s, seq);
      await this.hand(fromStored(next));
    }
  }

  /** The consumer delivered `seq` but not the committed message `s` before it (read from the leader instead): a server fault worth an operator's eye (stderr). */
  private skipped(s: number, seq: number): void {
    this.gapsFilled++;
    process.emitWarning(
      `${this.opts.what}: the consumer skipped stream sequence ${s} (delivered ${seq} after ${this.handled}); read it from the stream leader`,
      { code: "SVC_TAIL_GAP" },
    );
  }

  /** Idle for IDLE_CHECK_MS while the stream holds more: drop the consumer (run() starts another). */
  private checkIdle(): void {
    if (this.checking || this.messages === null || Date.now() - this.lastMessageAt < IDLE_CHECK_MS) return;
    this.checking = true;
    this.lastSequence()
      .then((last) => {
        if (last > this.handled) {
          this.leaderAhead = Math.max(this.leaderAhead, last);
          this.messages?.stop();
        }
        this.lastMessageAt = Date.now();
      })
      .catch(() => undefined) // no answer (no leader yet): ask again at the next tick
      .finally(() => (this.checking = false));
  }

  /** The last sequence of the subject (or of the stream), 0 when it has none. */
  private async lastSequence(): Promise<number> {
    this.jsm ??= await this.js.jetstreamManager(false);
    if (this.opts.subject === undefined) return (await this.jsm.streams.info(this.opts.stream)).state.last_seq;
    return (await this.jsm.streams.getMessage(this.opts.stream, { last_by_subj: this.opts.subject }))?.seq ?? 0;
  }

  private release(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.seq <= this.handled) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  private fail(e: Error): void {
    this.failure ??= e;
    for (const w of this.waiters.splice(0)) w.reject(this.failure);
  }
}

/** A message read from the stream leader, shaped as the consumer would have delivered it (the fields readers use). */
function fromStored(s: StoredMsg): JsMsg {
  // the stored timestamp keeps nanoseconds ("...:05.123456789Z"); Date keeps milliseconds
  const frac = /\.(\d+)Z$/.exec(s.timestamp)?.[1] ?? "";
  const nanos = Math.floor(s.time.getTime() / 1000) * 1e9 + Number(frac.padEnd(9, "0").slice(0, 9));
  return {
    seq: s.seq,
    subject: s.subject,
    data: s.data,
    headers: s.header,
    time: s.time,
    info: { streamSequence: s.seq, timestampNanos: nanos },
  } as unknown as JsMsg;
}

/** A one-subject tail's delivery at `seq`, and the leader's read of the subject's next message that should be it. */
type Delivered = { seq: number; read: Promise<StoredMsg | null> };

/** What onMessage threw, told apart from the consumer's own failures. */
class Refused {
  constructor(readonly cause: unknown) {}
}
