/** @module hd/kg/hdkg-file — the .hdkg export format (docs/FORMAT.md): header, relations with their facts in order, CRC-32C. */
import { SvcError } from "../../errors.js";
import { crc32c } from "../../store/crc32c.js";
import { KG_DIM } from "./vectors.js";

export const HDKG_MAGIC = "HDKG";
export const HDKG_VERSION = 1;
export const HDKG_CONTENT_TYPE = "application/octet-stream";

export interface HdkgGraph {
  seed: number;
  /** Relations in shard creation order; facts in insertion order as [subject, object]. */
  relations: Array<{ name: string; facts: Array<[string, string]> }>;
}

/** Encode a graph; the same graph (same order) always gives the same bytes. */
export function encodeHdkg(g: HdkgGraph): Buffer {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(20);
  head.write(HDKG_MAGIC, 0, "latin1");
  head.writeUInt16LE(HDKG_VERSION, 4);
  head.writeUInt16LE(0, 6);
  head.writeUInt32LE(g.seed >>> 0, 8);
  head.writeUInt32LE(KG_DIM, 12);
  head.writeUInt32LE(g.relations.length, 16);
  parts.push(head);
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n, 0);
    parts.push(b);
  };
  const str = (s: string) => {
    const b = Buffer.from(s, "utf8");
    u32(b.length);
    parts.push(b);
  };
  for (const r of g.relations) {
    str(r.name);
    u32(r.facts.length);
    for (const [s, o] of r.facts) {
      str(s);
      str(o);
    }
  }
  const body = Buffer.concat(parts);
  const tail = Buffer.alloc(4);
  tail.writeUInt32LE(crc32c(body) >>> 0, 0);
  return Buffer.concat([body, tail]);
}

export function decodeHdkg(data: Uint8Array): HdkgGraph {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const bad = (why: string, offset: number): SvcError =>
    new SvcError("E_BAD_REQUEST", `not a valid .hdkg file: ${why} (at byte ${offset})`, { field: "body", details: { offset } });
  if (buf.length < 24) throw bad("too short", 0);
  if (buf.toString("latin1", 0, 4) !== HDKG_MAGIC) throw bad("bad magic (expected HDKG)", 0);
  const version = buf.readUInt16LE(4);
  if (version !== HDKG_VERSION) throw bad(`unsupported version ${version}`, 4);
  const end = buf.length - 4;
  if (crc32c(buf.subarray(0, end)) >>> 0 !== buf.readUInt32LE(end)) throw bad("CRC-32C mismatch", end);
  const seed = buf.readUInt32LE(8);
  const dim = buf.readUInt32LE(12);
  if (dim !== KG_DIM) throw bad(`dimension ${dim}, this server uses ${KG_DIM}`, 12);
  let at = 16;
  const u32 = () => {
    if (at + 4 > end) throw bad("truncated", at);
    const v = buf.readUInt32LE(at);
    at += 4;
    return v;
  };
  const str = () => {
    const n = u32();
    if (at + n > end) throw bad("truncated string", at);
    const s = buf.toString("utf8", at, at + n);
    at += n;
    return s;
  };
  const relations: HdkgGraph["relations"] = [];
  for (let r = u32(); r > 0; r--) {
    const name = str();
    const facts: Array<[string, string]> = [];
    for (let f = u32(); f > 0; f--) facts.push([str(), str()]);
    relations.push({ name, facts });
  }
  if (at !== end) throw bad(`${end - at} trailing bytes`, at);
  return { seed, relations };
}
