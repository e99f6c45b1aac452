/**
 * @module follow — tail a JetStream stream in order, for as long as it is wanted, surviving the
 * death of the nats-server the consumer lives on: an ordered consumer, recreated from the message
 * after the last one handled when its iterator ends, when it resets, loses its consumer or misses the
 * server's heartbeats, when the connection reconnects, or when nothing arrived for IDLE_CHECK_MS
 * while the stream holds messages past the last one handled.
 * What the client library does by itself was not enough on a 3-server cluster losing a server
 * (measured: an idle consumer stuck for good, its heartbeats never reported missing).
 */
import { DeliverPolicy, jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** After this long without a message, a follower asks the stream whether it missed some. */
const IDLE_CHECK_MS = 2000;

export interface FollowOptions {
  stream: string;
  /** Subject filter (default every subject of the stream). */
  filter?: string;
  /** Start: the first message (default), or the last message per subject (a KV bucket's current values). */
  start?: "all" | "last-per-subject";
  /** Called in stream order, once per sequence. */
  onMessage(m: JsMsg): void;
}

export class Follower {
  private handled = 0;
  private stopped = false;
  private current: { stop(): void; replace(): void } | null = null;
  private lastMessageAt = Date.now();
  private idleCheck: NodeJS.Timeout | undefined;
  private connection: (AsyncIterable<{ type: string }> & { stop?(): void }) | null = null;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly opts: FollowOptions,
  ) {}

  /** Start following through `nc`; resolves once the first consumer exists. */
  static async start(nc: NatsConnection, opts: FollowOptions): Promise<Follower> {
    const js = jetstream(nc);
    const f = new Follower(js, opts);
    await f.consume();
    const connection: AsyncIterable<{ type: string }> & { stop?(): void } = nc.status();
    f.connection = connection;
    void (async () => {
      for await (const st of connection) if (st.type === "reconnect") f.nudge();
    })().catch(() => undefined);
    const jsm = await js.jetstreamManager(false);
    let checking = false;
    f.idleCheck = setInterval(() => {
      if (checking || Date.now() - f.lastMessageAt < IDLE_CHECK_MS) return;
      checking = true;
      jsm.streams
        .info(opts.stream)
        .then((info) => {
          if (info.state.last_seq > f.handled) f.nudge();
          f.lastMessageAt = Date.now();
        })
        .catch(() => undefined) // no answer (no leader yet): ask again at the next tick
        .finally(() => (checking = false));
    }, IDLE_CHECK_MS / 4).unref();
    return f;
  }

  /** The stream sequence of the last message handled (0: none yet). */
  get position(): number {
    return this.handled;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.idleCheck);
    this.connection?.stop?.();
    this.current?.stop();
  }

  /** Recreate the consumer from the last message handled. */
  private nudge(): void {
    this.current?.replace();
  }

  private async consume(): Promise<void> {
    const resume = this.handled > 0;
    const consumer = await this.js.consumers.get(this.opts.stream, {
      filter_subjects: this.opts.filter ?? ">",
      ...(resume
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.handled + 1 }
        : { deliver_policy: this.opts.start === "last-per-subject" ? DeliverPolicy.LastPerSubject : DeliverPolicy.All }),
    });
    // pull requests expire every 2 s, so missing heartbeats show within seconds
    const messages = await consumer.consume({ max_messages: 512, expires: 2000 });
    let replaced = false;
    const replace = () => {
      if (replaced) return;
      replaced = true;
      messages.stop();
      if (this.stopped) return;
      // a new consumer cannot be created while the stream has no leader: try again until it can
      const retry = () => void this.consume().catch(() => {
        if (!this.stopped) setTimeout(retry, 500).unref();
      });
      retry();
    };
    this.current = { stop: () => messages.stop(), replace };
    void (async () => {
      for await (const st of messages.status()) {
        if (st.type === "heartbeats_missed" || st.type === "reset" || st.type === "consumer_not_found" || st.type === "consumer_deleted") replace();
      }
    })().catch(() => undefined);
    void (async () => {
      try {
        for await (const m of messages) {
          this.lastMessageAt = Date.now();
          if (m.seq <= this.handled) continue; // a recreated consumer may repeat
          this.handled = m.seq;
          this.opts.onMessage(m);
        }
      } catch {
        // the consumer failed: another starts from the same place
      }
      replace();
    })();
  }
}
