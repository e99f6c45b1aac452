/**
 * @module body-buffers — request body buffers, reused once a body is dead. A JSON body is dead as soon as it
 * is decoded (the decoded value shares no memory with it), and a 1000 x 1024-d upsert is a 20 MB JSON body: a new
 * one per request costs fresh pages (a fault per 4 KB) and grows V8's external memory, which is what triggers
 * the garbage collector during ingest. A msgpack body is given back only where nothing views it any more: an
 * upsert's, once its handler has copied the bins into the batch's rows (server.ts).
 */

/** Buffers at least this long are kept (smaller ones cost little to allocate). */
const MIN_BYTES = 1 << 20;
/** At most this many kept, and no more than this many bytes in all. */
const MAX_KEPT = 4;
const MAX_KEPT_BYTES = 128 << 20;
/** Kept buffers are dropped after this long without a request needing one. */
const IDLE_MS = 30_000;

/**
 * Small bodies (a query's 4-20 KB) are kept too, by power-of-two size: a fresh ArrayBuffer per request is external
 * memory for the collector to track and free (over 8,000 served queries, 184 -> 132 scavenges; bench/RESULTS.md
 * "served-cpu"). Below SMALL_MIN Node's shared pool serves.
 * Only buffers made here are kept (a caller's buffer handed to RequestPath.request never is).
 */
const SMALL_MIN = 4096;
const MAX_SMALL_KEPT_BYTES = 4 << 20;

const kept: ArrayBuffer[] = [];
const small = new Map<number, ArrayBuffer[]>();
const ours = new WeakSet<ArrayBuffer>();
let smallBytes = 0;
let idle: NodeJS.Timeout | undefined;

const pow2 = (bytes: number) => 2 ** Math.ceil(Math.log2(bytes));

/** A new buffer for a body of `bytes`; a large one is rounded up to whole MiB, a small one to a power of two, so that it can take the next body of about that size. */
export function newBodyBuffer(bytes: number): Buffer {
  if (bytes >= MIN_BYTES) return Buffer.allocUnsafe(Math.ceil(bytes / MIN_BYTES) * MIN_BYTES);
  if (bytes < SMALL_MIN) return Buffer.allocUnsafe(bytes);
  const buf = Buffer.allocUnsafeSlow(pow2(bytes));
  ours.add(buf.buffer as ArrayBuffer);
  return buf;
}

/** A kept buffer of at least `bytes` (and at most twice that) as a Buffer, or null. */
export function takeBodyBuffer(bytes: number): Buffer | null {
  if (bytes < MIN_BYTES) {
    const ab = bytes < SMALL_MIN ? undefined : small.get(pow2(bytes))?.pop();
    if (ab === undefined) return null;
    smallBytes -= ab.byteLength;
    return Buffer.from(ab);
  }
  let best = -1;
  for (let i = 0; i < kept.length; i++) {
    const n = kept[i]!.byteLength;
    if (n >= bytes && n <= 2 * bytes && (best < 0 || n < kept[best]!.byteLength)) best = i;
  }
  if (best < 0) return null;
  return Buffer.from(kept.splice(best, 1)[0]!);
}

/**
 * Give back the buffer of a body nothing refers to any more (a decoded JSON body). Only a buffer that is the
 * whole of its own ArrayBuffer from `offset` 0 (not a slice of Node's shared pool) is kept.
 */
export function giveBackBody(body: Buffer): void {
  const buf = body.buffer as ArrayBuffer;
  if (body.byteOffset !== 0 || !(buf instanceof ArrayBuffer)) return;
  if (buf.byteLength < MIN_BYTES) {
    if (!ours.has(buf) || smallBytes + buf.byteLength > MAX_SMALL_KEPT_BYTES) return;
    let list = small.get(buf.byteLength);
    if (list === undefined) small.set(buf.byteLength, (list = []));
    if (list.includes(buf)) return;
    list.push(buf);
    smallBytes += buf.byteLength;
    return;
  }
  if (kept.includes(buf)) return;
  kept.push(buf);
  while (kept.length > MAX_KEPT || kept.reduce((n, b) => n + b.byteLength, 0) > MAX_KEPT_BYTES) kept.shift();
  clearTimeout(idle);
  idle = setTimeout(() => (kept.length = 0), IDLE_MS).unref();
}
