/**
 * @module jetstream-log — a collection's log (store/log.ts `Log`) on a replicated NATS JetStream
 * stream: one subject per log inside one shared stream, frames as msgpack `{type, body}` messages
 * (chunked above the server's max payload), appends acknowledged only after JetStream's publish ack
 * (a quorum of the stream's replicas has the message), message ids so a retried publish is
 * deduplicated, replay through an ordered consumer. Positions: segment 0, offset = stream sequence.
 */
import { encode } from "@msgpack/msgpack";
import { DeliverPolicy, jetstream, JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { safeDecoder } from "../safe-values.js";
import type { Log, LogFrame, LogPosition, LogReplay, LogStats, OpenLog, RecoveryReport } from "../store/log.js";

/** The shared stream's default name; a log named N lives on subject `<stream>.N`. */
export const LOG_STREAM = "svc_log";
/** Header on the messages of a frame split in k > 1 chunks: `i/k` (0-based i). */
export const CHUNK_HEADER = "Svc-Chunk";
/** Room left in each message for headers (message id, chunk) under the server's max_payload. */
const HEADER_ROOM = 1024;
/** A log name: dot-separated tokens of letters, digits, `_` and `-` (NATS subject tokens, no wildcards). */
const LOG_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export interface LogStreamOptions {
  /** Stream name (default LOG_STREAM); it holds the subjects `<stream>.>`. */
  stream?: string;
  /** Replicas of the stream (default 3: a publish is acknowledged once 2 of 3 servers have it). */
  replicas?: number;
  /** JetStream's deduplication window for message ids (default 2 minutes; longer than any retry). */
  duplicateWindowMs?: number;
}

/** Create the shared log stream, or leave an existing one as it is. */
export async function ensureLogStream(nc: NatsConnection, opts: LogStreamOptions = {}): Promise<void> {
  const name = opts.stream ?? LOG_STREAM;
  const jsm = await jetstreamManager(nc);
  const existing = await jsm.streams.info(name).catch(() => null);
  if (existing !== null) return;
  await jsm.streams.add({
    name,
    subjects: [`${name}.>`],
    num_replicas: opts.replicas ?? 3,
    duplicate_window: (opts.duplicateWindowMs ?? 120_000) * 1_000_000,
  });
}

export interface JetStreamLogOptions {
  /** The log's name (its subject is `<stream>.<name>`); one writer per name at a time. */
  name: string;
  /** Stream holding the log (default LOG_STREAM; create it with ensureLogStream). */
  stream?: string;
  /** How long one publish waits for its ack before it is retried with the same message id (default 2000 ms). */
  ackTimeoutMs?: number;
  /** How long an append keeps retrying before it rejects with E_NO_QUORUM (default 15000 ms: longer than a stream leader election, up to ~9 s on nats-server 2.9). */
  quorumTimeoutMs?: number;
  /**
   * dropBefore purges the subject up to the checkpoint (default false: the stream keeps every
   * frame, because replicas and new nodes catch up from it; only a log with one reader purges).
   */
  purge?: boolean;
  /** Largest message body (default: the server's max_payload less 1 KiB for headers); bigger frames are chunked. */
  chunkBytes?: number;
}

/** An OpenLog over the subject `<stream>.<name>` of a JetStream stream reached through `nc` (the caller owns `nc`). */
export function jetStreamLog(nc: NatsConnection, opts: JetStreamLogOptions): OpenLog {
  if (!LOG_NAME.test(opts.name)) throw new SvcError("E_BAD_REQUEST", `log name '${opts.name}' is not dot-separated tokens of letters, digits, _ and -`, { field: "name" });
  return async (replay) => {
    const stream = opts.stream ?? LOG_STREAM;
    const subject = `${stream}.${opts.name}`;
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const quorumTimeoutMs = opts.quorumTimeoutMs ?? 15_000;
    const { position, report } = await replayLog(js, jsm, stream, subject, replay, quorumTimeoutMs);
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    const log = new JetStreamLog(js, jsm, stream, subject, position, {
      ackTimeoutMs: opts.ackTimeoutMs ?? 2000,
      quorumTimeoutMs,
      purge: opts.purge ?? false,
      chunkBytes: Math.max(1, Math.min(opts.chunkBytes ?? Infinity, maxPayload - HEADER_ROOM)),
    });
    return { log, report };
  };
}

/**
 * Deliver, in order and synchronously, every frame of `subject` ending after `from` (all kept frames
 * with `prefix`), up to the subject's last message at the time of the call. A frame whose chunks
 * stop before its last one (its writer died mid-frame) is cut like a WAL's torn tail.
 */
async function replayLog(js: JetStreamClient, jsm: JetStreamManager, stream: string, subject: string, replay: LogReplay, quorumTimeoutMs: number): Promise<{ position: LogPosition; report: RecoveryReport }> {
  const from = replay.from?.offset ?? 0;
  const report: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
  const last = (await untilQuorum(subject, quorumTimeoutMs, () => jsm.streams.getMessage(stream, { last_by_subj: subject })))?.seq ?? 0;
  if (last === 0 || (last <= from && !replay.prefix)) return { position: { segment: 0, offset: Math.max(last, from) }, report };
  const decoder = safeDecoder();
  const consumer = await untilQuorum(subject, quorumTimeoutMs, () =>
    js.consumers.get(stream, {
      filter_subjects: subject,
      ...(replay.prefix || from === 0 ? { deliver_policy: DeliverPolicy.All } : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from + 1 }),
    }),
  );
  const messages = await consumer.consume({ max_messages: 256 });
  let chunks: Uint8Array[] = [];
  let startSeq = 0;
  let pending = 0;
  try {
    for await (const m of messages) {
      const header = m.headers?.get(CHUNK_HEADER);
      const [i, k] = chunkOf(header);
      report.bytes += m.data.length;
      if (i === 0 && chunks.length > 0) {
        report.damaged.push(torn(subject, startSeq, chunks, pending, from));
        chunks = [];
      }
      if (i === 0) {
        startSeq = m.seq;
        pending = k;
      }
      if (i >= 0 && i === chunks.length && k === pending) {
        chunks.push(m.data);
        if (chunks.length === k) {
          deliver(decoder, subject, chunks, { segment: 0, offset: startSeq - 1 }, { segment: 0, offset: m.seq }, replay.onFrame);
          report.frames++;
          chunks = [];
        }
      } else {
        // A chunk that continues no frame here (or a bad chunk header): skipped and reported, with the frame it interrupted.
        if (chunks.length > 0) report.damaged.push(torn(subject, startSeq, chunks, pending, from));
        chunks = [];
        report.damaged.push({ file: subject, offset: m.seq, bytes: m.data.length, frames: 1, reason: `chunk '${header}' continues no frame`, beforeFrom: m.seq <= from });
      }
      if (m.seq >= last) break;
    }
  } finally {
    messages.stop();
  }
  if (chunks.length > 0) {
    const t = torn(subject, startSeq, chunks, pending, from);
    report.tornTail = { file: t.file, offset: t.offset, bytes: t.bytes, frames: 1, reason: t.reason };
  }
  return { position: { segment: 0, offset: Math.max(last, from) }, report };
}

