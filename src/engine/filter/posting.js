/** @module posting — one value's row list in the inverted index: cheap appends buffered in a typed array, flushed into a roaring bitmap. */
import { RoaringBitmap32 } from "../roaring.js";
/** Rows buffered before they are flushed into the bitmap in one addMany (a native call per row costs ~60 ns, a buffered append ~2 ns). */
const FLUSH_AT = 4096;
/**
 * Rows (u32) holding one value. Invariant: the rows are bitmap ∪ pend[0, pendLen). Rows are
 * added at most once per value (the caller's contract; `last` drops the repeat of a list
 * that names a value twice), so `size` is exact without flushing.
 */
export class Posting {
    bm;
    pend;
    pendLen;
    last;
    constructor(bm, pend, pendLen, last) {
        this.bm = bm;
        this.pend = pend;
        this.pendLen = pendLen;
        this.last = last;
    }
    /** A posting of one row. */
    static of(row) {
        const pend = new Uint32Array(4);
        pend[0] = row;
        return new Posting(null, pend, 1, row);
    }
    /** A posting of no rows. */
    static empty() {
        return new Posting(null, new Uint32Array(4), 0, -1);
    }
    /** A posting holding a (deserialized) bitmap; the posting owns it from now on. */
    static fromBitmap(bm) {
        return new Posting(bm, new Uint32Array(4), 0, -1);
    }
    add(row) {
        if (row === this.last)
            return;
        this.last = row;
        if (this.pendLen === this.pend.length) {
            if (this.pendLen >= FLUSH_AT)
                this.flush();
            else {
                const grown = new Uint32Array(this.pend.length * 2);
                grown.set(this.pend);
                this.pend = grown;
            }
        }
        this.pend[this.pendLen++] = row;
    }
    has(row) {
        return this.bitmap().has(row);
    }
    get size() {
        return (this.bm === null ? 0 : this.bm.size) + this.pendLen;
    }
    /** All rows as a bitmap. The bitmap is internal: callers read it and never mutate it. */
    bitmap() {
        if (this.pendLen > 0 || this.bm === null)
            this.flush();
        return this.bm;
    }
    flush() {
        const rows = this.pend.subarray(0, this.pendLen);
        if (this.bm === null)
            this.bm = new RoaringBitmap32(rows);
        else
            this.bm.addMany(rows);
        this.pendLen = 0;
        // A large buffer is kept for the next batch; a small one shrinks back after a flush.
        if (this.pend.length < FLUSH_AT)
            this.pend = new Uint32Array(4);
    }
}
//# sourceMappingURL=posting.js.map