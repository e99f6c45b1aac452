/** @module wal-recovery — opening a WAL directory: check the segment sequence, validate and replay frames from a position, cut a torn tail, skip (salvage) and count damaged regions. */
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { safeDecoder } from "../safe-values.js";
import type { LogFrame, LogPosition, RecoveryReport } from "./log.js";
import { findNextFrame, fsyncDir, readFully, scanFrames } from "./scan.js";
import {
  checkHeader,
  encodeHeader,
  FRAME_OVERHEAD,
  HEADER_SIZE,
  listSegments,
  MAX_FRAME_LENGTH,
  PAD_TYPE,
  segmentName,
  SYNC,
  type SegmentFile,
} from "./segment.js";
import { ioError, type WalOptions } from "./wal-writer.js";

/** A replayed frame. Binary values in `body` are Uint8Array views into a read buffer that is never reused. */
export type WalFrame = LogFrame;

export interface WalOpenOptions extends WalOptions {
  /** Replay frames starting at or after this position; segments with smaller ids are not read. */
  from?: LogPosition;
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

/** What recovery leaves: the report, the segment ids on disk and the last segment opened for appending (null: the directory held none). */
export interface Recovered {
  report: RecoveryReport;
  segmentIds: number[];
  active: { fh: FileHandle; id: number; size: number } | null;
}

/** Carries an error thrown by onFrame through the replay so it reaches the caller unwrapped. */
class CallerError {
  constructor(readonly error: unknown) {}
}

function corrupt(file: string, offset: number, reason: string): SvcError {
  return new SvcError("E_WAL_CORRUPT", `WAL corrupt: ${file} at offset ${offset}: ${reason}`, { details: { file, offset } });
}

/**
 * Read the segments of `dir` (created when missing), replaying frames at or after `opts.from` to
 * `opts.onFrame`. Throws E_WAL_CORRUPT (details {file, offset}) for damage anywhere but the tail of
 * the last segment (unless `salvage`), for a missing segment in the id sequence, and for `from`
 * beyond the last segment.
 */
export async function recoverSegments(dir: string, opts: WalOpenOptions): Promise<Recovered> {
  const from = opts.from;
  const onFrame = opts.onFrame;
  const report: RecoveryReport = { segments: 0, frames: 0, bytes: 0, tornTail: null, damaged: [] };
  let segs: SegmentFile[];
  try {
    await mkdir(dir, { recursive: true });
    segs = await listSegments(dir);
  } catch (e) {
    throw ioError(`open WAL ${dir}`, e);
  }
  if (segs.length === 0) return { report, segmentIds: [], active: null };
  for (let i = 1; i < segs.length; i++) {
    if (segs[i]!.id !== segs[i - 1]!.id + 1) {
      const missing = join(dir, segmentName(segs[i - 1]!.id + 1));
      throw corrupt(missing, 0, `segment file is missing (have ${segs[i - 1]!.name} and ${segs[i]!.name})`);
    }
  }
  const last = segs[segs.length - 1]!;
  if (from !== undefined && from.segment > last.id) {
    throw corrupt(
      join(dir, segmentName(from.segment)),
      from.offset,
      `replay position is past the end of the log (last segment is ${last.name})`,
    );
  }

  const decoder = safeDecoder();
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
            report.damaged.push({
              file: seg.path,
              offset: 0,
              bytes: size,
              frames: await countFrameStarts(fh, 0, size, seg.path),
              reason: bad.reason,
              beforeFrom: from !== undefined && seg.id < from.segment,
            });
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
              throw new SvcError(
                "E_BAD_REQUEST",
                `from {segment ${segId}, offset ${deliverFrom}} is inside the frame at ${seg.path} offset ${offset}, not at a frame boundary`,
                { field: "from", details: { file: seg.path, offset } },
              );
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
            // Torn tail: nothing valid after the first bad frame of the last segment. Lost are the
            // frames that began in it at or after `from` (the checkpoint holds those before).
            const frames = await countFrameStarts(fh, Math.max(offset, deliverFrom), size, seg.path);
            await fh.truncate(offset);
            await fh.datasync();
            report.tornTail = { file: seg.path, offset, bytes: size - offset, frames, reason };
            size = offset;
            break;
          }
          const end = next === null ? size : next.offset;
          report.damaged.push({
            file: seg.path,
            offset,
            bytes: end - offset,
            frames: Math.max(1, await countFrameStarts(fh, offset, end, seg.path)),
            reason,
            beforeFrom: beforeFrom(end),
          });
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
    await active?.close().catch(() => undefined); // the replay failed: the error thrown below is the one to report, a close of the segment adds nothing
    if (e instanceof CallerError) throw e.error; // onFrame's own error, unchanged
    throw ioError(`replay WAL ${dir}`, e);
  }
  if (active === null) throw new SvcError("E_IO", `replay WAL ${dir}: last segment was not opened`);
  return { report, segmentIds: segs.map((s) => s.id), active: { fh: active, id: last.id, size: activeSize } };
}

/**
 * Frames that began in [from, end): sync words followed by a length that fits the frame bound, or by
 * the end of the bytes (a frame cut inside its own header began there too); damaged frames included.
 */
async function countFrameStarts(fh: FileHandle, from: number, end: number, file: string): Promise<number> {
  if (end - from < SYNC_WORD.length) return 0;
  const buf = Buffer.allocUnsafe(end - from);
  await readFully(fh, buf, 0, buf.length, from, file);
  let n = 0;
  for (let i = buf.indexOf(SYNC_WORD); i !== -1; i = buf.indexOf(SYNC_WORD, i + 4)) {
    const length = i + 8 <= buf.length ? buf.readUInt32LE(i + 4) : 1;
    if (length >= 1 && length <= MAX_FRAME_LENGTH) n++;
  }
  return n;
}

const SYNC_WORD = (() => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(SYNC, 0);
  return b;
})();
