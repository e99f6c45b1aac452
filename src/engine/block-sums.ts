/**
 * @module block-sums — CRC32C per fixed-size block of a partition's data files (bits.bin, values.f32,
 * records.bin), kept as rows are appended, written per checkpoint as `sums-<seq>.bin` and checked on open.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { crc32c } from "../store/crc32c.js";
import { MetadataIndex } from "./filter/metadata-index.js";
import { RoaringBitmap32 } from "./roaring.js";

/** Bytes per checksummed block. */
export const SUM_BLOCK = 4096;
const MAGIC = Buffer.from("SVCSUMS1", "latin1");
const VERSION = 1;
const READ_BLOCKS = 2048; // 8 MiB per read when scanning a file
/** A records.bin block in which no record starts. */
export const NO_RECORD = 0xffffffff;

/** The files a sums file covers, by kind number. */
export const SUM_FILES = { "bits.bin": 1, "values.f32": 2, "records.bin": 3 } as const;
export type SumFile = keyof typeof SUM_FILES;

/** One file's table: its length at the checkpoint, a CRC per block and (records.bin) where the first record of each block starts. */
export interface FileSums {
  length: number;
  crcs: Uint32Array;
  /** records.bin only: per block, the row of the first record starting in it (NO_RECORD: none) and its offset in the block. */
  firstRow?: Uint32Array;
  firstAt?: Uint32Array;
}

/** Running CRCs of a file that is only appended to; the last block's CRC grows with it. */
export class BlockSums {
  private crcs: Uint32Array;
  private len: number;

  constructor(crcs = new Uint32Array(16), length = 0) {
    this.crcs = crcs.length === 0 ? new Uint32Array(16) : crcs;
    this.len = length;
  }

  get length(): number {
    return this.len;
  }

  /** Take in bytes appended at the current end. */
  add(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.byteLength;) {
      const block = Math.floor(this.len / SUM_BLOCK);
      const inBlock = this.len - block * SUM_BLOCK;
      const take = Math.min(SUM_BLOCK - inBlock, bytes.byteLength - at);
      if (block >= this.crcs.length) {
        const grown = new Uint32Array(Math.max(block + 1, this.crcs.length * 2));
        grown.set(this.crcs);
        this.crcs = grown;
      }
      this.crcs[block] = crc32c(bytes.subarray(at, at + take), inBlock === 0 ? 0 : this.crcs[block]!);
      this.len += take;
      at += take;
    }
  }

  /** The table as of now (a copy). */
  snapshot(): FileSums {
    return { length: this.len, crcs: this.crcs.slice(0, Math.ceil(this.len / SUM_BLOCK)) };
  }
}

/**
 * Read the first `length` bytes of `fd` block by block: the running sums of that content and, when
 * `expect` is given, the blocks whose CRC differs from it (the stored sums are then kept, so the
 * damage stays visible until the rows are rewritten). `expect` must describe the same length.
 */
export function scanBlocks(fd: number, length: number, expect: FileSums | undefined, path: string): { sums: BlockSums; bad: number[] } {
  const blocks = Math.ceil(length / SUM_BLOCK);
  const crcs = new Uint32Array(Math.max(blocks, 16));
  const bad: number[] = [];
  const buf = Buffer.allocUnsafe(Math.min(length, SUM_BLOCK * READ_BLOCKS));
  for (let pos = 0; pos < length;) {
    const n = Math.min(buf.length, length - pos);
    for (let done = 0; done < n;) {
      const got = readSync(fd, buf, done, n - done, pos + done);
      if (got === 0) throw new SvcError("E_IO", `${path}: ended at ${pos + done} while checking block sums`, { details: { file: path } });
      done += got;
    }
    for (let o = 0; o < n; o += SUM_BLOCK) {
      const b = (pos + o) / SUM_BLOCK;
      crcs[b] = crc32c(buf.subarray(o, Math.min(n, o + SUM_BLOCK)));
      if (expect !== undefined && crcs[b] !== expect.crcs[b]) bad.push(b);
    }
    pos += n;
  }
  if (expect !== undefined) crcs.set(expect.crcs.subarray(0, blocks));
  return { sums: new BlockSums(crcs, length), bad };
}

