/** @module row-file — fixed-width rows in a file (float32 values, packed bits), written and read by position. */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { SvcError } from "../errors.js";
import { scanBlocks, SUM_BLOCK, type BlockSums, type FileSums } from "./block-sums.js";

/**
 * Row r occupies bytes [r * rowBytes, (r + 1) * rowBytes). Appends are plain writes (page
 * cache); durability comes from the WAL until a checkpoint calls sync(). Nothing of the file
 * is held in the JS heap: reads are positional (pread).
 */
export class RowFile {
  readonly path: string;
  readonly rowBytes: number;
  private fd: number;
  private rows: number;
  /** Running block CRCs of the file (block-sums.ts). */
  readonly sums: BlockSums;
  /** Rows in blocks whose CRC did not match the checkpoint's sums on open, ascending. */
  readonly damagedRows: number[] = [];

  /**
   * Opens (creating) the file and cuts it to `rows` rows: bytes past them were never checkpointed.
   * Every block is read once: checked against `expect` (the checkpoint's sums), or summed when the
   * checkpoint has none (files written before block sums). A file shorter than `rows` rows is E_IO,
   * unless `salvage` (svc repair): it is extended with zeros and the rows from its old end on are damaged.
   */
  constructor(path: string, rowBytes: number, rows = 0, expect?: FileSums, salvage = false) {
    this.path = path;
    this.rowBytes = rowBytes;
    this.fd = io(path, () => openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644));
    const size = fstatSync(this.fd).size;
    if (size < rows * rowBytes && !salvage)
      throw new SvcError("E_IO", `${path} holds ${Math.floor(size / rowBytes)} rows, the checkpoint expects ${rows}`, {
        details: { file: path },
      });
    if (size !== rows * rowBytes) ftruncateSync(this.fd, rows * rowBytes);
    this.rows = rows;
    const { sums, bad } = scanBlocks(this.fd, rows * rowBytes, expect?.length === rows * rowBytes ? expect : undefined, path);
    this.sums = sums;
    let next = 0; // rows below this are listed already (a row can span two bad blocks)
    for (const b of bad) {
      const last = Math.min(rows - 1, Math.floor(((b + 1) * SUM_BLOCK - 1) / rowBytes));
      for (let r = Math.max(Math.floor((b * SUM_BLOCK) / rowBytes), next); r <= last; r++) this.damagedRows.push(r);
      next = last + 1;
    }
    for (let r = Math.max(Math.floor(size / rowBytes), next); r < rows; r++) this.damagedRows.push(r); // past a short file's end
  }

  get count(): number {
    return this.rows;
  }

  /** Append whole rows (byteLength a multiple of rowBytes); returns the first new row. */
  append(data: ArrayBufferView): number {
    const first = this.rows;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    let done = 0;
    while (done < bytes.byteLength) done += writeSync(this.fd, bytes, done, bytes.byteLength - done, first * this.rowBytes + done);
    this.sums.add(bytes);
    this.rows += bytes.byteLength / this.rowBytes;
    return first;
  }

  /** Read row r into `out` (rowBytes bytes) at `offset`. */
  readInto(r: number, out: Uint8Array<ArrayBufferLike>, offset = 0): void {
    let done = 0;
    while (done < this.rowBytes) {
      const n = readSync(this.fd, out, offset + done, this.rowBytes - done, r * this.rowBytes + done);
      if (n === 0) throw new SvcError("E_IO", `${this.path}: row ${r} is past the end of the file`, { details: { file: this.path } });
      done += n;
    }
  }

  /** Read rows [start, start + n) into one buffer. */
  readRange(start: number, n: number, out: Uint8Array<ArrayBufferLike> = new Uint8Array(n * this.rowBytes)): Uint8Array<ArrayBufferLike> {
    let done = 0;
    const want = n * this.rowBytes;
    while (done < want) {
      const got = readSync(this.fd, out, done, want - done, start * this.rowBytes + done);
      if (got === 0)
        throw new SvcError("E_IO", `${this.path}: rows ${start}..${start + n} are past the end of the file`, {
          details: { file: this.path },
        });
      done += got;
    }
    return out;
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
}

function io<T>(path: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw new SvcError("E_IO", `${path}: ${(err as Error).message}`, { details: { file: path }, cause: err });
  }
}
