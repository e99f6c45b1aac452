/**
 * @module sparse — sparse vectors (Pinecone's `sparseValues` / `sparseVector`): the input check, the bytes a
 * row keeps them in (its payload: u32 n, then n u32 indices ascending, then n float32 values, little-endian),
 * and the sparse dot product. An index row's payload is used for nothing else.
 */
import { SvcError } from "../errors.js";

/** Non-zero entries per sparse vector (Pinecone's limit for sparse-dense records). */
export const MAX_SPARSE_NNZ = 1000;
/** Non-zero entries per sparse vector of a sparse-only index (Pinecone's limit there). */
export const MAX_SPARSE_INDEX_NNZ = 2048;
const MAX_INDEX = 0xffff_ffff;

export interface SparseVector {
  /** Strictly ascending, each in [0, 2^32). */
  indices: Uint32Array;
  /** Finite float32, one per index. */
  values: Float32Array;
}

/**
 * `{indices, values}` checked: 1..`max` (default MAX_SPARSE_NNZ) entries, as many values as indices, indices integers in
 * [0, 2^32) strictly ascending (an unsorted or repeated index is refused, never reordered or summed), values
 * finite as float32. Errors name the offending element (`<field>.indices[3]`).
 */
export function checkSparse(v: unknown, field: string, max = MAX_SPARSE_NNZ): SparseVector {
  if (typeof v !== "object" || v === null || Array.isArray(v) || v instanceof Uint8Array)
    throw new SvcError("E_BAD_REQUEST", `${field} must be an object {indices, values}`, { field });
  const { indices, values } = v as Record<string, unknown>;
  if (!Array.isArray(indices))
    throw new SvcError("E_BAD_REQUEST", `${field}.indices must be an array of integers`, { field: `${field}.indices` });
  if (!Array.isArray(values))
    throw new SvcError("E_BAD_REQUEST", `${field}.values must be an array of numbers`, { field: `${field}.values` });
  if (indices.length === 0 || indices.length > max)
    throw new SvcError("E_BAD_REQUEST", `${field} must have 1..${max} entries, got ${indices.length}`, { field: `${field}.indices` });
  if (values.length !== indices.length)
    throw new SvcError(
      "E_BAD_REQUEST",
      `${field}.values has ${values.length} entries for ${indices.length} indices; give one value per index`,
      { field: `${field}.values` },
    );
  const out: SparseVector = { indices: new Uint32Array(indices.length), values: new Float32Array(values.length) };
  for (let i = 0; i < indices.length; i++) {
    const x = indices[i];
    const at = `${field}.indices[${i}]`;
    if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x > MAX_INDEX)
      throw new SvcError("E_BAD_REQUEST", `${at} must be an integer in [0, ${MAX_INDEX}]`, { field: at });
    if (i > 0 && x <= indices[i - 1]!) {
      throw new SvcError(
        "E_BAD_REQUEST",
        x === indices[i - 1]
          ? `${at} repeats index ${x}: each index at most once`
          : `${at} (${x}) is below the one before it: indices must be sorted ascending`,
        { field: at },
      );
    }
    out.indices[i] = x;
    const y = values[i];
    const vat = `${field}.values[${i}]`;
    if (typeof y !== "number") throw new SvcError("E_BAD_REQUEST", `${vat} must be a number`, { field: vat });
    out.values[i] = y;
    if (!Number.isFinite(out.values[i]!)) throw new SvcError("E_NON_FINITE", `${vat} must be finite as float32, got ${y}`, { field: vat });
  }
  return out;
}

/** The payload bytes of a sparse vector. */
export function sparseBytes(s: SparseVector): Uint8Array {
  const n = s.indices.length;
  const out = new Uint8Array(4 + 8 * n);
  const view = new DataView(out.buffer);
  view.setUint32(0, n, true);
  for (let i = 0; i < n; i++) {
    view.setUint32(4 + 4 * i, s.indices[i]!, true);
    view.setFloat32(4 + 4 * n + 4 * i, s.values[i]!, true);
  }
  return out;
}

/** A row's sparse vector from its payload; null for none (or bytes not in this layout). */
export function sparseOf(bytes: Uint8Array | null | undefined): SparseVector | null {
  if (bytes == null || bytes.byteLength < 4) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getUint32(0, true);
  if (bytes.byteLength !== 4 + 8 * n) return null;
  const s: SparseVector = { indices: new Uint32Array(n), values: new Float32Array(n) };
  for (let i = 0; i < n; i++) {
    s.indices[i] = view.getUint32(4 + 4 * i, true);
    s.values[i] = view.getFloat32(4 + 4 * n + 4 * i, true);
  }
  return s;
}

/** Sum of a.values[i] * b.values[j] over equal indices (both ascending: one merge pass). */
export function sparseDot(a: SparseVector, b: SparseVector): number {
  let i = 0;
  let j = 0;
  let sum = 0;
  while (i < a.indices.length && j < b.indices.length) {
    const x = a.indices[i]!;
    const y = b.indices[j]!;
    if (x === y) sum += a.values[i++]! * b.values[j++]!;
    else if (x < y) i++;
    else j++;
  }
  return sum;
}

/** As JSON (Pinecone's `sparseValues`). */
export function sparseJson(s: SparseVector): { indices: number[]; values: number[] } {
  return { indices: Array.from(s.indices), values: Array.from(s.values) };
}