/**
 * sums := "SVCSUMS1" version:u32 blockBytes:u32 files:u32 file{files} crc:u32
 * file := kind:u32 length:u64 blocks:u32 crc:u32{blocks} [kind 3: (firstRow:u32 firstAt:u32){blocks}]
 */
export function serializeSums(files: Partial<Record<SumFile, FileSums>>): Buffer {
  const entries = Object.entries(files) as [SumFile, FileSums][];
  let size = 20 + 4;
  for (const [, f] of entries) size += 16 + f.crcs.length * 4 + (f.firstRow ? f.crcs.length * 8 : 0);
  const out = Buffer.alloc(size);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(VERSION, 8);
  out.writeUInt32LE(SUM_BLOCK, 12);
  out.writeUInt32LE(entries.length, 16);
  let at = 20;
  for (const [name, f] of entries) {
    out.writeUInt32LE(SUM_FILES[name], at);
    out.writeBigUInt64LE(BigInt(f.length), at + 4);
    out.writeUInt32LE(f.crcs.length, at + 12);
    at += 16;
    for (const c of f.crcs) at = out.writeUInt32LE(c, at);
    if (f.firstRow) for (let b = 0; b < f.crcs.length; b++) at = out.writeUInt32LE(f.firstAt![b]!, out.writeUInt32LE(f.firstRow[b]!, at));
  }
  out.writeUInt32LE(crc32c(out.subarray(0, at)), at);
  return out;
}

/** Parse a sums file; anything malformed (magic, version, block size, lengths, CRC) is E_IO naming the file. */
export function parseSums(buf: Buffer, path: string): Partial<Record<SumFile, FileSums>> {
  const fail = (why: string) => new SvcError("E_IO", `${path}: ${why}`, { details: { file: path } });
  if (buf.length < 24 || !buf.subarray(0, 8).equals(MAGIC)) throw fail("not a block sums file");
  if (buf.readUInt32LE(buf.length - 4) !== crc32c(buf.subarray(0, buf.length - 4))) throw fail("checksum mismatch");
  if (buf.readUInt32LE(8) !== VERSION || buf.readUInt32LE(12) !== SUM_BLOCK) throw fail("unsupported version or block size");
  const names = Object.fromEntries(Object.entries(SUM_FILES).map(([k, v]) => [v, k as SumFile]));
  const out: Partial<Record<SumFile, FileSums>> = {};
  let at = 20;
  for (let i = buf.readUInt32LE(16); i > 0; i--) {
    if (at + 16 > buf.length - 4) throw fail("truncated");
    const name = names[buf.readUInt32LE(at)];
    const length = Number(buf.readBigUInt64LE(at + 4));
    const blocks = buf.readUInt32LE(at + 12);
    at += 16;
    const records = name === "records.bin";
    if (name === undefined || blocks !== Math.ceil(length / SUM_BLOCK) || at + blocks * (records ? 12 : 4) > buf.length - 4)
      throw fail("malformed file entry");
    const f: FileSums = { length, crcs: new Uint32Array(blocks) };
    for (let b = 0; b < blocks; b++, at += 4) f.crcs[b] = buf.readUInt32LE(at);
    if (records) {
      f.firstRow = new Uint32Array(blocks);
      f.firstAt = new Uint32Array(blocks);
      for (let b = 0; b < blocks; b++, at += 8) {
        f.firstRow[b] = buf.readUInt32LE(at);
        f.firstAt[b] = buf.readUInt32LE(at + 4);
      }
    }
    out[name] = f;
  }
  return out;
}

/** What a scrub found in one file of one partition: the blocks whose CRC fails and the rows they hold. */
export interface ScrubFinding {
  namespace: string;
  file: string;
  blocks: number[];
  /** Rows in those blocks (records.bin: from the first record of each block to the next block's, as the sums file records them). */
  rows: number[];
}

/** A file of a collection that keeps it from opening (svc repair rebuilds it from the log where it can). */
export interface ScrubProblem {
  /** Relative to the collection dir. */
  file: string;
  detail: string;
}

