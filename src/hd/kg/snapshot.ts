/**
 * @module hd/kg/snapshot — a knowledge graph checkpoint (docs/FORMAT.md): the WAL position it includes, the
 * facts (.hdkg bytes), the object rows in row order and every shard's counters, so opening a graph loads it and
 * replays only later WAL frames instead of re-accumulating 262,144 counters per fact.
 */
import { SvcError } from "../../errors.js";
import { crc32c } from "../../store/crc32c.js";
import type { WalPosition } from "../../store/wal.js";
import { decodeHdkg, encodeHdkg, type HdkgGraph } from "./hdkg-file.js";
import { KG_DIM } from "./vectors.js";

export const SNAPSHOT_MAGIC = "HDKS";
export const SNAPSHOT_VERSION = 1;
export const SNAPSHOT_FILE = "snapshot.hdks";

export interface KgSnapshot {
  /** The WAL position the snapshot includes: replay starts there. */
  wal: WalPosition;
  graph: HdkgGraph;
  /** Names of the object rows in row order (ties in a query go to the lower row). */
  objects: string[];
  /** One KG_DIM counter array per relation, in graph.relations order. */
  counters: Int32Array[];
}

/** Encode a snapshot; the same state always gives the same bytes (counter width is the smallest that fits; 0 = all zero). */
export function encodeSnapshot(s: KgSnapshot): Buffer {
  if (s.counters.length !== s.graph.relations.length) throw new Error("snapshot: one counter array per relation");
  const parts: Buffer[] = [];
  const head = Buffer.alloc(24);
  head.write(SNAPSHOT_MAGIC, 0, "latin1");
  head.writeUInt16LE(SNAPSHOT_VERSION, 4);
  head.writeUInt16LE(0, 6);
  head.writeBigUInt64LE(BigInt(s.wal.segment), 8);
  head.writeBigUInt64LE(BigInt(s.wal.offset), 16);
  parts.push(head);
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n, 0);
    parts.push(b);
  };
  const hdkg = encodeHdkg(s.graph);
  u32(hdkg.length);
  parts.push(hdkg);
  u32(s.objects.length);
  for (const o of s.objects) {
    const b = Buffer.from(o, "utf8");
    u32(b.length);
    parts.push(b);
  }
  for (const c of s.counters) {
    if (c.length !== KG_DIM) throw new Error(`snapshot: counters must have ${KG_DIM} entries`);
    let lo = 0,
      hi = 0;
    for (let i = 0; i < c.length; i++) {
      const v = c[i]!;
      if (v < lo) lo = v;
      else if (v > hi) hi = v;
    }
    const width = lo === 0 && hi === 0 ? 0 : lo >= -128 && hi <= 127 ? 1 : lo >= -32768 && hi <= 32767 ? 2 : 4;
    parts.push(Buffer.from([width]));
    if (width > 0) parts.push(le(width === 1 ? Int8Array.from(c) : width === 2 ? Int16Array.from(c) : c));
  }
  const body = Buffer.concat(parts);
  const tail = Buffer.alloc(4);
  tail.writeUInt32LE(crc32c(body) >>> 0, 0);
  return Buffer.concat([body, tail]);
}

/** Decode a snapshot; any damage is E_WAL_CORRUPT naming the file and the byte. */
export function decodeSnapshot(data: Uint8Array, file: string): KgSnapshot {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const bad = (why: string, offset: number): SvcError =>
    new SvcError(
      "E_WAL_CORRUPT",
      `knowledge graph snapshot ${file} is damaged: ${why} (at byte ${offset}); restore the graph from a backup or an .hdkg export`,
      { details: { file, offset } },
    );
  if (buf.length < 36) throw bad("too short", 0);
  if (buf.toString("latin1", 0, 4) !== SNAPSHOT_MAGIC) throw bad(`bad magic (expected ${SNAPSHOT_MAGIC})`, 0);
  const version = buf.readUInt16LE(4);
  if (version !== SNAPSHOT_VERSION) throw bad(`unsupported version ${version}`, 4);
  const end = buf.length - 4;
  if (crc32c(buf.subarray(0, end)) >>> 0 !== buf.readUInt32LE(end)) throw bad("CRC-32C mismatch", end);
  const segment = Number(buf.readBigUInt64LE(8));
  const offset = Number(buf.readBigUInt64LE(16));
  if (!Number.isSafeInteger(segment) || !Number.isSafeInteger(offset)) throw bad("WAL position out of range", 8);
  let at = 24;
  const u32 = () => {
    if (at + 4 > end) throw bad("truncated", at);
    const v = buf.readUInt32LE(at);
    at += 4;
    return v;
  };
  const n = u32();
  if (at + n > end) throw bad("truncated facts", at);
  let graph: HdkgGraph;
  try {
    graph = decodeHdkg(buf.subarray(at, at + n));
  } catch (e) {
    throw bad(`facts: ${(e as Error).message}`, at);
  }
  at += n;
  const objects: string[] = [];
  for (let k = u32(); k > 0; k--) {
    const len = u32();
    if (at + len > end) throw bad("truncated object name", at);
    objects.push(buf.toString("utf8", at, at + len));
    at += len;
  }
  const counters: Int32Array[] = [];
  for (let r = 0; r < graph.relations.length; r++) {
    if (at + 1 > end) throw bad("truncated counters", at);
    const width = buf[at]!;
    if (width !== 0 && width !== 1 && width !== 2 && width !== 4) throw bad(`counter width ${width}`, at);
    at++;
    if (width === 0) {
      counters.push(new Int32Array(KG_DIM));
      continue;
    }
    const bytes = width * KG_DIM;
    if (at + bytes > end) throw bad("truncated counters", at);
    const raw = new Uint8Array(bytes);
    raw.set(buf.subarray(at, at + bytes));
    if (!LITTLE_ENDIAN && width > 1) swap(raw, width);
    counters.push(
      width === 4 ? new Int32Array(raw.buffer) : Int32Array.from(width === 2 ? new Int16Array(raw.buffer) : new Int8Array(raw.buffer)),
    );
    at += bytes;
  }
  if (at !== end) throw bad(`${end - at} trailing bytes`, at);
  return { wal: { segment, offset }, graph, objects, counters };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function le(a: Int8Array | Int16Array | Int32Array): Buffer {
  const b = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  if (LITTLE_ENDIAN || a.BYTES_PER_ELEMENT === 1) return b;
  const c = Buffer.from(b);
  swap(c, a.BYTES_PER_ELEMENT);
  return c;
}

function swap(b: Uint8Array, width: number): void {
  for (let i = 0; i < b.length; i += width) b.subarray(i, i + width).reverse();
}
