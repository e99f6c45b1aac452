/** @module scan — chunked reading of WAL segment files: walk valid frames, find the next valid frame after damage, file helpers. */
import { open, type FileHandle } from "node:fs/promises";
import { SvcError } from "../errors.js";
import { checkFrame, FRAME_OVERHEAD, MIN_FRAME, SYNC } from "./segment.js";

/** Read size per chunk, bytes. A frame larger than this gets a buffer of its own size. */
export const CHUNK_BYTES = 8 * 1024 * 1024;

const SYNC_BYTES = Buffer.alloc(4);
SYNC_BYTES.writeUInt32LE(SYNC, 0);

/** Read exactly `length` bytes at file offset `position` into `buf[offset..]`; a short file is E_IO. */
export async function readFully(
  fh: FileHandle,
  buf: Uint8Array,
  offset: number,
  length: number,
  position: number,
  file: string,
): Promise<void> {
  while (length > 0) {
    const { bytesRead } = await fh.read(buf, offset, length, position);
    if (bytesRead === 0)
      throw new SvcError("E_IO", `${file}: file ended at offset ${position} while reading (it shrank under us?)`, {
        details: { file, offset: position },
      });
    offset += bytesRead;
    position += bytesRead;
    length -= bytesRead;
  }
}

/** fsync a directory so created, renamed and deleted entries in it are durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Called once per valid frame, synchronously. `buf[at .. at + size)` holds the whole frame, `offset`
 * is its file offset. `buf` is a fresh allocation per chunk that is never reused, so views into it
 * stay valid after the call (they keep the chunk, up to CHUNK_BYTES, alive).
 */
export type FrameVisitor = (buf: Buffer, at: number, size: number, offset: number) => void;

export interface ScanResult {
  /** File offset where the walk stopped: end of the last valid frame. */
  end: number;
  /** The first bad frame, or null when valid frames reach exactly `fileEnd`. */
  bad: null | { offset: number; reason: string };
}

/** Walk valid frames from file offset `start` to `fileEnd`, stopping at the first bad frame. */
export async function scanFrames(fh: FileHandle, start: number, fileEnd: number, file: string, visit: FrameVisitor): Promise<ScanResult> {
  let buf = Buffer.alloc(0);
  let bufStart = start; // file offset of buf[0]
  let filled = 0; // valid bytes in buf
  let p = 0;
  for (;;) {
    const chk = checkFrame(buf, p, filled);
    if (chk.ok) {
      visit(buf, p, chk.size, bufStart + p);
      p += chk.size;
      continue;
    }
    const at = bufStart + p;
    if (chk.need === 0) return { end: at, bad: { offset: at, reason: chk.reason } };
    const rest = fileEnd - at; // file bytes from this frame on
    const carry = filled - p;
    if (carry >= rest) return rest === 0 ? { end: at, bad: null } : { end: at, bad: { offset: at, reason: chk.reason } };
    const cap = Math.min(Math.max(CHUNK_BYTES, chk.need), rest);
    const next = Buffer.allocUnsafeSlow(cap);
    buf.copy(next, 0, p, filled);
    await readFully(fh, next, carry, cap - carry, at + carry, file);
    buf = next;
    bufStart = at;
    filled = cap;
    p = 0;
  }
}

/** Is there a valid frame at file offset `h`? Returns its size, or 0. Reads only what the frame claims. */
async function frameAt(fh: FileHandle, h: number, fileEnd: number, file: string): Promise<number> {
  let buf = Buffer.allocUnsafe(Math.min(FRAME_OVERHEAD, fileEnd - h));
  await readFully(fh, buf, 0, buf.length, h, file);
  let chk = checkFrame(buf, 0, buf.length);
  if (!chk.ok && chk.need > buf.length && h + chk.need <= fileEnd) {
    buf = Buffer.allocUnsafe(chk.need);
    await readFully(fh, buf, 0, buf.length, h, file);
    chk = checkFrame(buf, 0, buf.length);
  }
  return chk.ok ? chk.size : 0;
}

/**
 * The file offset of the first valid frame (sync word, sane length, whole frame present, CRC match)
 * starting at or after `from`, or -1. Used to tell a torn tail (nothing valid follows) from damage in
 * the middle (a valid frame follows), and by repair to find where a damaged region ends.
 */
export async function findNextFrame(
  fh: FileHandle,
  from: number,
  fileEnd: number,
  file: string,
): Promise<{ offset: number; size: number } | null> {
  let pos = from;
  while (pos + MIN_FRAME <= fileEnd) {
    const n = Math.min(CHUNK_BYTES, fileEnd - pos);
    const buf = Buffer.allocUnsafe(n);
    await readFully(fh, buf, 0, n, pos, file);
    for (let i = buf.indexOf(SYNC_BYTES, 0); i !== -1; i = buf.indexOf(SYNC_BYTES, i + 1)) {
      const h = pos + i;
      if (h + MIN_FRAME > fileEnd) return null;
      const chk = checkFrame(buf, i, n);
      const size = chk.ok ? chk.size : chk.need > 0 ? await frameAt(fh, h, fileEnd, file) : 0;
      if (size > 0) return { offset: h, size };
    }
    if (pos + n >= fileEnd) return null;
    pos += n - 3; // a sync word may straddle two chunks
  }
  return null;
}
