/** @module metadata — the metadata value model (Pinecone rules), its validation and the update merge. */
import { SvcError } from "../../errors.js";
import { checkKey } from "../../safe-values.js";

/** A metadata value: string, finite number, boolean or list of strings. */
export type MetaValue = string | number | boolean | string[];
/** One row's metadata. Keys are non-empty and never start with "$" (that prefix is for filter operators). */
export type Metadata = Record<string, MetaValue>;

/** Limit on one row's metadata: UTF-8 bytes of its JSON encoding (Pinecone's 40 KB). */
export const MAX_METADATA_BYTES = 40 * 1024;

/**
 * Validate user metadata; `field` is the path prefix for errors, e.g. "vectors[3].metadata".
 * Allowed values: string, finite number, boolean, list of strings (Pinecone rules). Rejected
 * with E_METADATA naming the full path ("vectors[3].metadata.genre", "...tags[2]"): nested
 * objects, null, NaN/Infinity, lists holding non-strings, empty keys, keys starting with "$",
 * reserved keys ("__proto__", "constructor", "prototype": checkKey in src/safe-values.ts),
 * and a whole object whose JSON encoding exceeds MAX_METADATA_BYTES.
 * `undefined` or `null` metadata means none and yields {}; a key whose value is `undefined`
 * is dropped (JSON would drop it too). Returns a fresh object (lists are copied), so later
 * changes to the input never reach the stored row.
 */
export function validateMetadata(value: unknown, field: string): Metadata {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new SvcError(
      "E_METADATA",
      `metadata must be an object of string, number, boolean or string-list values, got ${describe(value)}`,
      { field },
    );
  }
  const out: Metadata = {};
  // Upper bound of the JSON size in bytes: a UTF-16 unit is at most 6 JSON bytes ("\u001f");
  // only when the bound passes the limit is the exact size computed.
  let bound = 2;
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    const path = keyPath(field, key);
    if (key.length === 0) throw new SvcError("E_METADATA", "metadata keys must be non-empty", { field: path });
    if (key.charCodeAt(0) === 36 /* $ */)
      throw new SvcError("E_METADATA", `metadata key "${key}" must not start with "$" (reserved for filter operators)`, { field: path });
    checkKey(key, path);
    bound += key.length * 6 + 4;
    switch (typeof v) {
      case "string":
        bound += v.length * 6 + 2;
        out[key] = v;
        break;
      case "number":
        if (!Number.isFinite(v)) throw new SvcError("E_METADATA", `metadata numbers must be finite, got ${v}`, { field: path });
        bound += 24;
        out[key] = v;
        break;
      case "boolean":
        bound += 5;
        out[key] = v;
        break;
      case "object": {
        if (v === null) throw new SvcError("E_METADATA", "metadata values must not be null; omit the key instead", { field: path });
        if (!Array.isArray(v))
          throw new SvcError("E_METADATA", "nested objects are not allowed in metadata; use a string, number, boolean or list of strings", {
            field: path,
          });
        const list: string[] = new Array<string>(v.length);
        for (let i = 0; i < v.length; i++) {
          const s: unknown = v[i];
          if (typeof s !== "string")
            throw new SvcError("E_METADATA", `metadata lists may hold only strings, got ${describe(s)}`, { field: `${path}[${i}]` });
          bound += s.length * 6 + 3;
          list[i] = s;
        }
        bound += 2;
        out[key] = list;
        break;
      }
      default:
        throw new SvcError(
          "E_METADATA",
          `metadata values must be a string, finite number, boolean or list of strings, got ${describe(v)}`,
          { field: path },
        );
    }
  }
  if (bound > MAX_METADATA_BYTES) {
    const bytes = Buffer.byteLength(JSON.stringify(out), "utf8");
    if (bytes > MAX_METADATA_BYTES)
      throw new SvcError("E_METADATA", `metadata is ${bytes} bytes as JSON; the limit is ${MAX_METADATA_BYTES}`, { field });
  }
  return out;
}

/**
 * update(setMetadata): keys of `patch` overwrite those of `base`; other keys of base stay.
 * Returns a new object; neither input is changed. Never throws (it runs when a committed
 * update is applied), so the size limit is enforced on the patch at request time only.
 */
export function mergeMetadata(base: Metadata, patch: Metadata): Metadata {
  // Spread copies own keys with define semantics, so even a "__proto__" key logged before such keys were refused stays a plain key.
  return { ...base, ...patch };
}

/** An own-property read: inherited names ("constructor", "toString") are never metadata. */
export function ownValue(meta: Metadata, key: string): MetaValue | undefined {
  return Object.prototype.hasOwnProperty.call(meta, key) ? meta[key] : undefined;
}

function keyPath(field: string, key: string): string {
  return key.length === 0 ? `${field}[""]` : `${field}.${key}`;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number") return String(v);
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}
