/** @module causal/format — the .hdscm bytes of a causal model (docs/FORMAT.md): header, vocabulary, optional graph, u16 rows, CRC32C trailer. */
import { endianness } from "node:os";
import { SvcError } from "../../errors.js";
import { crc32c } from "../../store/crc32c.js";
import { MAX_ROWS, MAX_VARS, MAX_VOCAB } from "../input-rules.js";
import { parseParents, type CausalModel } from "./model.js";

export const HDSCM_MAGIC = "HDSCM\0";
export const HDSCM_VERSION = 1;
export const HDSCM_TYPE = "application/octet-stream";
const HEADER = 24;
const FLAG_GRAPH = 1;
const LE = endianness() === "LE";

const pad4 = (n: number) => (n + 3) & ~3;

/** Same model, same bytes: no timestamps, parents sorted, only the used rows. */
export function encodeHdscm(m: CausalModel): Buffer {
  const vocabBytes = pad4(m.nVars * 2);
  const graphBytes = m.parents === null ? 0 : pad4(m.parents.reduce((s, ps) => s + 2 + ps.length * 2, 0));
  const rowBytes = m.count * m.nVars * 2;
  const buf = Buffer.alloc(HEADER + vocabBytes + graphBytes + rowBytes + 4);
  buf.write(HDSCM_MAGIC, 0, "latin1");
  buf.writeUInt16LE(HDSCM_VERSION, 6);
  buf.writeUInt32LE(m.nVars, 8);
  buf.writeUInt32LE(m.count, 12);
  buf.writeUInt32LE(m.seed >>> 0, 16);
  buf.writeUInt32LE(m.parents === null ? 0 : FLAG_GRAPH, 20);
  let o = HEADER;
  for (let j = 0; j < m.nVars; j++) buf.writeUInt16LE(m.vocab[j]!, o + j * 2);
  o += vocabBytes;
  if (m.parents !== null) {
    let g = o;
    for (const ps of m.parents) {
      buf.writeUInt16LE(ps.length, g);
      g += 2;
      for (const p of ps) {
        buf.writeUInt16LE(p, g);
        g += 2;
      }
    }
    o += graphBytes;
  }
  const used = m.rows.subarray(0, m.count * m.nVars);
  if (LE) Buffer.from(used.buffer, used.byteOffset, used.byteLength).copy(buf, o);
  else for (let i = 0; i < used.length; i++) buf.writeUInt16LE(used[i]!, o + i * 2);
  o += rowBytes;
  buf.writeUInt32LE(crc32c(buf.subarray(0, o)) >>> 0, o);
  return buf;
}

const corrupt = (message: string) => new SvcError("E_BAD_REQUEST", `not a valid .hdscm file: ${message}`, { field: "body" });

/** Every header field, graph and value is checked: a file that decodes is a model the API could have built. */
export function decodeHdscm(data: Uint8Array): CausalModel {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length < HEADER + 4) throw corrupt(`${buf.length} bytes is shorter than the header`);
  if (buf.toString("latin1", 0, 6) !== HDSCM_MAGIC) throw corrupt("bad magic");
  const version = buf.readUInt16LE(6);
  if (version !== HDSCM_VERSION) throw corrupt(`unknown version ${version}`);
  const crcAt = buf.length - 4;
  if (crc32c(buf.subarray(0, crcAt)) >>> 0 !== buf.readUInt32LE(crcAt)) throw corrupt("CRC32C mismatch (truncated or damaged)");
  const nVars = buf.readUInt32LE(8);
  const count = buf.readUInt32LE(12);
  const seed = buf.readUInt32LE(16);
  const flags = buf.readUInt32LE(20);
  if (nVars < 1 || nVars > MAX_VARS) throw corrupt(`n_vars ${nVars} out of range`);
  if (count > MAX_ROWS) throw corrupt(`${count} rows is over the limit`);
  if ((flags & ~FLAG_GRAPH) !== 0) throw corrupt(`unknown flags ${flags}`);
  let o = HEADER;
  const vocabBytes = pad4(nVars * 2);
  if (o + vocabBytes > crcAt) throw corrupt("truncated vocabulary");
  const vocab: number[] = [];
  for (let j = 0; j < nVars; j++) {
    const v = buf.readUInt16LE(o + j * 2);
    if (v < 1 || v > MAX_VOCAB) throw corrupt(`vocab_per_var[${j}] is ${v}`);
    vocab.push(v);
  }
  o += vocabBytes;
  let parents: number[][] | null = null;
  if (flags & FLAG_GRAPH) {
    const raw: number[][] = [];
    let g = o;
    for (let j = 0; j < nVars; j++) {
      if (g + 2 > crcAt) throw corrupt("truncated graph");
      const k = buf.readUInt16LE(g);
      g += 2;
      if (g + k * 2 > crcAt) throw corrupt("truncated graph");
      const ps: number[] = [];
      for (let i = 0; i < k; i++) ps.push(buf.readUInt16LE(g + i * 2));
      g += k * 2;
      raw.push(ps);
    }
    try {
      parents = parseParents(raw, nVars);
    } catch (err) {
      throw corrupt(`graph: ${(err as Error).message}`);
    }
    o = pad4(g);
  }
  const rowBytes = count * nVars * 2;
  if (o + rowBytes !== crcAt) throw corrupt(`expected ${rowBytes} bytes of rows, found ${crcAt - o}`);
  const rows = new Uint16Array(count * nVars);
  for (let i = 0, r = o; i < rows.length; i++, r += 2) rows[i] = buf.readUInt16LE(r);
  for (let i = 0; i < count; i++) {
    for (let j = 0; j < nVars; j++) {
      if (rows[i * nVars + j]! >= vocab[j]!)
        throw corrupt(`row ${i} variable ${j} holds ${rows[i * nVars + j]}, vocabulary is ${vocab[j]}`);
    }
  }
  return { nVars, vocab, parents, seed, rows, count };
}
