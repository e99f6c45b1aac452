/** @module numeric-column — one field's numbers by row plus a value-sorted row order, answering ranges and numeric equality. */
import { RoaringBitmap32 } from "../roaring.js";
import { bitmapFromSorted, isAscending, RowSetBuilder } from "./row-set.js";
/** The tail is merged into the sorted base once it holds more than max(TAIL_MIN, base / 16) rows. */
const TAIL_MIN = 1024;
/**
 * Results up to this many rows are sorted natively (V8's typed-array sort is slow: ~80 ns a
 * row at 10k); more go through bitmapFromSorted (slices already in row order) or the
 * RowSetBuilder (~3 ns to mark a row, ~20 ns to extract it, plus a scan of rows/32 words).
 */
const SORT_MAX = 256;
/**
 * ordered(): a membership test in the universe (a native call) costs ~40 ns; reading the
 * universe's rows and radix-sorting those holding a number ~35 ns a row (measured on 1M
 * timestamps). The walk from one end of sorted[] tests at most WALK_SHARE x |universe| rows
 * before it gives up and sorts the universe, so it never costs much more than the sort.
 */
const WALK_SHARE = 0.5;
/** One shared scratch bitset for all columns (synchronous use only). */
const builder = new RowSetBuilder();
/**
 * Rows are dense (0..n-1): `values` and the shared scratch bitset are sized by the largest row.
 * Invariants:
 * - values[r] is row r's number, or NaN when row r has none (rows >= len have none). -0 is
 *   stored as 0. Capacity grows geometrically.
 * - Every row with a number is in exactly one of sorted[0, sortedLen) (ascending by value) or
 *   tail[0, tailLen) (arrival order). Appends touch only the tail (O(1)); a query merges a
 *   large tail (radix sort + linear merge), so the amortized cost per append stays O(1) and a
 *   query scans at most max(TAIL_MIN, sortedLen / 16) tail rows.
 * - Equal values keep arrival order in sorted[] (stable radix sort, merges base-first). Rows
 *   arrive in increasing row order in partitions (rows are appended, never renumbered), so
 *   sorted[] is then ascending by (value, row): what ordered() returns.
 */
