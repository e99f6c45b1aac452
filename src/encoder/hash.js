/** @module hash — 32-bit string hashing for feature hashing: FNV-1a over UTF-16 code units, finished with murmur3's fmix32. */
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** murmur3 finalizer: full avalanche of a 32-bit value (unsigned result). */
export function fmix32(h) {
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return h >>> 0;
}
/** Hash of s[start, end) under `seed` (different seeds give independent feature spaces). */
export function hashRange(s, start, end, seed) {
    let h = (FNV_OFFSET ^ seed) >>> 0;
    for (let i = start; i < end; i++) {
        h ^= s.charCodeAt(i);
        h = Math.imul(h, FNV_PRIME);
    }
    return fmix32(h);
}
/** Hash of a whole string under `seed`. */
export function hashString(s, seed) {
    return hashRange(s, 0, s.length, seed);
}
//# sourceMappingURL=hash.js.map