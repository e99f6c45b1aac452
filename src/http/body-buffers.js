/**
 * @module body-buffers — large request body buffers, reused once a body is dead. A JSON body is dead as soon as it
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
const kept = [];
let idle;
/** A new buffer for a body of `bytes`; a large one is rounded up to whole MiB, so that it can take the next body of about that size. */
export function newBodyBuffer(bytes) {
    return Buffer.allocUnsafe(bytes < MIN_BYTES ? bytes : Math.ceil(bytes / MIN_BYTES) * MIN_BYTES);
}
/** A kept buffer of at least `bytes` (and at most twice that) as a Buffer, or null. */
export function takeBodyBuffer(bytes) {
    if (bytes < MIN_BYTES)
        return null;
    let best = -1;
    for (let i = 0; i < kept.length; i++) {
        const n = kept[i].byteLength;
        if (n >= bytes && n <= 2 * bytes && (best < 0 || n < kept[best].byteLength))
            best = i;
    }
    if (best < 0)
        return null;
    return Buffer.from(kept.splice(best, 1)[0]);
}
/**
 * Give back the buffer of a body nothing refers to any more (a decoded JSON body). Only a buffer that is the
 * whole of its own ArrayBuffer from `offset` 0 (not a slice of Node's shared pool) is kept.
 */
export function giveBackBody(body) {
    const buf = body.buffer;
    if (body.byteOffset !== 0 || buf.byteLength < MIN_BYTES || !(buf instanceof ArrayBuffer))
        return;
    if (kept.includes(buf))
        return;
    kept.push(buf);
    while (kept.length > MAX_KEPT || kept.reduce((n, b) => n + b.byteLength, 0) > MAX_KEPT_BYTES)
        kept.shift();
    clearTimeout(idle);
    idle = setTimeout(() => (kept.length = 0), IDLE_MS).unref();
}
//# sourceMappingURL=body-buffers.js.map