export class NumericColumn {
    values;
    len;
    sorted;
    sortedLen;
    tail;
    tailLen;
    constructor(values = new Float64Array(16).fill(NaN), len = 0, sorted = new Uint32Array(0)) {
        this.values = values;
        this.len = len;
        this.sorted = sorted;
        this.sortedLen = sorted.length;
        this.tail = new Uint32Array(16);
        this.tailLen = 0;
    }
    /** Rows holding a number. */
    get count() {
        return this.sortedLen + this.tailLen;
    }
    /** Row r's number (NaN when none). */
    value(row) {
        return row < this.len ? this.values[row] : NaN;
    }
    /** Set row's number; each row at most once (a row is never re-added to an index). */
    add(row, v) {
        if (row >= this.values.length) {
            const grown = new Float64Array(Math.max(row + 1, this.values.length * 2));
            grown.set(this.values);
            grown.fill(NaN, this.values.length);
            this.values = grown;
        }
        this.values[row] = v === 0 ? 0 : v;
        if (row >= this.len)
            this.len = row + 1;
        if (this.tailLen === this.tail.length) {
            const grown = new Uint32Array(this.tail.length * 2);
            grown.set(this.tail);
            this.tail = grown;
        }
        this.tail[this.tailLen++] = row;
    }
    /** Rows of `universe` whose number satisfies q (a new bitmap). */
    select(q, universe) {
        if (this.tailLen > Math.max(TAIL_MIN, this.sortedLen >>> 4))
            this.merge();
        const slices = this.slices(q);
        let total = this.tailLen; // an upper bound of the result size before the universe
        for (let i = 0; i < slices.length; i += 2)
            total += slices[i + 1] - slices[i];
        if (total === 0)
            return new RoaringBitmap32();
        // Testing a universe row costs ~5 ns (toUint32Array + a column read); a slice row costs
        // ~3-25 ns on the paths below plus a fixed scan: test the universe when it is the smaller.
        if (universe.size < total)
            return this.filterRows(q, universe);
        const values = this.values;
        const tail = this.tail;
        let out;
        if (total <= SORT_MAX) {
            const rows = new Uint32Array(total);
            let k = 0;
            for (let i = 0; i < slices.length; i += 2) {
                rows.set(this.sorted.subarray(slices[i], slices[i + 1]), k);
                k += slices[i + 1] - slices[i];
            }
            for (let i = 0; i < this.tailLen; i++)
                if (test(q, values[tail[i]]))
                    rows[k++] = tail[i];
            const part = rows.subarray(0, k).sort();
            out = bitmapFromSorted(part, 0, k); // strictly ascending: a row is in sorted[] or tail[] once
        }
        else if (this.slicesAscending(slices)) {
            // Equal values keep arrival order (stable sort, ties merged base-first), so the rows of
            // one value are ascending whenever rows arrive in order: each slice is a bitmap as it is.
            const parts = [];
            for (let i = 0; i < slices.length; i += 2)
                parts.push(bitmapFromSorted(this.sorted, slices[i], slices[i + 1]));
            const extra = [];
            for (let i = 0; i < this.tailLen; i++)
                if (test(q, values[tail[i]]))
                    extra.push(tail[i]);
            if (extra.length > 0)
                parts.push(new RoaringBitmap32(Uint32Array.from(extra).sort()));
            out = parts.length === 1 ? parts[0] : RoaringBitmap32.orMany(parts);
        }
        else {
            builder.reserve(this.len);
            for (let i = 0; i < slices.length; i += 2)
                builder.markAll(this.sorted, slices[i], slices[i + 1]);
            for (let i = 0; i < this.tailLen; i++)
                if (test(q, values[tail[i]]))
                    builder.mark(tail[i]);
            out = builder.build();
        }
        return out.andInPlace(universe);
    }
    /**
     * Up to `limit` rows of `universe` holding a number, by (value, row) descending (`desc`) or
     * ascending. Walks sorted[] from the chosen end, merged with the sorted tail, testing
     * membership in `universe`, so a small limit costs about limit x count / |universe| tests;
     * when that would cost more than sorting the universe's own rows (a selective universe,
     * or rows clustered at the other end), it sorts those instead.
     */
    ordered(universe, limit, desc) {
        if (this.tailLen > Math.max(TAIL_MIN, this.sortedLen >>> 4))
            this.merge();
        const size = universe.size;
        const count = this.count;
        if (size === 0 || count === 0 || limit <= 0)
            return new Uint32Array(0);
        const budget = Math.ceil(size * WALK_SHARE);
        if ((limit * count) / size > budget)
            return this.orderedRows(universe, limit, desc);
        const values = this.values;
        const base = this.sorted;
        const tail = sortRowsByValue(this.tail.slice(0, this.tailLen), values); // stable: ties stay in row order
        const out = new Uint32Array(Math.min(limit, size));
        let k = 0;
        let tested = 0;
        // i, j: the next base/tail index to consider, walking from the chosen end
        let i = desc ? this.sortedLen - 1 : 0;
        let j = desc ? tail.length - 1 : 0;
        const step = desc ? -1 : 1;
        const inBase = () => (desc ? i >= 0 : i < this.sortedLen);
        const inTail = () => (desc ? j >= 0 : j < tail.length);
        while (k < out.length && (inBase() || inTail())) {
            let fromBase;
            if (!inTail())
                fromBase = true;
            else if (!inBase())
                fromBase = false;
            else {
                const a = base[i];
                const b = tail[j];
                const va = values[a];
                const vb = values[b];
                fromBase = desc ? va > vb || (va === vb && a > b) : va < vb || (va === vb && a < b);
            }
            const row = fromBase ? base[i] : tail[j];
            if (fromBase)
                i += step;
            else
                j += step;
            if (++tested > budget)
                return this.orderedRows(universe, limit, desc);
            if (universe.has(row))
                out[k++] = row;
        }
        return out.subarray(0, k);
    }
    /**
     * Rows with a number satisfying q: exact while the tail holds at most TAIL_MIN rows (it is
     * then counted); past that (only once the base exceeds 16 * TAIL_MIN rows) the tail is
     * assumed to match in the base's proportion.
     */
    estimate(q) {
        if (this.tailLen > Math.max(TAIL_MIN, this.sortedLen >>> 4))
            this.merge();
        const slices = this.slices(q);
        let inBase = 0;
        for (let i = 0; i < slices.length; i += 2)
            inBase += slices[i + 1] - slices[i];
        if (this.tailLen <= TAIL_MIN) {
            let inTail = 0;
            for (let i = 0; i < this.tailLen; i++)
                if (test(q, this.values[this.tail[i]]))
                    inTail++;
            return inBase + inTail;
        }
        return Math.round(inBase * (1 + this.tailLen / this.sortedLen));
    }
    /** For checkpoints: len, values[0, len) and the sorted order (after merging the tail). */
    snapshot() {
        if (this.tailLen > 0)
            this.merge();
        return { len: this.len, values: this.values.subarray(0, this.len), sorted: this.sorted.subarray(0, this.sortedLen) };
    }
    /** Rebuild from a snapshot; takes ownership of both arrays. Throws a plain Error when they disagree. */
    static restore(len, values, sorted) {
        if (values.length !== len)
            throw new Error(`numeric column holds ${values.length} values, expected ${len}`);
        let prev = -Infinity;
        let present = 0;
        for (let i = 0; i < len; i++)
            if (values[i] === values[i])
                present++;
        if (present !== sorted.length)
            throw new Error(`numeric column has ${present} numbers but ${sorted.length} sorted rows`);
        for (let i = 0; i < sorted.length; i++) {
            const r = sorted[i];
            const v = r < len ? values[r] : NaN;
            if (!(v >= prev))
                throw new Error(`numeric column order is broken at ${i}`);
            prev = v;
        }
        return new NumericColumn(values.length > 0 ? values : new Float64Array(16).fill(NaN), len, sorted);
    }
    slicesAscending(slices) {
        for (let i = 0; i < slices.length; i += 2)
            if (!isAscending(this.sorted, slices[i], slices[i + 1]))
                return false;
        return true;
    }
    /** [from, to) index pairs into sorted[] covering q, ascending and disjoint. */
    slices(q) {
        const out = [];
        if (q.kind === "range") {
            const from = this.lowerBound(q.min, !q.minInclusive);
            const to = this.lowerBound(q.max, q.maxInclusive);
            if (to > from)
                out.push(from, to);
        }
        else {
            for (const p of q.points) {
                const from = this.lowerBound(p, false);
                const to = this.lowerBound(p, true);
                if (to > from)
                    out.push(from, to);
            }
        }
        return out;
    }
    /** First index in sorted[] whose value is >= v (after = false) or > v (after = true). */
    lowerBound(v, after) {
        const values = this.values;
        const sorted = this.sorted;
        let lo = 0;
        let hi = this.sortedLen;
        while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            const x = values[sorted[mid]];
            if (x < v || (after && x === v))
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo;
    }
    /** ordered() by sorting the universe's rows that hold a number (ascending rows in, stable sort: ties in row order). */
    orderedRows(universe, limit, desc) {
        const rows = universe.toUint32Array();
        const values = this.values;
        const len = this.len;
        let k = 0;
        for (let i = 0; i < rows.length; i++) {
            const r = rows[i];
            if (r < len && values[r] === values[r])
                rows[k++] = r;
        }
        const sorted = sortRowsByValue(rows.subarray(0, k), values);
        if (!desc)
            return sorted.subarray(0, Math.min(limit, k));
        return sorted.subarray(Math.max(0, k - limit)).reverse();
    }
    /** Test each universe row directly: cheaper than the slices when the universe is small. */
    filterRows(q, universe) {
        const rows = universe.toUint32Array();
        const values = this.values;
        const len = this.len;
        let k = 0;
        for (let i = 0; i < rows.length; i++) {
            const r = rows[i];
            if (r < len && test(q, values[r]))
                rows[k++] = r;
        }
        return bitmapFromSorted(rows, 0, k);
    }
    merge() {
        const add = sortRowsByValue(this.tail.slice(0, this.tailLen), this.values);
        const base = this.sorted;
        const values = this.values;
        const n = this.sortedLen;
        const m = add.length;
        const out = new Uint32Array(n + m);
        let i = 0;
        let j = 0;
        let k = 0;
        while (i < n && j < m) {
            if (values[base[i]] <= values[add[j]])
                out[k++] = base[i++];
            else
                out[k++] = add[j++];
        }
        while (i < n)
            out[k++] = base[i++];
        while (j < m)
            out[k++] = add[j++];
        this.sorted = out;
        this.sortedLen = k;
        this.tailLen = 0;
        if (this.tail.length > 4 * TAIL_MIN)
            this.tail = new Uint32Array(16);
    }
}
function test(q, v) {
    if (q.kind === "range")
        return (q.minInclusive ? v >= q.min : v > q.min) && (q.maxInclusive ? v <= q.max : v < q.max);
    const p = q.points;
    let lo = 0;
    let hi = p.length;
    while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (p[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p.length && p[lo] === v;
}
/**
 * Rows sorted by values[row] ascending (stable): an LSD radix sort on the 64-bit
 * order-preserving image of each double (sign bit set -> all bits flipped, else the sign bit
 * flipped), 8 passes of 8 bits, skipping any pass whose byte is the same for every row (most
 * of them for integers such as years, whose low 32 bits are all zero: then the low keys are
 * never carried). O(n) against ~700 ms for 1M rows through a comparator. Every value must be
 * a number (no NaN). Sorts `rows` in place or returns a new array.
 */
export function sortRowsByValue(rows, values) {
    const n = rows.length;
    if (n < 64) {
        for (let i = 1; i < n; i++) {
            const r = rows[i];
            const v = values[r];
            let j = i - 1;
            while (j >= 0 && values[rows[j]] > v) {
                rows[j + 1] = rows[j];
                j--;
            }
            rows[j + 1] = r;
        }
        return rows;
    }
    const bits = new Uint32Array(values.buffer, values.byteOffset, values.length * 2); // little-endian: [2r] low, [2r+1] high word
    let lo = new Uint32Array(n);
    let hi = new Uint32Array(n);
    const counts = new Uint32Array(8 * 256);
    for (let i = 0; i < n; i++) {
        const r = rows[i];
        let h = bits[2 * r + 1];
        let l = bits[2 * r];
        if (h & 0x80000000) {
            h = ~h >>> 0;
            l = ~l >>> 0;
        }
        else
            h = (h | 0x80000000) >>> 0;
        hi[i] = h;
        lo[i] = l;
        counts[l & 255]++;
        counts[256 + ((l >>> 8) & 255)]++;
        counts[512 + ((l >>> 16) & 255)]++;
        counts[768 + (l >>> 24)]++;
        counts[1024 + (h & 255)]++;
        counts[1280 + ((h >>> 8) & 255)]++;
        counts[1536 + ((h >>> 16) & 255)]++;
        counts[1792 + (h >>> 24)]++;
    }
    const passes = [];
    for (let pass = 0; pass < 8; pass++) {
        let trivial = false;
        for (let b = pass * 256; b < pass * 256 + 256; b++)
            if (counts[b] === n)
                trivial = true;
        if (!trivial)
            passes.push(pass);
    }
    const lastLo = passes.filter((p) => p < 4).length;
    let rowsA = rows;
    let rowsB = new Uint32Array(n);
    let hiB = new Uint32Array(n);
    let loB = lastLo > 1 ? new Uint32Array(n) : lo; // carried only while a later low pass needs it
    const starts = new Uint32Array(256);
    let loPassesDone = 0;
    for (const pass of passes) {
        let sum = 0;
        for (let b = 0; b < 256; b++) {
            starts[b] = sum;
            sum += counts[pass * 256 + b];
        }
        const shift = (pass & 3) * 8;
        if (pass < 4) {
            loPassesDone++;
            const carryLo = loPassesDone < lastLo;
            for (let i = 0; i < n; i++) {
                const l = lo[i];
                const at = starts[(l >>> shift) & 255]++;
                rowsB[at] = rowsA[i];
                hiB[at] = hi[i];
                if (carryLo)
                    loB[at] = l;
            }
            if (carryLo)
                [lo, loB] = [loB, lo];
        }
        else {
            for (let i = 0; i < n; i++) {
                const h = hi[i];
                const at = starts[(h >>> shift) & 255]++;
                rowsB[at] = rowsA[i];
                hiB[at] = h;
            }
        }
        [rowsA, rowsB] = [rowsB, rowsA];
        [hi, hiB] = [hiB, hi];
    }
    return rowsA;
}
//# sourceMappingURL=numeric-column.js.map