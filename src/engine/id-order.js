/** @module id-order — the order ids are listed in (code points = UTF-8 bytes, Pinecone's "C" collation) and one page of a sorted id list. */
/** A UTF-16 code unit moved so that code-unit order becomes code-point order: surrogates (0xD800-0xDFFF, code points past 0xFFFF) sort after 0xE000-0xFFFF. */
function fix(c) {
    return c < 0xd800 ? c : c >= 0xe000 ? c - 0x800 : c + 0x2000;
}
/** Code-point order, which is the byte order of the UTF-8 encodings (JavaScript's `<` compares UTF-16 code units, which differs past U+FFFF). */
export function compareIds(a, b) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
        const x = a.charCodeAt(i);
        const y = b.charCodeAt(i);
        if (x !== y)
            return fix(x) - fix(y);
    }
    return a.length - b.length;
}
/** Index of the first element of `sorted` not before `id` (strict: after it). */
function lowerBound(sorted, id, strict) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const c = compareIds(sorted[mid], id);
        if (c < 0 || (strict && c === 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
/** The page of `sorted` (ascending by compareIds, no duplicates) that `req` asks for, of the ids `keep` accepts (default all). */
export function idsAfter(sorted, req, keep = () => true) {
    const prefix = req.prefix ?? "";
    let at = lowerBound(sorted, prefix, false);
    if (req.after !== undefined)
        at = Math.max(at, lowerBound(sorted, req.after, true));
    const ids = [];
    for (; at < sorted.length && sorted[at].startsWith(prefix); at++) {
        if (!keep(sorted[at]))
            continue;
        if (ids.length === req.limit)
            return { ids, more: true };
        ids.push(sorted[at]);
    }
    return { ids, more: false };
}
/** Merge pages of disjoint id sets (the shards of one index): the first `limit` ids of their union, and whether more remain. */
export function mergePages(pages, limit) {
    const all = pages.flatMap((p) => p.ids).sort(compareIds);
    return { ids: all.slice(0, limit), more: all.length > limit || pages.some((p) => p.more) };
}
//# sourceMappingURL=id-order.js.map