/**
 * @module jetstream-log — a collection's log (store/log.ts `Log`) on a replicated NATS JetStream
 * stream: one subject per log inside one shared stream, frames as msgpack `{type, body}` messages
 * (chunked above the server's max payload), appends acknowledged only after JetStream's publish ack
 * (a quorum of the stream's replicas has the message), a frame id on every message so every reader
 * drops a repeated frame alike (FRAME_HEADER), replay through an ordered consumer. Positions:
 * segment 0, offset = stream sequence.
 */
import { encode } from "@msgpack/msgpack";
import {
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type MsgRequest,
} from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import { timing } from "../probes.js";
import { safeDecoder } from "../safe-values.js";
import type { Log, LogFrame, LogPosition, LogReplay, LogStats, OpenLog, RecoveryReport } from "../store/log.js";
import { isRevisionConflict, noQuorum, untilQuorum } from "./quorum.js";
import { StreamTail } from "./stream-tail.js";

/** The shared stream's default name; a log named N lives on subject `<stream>.N`. */
export const LOG_STREAM = "svc_log";
/** Header on the messages of a frame split in k > 1 chunks: `i/k` (0-based i). */
export const CHUNK_HEADER = "Svc-Chunk";
/**
 * Header on every message of a frame: its id, `<subject>:<writer>:<n>[:<chunk>]` (the same in every
 * publish of it: a retry after a lost ack, a copy of a request sent to another replica). Every reader
 * keeps the first complete frame of an id and drops a repeat (RecentFrames), so a repeat stored after
 * a later write cannot undo it. Not JetStream's `Nats-Msg-Id`: nats-server before 2.11 deduplicates
 * those on each replica from its own window, and replicas whose windows differ (a restart, a leader
 * change) stored different messages under one sequence range - consumers then skipped acknowledged
 * messages on some servers (nats-server#4365, #6415; seen in the nemesis test on 2.9.10). Streams
 * written before this header read `Nats-Msg-Id` instead.
 */
export const FRAME_HEADER = "Svc-Frame";
/**
 * A frame's deadline is at most this far after its append (ms), so a repeat is stored at most this
 * long after the first copy: a reader starting after sequence S first folds, without handing them on,
 * the messages stored this long before S (windowStart), with the same decisions as a reader that went
 * through S, so it then drops the same repeats (and fences the same terms).
 */
export const MAX_FRAME_SPAN_MS = 60_000;
/**
 * Header on every message of a frame: the frame's deadline (ms since the epoch). Every reader drops
 * a frame whose last message the stream stored (its server timestamp) after the deadline, so a
 * publish that lands late (a stalled server or writer thawing) is the same no-op on every replica.
 */
export const DEADLINE_HEADER = "Svc-Deadline";
/**
 * How far the clocks of svc nodes and nats-servers may disagree (ms; keep them in sync with NTP).
 * A writer counts a frame acknowledged only when the ack came by deadline - CLOCK_SKEW_MS (so the
 * stored timestamp is at or before the deadline), and the answer to a write whose outcome is
 * unknown waits until deadline + CLOCK_SKEW_MS (so any later write is stored after the deadline).
 */
export const CLOCK_SKEW_MS = 1000;
/**
 * Fencing (a log opened with `fence`: one leader at a time, home-stores.ts): every message of a
 * fenced writer carries its term in TERM_HEADER; a new leader stores a FENCE_HEADER message (empty
 * body) with its term before its first write. Every reader drops a frame whose last message comes
 * after a fence of a higher term than the frame's, so a deposed leader's write that slips past the
 * publish check (nats-server 2.9's expected-sequence check is a pre-check, nats-server#4320) is the
 * same no-op on every replica.
 */
export const TERM_HEADER = "Svc-Term";
export const FENCE_HEADER = "Svc-Fence";
/** The deadline (and id) of the appends made inside withDeadline(): a caller's context, through the collection, to the log. */
const writes = new AsyncLocalStorage<{ deadline: number; id: string | undefined; frames: number }>();

/**
 * Run `fn` so that every append it makes (through a collection on a JetStream log) carries
 * `deadline` (ms since the epoch). With `id` (letters, digits, `_`, `-`), the k-th frame appended
 * gets the frame id `<subject>:<id>:<k>` (FRAME_HEADER): several runs of one request (copies sent to
 * several replicas) publish the same ids, and every reader keeps the first of each.
 */
export function withDeadline<T>(deadline: number, fn: () => T, id?: string): T {
  return writes.run({ deadline, id, frames: 0 }, fn);
}

