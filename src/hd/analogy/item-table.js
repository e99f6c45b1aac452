/** @module item-table — factored binary items: seeded per-feature codebooks and the packed table of all 2^n_feat item vectors. */
import { mulberry32 } from "../../kernels/random.js";
import { RowArena } from "../../kernels/row-arena.js";
/**
 * Codebook of n_feat features: two random D-bit vectors per feature, cb[f][0] and cb[f][1],
 * drawn in order (f, bit, u32 lane) from one mulberry32 stream seeded with mix(n_feat, seed).
 * Item i (bit f of i = feature f, least significant first) is XOR_f cb[f][bit_f(i)], so
 * item(a) ^ item(b) ^ item(c) == item(a ^ b ^ c) exactly (the cb[f][0] terms cancel in pairs).
 */
export function codebook(nFeat, seed, dimBits) {
    const lanes = dimBits / 32;
    const next = mulberry32(Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(nFeat, 0x85ebca6b) ^ 0x5a17a1);
    const out = [];
    for (let f = 0; f < nFeat; f++) {
        const pair = [];
        for (let b = 0; b < 2; b++) {
            const v = new Uint32Array(lanes);
            for (let i = 0; i < lanes; i++)
                v[i] = next();
            pair.push(v);
        }
        out.push(pair);
    }
    return out;
}
/**
 * Builds by doubling: row 0 = XOR_f cb[f][0]; rows [2^f, 2^(f+1)) = rows [0, 2^f) XOR
 * (cb[f][0] ^ cb[f][1]). One XOR pass per row, in 32-bit lanes over the shared memory.
 * dimBits must be a multiple of 128 (no padding lanes, which stay zero otherwise).
 */
export function buildItemTable(heap, nFeat, seed, dimBits) {
    const cb = codebook(nFeat, seed, dimBits);
    const n = 2 ** nFeat;
    const arena = new RowArena(heap, dimBits, n);
    const base = arena.reserve(n);
    const lanes = arena.rowBytes / 4;
    const m = new Uint32Array(heap.memory.buffer, base, n * lanes);
    const dl = dimBits / 32;
    m.fill(0, 0, lanes);
    for (let f = 0; f < nFeat; f++) {
        const c0 = cb[f][0];
        for (let j = 0; j < dl; j++)
            m[j] = m[j] ^ c0[j];
    }
    const delta = new Uint32Array(lanes);
    for (let f = 0; f < nFeat; f++) {
        const [c0, c1] = cb[f];
        for (let j = 0; j < dl; j++)
            delta[j] = c0[j] ^ c1[j];
        const half = 2 ** f;
        const src = 0;
        const dst = half * lanes;
        const len = half * lanes;
        for (let i = 0; i < len; i += lanes) {
            for (let j = 0; j < lanes; j++)
                m[dst + i + j] = m[src + i + j] ^ delta[j];
        }
    }
    return { nFeat, seed, arena, bytes: n * arena.rowBytes };
}
//# sourceMappingURL=item-table.js.map