/** @module row-file — fixed-width rows in a file (float32 values, packed bits), written and read by position. */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { SvcError } from "../errors.js";

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

  /** Opens (creating) the file and cuts it to `rows` rows: bytes past them were never checkpointed. */
  constructor(path: string, rowBytes: number, rows = 0) {
    this.path = path;
    this.rowBytes = rowBytes;
    this.fd = io(path, () => openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644));
    const size = fstatSync(this.fd).size;
    if (size < rows * rowBytes) throw new SvcError("E_IO", `${path} holds ${Math.floor(size / rowBytes)} rows, the checkpoint expects ${rows}`, { details: { file: path } });
    if (size > rows * rowBytes) ftruncateSync(this.fd, rows * rowBytes);
    this.rows = rows;
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
      if (got === 0) throw new SvcError("E_IO", `${this.path}: rows ${start}..${start + n} are past the end of the file`, { details: { file: this.path } });
      done += got;
    }
    return out;
  }

  /** fdatasync on the threadpool, so a multi-GB flush does not stall the event loop. */
  sync(): Promise<void> {
    return new Promise((resolve, reject) => fdatasync(this.fd, (err) => (err ? reject(new SvcError("E_IO", `${this.path}: ${err.message}`, { cause: err })) : resolve())));
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