/** Room left in each message for headers (message id, chunk) under the server's max_payload. */
const HEADER_ROOM = 1024;
/** A log name: dot-separated tokens of letters, digits, `_` and `-` (NATS subject tokens, no wildcards). */
const LOG_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export interface LogStreamOptions {
  /** Stream name (default LOG_STREAM); it holds the subjects `<stream>.>`. */
  stream?: string;
  /** Replicas of the stream (default 3: a publish is acknowledged once 2 of 3 servers have it). */
  replicas?: number;
  /** JetStream's deduplication window (default 2 minutes). svc publishes no `Nats-Msg-Id` (FRAME_HEADER says why), so it only bounds the server's own bookkeeping. */
  duplicateWindowMs?: number;
}

/** Create the shared log stream, or leave an existing one as it is; true when this call created it. */
export async function ensureLogStream(nc: NatsConnection, opts: LogStreamOptions = {}): Promise<boolean> {
  const name = opts.stream ?? LOG_STREAM;
  const jsm = await jetstreamManager(nc);
  const existing = await jsm.streams.info(name).catch((e: unknown) => {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return null;
    throw e; // no answer is not "absent": the caller retries the open
  });
  if (existing !== null) return false;
  await jsm.streams.add({
    name,
    subjects: [`${name}.>`],
    num_replicas: opts.replicas ?? 3,
    duplicate_window: (opts.duplicateWindowMs ?? 120_000) * 1_000_000,
  });
  return true;
}

/**
 * Log streams new sharded indexes spread their shards over (issue 31 item 7): each stream is one
 * Raft group whose leader orders every write to it, so k streams with leaders on k servers are k
 * write ceilings instead of one. Three: one leader per nats-server of a 3-server cluster.
 */
export const LOG_STREAMS = 3;

/** The i-th log stream: `svc_log` (i = 0, the one stream of clusters before issue 31), then `svc_log_1`, `svc_log_2`, ... */
export function logStreamName(i: number): string {
  return i === 0 ? LOG_STREAM : `${LOG_STREAM}_${i}`;
}

/**
 * Create the log streams 0..count-1 that are missing. When this call created one and the streams
 * have more than one replica, their leaders are spread: nats-server 2.9 places each new stream's
 * leader itself and may put several on one server, so while two streams share a leader and
 * another server could lead, one of them is asked to step down (a new leader is elected among its
 * replicas; at most `count` x 3 step-downs). Only at creation, when nothing writes yet: a step-down
 * pauses a stream's writes for its election. Leaders drift after server restarts; an operator
 * spreads them again with `nats stream cluster step-down <stream>` (OPERATIONS.md).
 * Returns the leader of each stream as last seen ("" for none).
 */