function deliver(decoder: ReturnType<typeof safeDecoder>, subject: string, chunks: Uint8Array[], start: LogPosition, end: LogPosition, onFrame: (f: LogFrame) => void): void {
  // One fresh plain Uint8Array per frame: the body's binaries are views into it (never a Buffer, whose slice() does not copy).
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  let frame: unknown;
  try {
    frame = decoder.decode(bytes);
  } catch (e) {
    throw new SvcError("E_WAL_CORRUPT", `${subject} sequence ${end.offset}: the frame does not decode as msgpack`, { cause: e });
  }
  const { type, body } = (frame ?? {}) as { type?: unknown; body?: unknown };
  if (typeof type !== "number" || !Number.isInteger(type) || type < 1 || type > 255 || body === undefined) {
    throw new SvcError("E_WAL_CORRUPT", `${subject} sequence ${end.offset}: the frame is not {type: 1..255, body}`);
  }
  onFrame({ type, body, start, end });
}

/** A frame's chunk header `i/k` as [i, k]; no header: [0, 1]. */
function chunkOf(h: string | undefined): [number, number] {
  if (h === undefined || h === "") return [0, 1];
  const [i, k] = h.split("/").map(Number);
  return Number.isInteger(i) && Number.isInteger(k) && i! >= 0 && k! > i! ? [i!, k!] : [-1, 0];
}

