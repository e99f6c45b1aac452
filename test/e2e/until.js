/** @module until — wait for a condition or retry a read (writes become visible within milliseconds; tests wait instead of sleeping), and the cosine the e2e tests rank by. */
/** Poll `get` until `check` holds; fails (rather than hangs) after `limitMs`. */
export async function until(what, get, check, limitMs = 10_000) {
    const deadline = Date.now() + limitMs;
    for (;;) {
        const v = await get();
        if (check(v))
            return v;
        if (Date.now() > deadline)
            throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
        await new Promise((r) => setTimeout(r, 30));
    }
}
/** Retry `fn` until it stops throwing (writes become visible to reads within milliseconds). */
export async function eventually(fn, timeoutMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        try {
            return await fn();
        }
        catch (err) {
            if (Date.now() > deadline)
                throw err;
            await new Promise((r) => setTimeout(r, 25));
        }
    }
}
/** Cosine of two float vectors (the reference the e2e tests rank by). */
export function cosine(a, b) {
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let i = 0; i < a.length; i++) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    return dot / Math.sqrt(na * nb);
}
//# sourceMappingURL=until.js.map