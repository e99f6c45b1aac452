/** @module wal — the segmented append-only write-ahead log: open + replay + torn-tail recovery, group-committed appends, rollover, dropBefore. */
import { mkdir, open, stat, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Decoder } from "@msgpack/msgpack";
import { SvcError } from "../errors.js";
import { checkHeader, encodeHeader, FRAME_OVERHEAD, HEADER_SIZE, listSegments, MAX_FRAME_LENGTH, MIN_FRAME, PAD_TYPE, segmentName, SYNC, type SegmentFile } from "./segment.js";
import { FrameEncoder, frameCrc, sealFrame, type EncodedFrame } from "./frame-encoder.js";
import { findNextFrame, fsyncDir, readFully, scanFrames } from "./scan.js";

/**
 * When append() resolves:
 * - "batch": after an fdatasync that started once the frame was written (frames written meanwhile share the next one,
 *   and the next writev overlaps the running fdatasync);
 * - "interval": after write(); fdatasync at most every intervalMs;
 * - "none": after write(); fdatasync only on rollover, sync() and close().
 */
export type Durability = "batch" | "interval" | "none";

export interface WalOptions {
  /** Rollover threshold in bytes (default 64 MiB): once the active segment holds this many, the next frame starts a new one. */
  segmentBytes?: number;
  durability?: Durability;
  /** For "interval": milliseconds between fdatasyncs (default 50). */
  intervalMs?: number;
}

/** A point in the log: segment id and byte offset inside that segment's file. Ordered by (segment, offset). */
export interface WalPosition {
  segment: number;
  offset: number;
}

/** A replayed frame. Binary values in `body` are Uint8Array views into a read buffer that is never reused. */
export interface WalFrame {
  type: number;
  body: unknown;
  start: WalPosition;
  end: WalPosition;
}

export interface RecoveryReport {
  /** Segment files read, frames passed to onFrame (padding excluded), bytes of segment files read. */
  segments: number;
  frames: number;
  bytes: number;
  /** The torn tail cut off the last segment: file path, offset of the cut, bytes removed, frames they began (0 when none is recognisable), why. */
  tornTail: null | { file: string; offset: number; bytes: number; frames: number; reason: string };
  /** With `salvage`: damaged regions skipped (left in place for `svc repair`), in log order. */
  damaged: DamagedRegion[];
}

/** A damaged region that salvage skipped: from a bad frame to the next valid frame (or the segment's end). */
export interface DamagedRegion {
  file: string;
  offset: number;
  bytes: number;
  /** Frames that began in the region (sync words followed by a plausible length; at least 1). */
  frames: number;
  reason: string;
  /** True when the region ends at or before `from`: its frames were already covered by the caller's checkpoint. */
  beforeFrom: boolean;
}

/** Frames and frame bytes written (headers included), fdatasyncs of segment files (rollover included), and
 *  write calls (a writev per batch, plus a 4-byte CRC store for a frame whose CRC was computed during its write). */
export interface WalStats {
  frames: number;
  bytes: number;
  syncs: number;
  writes: number;
}

export interface WalOpenOptions extends WalOptions {
  /** Replay frames starting at or after this position; segments with smaller ids are not read. */
  from?: WalPosition;
  /** Called synchronously, in log order, for every non-padding frame at or after `from` (with `prefix`: every frame). */
  onFrame?: (f: WalFrame) => void;
  /** Also deliver the frames before `from` that are still on disk (onFrame tells them apart by position). */
  prefix?: boolean;
  /**
   * Skip damaged regions instead of refusing the log: a bad frame followed by a valid one (in any
   * segment), or damage running to the end of a segment that is not the last, is reported in
   * `damaged` and replay goes on after it. The bytes stay as they are (`svc repair` pads them).
   */
  salvage?: boolean;
}

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const DEFAULT_INTERVAL_MS = 50;

interface FrameItem {
  sync: false;
  segment: number;
  /** The frame's bytes as writev parts (may view the caller's binaries until written). */
  frame: EncodedFrame;
  /** CRC computed after the frame was queued unsealed (-1 while not computed); see append(). */
  crc: number;
  sealed: boolean;
  end: WalPosition;
  resolve: (p: WalPosition) => void;
  reject: (e: unknown) => void;
}
interface SyncItem {
  sync: true;
  resolve: () => void;
  reject: (e: unknown) => void;
}
type Item = FrameItem | SyncItem;

