/** @module tools/fields — the zod schemas of the vector-index request fields, built from input-rules.ts; operation schemas (tools/index-ops.ts) are made of these. */
import { z } from "zod";
import {
  INDEX_NAME_RE,
  MAX_DIMENSION,
  MAX_FETCH_IDS,
  MAX_ID_BYTES,
  MAX_PAGE,
  MAX_TOP_K,
  MAX_UPSERT_VECTORS,
  METRICS,
  VECTOR_TYPES,
} from "../input-rules.js";

/**
 * The error code a field's refusal carries when it is not E_BAD_REQUEST (errors.ts), as zod metadata;
 * the OpenAPI document and the MCP input schema show it as `x-svc-code`. http/input.ts reads it.
 */
export const codeOf = (s: z.ZodType): string | undefined => z.globalRegistry.get(s)?.["x-svc-code"] as string | undefined;
const coded = <S extends z.ZodType>(s: S, code: string, description: string): S => s.meta({ description, "x-svc-code": code });

const fitsBytes = (s: string) => Buffer.byteLength(s) <= MAX_ID_BYTES;

export const indexName = z
  .string()
  .regex(INDEX_NAME_RE)
  .describe("1-45 lowercase letters, digits and '-', starting and ending with a letter or digit");
/** An index named in a path (an unknown or malformed one is 404, as the route finds none). */
export const indexRef = z.string().min(1).describe("index name");
export const vectorId = z.string().min(1).max(MAX_ID_BYTES).refine(fitsBytes, `at most ${MAX_ID_BYTES} bytes`);
export const namespace = z
  .string()
  .max(MAX_ID_BYTES)
  .refine(fitsBytes, `at most ${MAX_ID_BYTES} bytes`)
  .describe('Namespace; "" and "__default__" are the same (default)');
export const prefix = z.string().max(MAX_ID_BYTES).refine(fitsBytes, `at most ${MAX_ID_BYTES} bytes (the longest id)`);
export const paginationToken = z.string().describe("pagination.next of the previous page (opaque)");
export const topK = coded(z.number().int().min(1).max(MAX_TOP_K), "E_TOP_K", "default 10");
export const pageLimit = z.number().int().min(1).max(MAX_PAGE).describe("page size, default 100");
export const fetchIds = z.array(vectorId).min(1).max(MAX_FETCH_IDS).describe(`Repeat for each id (?ids=a&ids=b), at most ${MAX_FETCH_IDS}`);

export const filter = coded(
  z.record(z.string(), z.unknown()),
  "E_FILTER",
  "Metadata filter: {field: value | {$eq|$ne|$gt|$gte|$lt|$lte: v, $in|$nin: [..], $exists: bool}}, combined with $and / $or",
);
export const metadata = coded(
  z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])),
  "E_METADATA",
  "Values: string, finite number, boolean or list of strings; at most 40 KB as JSON",
);
/** Entry count, order and the index's nnz limit are checked by engine/sparse.ts checkSparse (the limit depends on the index). */
export const sparse = z
  .object({ indices: z.array(z.number().int().min(0).max(4294967295)), values: z.array(z.number()) })
  .describe(
    "Sparse vector: 1..1000 entries (2048 on a sparse index), indices integers in [0, 2^32) strictly ascending (unsorted or repeated: 400), one finite value per index",
  );

/**
 * A vector's values: an array of numbers, or (routes only) binary float32 (a msgpack bin, a Float32Array read by
 * http/upsert-json.ts) or base64 of little-endian float32 (svc extension, JSON). Lengths, finiteness and the dimension
 * are checked by the engine. One loop over a plain array (no zod per element: 1M numbers in a 1000 x 1024-d upsert).
 */
export const values = z
  .unknown()
  .superRefine((v, ctx) => {
    if (typeof v === "string" || ArrayBuffer.isView(v)) return;
    if (!Array.isArray(v)) {
      ctx.addIssue({ code: "custom", message: "must be an array of numbers (or base64 of little-endian float32)" });
      return;
    }
    for (let i = 0; i < v.length; i++)
      if (typeof v[i] !== "number") {
        ctx.addIssue({ code: "custom", message: "must be a number", path: [i] });
        return;
      }
  })
  .meta({
    anyOf: [
      { type: "array", items: { type: "number" } },
      { type: "string", contentEncoding: "binary", description: "msgpack only: a bin of little-endian float32" },
      {
        type: "string",
        contentEncoding: "base64",
        description: "svc extension (JSON): base64 (RFC 4648, padded) of little-endian float32; no per-number parsing",
      },
    ],
  });

