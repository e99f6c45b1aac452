/** @module wal-writer — the WAL's segment files and group commit: one writer (a writev per batch), one fdatasync loop, the interval timer, rollover, dropping old segments. */
import { writeSync, writevSync } from "node:fs";
import { open, stat, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { timing } from "../probes.js";
import { sealFrame, type EncodedFrame } from "./frame-encoder.js";
import type { LogPosition, LogStats } from "./log.js";
import { fsyncDir } from "./scan.js";
import { encodeHeader, HEADER_SIZE, segmentName } from "./segment.js";

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

/** A frame queued for writing, with the segment and end position append() assigned it. */
export interface FrameItem {
  sync: false;
  segment: number;
  /** The frame's bytes as writev parts (may view the caller's binaries until written). */
  frame: EncodedFrame;
  /** CRC computed after the frame was queued unsealed (-1 while not computed); see Wal.append(). */
  crc: number;
  sealed: boolean;
  end: LogPosition;
  /** Frames in `frame` when it holds several consecutive sealed ones (Wal.appendMany); absent: one. */
  count?: number;
  resolve: (p: LogPosition) => void;
  reject: (e: unknown) => void;
}
interface SyncItem {
  sync: true;
  resolve: () => void;
  reject: (e: unknown) => void;
}
type Item = FrameItem | SyncItem;

/** Batches of at most this many bytes are written synchronously (see writeOut). */
export const SYNC_WRITE_MAX = 16 << 10;

export function ioError(what: string, err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  return new SvcError("E_IO", `${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

/**
 * Writes queued frames to the active segment file in order and makes them durable per the
 * durability mode. Knows nothing of frame contents: Wal.append() encodes and positions them.
 */
export class SegmentWriter {
  /** The open segment file, its id and how many bytes it holds. */
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
  private stopped = false;
  private failure: SvcError | null = null;
  private readonly counters: LogStats = { frames: 0, bytes: 0, syncs: 0, writes: 0 };

  constructor(
    private readonly dir: string,
    private readonly durability: Durability,
    private readonly intervalMs: number,
    fh: FileHandle,
    segment: number,
    size: number,
    segmentIds: number[],
  ) {
    this.fh = fh;
    this.fileSegment = segment;
    this.fileSize = size;
    this.segmentIds = segmentIds;
  }

  /** The segment being written and its size. */
  get segment(): number {
    return this.fileSegment;
  }
  get size(): number {
    return this.fileSize;
  }
  /** True while a batch is being written (a frame queued now waits for the next writev). */
  get busy(): boolean {
    return this.writing;
  }
  /** The I/O failure that stopped the writer, if any. */
  get failed(): SvcError | null {
    return this.failure;
  }
  get stats(): LogStats {
    return { ...this.counters };
  }

  /** Queue a frame; an idle writer submits its writev synchronously. */
  submit(item: FrameItem): void {
    this.queue.push(item);
    this.kick();
  }

  /** Resolves once everything queued before the call is written and fdatasync'ed. */
  sync(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ sync: true, resolve, reject });
      this.kick();
    });
  }

  /** Stop the timer, write and fdatasync everything queued (unless failed) and wait for the writer and syncer to go idle. */
  async finish(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    let err: unknown = null;
    if (this.failure === null) await this.sync().catch((e: unknown) => (err = e));
    await this.idle();
    if (err !== null) throw err;
  }

  /** Close the active segment file. */
  async closeFile(): Promise<void> {
    await this.fh.close();
  }

  /**
   * Delete whole segments all of whose frames end at or before `pos`, oldest first (so a crash midway
   * leaves a contiguous suffix); never the segment being written. Returns how many were deleted.
   */
  async dropBefore(pos: LogPosition): Promise<number> {
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

  /**
   * Close the active segment (fdatasync'ed first) and start segment `id` (see createSegment).
   *
   * The writer is stopped meanwhile, and each await is a hop through the main thread, which during an ingest is
   * busy decoding the other requests in flight (a hop waited up to tens of milliseconds). So the steps that do not
   * depend on each other run side by side. What must stay in series, and why:
   * - The old segment's last fdatasync (normally the syncer's) completes before the new file is created:
   *   once the new name can reach the disk the old segment is no longer the last, and recovery refuses a torn
   *   tail in any segment but the last (E_WAL_CORRUPT). So its fdatasync cannot overlap the creation.
   * - Closing the old file overlaps the creation: its data is already durable, so a failed close loses nothing.
   * - No frame is written to the new segment before createSegment resolves (writeBatch awaits roll), so an
   *   acknowledged frame's segment has a durable header and directory entry before its own fdatasync.
   */
  async roll(id: number): Promise<void> {
    while (this.syncing) await this.syncer; // the syncer works on the current file handle
    if (this.failure !== null) throw this.failure;
    if (this.dirty) await this.datasync();
    this.sizes.set(this.fileSegment, this.fileSize);
    const closed = this.fh.close().catch(() => undefined); // the old segment was fdatasync'ed above: a failed close loses nothing
    const [fh] = await Promise.all([createSegment(this.dir, id), closed]);
    this.fh = fh;
    this.counters.syncs++;
    this.fileSegment = id;
    this.fileSize = HEADER_SIZE;
    this.segmentIds.push(id);
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
        if (this.failure !== null) throw this.failure;
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
      const parts = done === 0 ? bufs : remainder(bufs, done);
      // A small batch is copied into the page cache in this thread (microseconds): a thread-pool writev costs a
      // round trip (0.1-0.2 ms here) before the fdatasync's own, on every sequential append (a metered request's
      // wallet charge, a one-vector upsert). Larger batches stay on the pool, overlapping the running fdatasync.
      const bytesWritten =
        total <= SYNC_WRITE_MAX ? writevSync(this.fh.fd, parts, at + done) : (await this.fh.writev(parts, at + done)).bytesWritten;
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
    for (const f of frames) this.counters.frames += f.count ?? 1;
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
        if (this.failure !== null) throw this.failure;
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
    const t0 = performance.now();
    try {
      await this.fh.datasync();
    } catch (e) {
      this.dirty = true;
      timing("wal_fsync", (performance.now() - t0) / 1000, false);
      throw e;
    }
    timing("wal_fsync", (performance.now() - t0) / 1000);
    this.counters.syncs++;
  }

  private armTimer(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.failure === null && this.dirty) this.sync().catch(() => undefined); // a failed sync sets this.failure (fail()), with which every later append and sync rejects
    }, this.intervalMs);
    this.timer.unref();
  }

  /** After an I/O failure the file's tail is unknown: reject everything pending and every later call. */
  private fail(err: SvcError, batch: Item[]): void {
    this.failure ??= err;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const it of batch) it.reject(err);
    for (const pending of [this.queue, this.waiters]) for (const it of pending) it.reject(err);
    this.queue = [];
    this.waiters = [];
  }
}

/**
 * Create segment `id` (must not exist), write its header, fdatasync it and fsync the directory, in two hops through
 * the event loop (see SegmentWriter.roll): the file and the directory are opened side by side, the 32-byte header is
 * written in this thread (into the page cache, like a batch under SYNC_WRITE_MAX), and the two syncs run side by side.
 * Their order does not matter: a crash may leave the directory entry durable without the header (a state the
 * journal's own commits could always produce), and recovery rewrites a last segment of no more than HEADER_SIZE bytes
 * with a fresh header. The caller writes frames only after both syncs completed.
 */
export async function createSegment(dir: string, id: number): Promise<FileHandle> {
  const path = join(dir, segmentName(id));
  const [file, dirFile] = await Promise.allSettled([open(path, "wx+"), open(dir, "r")]);
  const dirFh = dirFile.status === "fulfilled" ? dirFile.value : null;
  try {
    if (file.status === "rejected") throw file.reason;
    const fh = file.value;
    try {
      if (dirFile.status === "rejected") throw dirFile.reason;
      if (writeSync(fh.fd, encodeHeader(id), 0, HEADER_SIZE, 0) !== HEADER_SIZE) throw new Error("short write of the segment header");
      await Promise.all([fh.datasync(), dirFile.value.sync()]);
      return fh;
    } catch (e) {
      await fh.close().catch(() => undefined); // the create failed: the error thrown below is the one to report, a close of the half-made file adds nothing
      throw e;
    }
  } catch (e) {
    throw ioError(`create WAL segment ${path}`, e);
  } finally {
    void dirFh?.close().catch(() => undefined); // a read-only directory handle: its close cannot lose data, so it is not waited for
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