export async function ensureLogStreams(
  nc: NatsConnection,
  opts: Omit<LogStreamOptions, "stream"> & { count?: number } = {},
): Promise<string[]> {
  const count = opts.count ?? LOG_STREAMS;
  let created = false;
  for (let i = 0; i < count; i++) created = (await ensureLogStream(nc, { ...opts, stream: logStreamName(i) })) || created;
  const jsm = await jetstreamManager(nc);
  const names = Array.from({ length: count }, (_, i) => logStreamName(i));
  const leaders = async () => Promise.all(names.map(async (n) => (await jsm.streams.info(n).catch(() => null))?.cluster ?? null)); // no answer reads as "no leader yet": the bounded loop below asks again
  let info = await leaders();
  if (!created || (opts.replicas ?? 3) < 2) return info.map((c) => c?.leader ?? "");
  for (let step = 0; step < count * 3; step++) {
    const servers = new Set(info.flatMap((c) => [c?.leader ?? "", ...(c?.replicas ?? []).map((r) => r.name)]).filter((s) => s !== ""));
    const led = info.map((c) => c?.leader ?? "");
    if (led.some((l) => l === "")) {
      await new Promise((r) => setTimeout(r, 250)); // an election in progress
      info = await leaders();
      continue;
    }
    const bunched = led.findIndex((l, i) => led.indexOf(l) !== i);
    if (bunched < 0 || new Set(led).size >= Math.min(count, servers.size)) break;
    await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${names[bunched]}`, undefined, { timeout: 2000 }).catch(() => undefined); // spreading leaders is best effort: the loop looks again, bunched leaders only cost speed
    const before = led[bunched];
    for (let t = 0; t < 40; t++) {
      await new Promise((r) => setTimeout(r, 100));
      info = await leaders();
      const now = info[bunched]?.leader ?? "";
      if (now !== "" && now !== before) break;
    }
  }
  return info.map((c) => c?.leader ?? "");
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
  /**
   * Follow mode (several writers, one replica each): after the replay the log keeps reading its
   * subject and hands every frame, other writers' and its own, to `LogReplay.onTail` in stream
   * order; `head()` tells how far the subject goes now. Purge must stay off.
   */
  follow?: boolean;
  /**
   * Fenced single writer (the leader of term `fence`, a positive integer that grows with each new
   * leader): after the replay the log stores a fence of this term at the subject's end (re-reading
   * what another writer added meanwhile), then publishes every message with the subject's expected
   * last sequence. A write refused by that check, or an open that finds a fence of a higher term,
   * is 503 E_HOME_UNAVAILABLE: another leader took over. Not with follow.
   */
  fence?: number;
  /**
   * Replay only up to this stream sequence (a backup's cut, cluster/backups.ts): the log holds the
   * frames that end at or before it, as a replica that had applied that far. Not with follow or fence.
   */
  until?: number;
}

/** 503 E_HOME_UNAVAILABLE: a leader of a later term fenced this log. */
function fenced(subject: string, detail: string): SvcError {
  return new SvcError("E_HOME_UNAVAILABLE", `log ${subject}: ${detail}: another node leads it now; retry`, {
    field: "home",
    details: { retryAfterSeconds: 2 },
  });
}

/** An OpenLog over the subject `<stream>.<name>` of a JetStream stream reached through `nc` (the caller owns `nc`). */
export function jetStreamLog(nc: NatsConnection, opts: JetStreamLogOptions): OpenLog {
  if (!LOG_NAME.test(opts.name))
    throw new SvcError("E_BAD_REQUEST", `log name '${opts.name}' is not dot-separated tokens of letters, digits, _ and -`, {
      field: "name",
    });
  if (opts.follow && opts.purge)
    throw new SvcError("E_BAD_REQUEST", "a followed log is read by several replicas: it cannot purge", { field: "purge" });
  if (opts.fence !== undefined && (opts.follow || !Number.isSafeInteger(opts.fence) || opts.fence <= 0))
    throw new SvcError("E_BAD_REQUEST", "fence is a positive integer term, not with follow", { field: "fence" });
  if (opts.until !== undefined && (opts.follow || opts.fence !== undefined || !Number.isSafeInteger(opts.until) || opts.until < 0))
    throw new SvcError("E_BAD_REQUEST", "until is a stream sequence, not with follow or fence", { field: "until" });
  return async (replay) => {
    const stream = opts.stream ?? LOG_STREAM;
    const subject = `${stream}.${opts.name}`;
    // API calls time out after ackTimeoutMs and are retried (untilQuorum): one lost with a killed server costs 2 s, not the client's 5 s.
    const apiTimeout = opts.ackTimeoutMs ?? 2000;
    const jsm = await jetstreamManager(nc, { timeout: apiTimeout });
    const js = jetstream(nc, { timeout: apiTimeout });
    const quorumTimeoutMs = opts.quorumTimeoutMs ?? 15_000;
    const from = replay.from?.offset ?? 0;
    const after = replay.prefix ? 0 : from;
    const report: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
    const lastOf = async () =>
      (await untilQuorum(`log ${subject}`, quorumTimeoutMs, () => jsm.streams.getMessage(stream, { last_by_subj: subject })))?.seq ?? 0;
    let last = opts.until ?? (await lastOf());
    const position = { segment: 0, offset: Math.max(last, from) };
    /** The highest fence term read so far: frames of a lower term that end after it are dropped. */
    let fencedAt = 0;
    const follow = opts.follow ? replay.onTail : undefined;
    /** End (stream sequence) of the last frame handed on: what head() returns. */
    let delivered = position.offset;
    let tail: StreamTail | null = null;
    let frames: FrameAssembler | null = null;
    /** Follow mode: where chunked frames were half read (Log.neededAfter). */
    const straddles = new Straddles();
    const read = async (start: number, until: number | undefined): Promise<StreamTail> => {
      const t = new StreamTail(nc, {
        stream,
        subject,
        what: `log ${subject}`,
        start: { after: start },
        // without follow the read stops at `until`; with it, it goes on after the replay
        ...(until !== undefined ? { until } : { catchUp: last }),
        quorumTimeoutMs,
        apiTimeoutMs: apiTimeout,
        onMessage: async (m) => {
          if (Number(m.headers?.get(FENCE_HEADER) || 0) > 0) delivered = Math.max(delivered, m.seq);
          const j = await judge(m, frames!);
          if (j === null) return;
          const { frame: f, keep } = j;
          straddles.note(f.end, frames!.straddling(m.info.timestampNanos / 1e6));
          if (!keep) return;
          const frame = decode(decoder, subject, f.chunks, { segment: 0, offset: f.start - 1 }, { segment: 0, offset: f.end });
          if (m.seq <= last) {
            replay.onFrame(frame);
            report.frames++;
          } else follow?.(frame);
          delivered = Math.max(delivered, f.end);
        },
      });
      try {
        await t.reached(until ?? last);
      } catch (e) {
        await t.stop();
        throw e;
      }
      return t;
    };
    const decoder = safeDecoder();
    /** Frames handed on lately, by id: a repeat is dropped. A read starting after `after` first learns those stored just before it. */
    const recent = new RecentFrames();
    const earlier = (s0: number, before: number, frame: string, count: number) =>
      earlierChunks(nc, stream, subject, s0, before, frame, count, quorumTimeoutMs, apiTimeout);
    /**
     * The fold's decision on message `m` (the assembler's next), from the log alone, the same on
     * every reader: null when it completes no frame (a fence raises fencedAt); else the frame and
     * whether it is kept. Dropped: stored after its deadline (its writer did not count it
     * acknowledged), ended after a fence of a later term (a deposed leader's write), or a repeat of
     * a frame kept before (a retried publish, a copy sent to another replica).
     */
    const judge = async (m: JsMsg, assembler: FrameAssembler): Promise<{ frame: CompleteFrame; keep: boolean } | null> => {
      const fence = Number(m.headers?.get(FENCE_HEADER) || 0);
      if (fence > 0) {
        fencedAt = Math.max(fencedAt, fence);
        return null;
      }
      const frame = await assembler.take(m);
      if (frame === null) return null;
      const now = m.info.timestampNanos / 1e6;
      const deadline = Number(m.headers?.get(DEADLINE_HEADER) || 0);
      const keep =
        !(deadline > 0 && now > deadline) &&
        !(fencedAt > 0 && Number(m.headers?.get(TERM_HEADER) || 0) < fencedAt) &&
        !recent.repeat(frame.id, deadline, now);
      return { frame, keep };
    };
    if (after > 0 && (opts.fence !== undefined || follow !== undefined || last > after)) {
      // A read starting after `after` first folds, without handing on, the messages stored in the
      // MAX_FRAME_SPAN_MS before it (the frames a repeat after `after` can be a repeat of), with the
      // same decisions: it then holds the ids (and fences) a reader that went through them holds.
      const start = await windowStart(jsm, stream, subject, after, quorumTimeoutMs);
      if (start > 0) {
        const scratch: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
        const window = new FrameAssembler(subject, start - 1, scratch, earlier);
        const t = new StreamTail(nc, {
          stream,
          subject,
          what: `log ${subject}`,
          start: { after: start - 1 },
          until: after,
          quorumTimeoutMs,
          apiTimeoutMs: apiTimeout,
          onMessage: async (m) => void (m.seq <= after ? await judge(m, window) : undefined),
        });
        try {
          await t.reached(after);
        } finally {
          await t.stop();
        }
      }
    }
    if (opts.fence !== undefined || follow !== undefined || last > after) {
      frames = new FrameAssembler(subject, after, report, earlier);
      tail = await read(after, follow === undefined ? last : undefined);
      if (follow === undefined) await tail.stop();
      // Without follow, a frame still missing chunks at the end is a writer that stopped mid-frame; with it, the frame may be in flight.
      if (follow === undefined && opts.fence === undefined) frames.cutTorn();
    }
    if (opts.fence !== undefined) {
      // Store the fence at the subject's end; another writer's message in between: read it too, and try again.
      for (let at = last; ;) {
        const seq = await publishFence(js, subject, opts.fence, at, quorumTimeoutMs, apiTimeout);
        if (seq !== null) {
          position.offset = Math.max(position.offset, seq);
          break;
        }
        const now = await lastOf();
        last = now;
        await (await read(at, now)).stop();
        at = now;
      }
      if (fencedAt > opts.fence) throw fenced(subject, `a fence of term ${fencedAt} is stored, this leader's term is ${opts.fence}`);
      frames?.cutTorn();
    }
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    const log = new JetStreamLog(
      js,
      jsm,
      stream,
      subject,
      position,
      {
        ackTimeoutMs: opts.ackTimeoutMs ?? 2000,
        quorumTimeoutMs,
        purge: opts.purge ?? false,
        chunkBytes: Math.max(1, Math.min(opts.chunkBytes ?? Infinity, maxPayload - HEADER_ROOM)),
        term: opts.fence ?? 0,
      },
      follow === undefined ? null : { tail: tail!, last: lastOf, delivered: () => delivered, straddles },
      () => report.bytes,
    );
    return { log, report };
  };
}

