/**
 * @module upsert-buffers — buffers for the float32 values of upsert batches that a caller gives away: handed out
 * (upsertValuesBuffer), taken whole as a batch's rows by checkUpsert (takeGivenRows, no copy), and given back by
 * the applier once the batch is applied (returnRows), to be handed out again. A 1000 x 1024-d batch is 4 MB:
 * reused, it costs no fresh pages (one page fault per 4 KB) and no external-memory growth that triggers the
 * garbage collector.
 */
/** Buffers handed out and not yet taken. */
const given = new WeakSet();
/** Buffers taken as a batch's rows and not yet returned. */
const taken = new WeakSet();
/** Returned buffers, to hand out again (largest last). */
const free = [];
/** Returned buffers kept at most (4 batches in flight is what one ingest client pipeline holds). */
const MAX_FREE = 4;
/**
 * A buffer of at least `bytes` for the float32 values of one upsert batch, with unspecified contents (write every
 * byte you hand over). When vector i's values are a Float32Array view of it at byte i * dimension * 4 (every
 * vector, in order), checkUpsert takes it as the batch's rows instead of copying them. The caller gives it away:
 * it must not read or change it after the upsert (the log writes it, the applier reads it after the
 * acknowledgement, then it is reused).
 */
export function upsertValuesBuffer(bytes) {
    // the smallest free buffer that fits, if it is not more than twice the size
    let best = -1;
    for (let i = 0; i < free.length; i++) {
        const b = free[i].byteLength;
        if (b >= bytes && b <= 2 * bytes + 4096 && (best < 0 || b < free[best].byteLength))
            best = i;
    }
    const buf = best < 0 ? new ArrayBuffer(bytes) : free.splice(best, 1)[0];
    given.add(buf);
    return buf;
}
/**
 * The rows of a float batch (the `values` of each vector, `rowBytes` each) when they lie in order in one buffer from
 * upsertValuesBuffer: the buffer is then taken (a second batch with the same views is copied); else null.
 */
export function takeGivenRows(vectors, rowBytes) {
    const first = vectors[0]?.values;
    if (!(first instanceof Float32Array) || !given.has(first.buffer))
        return null;
    const buf = first.buffer;
    const n = vectors.length;
    if (buf.byteLength < n * rowBytes)
        return null;
    for (let i = 0; i < n; i++) {
        const v = vectors[i]?.values;
        if (!(v instanceof Float32Array) || v.buffer !== buf || v.byteOffset !== i * rowBytes || v.byteLength !== rowBytes)
            return null;
    }
    given.delete(buf);
    taken.add(buf);
    return new Uint8Array(buf, 0, n * rowBytes);
}
/** After the batch whose rows these are was applied (and its log write had settled): a taken buffer is handed out again. */
export function returnRows(rows) {
    const buf = rows.buffer;
    if (!taken.has(buf))
        return;
    taken.delete(buf);
    if (free.length >= MAX_FREE)
        free.shift();
    free.push(buf);
}
//# sourceMappingURL=upsert-buffers.js.map