/** Case-insensitive as the official client sends it (stored lowercase by memory/indexes.ts). */
const lower = (v: unknown) => (typeof v === "string" ? v.toLowerCase() : v);
export const metric = z.preprocess(lower, z.enum(METRICS, { error: `metric must be one of ${METRICS.join(", ")}` }));
export const vectorType = z.preprocess(lower, z.enum(VECTOR_TYPES, { error: `vector_type must be one of ${VECTOR_TYPES.join(", ")}` }));
export const dimension = coded(
  z.number().int().min(1).max(MAX_DIMENSION),
  "E_DIMENSION",
  "required for a dense index; left out (or null) for a sparse one",
);
export const deletionProtection = z.enum(["enabled", "disabled"]);
export const indexTags = z
  .record(z.string().max(80), z.string().max(120))
  .describe("string values of at most 120 characters, keys at most 80");

/** One vector of an upsert (the rules; `upsertVectors` checks a batch of them). */
export const vectorItem = z
  .object({ id: vectorId, values: values.optional(), sparseValues: sparse.optional(), metadata: metadata.nullish() })
  .describe(
    "values required on a dense index; a sparse index takes sparseValues and no values (dense values there, or sparseValues on a cosine/euclidean index: 400)",
  );
const vectorList = z.array(vectorItem).min(1).max(MAX_UPSERT_VECTORS);

/** True only for items `vectorItem` accepts (the common shape: id, values, flat metadata); anything else goes through zod. */
function plainItem(v: unknown): boolean {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const { id, values: vals, sparseValues, metadata: meta } = v as Record<string, unknown>;
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_ID_BYTES || (id.length > MAX_ID_BYTES / 3 && !fitsBytes(id)))
    return false;
  if (sparseValues !== undefined) return false;
  if (Array.isArray(vals)) {
    for (let i = 0; i < vals.length; i++) if (typeof vals[i] !== "number") return false;
  } else if (vals !== undefined && typeof vals !== "string" && !ArrayBuffer.isView(vals)) return false;
  if (meta === undefined || meta === null) return true;
  if (typeof meta !== "object" || Array.isArray(meta) || Object.getPrototypeOf(meta) !== Object.prototype) return false;
  for (const k in meta) {
    const x = (meta as Record<string, unknown>)[k];
    if (typeof x !== "string" && typeof x !== "boolean" && !(typeof x === "number" && Number.isFinite(x))) return false;
  }
  return true;
}

/**
 * The vectors of an upsert, 1..MAX_UPSERT_VECTORS `vectorItem`s. Checked in one loop: zod costs ~10 µs per item,
 * a third of the server's time for a 1000 x 1024-d msgpack upsert (~25 ms); an item `plainItem` cannot vouch for
 * is checked by `vectorItem` itself, so the verdict and the offending field are zod's. Documented as `vectorList`.
 */
export const upsertVectors = z
  .unknown()
  .superRefine((v, ctx) => {
    if (!Array.isArray(v) || v.length < 1 || v.length > MAX_UPSERT_VECTORS) {
      for (const issue of vectorList.safeParse(v).error?.issues ?? [])
        ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
      return;
    }
    for (let i = 0; i < v.length; i++) {
      if (plainItem(v[i])) continue;
      const r = vectorItem.safeParse(v[i]);
      if (!r.success) {
        for (const issue of r.error.issues) ctx.addIssue({ ...issue, path: [i, ...issue.path] } as z.core.$ZodRawIssue); // the issue as zod made it (a union's keeps its branches)
        return;
      }
    }
  })
  .meta(jsonOf(vectorList));

/**
 * Schemas that check with their own code but judge as another one does (upsertVectors as vectorList): where
 * http/input.ts looks for the error code of a refused field, it descends into the latter.
 */
export const judgedAs = new WeakMap<z.ZodType, z.ZodType>([[upsertVectors, vectorList]]);

function jsonOf(s: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}