function torn(subject: string, startSeq: number, chunks: Uint8Array[], k: number, from: number) {
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  return { file: subject, offset: startSeq, bytes, frames: 1, reason: `frame with ${chunks.length} of ${k} chunks (its writer stopped mid-frame)`, beforeFrom: startSeq <= from };
}

/** Run `f` until it succeeds, retrying while the cluster has no quorum or leader (at most `timeoutMs`, then E_NO_QUORUM); a missing stream is E_NOT_FOUND at once. */
async function untilQuorum<T>(subject: string, timeoutMs: number, f: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) throw new SvcError("E_NOT_FOUND", `${subject}: its stream does not exist (create it with ensureLogStream)`, { field: "stream", cause: e });
      const left = deadline - Date.now();
      if (left <= 100) {
        throw new SvcError("E_NO_QUORUM", `${subject}: JetStream did not answer after ${attempt} attempt(s) in ${timeoutMs} ms (${(e as Error).message})`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, Math.min(250, left - 100)));
    }
  }
}

interface Settings {
  ackTimeoutMs: number;
  quorumTimeoutMs: number;
  purge: boolean;
  chunkBytes: number;
}

class JetStreamLog implements Log {
  private last: LogPosition;
  private readonly counters: LogStats = { frames: 0, bytes: 0, syncs: 0, writes: 0 };
  /** Publishes run one frame at a time, in call order (a chunked frame's messages stay contiguous). */
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Message ids: `<subject>:<epoch>:<frame>[:<chunk>]`; the epoch is random per open, the frame counter per log. */
  private readonly epoch = randomBytes(6).toString("hex");
  private frame = 0;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly subject: string,
    start: LogPosition,
    private readonly settings: Settings,
  ) {
    this.last = start;
  }

  append(type: number, body: unknown): Promise<LogPosition> {
    if (this.closed) return Promise.reject(new SvcError("E_CLOSED", `log ${this.subject} is closed`));
    const bytes = encode({ type, body });
    const id = `${this.subject}:${this.epoch}:${++this.frame}`;
    const run = this.chain.then(() => this.publishFrame(id, bytes));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async publishFrame(id: string, bytes: Uint8Array): Promise<LogPosition> {
    const size = this.settings.chunkBytes;
    const k = Math.max(1, Math.ceil(bytes.length / size));
    let seq = 0;
    for (let i = 0; i < k; i++) {
      const part = bytes.subarray(i * size, Math.min(bytes.length, (i + 1) * size));
      seq = await this.publish(part, k === 1 ? id : `${id}:${i}`, k === 1 ? undefined : `${i}/${k}`);
    }
    this.last = { segment: 0, offset: seq };
    this.counters.frames++;
    this.counters.bytes += bytes.length;
    this.counters.writes += k;
    return this.last;
  }

  /** One message, retried with the same message id until acknowledged or quorumTimeoutMs passed (then E_NO_QUORUM). */
  private publish(data: Uint8Array, msgID: string, chunk: string | undefined): Promise<number> {
    const deadline = Date.now() + this.settings.quorumTimeoutMs;
    let h: ReturnType<typeof headers> | undefined;
    if (chunk !== undefined) {
      h = headers();
      h.set(CHUNK_HEADER, chunk);
    }
    return untilQuorum(this.subject, this.settings.quorumTimeoutMs, async () => {
      const timeout = Math.max(100, Math.min(this.settings.ackTimeoutMs, deadline - Date.now()));
      return (await this.js.publish(this.subject, data, { msgID, timeout, ...(h ? { headers: h } : {}) })).seq;
    });
  }

  get position(): LogPosition {
    return this.last;
  }

  get stats(): LogStats {
    return { ...this.counters };
  }

  /** Nothing to do: an append resolved only once JetStream acknowledged it (a quorum has it). */
  async sync(): Promise<void> {
    await this.chain;
  }

  /** With `purge`: remove the subject's messages at or before `pos` (how many went); otherwise keep them (0). */
  async dropBefore(pos: LogPosition): Promise<number> {
    if (!this.settings.purge || pos.offset <= 0) return 0;
    const r = await this.jsm.streams.purge(this.stream, { filter: this.subject, seq: pos.offset + 1 });
    return r.purged;
  }

  /** Wait for the appends in flight, then refuse later ones with E_CLOSED (the connection stays the caller's). */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
  }
}
