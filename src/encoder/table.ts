/** @module table — loads and checks the shipped word table data/encoder/words.bin (layout: docs/FORMAT.md, "Encoder word table"). */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { SvcError } from "../errors.js";

export const TABLE_MAGIC = "SVCWORDS";
export const TABLE_VERSION = 1;
export const TABLE_HEADER_BYTES = 32;
export const TABLE_FILE = "words.bin";
export const MANIFEST_FILE = "manifest.json";

/** data/encoder/ as seen from src/encoder/ (tsx) and from dist/encoder/ (built): both sit two levels under the repo root. */
export const DEFAULT_TABLE_DIR = new URL("../../data/encoder/", import.meta.url);

/** manifest.json: what the build script wrote, and the checksum the loader verifies. */
export interface TableManifest {
  format: string;
  file: string;
  bytes: number;
  sha256: string;
  words: number;
  dims: number;
  source: { package: string; version: string; licence: string };
  processing: { topWords: number; removedComponents: number; quantization: string };
}

/** The decoded table: row i is the (i+1)-th most frequent word of the source corpus. */
export interface WordTable {
  readonly count: number;
  readonly dims: number;
  /** Per-row dequantization scale: vector[i][d] = vectors[i * dims + d] * scales[i]. */
  readonly scales: Float32Array;
  readonly vectors: Int8Array;
  readonly words: readonly string[];
  readonly manifest: TableManifest;
}

function corrupt(path: string, reason: string): SvcError {
  return new SvcError("E_IO", `encoder word table ${path}: ${reason}; regenerate it with scripts/build-encoder-table.ts`, {
    details: { path, reason },
  });
}

function read(url: URL): Buffer {
  try {
    return readFileSync(url);
  } catch (cause) {
    throw new SvcError("E_IO", `cannot read encoder data ${url.pathname}`, { details: { path: url.pathname }, cause });
  }
}

/** Reads manifest.json and words.bin from `dir`, verifies size, sha256, magic and version. Throws E_IO on any mismatch. */
export function loadWordTable(dir: URL = DEFAULT_TABLE_DIR): WordTable {
  const manifestUrl = new URL(MANIFEST_FILE, dir);
  let manifest: TableManifest;
  try {
    manifest = JSON.parse(read(manifestUrl).toString("utf8")) as TableManifest;
  } catch (cause) {
    if (cause instanceof SvcError) throw cause;
    throw corrupt(manifestUrl.pathname, "manifest is not valid JSON");
  }
  const url = new URL(manifest.file, dir);
  const path = url.pathname;
  const buf = read(url);
  if (buf.length !== manifest.bytes) throw corrupt(path, `size ${buf.length} != manifest ${manifest.bytes}`);
  const sha = createHash("sha256").update(buf).digest("hex");
  if (sha !== manifest.sha256) throw corrupt(path, `sha256 ${sha} != manifest ${manifest.sha256}`);
  if (buf.toString("latin1", 0, 8) !== TABLE_MAGIC) throw corrupt(path, "bad magic");
  const version = buf.readUInt32LE(8);
  if (version !== TABLE_VERSION) throw corrupt(path, `format version ${version}, this code reads ${TABLE_VERSION}`);
  const count = buf.readUInt32LE(12);
  const dims = buf.readUInt32LE(16);
  const wordBytes = buf.readUInt32LE(20);
  const vecAt = TABLE_HEADER_BYTES + count * 4;
  const wordsAt = vecAt + count * dims;
  if (wordsAt + wordBytes !== buf.length) throw corrupt(path, "section sizes do not add up to the file size");
  // copy the sections out so they are aligned and independent of the file buffer
  const scales = new Float32Array(count);
  for (let i = 0; i < count; i++) scales[i] = buf.readFloatLE(TABLE_HEADER_BYTES + i * 4);
  const vectors = new Int8Array(buf.buffer.slice(buf.byteOffset + vecAt, buf.byteOffset + wordsAt));
  const words = buf.toString("utf8", wordsAt, wordsAt + wordBytes).split("\n");
  words.pop(); // every word ends with "\n"
  if (words.length !== count) throw corrupt(path, `${words.length} words, header says ${count}`);
  return { count, dims, scales, vectors, words, manifest };
}
