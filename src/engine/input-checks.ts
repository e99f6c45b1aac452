/** @module input-checks — the checks of a collection's inputs (ids, namespaces, field names, payloads, float values, packed bits, topK) and the limits they enforce; each failure is a stable code naming the field. */
import { SvcError } from "../errors.js";
import { MAX_ID_BYTES, MAX_TOP_K } from "../input-rules.js";

export { MAX_ID_BYTES } from "../input-rules.js";
/** Largest payload of one row (opaque bytes stored with it, not indexed). */
export const MAX_PAYLOAD_BYTES = 1 << 20;
/** Largest `limit` of order(). */
export const MAX_ORDER_LIMIT = 10_000;

/** Bytes of one stored row: float32 values (cosine), or the packed bits padded to 16 bytes (hamming). */
export function rowBytesOf(dimension: number, cosine: boolean): number {
  return cosine ? dimension * 4 : Math.ceil(dimension / 128) * 16;
}

export function checkNamespace(ns: unknown, field = "namespace"): asserts ns is string {
  if (typeof ns !== "string" || Buffer.byteLength(ns) > MAX_ID_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field} must be a string of at most ${MAX_ID_BYTES} bytes`, { field });
}

export function checkField(name: unknown, field: string): asserts name is string {
  if (typeof name !== "string" || name.length === 0)
    throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty metadata field name`, { field });
}

/**
 * A payload as stored: null for none (undefined or null), else a copy of the bytes (the op
 * waits in the apply queue after the acknowledgement, and the caller may reuse its buffer).
 */
export function checkPayload(payload: unknown, field: string): Uint8Array | null {
  if (payload === undefined || payload === null) return null;
  if (!(payload instanceof Uint8Array)) throw new SvcError("E_BAD_REQUEST", `${field} must be bytes (a Uint8Array)`, { field });
  if (payload.byteLength > MAX_PAYLOAD_BYTES)
    throw new SvcError("E_BAD_REQUEST", `${field} is ${payload.byteLength} bytes; the limit is ${MAX_PAYLOAD_BYTES}`, { field });
  return new Uint8Array(payload);
}

export function checkId(id: unknown, field: string): string {
  if (typeof id !== "string" || id.length === 0 || Buffer.byteLength(id) > MAX_ID_BYTES) {
    throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty string of at most ${MAX_ID_BYTES} bytes`, { field });
  }
  return id;
}

export function checkTopK(k: number): void {
  if (!Number.isInteger(k) || k < 1 || k > MAX_TOP_K)
    throw new SvcError("E_TOP_K", `topK must be an integer in [1, ${MAX_TOP_K}], got ${k}`, { field: "topK" });
}

/** Values of the right length, as float32 (not yet checked for NaN/Infinity: see checkFinite). */
export function checkLength(values: ArrayLike<number> | undefined, field: string, dimension: number): Float32Array {
  if (values === undefined || values === null || typeof values !== "object" || typeof values.length !== "number") {
    throw new SvcError("E_BAD_REQUEST", `${field} must be an array of ${dimension} numbers`, { field });
  }
  if (values.length !== dimension)
    throw new SvcError("E_DIMENSION", `${field} has ${values.length} values, the collection has dimension ${dimension}`, { field });
  return values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>);
}

/**
 * One monomorphic pass over a batch of float32 rows: no NaN/Infinity (x - x is 0 only for
 * finite x; a float64 value too large for float32 became Infinity on conversion) and no
 * all-zero vector, which has no direction for cosine.
 */
export function checkFinite(f32: Float32Array, field: (i: number) => string, dim: number): void {
  for (let i = 0, o = 0; o < f32.length; i++, o += dim) {
    // four accumulators: one float add chain per lane instead of one long dependency chain
    let n0 = 0,
      n1 = 0,
      n2 = 0,
      n3 = 0,
      bad = 0;
    let j = o;
    for (const end4 = o + (dim & ~3); j < end4; j += 4) {
      const x0 = f32[j]!,
        x1 = f32[j + 1]!,
        x2 = f32[j + 2]!,
        x3 = f32[j + 3]!;
      bad += x0 - x0 + (x1 - x1) + (x2 - x2) + (x3 - x3);
      n0 += x0 * x0;
      n1 += x1 * x1;
      n2 += x2 * x2;
      n3 += x3 * x3;
    }
    for (; j < o + dim; j++) {
      const x = f32[j]!;
      bad += x - x;
      n0 += x * x;
    }
    const norm = n0 + n1 + n2 + n3;
    if (bad !== 0) {
      const j = f32.subarray(o, o + dim).findIndex((x) => !Number.isFinite(x));
      throw new SvcError("E_NON_FINITE", `${field(i)}[${j}] is not a finite float32`, { field: `${field(i)}[${j}]` });
    }
    if (norm === 0) throw new SvcError("E_BAD_REQUEST", `${field(i)} is all zeros; cosine needs a non-zero vector`, { field: field(i) });
  }
}

/** One float vector: the right length, finite, not all zeros. */
export function checkValues(values: ArrayLike<number> | undefined, field: string, dimension: number): Float32Array {
  const out = checkLength(values, field, dimension);
  checkFinite(out, () => field, dimension);
  return out;
}

/** Packed bits of a hamming collection (ceil(dimension / 8) bytes) as a stored row: padded, spare bits of the last byte cleared. */
export function checkBits(bits: Uint8Array | undefined, field: string, dimension: number): Uint8Array {
  const bytes = Math.ceil(dimension / 8);
  if (!(bits instanceof Uint8Array) || bits.byteLength !== bytes)
    throw new SvcError("E_DIMENSION", `${field} must be ${bytes} packed bytes (dimension ${dimension} bits)`, { field });
  const row = new Uint8Array(rowBytesOf(dimension, false));
  row.set(bits);
  if (dimension % 8 !== 0) row[bytes - 1]! &= (1 << (dimension % 8)) - 1;
  return row;
}
