/** @module segment — WAL format v1 byte layout: segment file names, the 32-byte segment header, frame headers and their checks. */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { crc32c, crc32cU32 } from "./crc32c.js";

/** Segment magic, bytes 0..8 of every segment: ASCII "SVCWAL\r\n" (the CR LF catches text-mode mangling). */
export const MAGIC = Buffer.from("SVCWAL\r\n", "latin1");
export const FORMAT_VERSION = 1;
/** Segment header size in bytes; the first frame starts here. */
export const HEADER_SIZE = 32;

/** u32 written before every frame so a scan can find the next frame after damage; LE bytes F7 5A D6 1C
 *  (0xF7 never occurs in UTF-8, and as a float32 the word is ~1e-21, unlike normalized vector values). */
export const SYNC = 0x1cd65af7;
/** Frame header bytes before the type byte: sync u32, length u32, crc u32. A frame is FRAME_OVERHEAD + length bytes. */
export const FRAME_OVERHEAD = 12;
/** Smallest frame: overhead + the type byte (length = 1, empty payload). */
export const MIN_FRAME = FRAME_OVERHEAD + 1;
/** Upper bound of the length field (type byte + payload), 256 MiB; a larger length is damage. */
export const MAX_FRAME_LENGTH = 256 * 1024 * 1024;
/** Frame type 0: padding written by repair over a damaged region; never passed to callers. */
export const PAD_TYPE = 0;

const SEGMENT_NAME = /^(\d{6,})\.seg$/;

/** `000001.seg` for id 1: at least 6 digits, zero-padded. */
export function segmentName(id: number): string {
  return `${String(id).padStart(6, "0")}.seg`;
}

export interface SegmentFile {
  id: number;
  name: string;
  path: string;
}

/**
 * Segment files of `dir`, ascending by id. Only names `<6+ digits>.seg` count, so repair's
 * `<name>.seg.damaged-<n>` copies and any other file are ignored. Two names for one id are corruption.
 */
export async function listSegments(dir: string): Promise<SegmentFile[]> {
  const out: SegmentFile[] = [];
  for (const name of await readdir(dir)) {
    const m = SEGMENT_NAME.exec(name);
    if (!m) continue;
    const id = Number(m[1]);
    if (!Number.isSafeInteger(id) || id < 1) continue;
    out.push({ id, name, path: join(dir, name) });
  }
  out.sort((a, b) => a.id - b.id);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.id === out[i - 1]!.id) {
      throw new SvcError("E_WAL_CORRUPT", `two files hold WAL segment ${out[i]!.id}: ${out[i - 1]!.path} and ${out[i]!.path}`, {
        details: { file: out[i]!.path, offset: 0 },
      });
    }
  }
  return out;
}

/**
 * Header layout (32 bytes, little-endian):
 *   0 magic u8[8] | 8 version u32 = 1 | 12 flags u32 = 0 | 16 segment id u64 | 24 reserved u32 = 0 | 28 crc32c(bytes 0..28) u32
 */
export function encodeHeader(id: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  MAGIC.copy(b, 0);
  b.writeUInt32LE(FORMAT_VERSION, 8);
  b.writeUInt32LE(0, 12);
  b.writeBigUInt64LE(BigInt(id), 16);
  b.writeUInt32LE(0, 24);
  b.writeUInt32LE(crc32c(b.subarray(0, 28)), 28);
  return b;
}

/** Why a header is not a valid v1 header of segment `id`, or null when it is. `unsupported` marks a
 *  well-formed header of another format version (never rewritten by repair). */
export function checkHeader(b: Buffer, id: number): null | { reason: string; unsupported?: true } {
  if (b.length < HEADER_SIZE) return { reason: `incomplete segment header (${b.length} of ${HEADER_SIZE} bytes)` };
  if (!b.subarray(0, 8).equals(MAGIC)) return { reason: "bad segment magic" };
  if (b.readUInt32LE(28) !== crc32c(b.subarray(0, 28))) return { reason: "segment header checksum mismatch" };
  const version = b.readUInt32LE(8);
  if (version !== FORMAT_VERSION) return { reason: `unsupported WAL format version ${version}`, unsupported: true };
  if (b.readUInt32LE(12) !== 0 || b.readUInt32LE(24) !== 0) return { reason: "unknown segment header flags", unsupported: true };
  const headerId = b.readBigUInt64LE(16);
  if (headerId !== BigInt(id)) return { reason: `segment header names segment ${headerId}, file name says ${id}` };
  return null;
}

/**
 * Frame layout (little-endian), at any offset >= HEADER_SIZE:
 *   0 sync u32 = SYNC | 4 length u32 = 1 + payload bytes | 8 crc u32 | 12 type u8 | 13 payload u8[length - 1]
 * crc = crc32c(length bytes 4..8 ++ bytes 12..12+length), so a flipped length fails the checksum.
 */
export function writeFrameHeader(frame: Buffer, type: number): void {
  const length = frame.length - FRAME_OVERHEAD;
  frame.writeUInt32LE(SYNC, 0);
  frame.writeUInt32LE(length, 4);
  frame[12] = type;
  frame.writeUInt32LE(crc32c(frame.subarray(12), crc32cU32(length)), 8);
}

/** A padding frame (type 0, zero payload) of exactly `bytes` bytes; MIN_FRAME <= bytes <= FRAME_OVERHEAD + MAX_FRAME_LENGTH. */
export function paddingFrame(bytes: number): Buffer {
  const frame = Buffer.alloc(bytes);
  writeFrameHeader(frame, PAD_TYPE);
  return frame;
}

/** Result of looking at `buf[p..end)` as a frame: its size, a need for more bytes, or why it is damage. */
export type FrameCheck = { ok: true; size: number } | { ok: false; need: number; reason: string };

/**
 * Check the frame at `buf[p]`, given bytes up to `end` are present. `need > 0` means the frame is
 * incomplete within the present bytes: `need` is how many bytes the whole frame (or its header) takes
 * from p; at end of file that is damage with `reason`. `need === 0` means damage regardless.
 */
export function checkFrame(buf: Buffer, p: number, end: number): FrameCheck {
  const avail = end - p;
  if (avail < FRAME_OVERHEAD)
    return { ok: false, need: FRAME_OVERHEAD, reason: `incomplete frame header (${avail} of ${FRAME_OVERHEAD} bytes)` };
  if (buf.readUInt32LE(p) !== SYNC) return { ok: false, need: 0, reason: "bad sync word" };
  const length = buf.readUInt32LE(p + 4);
  if (length < 1 || length > MAX_FRAME_LENGTH) return { ok: false, need: 0, reason: `bad frame length ${length}` };
  const size = FRAME_OVERHEAD + length;
  if (avail < size) return { ok: false, need: size, reason: `incomplete frame (${avail} of ${size} bytes)` };
  if (buf.readUInt32LE(p + 8) !== crc32c(buf.subarray(p + 12, p + size), crc32cU32(length)))
    return { ok: false, need: 0, reason: "frame checksum mismatch" };
  return { ok: true, size };
}
