/** @module wal — the segmented append-only write-ahead log, a `Log`: open (recovery in wal-recovery.ts), append (positions assigned in call order; group commit in wal-writer.ts), rollover, dropBefore, close. */
import { SvcError } from "../errors.js";
import { FrameEncoder, frameCrc, sealFrame, type EncodedFrame } from "./frame-encoder.js";
import type { Log, LogPosition, LogStats, OpenLog, RecoveryReport } from "./log.js";
import { HEADER_SIZE } from "./segment.js";
import { recoverSegments, type WalOpenOptions } from "./wal-recovery.js";
import { createSegment, ioError, SegmentWriter, type Durability, type FrameItem, type WalOptions } from "./wal-writer.js";

export type { DamagedRegion, RecoveryReport } from "./log.js";
export type { WalFrame, WalOpenOptions } from "./wal-recovery.js";
export type { Durability, WalOptions } from "./wal-writer.js";
/** A point in the log: segment id and byte offset inside that segment's file (a frame's end). Ordered by (segment, offset). */
export type WalPosition = LogPosition;
/** Frames and frame bytes written (headers included), fdatasyncs of segment files (rollover included), and
 *  write calls (a writev per batch, plus a 4-byte CRC store for a frame whose CRC was computed during its write). */
export type WalStats = LogStats;

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const DEFAULT_INTERVAL_MS = 50;
/** Frames at least this long (bytes) written by an idle writer get their CRC computed while their writev runs (see append). */
const DEFER_CRC_MIN = 64 * 1024;

function checkPosition(p: WalPosition, field: string): void {
  if (
    typeof p !== "object" ||
    p === null ||
    !Number.isSafeInteger(p.segment) ||
    !Number.isSafeInteger(p.offset) ||
    p.segment < 0 ||
    p.offset < 0
  ) {
    throw new SvcError("E_BAD_REQUEST", `${field} must be {segment, offset} with non-negative integers`, { field });
  }
}

export class Wal implements Log {
  readonly dir: string;
  private readonly segmentBytes: number;
  private readonly encoder = new FrameEncoder();
  private readonly writer: SegmentWriter;

  /** Where the next appended frame goes (assigned synchronously in append, so order = call order). */
  private logSegment: number;
  private logSize: number;
  private closed = false;
  private closePromise: Promise<void> | null = null;
  private dropChain: Promise<unknown> = Promise.resolve();

  private constructor(dir: string, segmentBytes: number, writer: SegmentWriter) {
    this.dir = dir;
    this.segmentBytes = segmentBytes;
    this.writer = writer;
    this.logSegment = writer.segment;
    this.logSize = writer.size;
  }

  /**
   * Open `dir` (created with a first segment when it holds none), validate and replay frames at or after
   * `from`, cut a torn tail off the last segment, and return a log ready to append to.
   * Throws E_WAL_CORRUPT (details {file, offset}) for damage anywhere but the tail of the last segment,
   * for a missing segment in the id sequence, and for `from` beyond the last segment.
   */
  static async open(dir: string, opts: WalOpenOptions = {}): Promise<{ wal: Wal; report: RecoveryReport }> {
    const o = resolveOptions(opts);
    const from = opts.from;
    if (from !== undefined) checkPosition(from, "from");
    const { report, segmentIds, active } = await recoverSegments(dir, opts);
    if (active === null) {
      // An empty log after a checkpoint at `from` starts past it, so new positions compare greater.
      const id = from === undefined ? 1 : from.segment + 1;
      const fh = await createSegment(dir, id);
      return { wal: new Wal(dir, o.segmentBytes, new SegmentWriter(dir, o.durability, o.intervalMs, fh, id, HEADER_SIZE, [id])), report };
    }
    const writer = new SegmentWriter(dir, o.durability, o.intervalMs, active.fh, active.id, active.size, segmentIds);
    // `from` past the end of a cut tail: continue in a new segment so every new position is > from.
    if (from !== undefined && from.segment === active.id && from.offset > active.size) {
      try {
        await writer.roll(active.id + 1);
      } catch (e) {
        await writer.closeFile().catch(() => undefined); // the open failed: the error thrown below is the one to report, a close of the half-open file adds nothing
        throw ioError(`open WAL ${dir}`, e);
      }
    }
    return { wal: new Wal(dir, o.segmentBytes, writer), report };
  }

  /** An `OpenLog` for a collection: the WAL under `dir`, opened with salvage (damaged regions skipped and reported). */
  static opener(dir: string, opts: WalOptions): OpenLog {
    return async (replay) => {
      const { wal, report } = await Wal.open(dir, { ...opts, ...replay, salvage: true });
      return { log: wal, report };
    };
  }

  /**
   * Frame `body` (msgpack; typed arrays and Buffers become bin) as `type` (1..255) and queue it.
   * Resolves with the frame's end position once durable per the durability mode; frames are written in call order.
   * Binaries of 64 KiB or more are written from the caller's memory: do not change them until this settles.
   */
  append(type: number, body: unknown): Promise<WalPosition> {
    const refused = this.refusal(type);
    if (refused !== null) return Promise.reject(refused);
    // An idle writer submits the frame's writev synchronously inside submit(), so the CRC of a large frame
    // (~0.3 ms/MB) is computed while the thread pool copies the bytes; the writer then stores it with a 4-byte
    // pwrite before the frame's fdatasync. A small frame's CRC costs less than that extra pwrite (a thread-pool
    // round trip, 0.1-0.2 ms on a busy machine: a wallet charge per metered request paid it), and a busy
    // writer's frame waits anyway: both are sealed right away.
    let deferCrc = !this.writer.busy;
    let frame: EncodedFrame;
    try {
      frame = this.encoder.encode(type, body, !deferCrc);
    } catch (e) {
      return Promise.reject(e);
    }
    if (deferCrc && frame.size < DEFER_CRC_MIN) {
      sealFrame(frame);
      deferCrc = false;
    }
    const end = this.advance(frame.size);
    let resolve!: (p: WalPosition) => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<WalPosition>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const item: FrameItem = { sync: false, segment: end.segment, frame, crc: -1, sealed: !deferCrc, end, resolve, reject };
    this.writer.submit(item);
    if (deferCrc) item.crc = frameCrc(frame);
    return done;
  }

