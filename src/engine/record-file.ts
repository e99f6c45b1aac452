/** @module record-file — each row's id, metadata and payload, appended to one file; ids stay in memory, metadata and payloads are read by position. */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { Encoder } from "@msgpack/msgpack";
import { SvcError } from "../errors.js";
import { safeDecoder } from "../safe-values.js";
import type { Metadata } from "./filter/metadata.js";
import { IdTable } from "./id-table.js";
import { NO_RECORD, scanBlocks, SUM_BLOCK, type BlockSums, type FileSums } from "./block-sums.js";

const encoder = new Encoder();
const decoder = safeDecoder();
const READ_CHUNK = 8 << 20;
/** Bit 31 of a record's metaWord: a payload length and the payload follow. */
const HAS_PAYLOAD = 0x80000000;

/**
 * record := u32 idBytes, id (UTF-8), u32 metaWord, [u32 payloadBytes], metadata (msgpack
 * map; absent when 0 bytes), [payload]. metaWord = metaBytes | HAS_PAYLOAD when the row has
 * a payload (opaque bytes, possibly empty); without one the record is the original layout.
 * Row r's record starts at offsets[r] and ends where row r + 1's starts (the last one at the
 * file's end). Like RowFile, appends go to the page cache and a checkpoint syncs; bytes past
 * the checkpoint's length are cut on open.
 */
export class RecordFile {
  readonly path: string;
  /** Row -> id, and id -> live row (the partition maintains the mapping). Rows are never renumbered inside one file. */
  readonly ids = new IdTable();
  private offsets = new Float64Array(1024);
  private fd: number;
  private size = 0;
  /** Running block CRCs of the file (block-sums.ts). */
  readonly sums: BlockSums;
  /** Rows whose record lies (partly) in a block whose CRC did not match on open; id null when its id bytes were damaged. */
  readonly damagedRows: Array<{ row: number; id: string | null }> = [];

  /**
   * Opens the file cut to the checkpoint's length and checks every block against `expectSums` (or sums them
   * when the checkpoint has none). A shorter file is E_IO, unless `salvage` (svc repair) and the sums say where
   * records start: it is extended with zeros and every block from its old end on is damaged.
   */
  constructor(path: string, expect: { rows: number; bytes: number } = { rows: 0, bytes: 0 }, expectSums?: FileSums, salvage = false) {
    this.path = path;
    let size: number;
    const checked = expectSums?.length === expect.bytes ? expectSums : undefined;
    try {
      this.fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
      size = fstatSync(this.fd).size;
      if (size < expect.bytes && !(salvage && checked?.firstRow))
        throw new Error(`holds ${size} bytes, the checkpoint expects ${expect.bytes}`);
      if (size !== expect.bytes) ftruncateSync(this.fd, expect.bytes);
    } catch (err) {
      throw new SvcError("E_IO", `${path}: ${(err as Error).message}`, { details: { file: path }, cause: err });
    }
    const { sums, bad } = scanBlocks(this.fd, expect.bytes, checked, path);
    for (let b = Math.floor(size / SUM_BLOCK); size < expect.bytes && b < Math.ceil(expect.bytes / SUM_BLOCK); b++)
      if (!bad.includes(b)) bad.push(b);
    this.sums = sums;
    if (bad.length === 0) this.load(expect.bytes);
    else this.loadSalvaging(expect, new Set(bad), expectSums!);
    if (this.ids.rows !== expect.rows)
      throw new SvcError("E_IO", `${path}: holds ${this.ids.rows} records, the checkpoint expects ${expect.rows}`, {
        details: { file: path },
      });
  }

  get bytes(): number {
    return this.size;
  }

  get count(): number {
    return this.ids.rows;
  }