/** Store a fence of `term` on `subject` if its last message is still `at`: its sequence, or null when another message came first. */
async function publishFence(
  js: JetStreamClient,
  subject: string,
  term: number,
  at: number,
  quorumTimeoutMs: number,
  apiTimeout: number,
): Promise<number | null> {
  const h = headers();
  h.set(FENCE_HEADER, String(term));
  h.set(TERM_HEADER, String(term));
  try {
    return (
      await untilQuorum(`log ${subject}`, quorumTimeoutMs, () =>
        js.publish(subject, new Uint8Array(0), { headers: h, timeout: apiTimeout, expect: { lastSubjectSequence: at } }),
      )
    ).seq;
  } catch (e) {
    if (isRevisionConflict(e)) return null;
    throw e;
  }
}

/** What the assembler reads of a message: its stream sequence, its data and two headers. */
interface SubjectMessage {
  seq: number;
  data: Uint8Array;
  headers?: { get(k: string): string };
}

/** A frame the assembler completed: its id, chunks, and the sequences of its first and last message. */
interface CompleteFrame {
  id: string;
  chunks: Uint8Array[];
  start: number;
  end: number;
}

/** A frame of one writer whose last chunk has not been read yet. */
interface PartialFrame {
  frame: string;
  start: number;
  k: number;
  chunks: Uint8Array[];
  /** Its Svc-Deadline (0: none): once the stream's time is past it, the frame can only be dropped. */
  deadline: number;
}