/** Carries an error thrown by onFrame through the replay so it reaches the caller unwrapped. */
class CallerError {
  constructor(readonly error: unknown) {}
}

function corrupt(file: string, offset: number, reason: string): SvcError {
  return new SvcError("E_WAL_CORRUPT", `WAL corrupt: ${file} at offset ${offset}: ${reason}`, { details: { file, offset } });
}

function ioError(what: string, err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  return new SvcError("E_IO", `${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

function checkPosition(p: WalPosition, field: string): void {
  if (typeof p !== "object" || p === null || !Number.isSafeInteger(p.segment) || !Number.isSafeInteger(p.offset) || p.segment < 0 || p.offset < 0) {
    throw new SvcError("E_BAD_REQUEST", `${field} must be {segment, offset} with non-negative integers`, { field });
  }
}

export class Wal {
  readonly dir: string;
  private readonly segmentBytes: number;
  private readonly durability: Durability;
  private readonly intervalMs: number;
  private readonly encoder = new FrameEncoder();

  /** Where the next appended frame goes (assigned synchronously in append, so order = call order). */
  private logSegment: number;
  private logSize: number;
  /** The open segment file the flusher writes, and how many bytes it holds. fileSegment <= logSegment. */
  private fh: FileHandle;
  private fileSegment: number;
  private fileSize: number;
  /** Bytes written to fh but not yet fdatasync'ed. */
  private dirty = false;

  /** Segment ids on disk, ascending and contiguous; sizes of closed segments we know. */
  private readonly segmentIds: number[];
  private readonly sizes = new Map<number, number>();

  /** Appends and sync requests not yet taken by the writer. */
  private queue: Item[] = [];
  private writing = false;
  private writer: Promise<void> = Promise.resolve();
  /** Written items waiting for the next fdatasync (frames in "batch" mode, sync requests in every mode). */
  private waiters: Item[] = [];
  private syncing = false;
  private syncer: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private closePromise: Promise<void> | null = null;
  private failed: SvcError | null = null;
  private dropChain: Promise<unknown> = Promise.resolve();
  private readonly counters: WalStats = { frames: 0, bytes: 0, syncs: 0, writes: 0 };

  private constructor(dir: string, opts: Required<WalOptions>, fh: FileHandle, segment: number, size: number, segmentIds: number[]) {
    this.dir = dir;
    this.segmentBytes = opts.segmentBytes;
    this.durability = opts.durability;
    this.intervalMs = opts.intervalMs;
    this.fh = fh;
    this.logSegment = this.fileSegment = segment;
    this.logSize = this.fileSize = size;
    this.segmentIds = segmentIds;
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
    const onFrame = opts.onFrame;
    const report: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
    let segs: SegmentFile[];
    try {
      await mkdir(dir, { recursive: true });
      segs = await listSegments(dir);
    } catch (e) {
      throw ioError(`open WAL ${dir}`, e);
    }

    if (segs.length === 0) {
      // An empty log after a checkpoint at `from` starts past it, so new positions compare greater.
      const id = from === undefined ? 1 : from.segment + 1;
      const fh = await createSegment(dir, id);
      return { wal: new Wal(dir, o, fh, id, HEADER_SIZE, [id]), report };
    }
    for (let i = 1; i < segs.length; i++) {
      if (segs[i]!.id !== segs[i - 1]!.id + 1) {
        const missing = join(dir, segmentName(segs[i - 1]!.id + 1));
        throw corrupt(missing, 0, `segment file is missing (have ${segs[i - 1]!.name} and ${segs[i]!.name})`);
      }
    }
    const last = segs[segs.length - 1]!;
    if (from !== undefined && from.segment > last.id) {
      throw corrupt(join(dir, segmentName(from.segment)), from.offset, `replay position is past the end of the log (last segment is ${last.name})`);
    }

    const decoder = new Decoder();
    let active: FileHandle | null = null;
    let activeSize = 0;
    try {
      for (const seg of segs) {
        if (from !== undefined && seg.id < from.segment && !opts.prefix) continue;
        const isLast = seg === last;
        const fh = await open(seg.path, isLast ? "r+" : "r");
        if (isLast) active = fh;
        try {
          let size = (await fh.stat()).size;
          const header = Buffer.alloc(Math.min(HEADER_SIZE, size));
          await readFully(fh, header, 0, header.length, 0, seg.path);
          const bad = checkHeader(header, seg.id);
          if (bad !== null) {
            // A crash during rollover leaves the new last segment with a partial header and no frames.
            if (opts.salvage && !isLast && !bad.unsupported) {
              // The whole segment is unreadable without its header: skip it (repair rewrites the header).
              report.damaged.push({ file: seg.path, offset: 0, bytes: size, frames: await countFrameStarts(fh, 0, size, seg.path), reason: bad.reason, beforeFrom: from !== undefined && seg.id < from.segment });
              continue;
            }
            if (!isLast || size > HEADER_SIZE || bad.unsupported) throw corrupt(seg.path, 0, bad.reason);
            await fh.truncate(0);
            await fh.write(encodeHeader(seg.id), 0, HEADER_SIZE, 0);
            await fh.datasync();
            await fsyncDir(dir);
            report.tornTail = { file: seg.path, offset: 0, bytes: size, frames: 0, reason: bad.reason };
            size = HEADER_SIZE;
          }
          // Frames before `from` in its own segment are validated but not decoded or delivered (unless `prefix`).
          const deliverFrom = from !== undefined && seg.id === from.segment ? from.offset : 0;
          const segId = seg.id;
          const visit = (buf: Buffer, at: number, frameSize: number, offset: number) => {
            if (offset < deliverFrom) {
              if (offset + frameSize > deliverFrom) {
                throw new SvcError("E_BAD_REQUEST", `from {segment ${segId}, offset ${deliverFrom}} is inside the frame at ${seg.path} offset ${offset}, not at a frame boundary`, { field: "from", details: { file: seg.path, offset } });
              }
              if (!opts.prefix) return;
            }
            const type = buf[at + 12]!;
            if (type === PAD_TYPE) return;
            let body: unknown;
            try {
              body = decoder.decode(new Uint8Array(buf.buffer, buf.byteOffset + at + FRAME_OVERHEAD + 1, frameSize - FRAME_OVERHEAD - 1));
            } catch (e) {
              throw corrupt(seg.path, offset, `frame payload is not valid msgpack (${e instanceof Error ? e.message : String(e)})`);
            }
            report.frames++;
            try {
              onFrame?.({ type, body, start: { segment: segId, offset }, end: { segment: segId, offset: offset + frameSize } });
            } catch (e) {
              throw new CallerError(e);
            }
          };
          const beforeFrom = (end: number) => from !== undefined && (segId < from.segment || (segId === from.segment && end <= from.offset));
          let start = HEADER_SIZE;
          for (;;) {
            const scan = await scanFrames(fh, start, size, seg.path, visit);
            if (scan.bad === null) break;
            const { offset, reason } = scan.bad;
            const next = await findNextFrame(fh, offset + 1, size, seg.path);
            if (!opts.salvage || (next === null && isLast)) {
              if (!isLast) throw corrupt(seg.path, offset, `${reason} (not in the last segment)`);
              if (next !== null) throw corrupt(seg.path, offset, `${reason}; a valid frame follows at offset ${next.offset}`);
              // Torn tail: nothing valid after the first bad frame of the last segment.
              const frames = await countFrameStarts(fh, offset, size, seg.path);
              await fh.truncate(offset);
              await fh.datasync();
              report.tornTail = { file: seg.path, offset, bytes: size - offset, frames, reason };
              size = offset;
              break;
            }
            const end = next === null ? size : next.offset;
            report.damaged.push({ file: seg.path, offset, bytes: end - offset, frames: Math.max(1, await countFrameStarts(fh, offset, end, seg.path)), reason, beforeFrom: beforeFrom(end) });
            if (next === null) break;
            start = next.offset;
          }
          report.segments++;
          report.bytes += size;
          if (isLast) activeSize = size;
        } finally {
          if (!isLast) await fh.close();
        }
      }
    } catch (e) {
      await active?.close().catch(() => undefined);
      if (e instanceof CallerError) throw e.error; // onFrame's own error, unchanged
      throw ioError(`replay WAL ${dir}`, e);
    }
    if (active === null) throw new SvcError("E_IO", `replay WAL ${dir}: last segment was not opened`);

    const wal = new Wal(dir, o, active, last.id, activeSize, segs.map((s) => s.id));
    // `from` past the end of a cut tail: continue in a new segment so every new position is > from.
    if (from !== undefined && from.segment === last.id && from.offset > activeSize) {
      try {
        await wal.roll(last.id + 1);
      } catch (e) {
        await wal.fh.close().catch(() => undefined);
        throw ioError(`open WAL ${dir}`, e);
      }
      wal.logSegment = wal.fileSegment;
      wal.logSize = wal.fileSize;
    }
    return { wal, report };
  }

  /**
   * Frame `body` (msgpack; typed arrays and Buffers become bin) as `type` (1..255) and queue it.
   * Resolves with the frame's end position once durable per the durability mode; frames are written in call order.
   * Binaries of 64 KiB or more are written from the caller's memory: do not change them until this settles.
   */
  append(type: number, body: unknown): Promise<WalPosition> {
    if (this.closed) return Promise.reject(new SvcError("E_CLOSED", `WAL ${this.dir} is closed`));
    if (this.failed !== null) return Promise.reject(this.failed);
    if (!Number.isInteger(type) || type < 1 || type > 255) {
      return Promise.reject(new SvcError("E_BAD_REQUEST", `frame type must be an integer 1..255, got ${type}`, { field: "type" }));
    }
    // An idle writer submits the frame's writev synchronously inside kick(), so the CRC (the main cost of a
    // large frame, ~0.3 ms/MB) is computed while the thread pool copies the bytes; the writer then stores it
    // with a 4-byte pwrite before the frame's fdatasync. A busy writer gets the frame sealed right away.
    const deferCrc = !this.writing;
    let frame: EncodedFrame;
    try {
      frame = this.encoder.encode(type, body, !deferCrc);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.logSize > HEADER_SIZE && this.logSize >= this.segmentBytes) {
      this.logSegment++;
      this.logSize = HEADER_SIZE;
    }
    this.logSize += frame.size;
    const end = { segment: this.logSegment, offset: this.logSize };
    let resolve!: (p: WalPosition) => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<WalPosition>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const item: FrameItem = { sync: false, segment: end.segment, frame, crc: -1, sealed: !deferCrc, end, resolve, reject };
    this.queue.push(item);
    this.kick();
    if (deferCrc) item.crc = frameCrc(frame);
    return done;
  }

  /** End position of the last appended frame (durable or not); the header end of a log without frames. */
  get position(): WalPosition {
    return { segment: this.logSegment, offset: this.logSize };
  }

  get stats(): WalStats {
    return { ...this.counters };
  }

  /** fdatasync everything appended so far. */
  sync(): Promise<void> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.closePromise !== null) return this.closePromise;
    return this.enqueueSync();
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
    const run = this.dropChain.then(() => this.drop(pos));
    this.dropChain = run.catch(() => undefined);
    return run;
  }

  /** Write and fdatasync everything queued, close the file; later appends reject with E_CLOSED. */
  close(): Promise<void> {
    if (this.closePromise !== null) return this.closePromise;
    this.closed = true;
    this.closePromise = (async () => {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      let err: unknown = null;
      if (this.failed === null) await this.enqueueSync().catch((e: unknown) => (err = e));
      await this.idle();
      await this.dropChain;
      await this.fh.close().catch((e: unknown) => (err ??= ioError(`close WAL ${this.dir}`, e)));
      if (err !== null) throw err;
    })();
    return this.closePromise;
  }

  private async drop(pos: WalPosition): Promise<number> {
    const doomed: number[] = [];
    for (const id of this.segmentIds) {
      if (id >= this.fileSegment) break;
      if (id > pos.segment) break;
      if (id === pos.segment) {
        const size = this.sizes.get(id) ?? (await stat(join(this.dir, segmentName(id)))).size;
        if (pos.offset < size) break;
      }
      doomed.push(id);
    }
    try {
      for (const id of doomed) {
        await unlink(join(this.dir, segmentName(id)));
        this.segmentIds.splice(this.segmentIds.indexOf(id), 1);
        this.sizes.delete(id);
      }
      if (doomed.length > 0) await fsyncDir(this.dir);
    } catch (e) {
      throw ioError(`drop WAL segments in ${this.dir}`, e);
    }
    return doomed.length;
  }

  private enqueueSync(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ sync: true, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.writing) return;
    this.writing = true;
    this.writer = this.writeLoop();
  }

  /** Wait until neither the writer nor the syncer has work in flight. */
  private async idle(): Promise<void> {
    while (this.writing || this.syncing) {
      await this.writer;
      await this.syncer;
    }
  }

  /**
   * The single writer: takes everything queued and writes it with one writev per segment. In "batch" mode
   * the written frames go to the syncer, so the next writev overlaps the previous fdatasync and every
   * frame written while an fdatasync runs shares the next one.
   */
  private async writeLoop(): Promise<void> {
    let batch: Item[] = [];
    try {
      while (this.queue.length > 0) {
        if (this.failed !== null) throw this.failed;
        batch = this.queue;
        this.queue = [];
        await this.writeBatch(batch);
      }
    } catch (e) {
      this.fail(ioError(`write WAL ${this.dir}`, e), batch);
    } finally {
      this.writing = false;
    }
  }

  private async writeBatch(batch: Item[]): Promise<void> {
    let frames: FrameItem[] = [];
    for (const it of batch) {
      if (it.sync) {
        await this.writeOut(frames);
        frames = [];
        this.waiters.push(it);
        this.startSyncer();
        continue;
      }
      if (it.segment !== this.fileSegment) {
        await this.writeOut(frames);
        frames = [];
        await this.roll(it.segment);
      }
      frames.push(it);
    }
    await this.writeOut(frames);
  }

  private async writeOut(frames: FrameItem[]): Promise<void> {
    if (frames.length === 0) return;
    const bufs: Uint8Array[] = [];
    let total = 0;
    let unsealed: FrameItem | null = null;
    for (const f of frames) {
      if (!f.sealed && f.crc >= 0) {
        sealFrame(f.frame, f.crc);
        f.sealed = true;
      }
      if (!f.sealed) unsealed = f; // at most one: only an append that found the writer idle defers its CRC
      for (const part of f.frame.parts) bufs.push(part);
      total += f.frame.size;
    }
    const at = this.fileSize;
    let done = 0;
    while (done < total) {
      const { bytesWritten } = await this.fh.writev(done === 0 ? bufs : remainder(bufs, done), at + done);
      this.counters.writes++;
      if (bytesWritten <= 0) throw new SvcError("E_IO", `write to ${segmentName(this.fileSegment)} made no progress`);
      done += bytesWritten;
    }
    if (unsealed !== null) {
      const crc = Buffer.allocUnsafe(4);
      crc.writeUInt32LE(unsealed.crc, 0);
      await this.fh.write(crc, 0, 4, unsealed.end.offset - unsealed.frame.size + 8); // logical offsets are file offsets
      this.counters.writes++;
      unsealed.sealed = true;
    }
    this.fileSize += total;
    this.dirty = true;
    this.counters.frames += frames.length;
    this.counters.bytes += total;
    if (this.durability === "batch") {
      for (const f of frames) this.waiters.push(f);
      this.startSyncer();
      return;
    }
    for (const f of frames) f.resolve(f.end);
    if (this.durability === "interval") this.armTimer();
  }

  private startSyncer(): void {
    if (this.syncing) return;
    this.syncing = true;
    this.syncer = this.syncLoop();
  }

  /** The single syncer: one fdatasync covers every item written before it started. */
  private async syncLoop(): Promise<void> {
    let batch: Item[] = [];
    try {
      while (this.waiters.length > 0) {
        if (this.failed !== null) throw this.failed;
        batch = this.waiters;
        this.waiters = [];
        if (this.dirty) await this.datasync();
        for (const it of batch) {
          if (it.sync) it.resolve();
          else it.resolve(it.end);
        }
      }
    } catch (e) {
      this.fail(ioError(`sync WAL ${this.dir}`, e), batch);
    } finally {
      this.syncing = false; // set synchronously with the empty check above, so startSyncer never misses work
    }
  }

  private async datasync(): Promise<void> {
    this.dirty = false;
    try {
      await this.fh.datasync();
    } catch (e) {
      this.dirty = true;
      throw e;
    }
    this.counters.syncs++;
  }

  private armTimer(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.failed === null && this.dirty) this.enqueueSync().catch(() => undefined);
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Close the active segment (fdatasync'ed first) and start segment `id`: header, fdatasync, directory fsync. */
  private async roll(id: number): Promise<void> {
    while (this.syncing) await this.syncer; // the syncer works on the current file handle
    if (this.failed !== null) throw this.failed;
    if (this.dirty) await this.datasync();
    this.sizes.set(this.fileSegment, this.fileSize);
    const fh = await createSegment(this.dir, id);
    await this.fh.close().catch(() => undefined);
    this.fh = fh;
    this.counters.syncs++;
    this.fileSegment = id;
    this.fileSize = HEADER_SIZE;
    this.segmentIds.push(id);
  }

  /** After an I/O failure the file's tail is unknown: reject everything pending and every later call. */
  private fail(err: SvcError, batch: Item[]): void {
    this.failed ??= err;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const it of batch) it.reject(err);
    for (const pending of [this.queue, this.waiters]) for (const it of pending) it.reject(err);
    this.queue = [];
    this.waiters = [];
  }
}

function resolveOptions(opts: WalOptions): Required<WalOptions> {
  const segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  const durability = opts.durability ?? "batch";
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  if (!Number.isSafeInteger(segmentBytes) || segmentBytes < 1) throw new SvcError("E_BAD_REQUEST", `segmentBytes must be a positive integer, got ${segmentBytes}`, { field: "segmentBytes" });
  if (durability !== "batch" && durability !== "interval" && durability !== "none") throw new SvcError("E_BAD_REQUEST", `durability must be batch, interval or none, got ${String(durability)}`, { field: "durability" });
  if (!Number.isFinite(intervalMs) || intervalMs < 0) throw new SvcError("E_BAD_REQUEST", `intervalMs must be a non-negative number, got ${intervalMs}`, { field: "intervalMs" });
  return { segmentBytes, durability, intervalMs };
}

/** Create segment `id` (must not exist), write its header, fdatasync it and fsync the directory. */
async function createSegment(dir: string, id: number): Promise<FileHandle> {
  const path = join(dir, segmentName(id));
  let fh: FileHandle;
  try {
    fh = await open(path, "wx+");
  } catch (e) {
    throw ioError(`create WAL segment ${path}`, e);
  }
  try {
    await fh.write(encodeHeader(id), 0, HEADER_SIZE, 0);
    await fh.datasync();
    await fsyncDir(dir);
    return fh;
  } catch (e) {
    await fh.close().catch(() => undefined);
    throw ioError(`create WAL segment ${path}`, e);
  }
}

/** The bytes of `bufs` after the first `skip` bytes, as views (after a short writev). */
function remainder(bufs: Uint8Array[], skip: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const b of bufs) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}

/** Frames that began in [from, end): sync words followed by a length that fits the frame bound (damaged frames included). */
async function countFrameStarts(fh: FileHandle, from: number, end: number, file: string): Promise<number> {
  if (end - from < MIN_FRAME) return 0;
  const buf = Buffer.allocUnsafe(end - from);
  await readFully(fh, buf, 0, buf.length, from, file);
  let n = 0;
  for (let i = buf.indexOf(SYNC_WORD); i !== -1 && i + 8 <= buf.length; i = buf.indexOf(SYNC_WORD, i + 4)) {
    const length = buf.readUInt32LE(i + 4);
    if (length >= 1 && length <= MAX_FRAME_LENGTH) n++;
  }
  return n;
}

const SYNC_WORD = (() => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(SYNC, 0);
  return b;
})();
