/** @module frame-encoder — builds a WAL frame (header + msgpack body) as writev parts; binaries >= 64 KiB are referenced, not copied. */
import { Encoder } from "@msgpack/msgpack";
import { SvcError } from "../errors.js";
import { crc32c, crc32cU32 } from "./crc32c.js";
import { checkFrame, FRAME_OVERHEAD, MAX_FRAME_LENGTH, SYNC } from "./segment.js";

/** Binaries at least this long (bytes) go into the frame by reference. The library writes them as bin 32 too,
 *  so the bytes on disk are exactly what `new Encoder().encode(body)` produces. */
export const ZERO_COPY_MIN = 64 * 1024;

/**
 * A frame as writev parts, `size` bytes in all. parts[0] starts with the 12 header bytes and is a view
 * of `head` (sync, length, crc, type, the encoder's bytes); later parts may view the caller's typed arrays.
 */
export interface EncodedFrame {
  parts: Uint8Array[];
  head: Buffer;
  size: number;
}

/** The frame's CRC32C: over the length field, then the type byte, payload and referenced binaries in order. */
export function frameCrc(frame: EncodedFrame): number {
  let crc = crc32cU32(frame.size - FRAME_OVERHEAD);
  const parts = frame.parts;
  crc = crc32c(parts[0]!.subarray(FRAME_OVERHEAD), crc);
  for (let i = 1; i < parts.length; i++) crc = crc32c(parts[i]!, crc);
  return crc;
}

/** Store `crc` (default: computed) in the frame's header. */
export function sealFrame(frame: EncodedFrame, crc = frameCrc(frame)): void {
  frame.head.writeUInt32LE(crc, 8);
}

interface Hole {
  /** Offset in the encoder's output where the binary's bytes belong (right after its bin 32 header). */
  at: number;
  bytes: Uint8Array;
}

/** The Encoder members the zero-copy hook uses (private in the typings, stable across @msgpack/msgpack 3.x). */
interface EncoderInternals {
  pos: number;
  writeU8(v: number): void;
  writeU32(v: number): void;
  encodeBinary(object: ArrayBufferView): void;
}

/**
 * One reusable msgpack Encoder whose bin encoding leaves large binaries out of its buffer and records
 * where they go. If the library's internals ever stop matching (checked once against a plain Encoder at
 * construction), the hook is removed and every binary is copied as usual: slower, same bytes.
 */
export class FrameEncoder {
  private readonly encoder = new Encoder();
  private readonly holes: Hole[] = [];
  /** Whether large binaries are referenced (true unless the self-check failed). */
  readonly zeroCopy: boolean;

  constructor() {
    const internals = this.encoder as unknown as EncoderInternals;
    const holes = this.holes;
    internals.encodeBinary = function (this: void, object: ArrayBufferView): void {
      const size = object.byteLength;
      if (size < ZERO_COPY_MIN || size >= 2 ** 32) {
        Object.getPrototypeOf(internals).encodeBinary.call(internals, object);
        return;
      }
      internals.writeU8(0xc6);
      internals.writeU32(size);
      holes.push({ at: internals.pos, bytes: new Uint8Array(object.buffer, object.byteOffset, size) });
    };
    this.zeroCopy = this.selfCheck();
    if (!this.zeroCopy) delete (internals as Partial<EncoderInternals>).encodeBinary;
  }

  /**
   * Encode `body` into a frame of `type`, with its CRC stored unless `seal` is false (then the CRC field is
   * zero until sealFrame). Throws E_BAD_REQUEST when the body cannot be encoded or is too long.
   * Referenced binaries must not change until the frame is written.
   */
  encode(type: number, body: unknown, seal = true): EncodedFrame {
    this.holes.length = 0;
    let small: Uint8Array;
    try {
      small = this.encoder.encodeSharedRef(body);
    } catch (e) {
      throw new SvcError("E_BAD_REQUEST", `frame body cannot be msgpack-encoded: ${e instanceof Error ? e.message : String(e)}`, {
        field: "body",
        cause: e,
      });
    }
    let length = 1 + small.length;
    for (const h of this.holes) length += h.bytes.length;
    if (length > MAX_FRAME_LENGTH) {
      throw new SvcError("E_BAD_REQUEST", `frame body is ${length - 1} bytes; the limit is ${MAX_FRAME_LENGTH - 1}`, { field: "body" });
    }
    // head = sync, length, crc, type, then the encoder's bytes; holes are spliced in between by offset.
    const head = Buffer.allocUnsafe(FRAME_OVERHEAD + 1 + small.length);
    head.set(small, FRAME_OVERHEAD + 1);
    head.writeUInt32LE(SYNC, 0);
    head.writeUInt32LE(length, 4);
    head[12] = type;
    head.writeUInt32LE(0, 8);
    const parts: Uint8Array[] = [];
    let from = 0; // start in head of the next head part
    for (const h of this.holes) {
      const to = FRAME_OVERHEAD + 1 + h.at;
      parts.push(head.subarray(from, to), h.bytes);
      from = to;
    }
    if (from < head.length || parts.length === 0) parts.push(head.subarray(from));
    this.holes.length = 0;
    const frame = { parts, head, size: FRAME_OVERHEAD + length };
    if (seal) sealFrame(frame);
    return frame;
  }

  /** The hooked encoder must produce, with holes filled, exactly the plain Encoder's bytes. */
  private selfCheck(): boolean {
    try {
      const big = new Uint8Array(ZERO_COPY_MIN + 3).map((_, i) => i & 0xff);
      const sample = { a: [1, "x", new Uint8Array([1, 2])], b: new Float32Array(big.buffer, 0, ZERO_COPY_MIN / 4), c: big, d: null };
      const want = new Encoder().encode(sample);
      const got = this.encode(1, sample);
      const flat = Buffer.concat(got.parts);
      return got.parts.length > 1 && flat.subarray(FRAME_OVERHEAD + 1).equals(want) && checkFrame(flat, 0, flat.length).ok;
    } catch {
      return false;
    } finally {
      this.holes.length = 0;
    }
  }
}
