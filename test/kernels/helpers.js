import { mulberry32, randomBytes } from "../../src/kernels/random.js";
import { RowArena } from "../../src/kernels/row-arena.js";
/** n random rows of dimBits bits (padding bits zero), appended to a new arena. */
export function randomArena(kernels, n, dimBits, seed) {
    const arena = new RowArena(kernels.heap, dimBits, Math.max(1, n));
    const bytes = randomBytes(seed, n * arena.rowBytes);
    for (let r = 0; r < n; r++)
        clearPadding(bytes.subarray(r * arena.rowBytes, (r + 1) * arena.rowBytes), dimBits);
    arena.append(bytes);
    return arena;
}
/** A random query row in shared memory (padding zero); returns its pointer. */
export function randomQuery(kernels, dimBits, words, seed) {
    const bytes = randomBytes(seed, words * 8);
    clearPadding(bytes, dimBits);
    return kernels.heap.put(bytes);
}
export function clearPadding(row, dimBits) {
    for (let b = dimBits; b < row.length * 8; b++)
        row[b >> 3] &= ~(1 << (b & 7));
}
/** A row that duplicates rows so ties are certain: row i copies row i % period. */
export function duplicateRows(kernels, arena, period) {
    const bytes = kernels.heap.bytes();
    for (let r = period; r < arena.count; r++)
        bytes.copyWithin(arena.rowPtr(r), arena.rowPtr(r % period), arena.rowPtr(r % period) + arena.rowBytes);
}
export { mulberry32 };
//# sourceMappingURL=helpers.js.map