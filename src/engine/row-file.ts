/** @module row-file — fixed-width rows in a file (float32 values, packed bits), written and read by position. */
import { closeSync, constants, fdatasync, fstatSync, ftruncateSync, openSync, readSync, write, writeSync } from "node:fs";
import { SvcError } from "../errors.js";
import { scanBlocks, SUM_BLOCK, type BlockSums, type FileSums } from "./block-sums.js";

/**
 * Row r occupies bytes [r * rowBytes, (r + 1) * rowBytes). Appends are plain writes (page
 * cache); durability comes from the WAL until a checkpoint calls sync(). Nothing of the file
 * is held in the JS heap: reads are positional (pread). An appendAsync write runs on the
 * threadpool; until it is done its rows are read from its buffer, and sync() waits for it.
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
  /** appendAsync writes not yet done, oldest first (a failed one stays: its rows are read from its bytes). */
  private readonly inFlight: Array<{ first: number; bytes: Uint8Array }> = [];
  /** appendAsync writes running, and what waits for none to run (sync, a deferred close). */
  private running = 0;
  private readonly idle: Array<() => void> = [];
  /** The first failed appendAsync write: later appends and sync() fail with it. */
  private failure: SvcError | null = null;

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
    if (this.failure) throw this.failure;
    const first = this.rows;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    let done = 0;
    while (done < bytes.byteLength) done += writeSync(this.fd, bytes, done, bytes.byteLength - done, first * this.rowBytes + done);
    this.sums.add(bytes);
    this.rows += bytes.byteLength / this.rowBytes;
    return first;
  }

  /**
   * Append whole rows with a positional write on the threadpool (the main thread does not copy them into the page
   * cache); returns the first new row. `bytes` must stay unchanged until `written` is called, after the write is done;
   * until then reads of its rows are served from it. A failed write never calls `written` (its rows stay readable from
   * `bytes`), and later appends and sync() fail with E_IO: a checkpoint never refers to rows the file lacks.
   */
  appendAsync(bytes: Uint8Array, written: () => void): number {
    if (this.failure) throw this.failure;
    const first = this.rows;
    const entry = { first, bytes };
    this.inFlight.push(entry);
    this.sums.add(bytes);
    this.rows += bytes.byteLength / this.rowBytes;
    this.running++;
    const fd = this.fd;
    const from = (done: number): void =>
      write(fd, bytes, done, bytes.byteLength - done, first * this.rowBytes + done, (err, n) => {
        if (err === null && done + n < bytes.byteLength) return from(done + n);
        if (err !== null)
          this.failure ??= new SvcError("E_IO", `${this.path}: ${err.message}`, { details: { file: this.path }, cause: err });
        else this.inFlight.splice(this.inFlight.indexOf(entry), 1);
        if (--this.running === 0) for (const f of this.idle.splice(0)) f();
        if (err === null) written();
      });
    from(0);
    return first;
  }

  /** Read row r into `out` (rowBytes bytes) at `offset`. */
  readInto(r: number, out: Uint8Array<ArrayBufferLike>, offset = 0): void {
    this.read(r, 1, out, offset);
  }

  /** Read rows [start, start + n) into one buffer. */
  readRange(start: number, n: number, out: Uint8Array<ArrayBufferLike> = new Uint8Array(n * this.rowBytes)): Uint8Array<ArrayBufferLike> {
    this.read(start, n, out, 0);
    return out;
  }

  /** Rows [start, start + n) into `out` at `offset`: from the file, then each row still in flight from its write's bytes. */
  private read(start: number, n: number, out: Uint8Array<ArrayBufferLike>, offset: number): void {
    const want = n * this.rowBytes;
    let done = 0;
    while (done < want) {
      const got = readSync(this.fd, out, offset + done, want - done, start * this.rowBytes + done);
      if (got === 0) {
        // past the file's end only rows in flight may lie (their write extends the file)
        if (this.covered(start + Math.floor(done / this.rowBytes), start + n)) break;
        throw new SvcError("E_IO", `${this.path}: rows ${start}..${start + n} are past the end of the file`, {
          details: { file: this.path },
        });
      }
      done += got;
    }
    for (const { first, bytes } of this.inFlight) {
      const lo = Math.max(start, first);
      const hi = Math.min(start + n, first + bytes.byteLength / this.rowBytes);
      if (lo < hi)
        out.set(bytes.subarray((lo - first) * this.rowBytes, (hi - first) * this.rowBytes), offset + (lo - start) * this.rowBytes);
    }
  }

  /** Whether every row of [from, to) is in an appendAsync write not yet done. */
  private covered(from: number, to: number): boolean {
    for (let r = from; r < to;) {
      const w = this.inFlight.find((e) => e.first <= r && r < e.first + e.bytes.byteLength / this.rowBytes);
      if (w === undefined) return false;
      r = w.first + w.bytes.byteLength / this.rowBytes;
    }
    return true;
  }

  /** Resolves once no appendAsync write runs. */
  private writesDone(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  /** fdatasync on the threadpool (after the appendAsync writes), so a multi-GB flush does not stall the event loop. */
  async sync(): Promise<void> {
    await this.writesDone();
    if (this.failure) throw this.failure;
    const fd = this.fd;
    return new Promise((resolve, reject) =>
      fdatasync(fd, (err) => (err ? reject(new SvcError("E_IO", `${this.path}: ${err.message}`, { cause: err })) : resolve())),
    );
  }

  /** Close the file; with appendAsync writes running, once they are done. */
  close(): void {
    const fd = this.fd;
    this.fd = -1;
    if (fd < 0) return;
    if (this.running === 0) closeSync(fd);
    else this.idle.push(() => closeSync(fd));
  }
}

function io<T>(path: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw new SvcError("E_IO", `${path}: ${(err as Error).message}`, { details: { file: path }, cause: err });
  }
}