/**
 * Follow mode: for the recent frame ends at which chunked frames were half read, the first sequence
 * of the oldest of them (Log.neededAfter: what a purge below a snapshot taken there must keep).
 */
class Straddles {
  private static readonly KEEP = 4096;
  private readonly at = new Map<number, number>();
  /** Frame ends up to here may have been forgotten. */
  private forgotten = 0;
  /** The first frame end noted (earlier ones were read before this log opened: unknown). */
  private first = Infinity;

  note(end: number, straddling: number | null): void {
    this.first = Math.min(this.first, end);
    if (straddling === null) return;
    this.at.set(end, straddling);
    if (this.at.size > Straddles.KEEP) {
      const [oldest] = this.at.keys();
      this.at.delete(oldest!);
      this.forgotten = oldest!;
    }
  }

  neededAfter(end: number): number {
    if (end < this.first || end <= this.forgotten) return 0;
    return Math.min(end + 1, this.at.get(end) ?? Infinity);
  }
}

/**
 * Reassembles a subject's frames from its messages, read in stream order. Several writers may
 * interleave their chunked frames, so a partial frame is kept per writer: the message id
 * `<subject>:<epoch>:<n>[:<i>]` names the frame (`...:<n>`) and its writer (`<subject>:<epoch>`).
 * A frame is complete at its last chunk, and that chunk's sequence is its position. A chunk read
 * without its first chunks because they lie at or before the read's start (a checkpoint taken while
 * another writer's frame was half written) has them fetched back from the sequence its header names.
 */
class FrameAssembler {
  private readonly partial = new Map<string, PartialFrame>();

  constructor(
    private readonly subject: string,
    /** The read starts after this sequence. */
    private readonly after: number,
    private readonly report: RecoveryReport,
    private readonly earlier: (s0: number, before: number, frame: string, count: number) => Promise<Uint8Array[] | null>,
  ) {}

  /** Take the next message; a frame it completes is returned (its id, chunks, sequence of its first and last message). */
  async take(m: SubjectMessage): Promise<CompleteFrame | null> {
    const header = m.headers?.get(CHUNK_HEADER) || undefined;
    const [i, k, s0] = chunkOf(header);
    const { writer, frame } = idsOf(frameIdOf(m.headers), header !== undefined);
    this.report.bytes += m.data.length;
    let p = this.partial.get(writer);
    // a repeat of a chunk already read (a publish retried after its ack was lost)
    if (p !== undefined && p.frame === frame && i >= 0 && i < p.chunks.length) return null;
    if (i === 0) {
      if (p !== undefined) this.cut(p);
      this.partial.delete(writer);
      if (k === 1) return { id: frame, chunks: [m.data], start: m.seq, end: m.seq };
      this.partial.set(writer, { frame, start: m.seq, k, chunks: [m.data], deadline: Number(m.headers?.get(DEADLINE_HEADER) || 0) });
      return null;
    }
    if (i > 0 && p === undefined && s0 > 0 && s0 <= this.after) {
      const chunks = await this.earlier(s0, m.seq, frame, i);
      if (chunks !== null) p = { frame, start: s0, k, chunks, deadline: Number(m.headers?.get(DEADLINE_HEADER) || 0) };
    }
    if (i > 0 && p !== undefined && p.frame === frame && p.k === k && p.chunks.length === i) {
      p.chunks.push(m.data);
      if (i < k - 1) {
        this.partial.set(writer, p);
        return null;
      }
      this.partial.delete(writer);
      return { id: frame, chunks: p.chunks, start: p.start, end: m.seq };
    }
    // A chunk that continues no frame here (or a bad chunk header): skipped and reported, with the frame it interrupted.
    if (p !== undefined && this.partial.get(writer) === p) this.cut(p);
    this.partial.delete(writer);
    this.report.damaged.push({
      file: this.subject,
      offset: m.seq,
      bytes: m.data.length,
      frames: 1,
      reason: `chunk '${header}' continues no frame`,
      beforeFrom: m.seq <= this.after,
    });
    return null;
  }