  /** Append one record per id, in one write (one buffer for the batch; no per-record allocations). `payloads[i]` null or absent: none. */
  append(ids: readonly string[], metas: readonly (Metadata | undefined)[], payloads?: readonly (Uint8Array | null)[]): void {
    const encoded = metas.map((m) => (m === undefined || Object.keys(m).length === 0 ? undefined : encoder.encode(m)));
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      const payload = payloads?.[i];
      total += 8 + Buffer.byteLength(ids[i]!, "utf8") + (encoded[i]?.byteLength ?? 0) + (payload ? 4 + payload.byteLength : 0);
    }
    const buf = Buffer.allocUnsafe(total);
    let at = 0;
    for (let i = 0; i < ids.length; i++) {
      this.note(this.size + at);
      this.ids.append(ids[i]!);
      const idBytes = buf.write(ids[i]!, at + 4, "utf8");
      buf.writeUInt32LE(idBytes, at);
      at += 4 + idBytes;
      const meta = encoded[i];
      const payload = payloads?.[i];
      buf.writeUInt32LE(((meta?.byteLength ?? 0) | (payload ? HAS_PAYLOAD : 0)) >>> 0, at);
      at += 4;
      if (payload) {
        buf.writeUInt32LE(payload.byteLength, at);
        at += 4;
      }
      if (meta) {
        buf.set(meta, at);
        at += meta.byteLength;
      }
      if (payload) {
        buf.set(payload, at);
        at += payload.byteLength;
      }
    }
    let done = 0;
    while (done < total) done += writeSync(this.fd, buf, done, total - done, this.size + done);
    this.sums.add(buf);
    this.size += total;
  }

  /** Row r's metadata ({} when it has none). */
  metadata(r: number): Metadata {
    const { metaAt, metaBytes } = this.layout(r);
    if (metaBytes === 0) return {};
    const body = Buffer.allocUnsafe(metaBytes);
    this.read(body, 0, metaBytes, metaAt);
    return decoder.decode(body) as Metadata;
  }

  /** Row r's payload (a fresh array), or null when it has none. */
  payload(r: number): Uint8Array | null {
    const { metaAt, metaBytes, payload } = this.layout(r);
    if (!payload) return null;
    const start = metaAt + metaBytes;
    const out = new Uint8Array(this.end(r) - start);
    this.read(out, 0, out.byteLength, start);
    return out;
  }

  /** Row r's metadata and payload (a fresh array, or null) with one read of its record, where metadata() and payload() take two each. */
  stored(r: number): { metadata: Metadata; payload: Uint8Array | null } {
    const at = this.bodyAt(r);
    const body = Buffer.allocUnsafe(this.end(r) - at);
    this.read(body, 0, body.byteLength, at);
    const { metaAt, metaBytes, payload } = flags(body.readUInt32LE(0));
    return {
      metadata: metaBytes === 0 ? {} : (decoder.decode(body.subarray(metaAt, metaAt + metaBytes)) as Metadata),
      payload: payload ? new Uint8Array(body.subarray(metaAt + metaBytes)) : null,
    };
  }

  /** fdatasync on the threadpool, so a multi-GB flush does not stall the event loop. */
  sync(): Promise<void> {
    return new Promise((resolve, reject) =>
      fdatasync(this.fd, (err) => (err ? reject(new SvcError("E_IO", `${this.path}: ${err.message}`, { cause: err })) : resolve())),
    );
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Where row r's metadata starts, its length, and whether a payload follows it (up to the record's end). One read: the id's length is in memory. */
  private layout(r: number): { metaAt: number; metaBytes: number; payload: boolean } {
    const at = this.bodyAt(r);
    const word = Buffer.allocUnsafe(4);
    this.read(word, 0, 4, at);
    const f = flags(word.readUInt32LE(0));
    return { ...f, metaAt: at + f.metaAt };
  }

  /** Offset of row r's flags word (past its id). */
  private bodyAt(r: number): number {
    return this.offsets[r]! + 4 + this.ids.byteLength(r);
  }

  /** Offset just past row r's record. */
  private end(r: number): number {
    return r + 1 < this.ids.rows ? this.offsets[r + 1]! : this.size;
  }

  /** Record the file offset of the next row's record (before its id is appended). */
  private note(offset: number): void {
    const r = this.ids.rows;
    if (r === this.offsets.length) {
      const grown = new Float64Array(this.offsets.length * 2);
      grown.set(this.offsets);
      this.offsets = grown;
    }
    this.offsets[r] = offset;
  }

  private read(buf: Uint8Array, at: number, n: number, position: number): void {
    let done = 0;
    while (done < n) {
      const got = readSync(this.fd, buf, at + done, n - done, position + done);
      if (got === 0)
        throw new SvcError("E_IO", `${this.path}: record at ${position} is cut short`, { details: { file: this.path, offset: position } });
      done += got;
    }
  }

  /** The block sums as of now, with where each block's first record starts (for the salvaging load). */
  snapshotSums(): FileSums {
    const f = this.sums.snapshot();
    const blocks = f.crcs.length;
    f.firstRow = new Uint32Array(blocks).fill(NO_RECORD);
    f.firstAt = new Uint32Array(blocks);
    for (let r = this.ids.rows - 1; r >= 0; r--) {
      const b = Math.floor(this.offsets[r]! / SUM_BLOCK);
      f.firstRow[b] = r;
      f.firstAt[b] = this.offsets[r]! - b * SUM_BLOCK;
    }
    return f;
  }

  /**
   * The load for a file with damaged blocks. Records are walked as usual; one that touches a bad
   * block is damaged (the CRC covers the block, so every record touching it is suspect). Where a
   * record head lies in a bad block its lengths may be wrong, so the stretch up to the first record
   * of the next block (the sums file records where it starts) is trusted only if the walk lands
   * exactly there; otherwise the walk resumes there and the rows in between are damaged with
   * unknown ids.
   */
  private loadSalvaging(expect: { rows: number; bytes: number }, bad: Set<number>, sums: FileSums): void {
    const bytes = expect.bytes;
    const touches = (from: number, to: number) => {
      for (let b = Math.floor(from / SUM_BLOCK); b <= Math.floor((to - 1) / SUM_BLOCK); b++) if (bad.has(b)) return true;
      return false;
    };
    const u32 = Buffer.allocUnsafe(4);
    const readU32 = (at: number) => (this.read(u32, 0, 4, at), u32.readUInt32LE(0));
    /** The record at `pos`: its id bytes and end, or null when its lengths run past the file. */
    const head = (pos: number): { idBytes: number; next: number } | null => {
      if (pos + 8 > bytes) return null;
      const idBytes = readU32(pos);
      if (pos + 8 + idBytes > bytes) return null;
      const word = readU32(pos + 4 + idBytes);
      let next = pos + 8 + idBytes + ((word & ~HAS_PAYLOAD) >>> 0);
      if (word >= HAS_PAYLOAD) next = pos + 12 + idBytes > bytes ? bytes + 1 : next + 4 + readU32(pos + 8 + idBytes);
      return next > bytes ? null : { idBytes, next };
    };
    const add = (pos: number, idBytes: number | null, damaged: boolean) => {
      const row = this.ids.rows;
      this.note(pos);
      let id: string | null = null;
      if (idBytes === null) this.ids.append("");
      else {
        const buf = Buffer.allocUnsafe(idBytes);
        this.read(buf, 0, idBytes, pos + 4);
        this.ids.appendBytes(buf, 0, idBytes);
        id = buf.toString("utf8");
      }
      if (damaged) this.damagedRows.push({ row, id });
    };
    let pos = 0;
    while (pos < bytes && this.ids.rows < expect.rows) {
      const h = head(pos);
      if (h !== null && !touches(pos, pos + 12 + h.idBytes)) {
        add(pos, h.idBytes, touches(pos, h.next));
        pos = h.next;
        continue;
      }
      // A head in a bad block: where must the walk be at the next good block?
      let b = Math.floor(pos / SUM_BLOCK) + 1;
      while (b < sums.crcs.length && sums.firstRow![b] === NO_RECORD) b++;
      const to =
        b < sums.crcs.length ? { row: sums.firstRow![b]!, at: b * SUM_BLOCK + sums.firstAt![b]! } : { row: expect.rows, at: bytes };
      const trial: Array<{ pos: number; idBytes: number }> = [];
      for (let at = pos, r = this.ids.rows; at < to.at && r < to.row; r++) {
        const t = head(at);
        if (t === null) break;
        trial.push({ pos: at, idBytes: t.idBytes });
        at = t.next;
        if (at === to.at && r + 1 === to.row) break;
      }
      const landed =
        trial.length === to.row - this.ids.rows && (trial.length === 0 ? pos === to.at : head(trial.at(-1)!.pos)!.next === to.at);
      if (landed) for (const t of trial) add(t.pos, t.idBytes, touches(t.pos, head(t.pos)!.next));
      else while (this.ids.rows < to.row) add(pos, null, true);
      pos = to.at;
    }
    this.size = bytes;
  }

  /** Parse records in [0, bytes): ids and offsets only; metadata and payloads are skipped, not decoded. */
  private load(bytes: number): void {
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(bytes, 8)));
    let base = 0; // file offset of chunk[0]
    let filled = 0;
    let pos = 0; // offset of the next record inside chunk
    const fill = () => {
      chunk.copy(chunk, 0, pos, filled);
      base += pos;
      filled -= pos;
      pos = 0;
      const want = Math.min(chunk.length - filled, bytes - base - filled);
      if (want > 0) this.read(chunk, filled, want, base + filled);
      filled += Math.max(0, want);
    };
    while (base + pos < bytes) {
      if (filled - pos < 8) fill();
      const idBytes = chunk.readUInt32LE(pos);
      if (filled - pos < 8 + idBytes) fill();
      const word = chunk.readUInt32LE(pos + 4 + idBytes);
      let tail = (word & ~HAS_PAYLOAD) >>> 0; // bytes after the fixed head: metadata, then payload length + payload
      if (word >= HAS_PAYLOAD) {
        if (filled - pos < 12 + idBytes) fill();
        tail += 4 + chunk.readUInt32LE(pos + 8 + idBytes);
      }
      this.note(base + pos);
      this.ids.appendBytes(chunk, pos + 4, pos + 4 + idBytes);
      const next = base + pos + 8 + idBytes + tail;
      if (next > bytes)
        throw new SvcError("E_IO", `${this.path}: record at ${base + pos} runs past ${bytes}`, {
          details: { file: this.path, offset: base + pos },
        });
      if (next - base <= filled) pos = next - base;
      else {
        base = next;
        pos = 0;
        filled = 0;
      }
    }
    this.size = bytes;
  }
}

/** A record's flags word: its metadata's length, whether a payload follows, and where the metadata starts from the word (past the payload's length word when there is one). */
function flags(w: number): { metaAt: number; metaBytes: number; payload: boolean } {
  const payload = w >= HAS_PAYLOAD;
  return { metaAt: payload ? 8 : 4, metaBytes: (w & ~HAS_PAYLOAD) >>> 0, payload };
}