  /**
   * Frame each of `bodies` as `type`, in order, exactly as that many append() calls would (the same bytes in the
   * log), but queued as one write: one writev and one promise for all of them, resolved with the last frame's end
   * once all are durable per the durability mode. For many small frames made at once (the wallet's read charges).
   */
  appendMany(type: number, bodies: readonly unknown[]): Promise<WalPosition> {
    const refused = this.refusal(type);
    if (refused !== null) return Promise.reject(refused);
    if (bodies.length === 0) return Promise.resolve(this.position);
    const parts: Uint8Array[] = [];
    let size = 0;
    let head: Buffer | undefined;
    try {
      for (const body of bodies) {
        const f = this.encoder.encode(type, body, true);
        head ??= f.head;
        for (const part of f.parts) parts.push(part);
        size += f.size;
      }
    } catch (e) {
      return Promise.reject(e);
    }
    // The frames go to one segment (a batch may run past segmentBytes, as one large frame may).
    const end = this.advance(size);
    return new Promise<WalPosition>((resolve, reject) =>
      this.writer.submit({
        sync: false,
        segment: end.segment,
        frame: { parts, head: head!, size },
        crc: -1,
        sealed: true,
        end,
        count: bodies.length,
        resolve,
        reject,
      }),
    );
  }

  /** Why an append of `type` is refused now (closed, stopped by a write error, a bad type), or null. */
  private refusal(type: number): SvcError | null {
    if (this.closed) return new SvcError("E_CLOSED", `WAL ${this.dir} is closed`);
    if (this.writer.failed !== null) return this.writer.failed;
    if (!Number.isInteger(type) || type < 1 || type > 255)
      return new SvcError("E_BAD_REQUEST", `frame type must be an integer 1..255, got ${type}`, { field: "type" });
    return null;
  }

  /** Place `size` bytes of frames at the log's end (in a new segment once the current one is full); their end position. */
  private advance(size: number): { segment: number; offset: number } {
    if (this.logSize > HEADER_SIZE && this.logSize >= this.segmentBytes) {
      this.logSegment++;
      this.logSize = HEADER_SIZE;
    }
    this.logSize += size;
    return { segment: this.logSegment, offset: this.logSize };
  }

  /** The write or fdatasync error that stopped this WAL (every later append rejects with it), or null. */
  get failed(): SvcError | null {
    return this.writer.failed;
  }

  /** End position of the last appended frame (durable or not); the header end of a log without frames. */
  get position(): WalPosition {
    return { segment: this.logSegment, offset: this.logSize };
  }

  get stats(): WalStats {
    return this.writer.stats;
  }

  /** fdatasync everything appended so far. */
  sync(): Promise<void> {
    if (this.writer.failed !== null) return Promise.reject(this.writer.failed);
    if (this.closePromise !== null) return this.closePromise;
    return this.writer.sync();
  }

  /**
   * Delete whole segments all of whose frames end at or before `pos`, oldest first (so a crash midway
   * leaves a contiguous suffix); never the segment being written. Returns how many were deleted.
   */
  dropBefore(pos: WalPosition): Promise<number> {
    try {
      checkPosition(pos, "pos");
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.closed) return Promise.reject(new SvcError("E_CLOSED", `WAL ${this.dir} is closed`));
    const run = this.dropChain.then(() => this.writer.dropBefore(pos));
    this.dropChain = run.catch(() => undefined); // the chain goes on after a failed drop: `run` (returned) carries its failure to the caller
    return run;
  }

  /** Write and fdatasync everything queued, close the file; later appends reject with E_CLOSED. */
  close(): Promise<void> {
    if (this.closePromise !== null) return this.closePromise;
    this.closed = true;
    this.closePromise = (async () => {
      let err: unknown = null;
      await this.writer.finish().catch((e: unknown) => (err = e));
      await this.dropChain;
      await this.writer.closeFile().catch((e: unknown) => (err ??= ioError(`close WAL ${this.dir}`, e)));
      if (err !== null) throw err;
    })();
    return this.closePromise;
  }
}

function resolveOptions(opts: WalOptions): Required<WalOptions> {
  const segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  const durability: Durability = opts.durability ?? "batch";
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  if (!Number.isSafeInteger(segmentBytes) || segmentBytes < 1)
    throw new SvcError("E_BAD_REQUEST", `segmentBytes must be a positive integer, got ${segmentBytes}`, { field: "segmentBytes" });
  if (durability !== "batch" && durability !== "interval" && durability !== "none")
    throw new SvcError("E_BAD_REQUEST", `durability must be batch, interval or none, got ${String(durability)}`, { field: "durability" });
  if (!Number.isFinite(intervalMs) || intervalMs < 0)
    throw new SvcError("E_BAD_REQUEST", `intervalMs must be a non-negative number, got ${intervalMs}`, { field: "intervalMs" });
  return { segmentBytes, durability, intervalMs };
}