  /** The first sequence of the oldest frame still missing chunks that can still be kept (its deadline not past `now`, the stream's time in ms); null: none. */
  straddling(now: number): number | null {
    let low: number | null = null;
    for (const p of this.partial.values()) if ((p.deadline === 0 || p.deadline >= now) && (low === null || p.start < low)) low = p.start;
    return low;
  }

  /** At the end of a replay without follow: frames still missing chunks are torn (the last one is the torn tail). */
  cutTorn(): void {
    const left = [...this.partial.values()].sort((a, b) => a.start - b.start);
    this.partial.clear();
    const tail = left.pop();
    for (const p of left) this.cut(p);
    if (tail !== undefined) {
      const t = this.torn(tail);
      this.report.tornTail = { file: t.file, offset: t.offset, bytes: t.bytes, frames: 1, reason: t.reason };
    }
  }

  private cut(p: PartialFrame): void {
    this.report.damaged.push(this.torn(p));
  }

  private torn(p: PartialFrame) {
    const bytes = p.chunks.reduce((n, c) => n + c.length, 0);
    return {
      file: this.subject,
      offset: p.start,
      bytes,
      frames: 1,
      reason: `frame with ${p.chunks.length} of ${p.k} chunks (its writer stopped mid-frame)`,
      beforeFrom: p.start <= this.after,
    };
  }
}

/** A message id's frame (the id less a chunk's `:<i>`) and writer (the frame less its `:<n>`); ids of another shape are their own writer. */
function idsOf(id: string, chunked: boolean): { writer: string; frame: string } {
  const cut = (s: string) => (s.lastIndexOf(":") > 0 ? s.slice(0, s.lastIndexOf(":")) : s);
  const frame = chunked ? cut(id) : id;
  return { writer: cut(frame), frame };
}

/** A message's frame id (FRAME_HEADER; `Nats-Msg-Id` on streams written before it; "" for none). */
function frameIdOf(h: { get(k: string): string } | undefined): string {
  return h?.get(FRAME_HEADER) || h?.get("Nats-Msg-Id") || "";
}

/**
 * The ids of the frames handed on lately, each kept until the stream's time (a message's stored
 * timestamp, the same on every replica) passes its deadline: a repeat can be stored only before
 * then, since a frame stored after its deadline is dropped anyway. Ids arrive about in deadline
 * order, so forgetting stops at the first one still due.
 */
class RecentFrames {
  private readonly ids = new Map<string, number>();

  /** Whether frame `id` was handed on before (a repeat, to drop); else remember it until `deadline` (0: MAX_FRAME_SPAN_MS after `now`). */
  repeat(id: string, deadline: number, now: number): boolean {
    if (id === "") return false;
    if (this.ids.has(id)) return true;
    for (const [old, due] of this.ids) {
      if (due >= now) break;
      this.ids.delete(old);
    }
    this.ids.set(id, deadline > 0 ? deadline : now + MAX_FRAME_SPAN_MS);
    return false;
  }
}

/**
 * Where a read starting after `after` folds from first (RecentFrames): the first message of
 * `subject` stored at most MAX_FRAME_SPAN_MS before message `after`, found by bisection over the
 * stream leader's answers (the committed stream, the same for every reader); 0 when message
 * `after` is gone (purged: the frames before it are older than any repeat still to come).
 */
async function windowStart(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  after: number,
  quorumTimeoutMs: number,
): Promise<number> {
  const get = (q: Record<string, unknown>) =>
    untilQuorum(`log ${subject}`, quorumTimeoutMs, () => jsm.streams.getMessage(stream, q as unknown as MsgRequest));
  const at = await get({ seq: after });
  if (at === null || at.subject !== subject) return 0;
  const from = at.time.getTime() - MAX_FRAME_SPAN_MS;
  // the subject's first message at or after sequence s is stored at or after `from`: false, then true from some s on
  let lo = 1;
  let hi = after;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const next = await get({ next_by_subj: subject, seq: mid });
    if (next !== null && next.seq <= after && next.time.getTime() >= from) hi = mid;
    else lo = mid + 1;
  }
  return (await get({ next_by_subj: subject, seq: lo }))?.seq ?? after;
}

