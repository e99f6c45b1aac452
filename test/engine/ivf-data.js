/** @module ivf-data — seeded clustered packed rows for the index tests: sign bits of (centre + 4-d latent point + noise). */
import { mulberry32 } from "../../src/kernels/random.js";
export const DIM = 1024;
/** n rows of DIM bits from `clusters` centres (seeded); `from` offsets the row stream so held-out queries come from the same clusters. */
/** `spread` scales the latent part: 1 gives tight clusters, 3 makes neighbouring clusters overlap. */
export function clusteredRows(n, seed, from = 0, clusters = 50, dim = DIM, spread = 1) {
    const setup = mulberry32(seed);
    const u = (next) => next() / 2 ** 32 - 0.5;
    const centres = Array.from({ length: clusters }, () => Float32Array.from({ length: dim }, () => u(setup)));
    const basis = Array.from({ length: 4 }, () => Float32Array.from({ length: dim }, () => u(setup)));
    return Array.from({ length: n }, (_, k) => {
        const next = mulberry32(seed ^ Math.imul(from + k + 1, 0x9e3779b1));
        const c = centres[next() % clusters];
        const z = [spread * u(next), spread * u(next), spread * u(next), spread * u(next)];
        const out = new Uint8Array(Math.ceil(dim / 8));
        for (let j = 0; j < dim; j++) {
            const x = c[j] + z[0] * basis[0][j] + z[1] * basis[1][j] + z[2] * basis[2][j] + z[3] * basis[3][j] + 0.1 * u(next);
            if (x > 0)
                out[j >> 3] |= 1 << (j & 7);
        }
        return out;
    });
}
export function hamming(a, b) {
    let d = 0;
    for (let i = 0; i < a.length; i++) {
        let x = a[i] ^ b[i];
        while (x) {
            x &= x - 1;
            d++;
        }
    }
    return d;
}
/** The exact k-th smallest distance from q to the rows kept by `keep`. */
export function kthDistance(rows, q, k, keep = () => true) {
    const d = [];
    rows.forEach((r, i) => {
        if (keep(i))
            d.push(hamming(r, q));
    });
    d.sort((a, b) => a - b);
    return d[Math.min(k, d.length) - 1];
}
//# sourceMappingURL=ivf-data.js.map