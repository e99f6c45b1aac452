/** @module id-table — a partition's ids off the JS heap: row -> id bytes, and a hash table id -> live row. */

const EMPTY = -1;
const DELETED = -2;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A million ids as JS strings in a Map cost ~100 MB of heap and long GC pauses; here they
 * are UTF-8 bytes in one growable buffer (row r at starts[r]..starts[r + 1]) plus an
 * open-addressing table of rows (linear probing, load <= 1/2, FNV-1a over the bytes). The
 * table maps an id to its live row only; rows stay readable after they are unmapped.
 */
export class IdTable {
  private bytes: Uint8Array<ArrayBuffer> = new Uint8Array(1 << 16);
  private starts: Uint32Array<ArrayBuffer> = new Uint32Array(1025);
  private count = 0;
  private table = new Int32Array(2048).fill(EMPTY);
  private mapped = 0;
  private used = 0; // mapped + DELETED slots
  private scratch = new Uint8Array(2048);

  get rows(): number {
    return this.count;
  }

  /** Store the id of the next row; returns the row. */
  append(id: string): number {
    const need = this.starts[this.count]! + id.length * 3;
    if (need > this.bytes.length) this.bytes = grow(this.bytes, need);
    const { written } = encoder.encodeInto(id, this.bytes.subarray(this.starts[this.count]!));
    if (this.count + 2 > this.starts.length) this.starts = grow(this.starts, this.count + 2);
    this.starts[this.count + 1] = this.starts[this.count]! + written;
    return this.count++;
  }

  /** Store the next row's id given as UTF-8 bytes (restart path: no string is made). */
  appendBytes(src: Uint8Array, start: number, end: number): number {
    const at = this.starts[this.count]!;
    if (at + end - start > this.bytes.length) this.bytes = grow(this.bytes, at + end - start);
    this.bytes.set(src.subarray(start, end), at);
    if (this.count + 2 > this.starts.length) this.starts = grow(this.starts, this.count + 2);
    this.starts[this.count + 1] = at + end - start;
    return this.count++;
  }

  /** UTF-8 length of row's id. */
  byteLength(row: number): number {
    return this.starts[row + 1]! - this.starts[row]!;
  }

  idOf(row: number): string {
    return decoder.decode(this.bytes.subarray(this.starts[row]!, this.starts[row + 1]!));
  }

  /** The live row of `id`, or undefined. */
  rowOf(id: string): number | undefined {
    const slot = this.find(this.key(id));
    return slot < 0 ? undefined : this.table[slot]!;
  }

  /** Map `id` to `row` (which must hold that id); returns the row it replaces, if any. */
  map(row: number, id?: string): number | undefined {
    const n = id === undefined ? this.rowKey(row) : this.key(id);
    const at = this.find(n);
    if (at >= 0) {
      const old = this.table[at]!;
      this.table[at] = row;
      return old;
    }
    if ((this.used + 1) * 2 > this.table.length)
      this.rehash(this.mapped * 4 > this.table.length ? this.table.length * 2 : this.table.length);
    const mask = this.table.length - 1;
    let slot = hash(this.scratch, n) & mask;
    while (this.table[slot]! >= 0) slot = (slot + 1) & mask;
    if (this.table[slot] === EMPTY) this.used++;
    this.table[slot] = row;
    this.mapped++;
    return undefined;
  }

  /** Unmap `id`; returns the row it had. */
  unmap(id: string): number | undefined {
    const slot = this.find(this.key(id));
    if (slot < 0) return undefined;
    const row = this.table[slot]!;
    this.table[slot] = DELETED;
    this.mapped--;
    return row;
  }

  /** UTF-8 of id in scratch; returns its length. */
  private key(id: string): number {
    if (id.length * 3 > this.scratch.length) this.scratch = new Uint8Array(id.length * 3);
    return encoder.encodeInto(id, this.scratch).written;
  }

  /** Row r's stored id bytes in scratch; returns the length. */
  private rowKey(row: number): number {
    const start = this.starts[row]!;
    const n = this.starts[row + 1]! - start;
    if (n > this.scratch.length) this.scratch = new Uint8Array(n * 2);
    this.scratch.set(this.bytes.subarray(start, start + n));
    return n;
  }

  /** Slot holding the row whose id equals scratch[0, n), or -1. */
  private find(n: number): number {
    const mask = this.table.length - 1;
    for (let slot = hash(this.scratch, n) & mask; ; slot = (slot + 1) & mask) {
      const row = this.table[slot]!;
      if (row === EMPTY) return -1;
      if (row >= 0 && this.equals(row, n)) return slot;
    }
  }

  private equals(row: number, n: number): boolean {
    const start = this.starts[row]!;
    if (this.starts[row + 1]! - start !== n) return false;
    for (let i = 0; i < n; i++) if (this.bytes[start + i] !== this.scratch[i]) return false;
    return true;
  }

  private rehash(size: number): void {
    const old = this.table;
    this.table = new Int32Array(size).fill(EMPTY);
    this.used = this.mapped;
    const mask = size - 1;
    for (const row of old) {
      if (row < 0) continue;
      const start = this.starts[row]!;
      let slot = hash(this.bytes.subarray(start), this.starts[row + 1]! - start) & mask;
      while (this.table[slot] !== EMPTY) slot = (slot + 1) & mask;
      this.table[slot] = row;
    }
  }
}

function hash(bytes: Uint8Array, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < n; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return (h ^ (h >>> 15)) >>> 0;
}

function grow<T extends Uint8Array<ArrayBuffer> | Uint32Array<ArrayBuffer>>(a: T, need: number): T {
  const out = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  out.set(a);
  return out;
}