/** The first `count` chunks of `frame`, read (as committed, StreamTail) from sequence `s0` up to (not including) `before`; null when they are not all there. */
async function earlierChunks(
  nc: NatsConnection,
  stream: string,
  subject: string,
  s0: number,
  before: number,
  frame: string,
  count: number,
  quorumTimeoutMs: number,
  apiTimeoutMs: number,
): Promise<Uint8Array[] | null> {
  const chunks: Uint8Array[] = [];
  let done = false;
  const t = new StreamTail(nc, {
    stream,
    subject,
    what: `log ${subject}`,
    start: { after: s0 - 1 },
    until: before - 1,
    quorumTimeoutMs,
    apiTimeoutMs,
    onMessage: (m) => {
      if (done || m.seq >= before) return;
      const header = m.headers?.get(CHUNK_HEADER) || undefined;
      if (header === undefined || idsOf(frameIdOf(m.headers), true).frame !== frame) return;
      if (chunkOf(header)[0] !== chunks.length) done = true;
      else chunks.push(m.data);
      if (chunks.length === count) done = true;
    },
  });
  try {
    await t.reached(before - 1);
  } finally {
    await t.stop();
  }
  return chunks.length === count ? chunks : null;
}

function decode(
  decoder: ReturnType<typeof safeDecoder>,
  subject: string,
  chunks: Uint8Array[],
  start: LogPosition,
  end: LogPosition,
): LogFrame {
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
  return { type, body, start, end };
}

/** A frame's chunk header `i/k` or `i/k/s0` (s0: the sequence of the frame's first chunk, on chunks after it) as [i, k, s0]; no header: [0, 1, 0]; a bad one: [-1, 0, 0]. */
function chunkOf(h: string | undefined): [number, number, number] {
  if (h === undefined) return [0, 1, 0];
  const [i, k, s0 = 0] = h.split("/").map(Number);
  return Number.isInteger(i) && Number.isInteger(k) && Number.isInteger(s0) && i! >= 0 && k! > i! && s0 >= 0 ? [i!, k!, s0] : [-1, 0, 0];
}