/**
 * Check every file of every partition of the collection at `dir` against the checkpoint's block
 * sums, reading only (for `svc repair --check`; opening the collection drops or rebuilds the rows).
 * `unchecked` lists partitions whose checkpoint has no sums (written before they existed);
 * `problems` what keeps the collection from opening at all: an unreadable checkpoint, a missing or
 * unreadable tombstones, index, ivf or sums file, a data file shorter than the checkpoint says.
 */
export function scrubCollection(dir: string): {
  findings: ScrubFinding[];
  unchecked: string[];
  partitions: number;
  problems: ScrubProblem[];
} {
  const path = join(dir, "checkpoint.json");
  const out = { findings: [] as ScrubFinding[], unchecked: [] as string[], partitions: 0, problems: [] as ScrubProblem[] };
  if (!existsSync(path)) return out;
  let cp: {
    partitions: Array<{ namespace: string; dir: string; rows: number; tombstones: string; index: string; ivf?: string; sums?: string }>;
  };
  try {
    cp = parseStoredJson(readFileSync(path, "utf8")) as typeof cp;
    if (!Array.isArray(cp?.partitions)) throw new Error("no partitions list");
  } catch (err) {
    out.problems.push({ file: "checkpoint.json", detail: `unreadable: ${(err as Error).message}` });
    return out;
  }
  const readable = (rel: string, parse?: (b: Buffer) => unknown): boolean => {
    try {
      const b = readFileSync(join(dir, rel));
      parse?.(b);
      return true;
    } catch (err) {
      out.problems.push({
        file: rel,
        detail: (err as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : `unreadable: ${(err as Error).message}`,
      });
      return false;
    }
  };
  for (const p of cp.partitions) {
    out.partitions++;
    const rel = (f: string) => join("parts", p.dir, f);
    readable(rel(p.tombstones), (b) => RoaringBitmap32.deserialize(b, "portable"));
    readable(rel(p.index), (b) => MetadataIndex.deserialize(b));
    if (p.ivf !== undefined) readable(rel(p.ivf));
    if (p.sums === undefined) {
      out.unchecked.push(p.namespace);
      continue;
    }
    let sums: Partial<Record<SumFile, FileSums>> | undefined;
    if (!readable(rel(p.sums), (b) => (sums = parseSums(b, join(dir, rel(p.sums!)))))) continue;
    for (const [name, f] of Object.entries(sums!) as [SumFile, FileSums][]) {
      const file = join(dir, "parts", p.dir, name);
      let bad: number[];
      try {
        const fd = openSync(file, "r");
        try {
          const size = fstatSync(fd).size;
          if (size < f.length) throw new Error(`holds ${size} bytes, the checkpoint expects ${f.length}`);
          bad = scanBlocks(fd, f.length, f, file).bad;
        } finally {
          closeSync(fd);
        }
      } catch (err) {
        out.problems.push({
          file: rel(name),
          detail: (err as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : (err as Error).message,
        });
        continue;
      }
      if (bad.length === 0) continue;
      const rows = new Set<number>();
      const rowBytes = p.rows === 0 ? 1 : f.length / p.rows;
      for (const b of bad) {
        let first: number, last: number;
        if (f.firstRow) {
          // From the record reaching into the block to the one before the next block's first record.
          let pb = b;
          while (pb >= 0 && f.firstRow[pb] === NO_RECORD) pb--;
          first = pb < 0 ? 0 : f.firstRow[pb]! - (pb === b && f.firstAt![b] !== 0 && b > 0 ? 1 : 0);
          let nb = b + 1;
          while (nb < f.crcs.length && f.firstRow[nb] === NO_RECORD) nb++;
          last = nb < f.crcs.length ? f.firstRow[nb]! - (f.firstAt![nb] === 0 ? 1 : 0) : p.rows - 1;
        } else {
          first = Math.floor((b * SUM_BLOCK) / rowBytes);
          last = Math.min(p.rows - 1, Math.floor(((b + 1) * SUM_BLOCK - 1) / rowBytes));
        }
        for (let r = Math.max(0, first); r <= last; r++) rows.add(r);
      }
      out.findings.push({ namespace: p.namespace, file: join("parts", p.dir, name), blocks: bad, rows: [...rows].sort((a, b) => a - b) });
    }
  }
  return out;
}
