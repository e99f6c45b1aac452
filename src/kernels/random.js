/** @module random — seeded, deterministic random sources for kernels (rotation signs, tie rows, test data). */
/** mulberry32: a 32-bit seeded generator; same seed, same sequence, on every platform. */
export function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return (t ^ (t >>> 14)) >>> 0;
    };
}
/** Fill a byte array with seeded random bytes. */
export function randomBytes(seed, length) {
    const next = mulberry32(seed);
    const out = new Uint8Array(length);
    const words = new Uint32Array(out.buffer, out.byteOffset, length >>> 2);
    for (let i = 0; i < words.length; i++)
        words[i] = next();
    for (let i = words.length * 4; i < length; i++)
        out[i] = next() & 0xff;
    return out;
}
/** Seeded ±1 f32 values, `length` of them. */
export function randomSigns(seed, length) {
    const next = mulberry32(seed);
    const out = new Float32Array(length);
    for (let i = 0; i < length; i++)
        out[i] = next() & 1 ? 1 : -1;
    return out;
}
//# sourceMappingURL=random.js.map