interface Settings {
  ackTimeoutMs: number;
  quorumTimeoutMs: number;
  purge: boolean;
  chunkBytes: number;
  /** Fenced writer's term (0: not fenced). */
  term: number;
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
  /** Fenced: set once a publish was refused by the expected-sequence check; every later append is refused too. */
  private deposed = false;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly subject: string,
    start: LogPosition,
    private readonly settings: Settings,
    /** Follow mode: the subject's tail, how to ask for the subject's last sequence, and the end of the last frame the tail handed on. */
    private readonly following: { tail: StreamTail; last: () => Promise<number>; delivered: () => number; straddles: Straddles } | null,
    /** Bytes of messages read from the subject so far (replay and tail: what snapshots weigh against, shard-host.ts). */
    private readonly read: () => number,
  ) {
    this.last = start;
    if (following !== null) {
      this.head = async () => {
        await following.tail.reached(await following.last());
        return { segment: 0, offset: following.delivered() };
      };
      this.neededAfter = (pos) => following.straddles.neededAfter(pos.offset);
    }
  }

  /** Follow mode only: the end of the last frame on the subject now, once the tail has handed it on (Log.head). */
  readonly head?: () => Promise<LogPosition>;

  /** Follow mode only (Log.neededAfter). */
  readonly neededAfter?: (pos: LogPosition) => number;

  append(type: number, body: unknown): Promise<LogPosition> {
    if (this.closed) return Promise.reject(new SvcError("E_CLOSED", `log ${this.subject} is closed`));
    const bytes = encode({ type, body });
    const w = writes.getStore();
    const id = w?.id !== undefined ? `${this.subject}:${w.id}:${++w.frames}` : `${this.subject}:${this.epoch}:${++this.frame}`;
    // without a caller's deadline, the publish retries for quorumTimeoutMs (it gives up CLOCK_SKEW_MS before the deadline)
    const deadline = Math.min(w?.deadline ?? Date.now() + this.settings.quorumTimeoutMs + CLOCK_SKEW_MS, Date.now() + MAX_FRAME_SPAN_MS);
    const run = this.chain.then(() => this.publishFrame(id, bytes, deadline));
    this.chain = run.catch(() => undefined); // the chain goes on after a failed append: `run` (returned) carries its failure to the caller
    return run;
  }

  /**
   * Publish a frame's messages in order, each retried until acknowledged by `deadline` -
   * CLOCK_SKEW_MS. Acknowledged by then: the stream stored it by the deadline, every reader keeps it.
   * Otherwise E_NO_QUORUM: the outcome is unknown (a message in flight may still be stored), but a
   * message stored after the deadline is dropped by every reader, so the frame never lands after a
   * write made later than deadline + CLOCK_SKEW_MS.
   */
  private async publishFrame(id: string, bytes: Uint8Array, deadline: number): Promise<LogPosition> {
    if (this.deposed) throw fenced(this.subject, "a leader of a later term fenced it");
    const size = this.settings.chunkBytes;
    const k = Math.max(1, Math.ceil(bytes.length / size));
    const ackBy = deadline - CLOCK_SKEW_MS;
    let seq = 0;
    let first = 0;
    for (let i = 0; i < k; i++) {
      if (Date.now() >= ackBy)
        throw noQuorum(
          `log ${this.subject}: the write's deadline passed before JetStream acknowledged it (fewer than a quorum of NATS servers reachable, or the stream has no leader); retry`,
        );
      const part = bytes.subarray(i * size, Math.min(bytes.length, (i + 1) * size));
      // Chunks after the first name its sequence, so a reader starting between them can fetch it back.
      const prev = seq === 0 ? this.last.offset : seq;
      seq = await this.publish(
        part,
        k === 1 ? id : `${id}:${i}`,
        k === 1 ? undefined : i === 0 ? `0/${k}` : `${i}/${k}/${first}`,
        deadline,
        ackBy,
        prev,
      );
      if (i === 0) first = seq;
    }
    if (Date.now() > ackBy)
      throw noQuorum(`log ${this.subject}: JetStream acknowledged the write only after its deadline; its outcome is unknown; retry`);
    this.last = { segment: 0, offset: seq };
    this.counters.frames++;
    this.counters.bytes += bytes.length;
    this.counters.writes += k;
    return this.last;
  }

  /** One message, retried with the same frame id until acknowledged or `ackBy` passed (then E_NO_QUORUM). */
  private async publish(
    data: Uint8Array,
    frameId: string,
    chunk: string | undefined,
    deadline: number,
    ackBy: number,
    prev: number,
  ): Promise<number> {
    const term = this.settings.term;
    try {
      return await this.publishOnce(data, frameId, chunk, deadline, ackBy, prev);
    } catch (e) {
      if (term === 0 || !isRevisionConflict(e)) throw e;
      // Refused by the expected-sequence check. A retry of a publish that was stored (its ack lost) is
      // refused too: the message right after `prev` on the subject is then this one, and it counts.
      const next = await this.jsm.streams
        .getMessage(this.stream, { next_by_subj: this.subject, seq: prev + 1 } as unknown as MsgRequest)
        .catch(() => null); // not seen counts as not ours: this leader stops writing (deposed) rather than claim a write it cannot see
      if (next !== null && frameIdOf(next.header) === frameId) return next.seq;
      this.deposed = true;
      throw fenced(this.subject, "the subject moved past this leader's last write");
    }
  }

  private publishOnce(
    data: Uint8Array,
    frameId: string,
    chunk: string | undefined,
    deadline: number,
    ackBy: number,
    prev: number,
  ): Promise<number> {
    const h = headers();
    h.set(DEADLINE_HEADER, String(deadline));
    h.set(FRAME_HEADER, frameId);
    if (chunk !== undefined) h.set(CHUNK_HEADER, chunk);
    const term = this.settings.term;
    if (term > 0) h.set(TERM_HEADER, String(term));
    return untilQuorum(`log ${this.subject}`, Math.max(0, ackBy - Date.now()), async () => {
      const timeout = Math.max(100, Math.min(this.settings.ackTimeoutMs, ackBy - Date.now()));
      const t0 = performance.now();
      try {
        const { seq } = await this.js.publish(this.subject, data, {
          timeout,
          headers: h,
          ...(term > 0 ? { expect: { lastSubjectSequence: prev } } : {}),
        });
        timing("nats_publish", (performance.now() - t0) / 1000);
        return seq;
      } catch (err) {
        timing("nats_publish", (performance.now() - t0) / 1000, false);
        throw err;
      }
    });
  }

  get position(): LogPosition {
    return this.last;
  }

  get stats(): LogStats {
    return { ...this.counters, read: this.read() };
  }

  /** Nothing to do: an append resolved only once JetStream acknowledged it (a quorum has it). A fenced log that was deposed refuses: what it appended may not count (no checkpoint is taken of it). */
  async sync(): Promise<void> {
    await this.chain;
    if (this.deposed) throw fenced(this.subject, "a leader of a later term fenced it");
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
    await this.following?.tail.stop();
  }
}
