/**
 * @module import-source — the rows of a bulk import file: Parquet (Pinecone's import schema: id, values, sparse_values,
 * metadata; read with hyparquet, uncompressed or snappy) or NDJSON (one {id, values, sparseValues?, metadata?} per line),
 * each row numbered (1-based: the NDJSON line, the Parquet row) and checked as an upsert would check it.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { parquetMetadataAsync, parquetReadObjects, parquetSchema, type AsyncBuffer, type FileMetaData, type SchemaTree } from "hyparquet";
import { validateMetadata } from "../engine/filter/metadata.js";
import { checkId, checkValues } from "../engine/input-checks.js";
import { checkSparse, sparseBytes } from "../engine/sparse.js";
import type { VectorInput } from "../engine/collection.js";
import { SvcError } from "../errors.js";
import { checkValue } from "../safe-values.js";

/** Where an import's bytes are: a local file (resolved, inside the import root) or bytes fetched from a URL. */
export type ImportBytes = { path: string; size: number } | { buffer: Buffer };

/** One row as read: its 1-based number and the vector, or why it cannot be imported. */
export type ImportRow = { row: number; vector: VectorInput } | { row: number; error: string };

/** Rows per batch the readers yield (and the import upserts). */
export const IMPORT_BATCH = 500;
/** An NDJSON line longer than this is a bad row (a 20,000-d vector as JSON is ~400 KB). */
const MAX_LINE = 4 << 20;

export interface RowSource {
  format: "parquet" | "ndjson";
  /** Rows in the file when the format says so up front (Parquet), else null. */
  rows: number | null;
  /** The rows in batches, in file order, each checked against `dimension`. */
  batches(dimension: number): AsyncIterable<ImportRow[]>;
}

const PARQUET_MAGIC = Buffer.from("PAR1");

/** Open the bytes as Parquet (they start with PAR1) or NDJSON; a Parquet file with the wrong schema is E_IMPORT_SCHEMA here, before any row is read. */
export async function openSource(bytes: ImportBytes): Promise<RowSource> {
  const head = "buffer" in bytes ? bytes.buffer.subarray(0, 4) : await readHead(bytes.path);
  if (head.equals(PARQUET_MAGIC)) return openParquet(asyncBuffer(bytes));
  return ndjson(bytes);
}

async function readHead(path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of createReadStream(path, { start: 0, end: 3 })) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function asyncBuffer(bytes: ImportBytes): AsyncBuffer {
  if ("buffer" in bytes) {
    const b = bytes.buffer;
    return {
      byteLength: b.length,
      slice: (start, end) => b.buffer.slice(b.byteOffset + start, b.byteOffset + (end ?? b.length)) as ArrayBuffer,
    };
  }
  const path = bytes.path;
  return {
    byteLength: bytes.size,
    async slice(start, end) {
      const chunks: Buffer[] = [];
      if (end !== undefined && end <= start) return new ArrayBuffer(0);
      for await (const c of createReadStream(path, { start, end: end === undefined ? undefined : end - 1 })) chunks.push(c as Buffer);
      const all = Buffer.concat(chunks);
      return all.buffer.slice(all.byteOffset, all.byteOffset + all.length) as ArrayBuffer;
    },
  };
}

/** One vector from a row's fields, checked as an upsert checks it (the error names the field, e.g. "values[3]"). */
function toVector(fields: { id: unknown; values: unknown; sparseValues?: unknown; metadata?: unknown }, dimension: number): VectorInput {
  const id = checkId(fields.id, "id");
  const values = checkValues(fields.values as ArrayLike<number> | undefined, "values", dimension);
  const metadata = fields.metadata === undefined || fields.metadata === null ? undefined : validateMetadata(fields.metadata, "metadata");
  const payload =
    fields.sparseValues === undefined || fields.sparseValues === null
      ? undefined
      : sparseBytes(checkSparse(fields.sparseValues, "sparse_values"));
  return { id, values, ...(metadata === undefined ? {} : { metadata }), ...(payload === undefined ? {} : { payload }) };
}

function rowOf(row: number, make: () => VectorInput): ImportRow {
  try {
    return { row, vector: make() };
  } catch (err) {
    return {
      row,
      error: err instanceof SvcError ? `${err.field === undefined ? "" : `${err.field}: `}${err.message}` : (err as Error).message,
    };
  }
}

// ---- NDJSON ----------------------------------------------------------------------------

function ndjson(bytes: ImportBytes): RowSource {
  return {
    format: "ndjson",
    rows: null,
    async *batches(dimension) {
      const input = "buffer" in bytes ? Readable.from([bytes.buffer]) : createReadStream(bytes.path);
      const lines = createInterface({ input, crlfDelay: Infinity });
      let batch: ImportRow[] = [];
      let line = 0;
      try {
        for await (const text of lines) {
          line++;
          if (text.trim() === "") continue;
          batch.push(rowOf(line, () => toVector(parseLine(text), dimension)));
          if (batch.length >= IMPORT_BATCH) {
            yield batch;
            batch = [];
          }
        }
      } finally {
        lines.close();
        input.destroy();
      }
      if (batch.length > 0) yield batch;
    },
  };
}

function parseLine(text: string): { id: unknown; values: unknown; sparseValues?: unknown; metadata?: unknown } {
  if (text.length > MAX_LINE) throw new SvcError("E_BAD_REQUEST", `the line is longer than ${MAX_LINE} characters`, { field: "line" });
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new SvcError("E_BODY", `not JSON: ${(err as Error).message}`, { field: "line" });
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new SvcError("E_BAD_REQUEST", "a line must be a JSON object {id, values, sparseValues?, metadata?}", { field: "line" });
  checkValue(v); // depth and reserved keys (__proto__, constructor, prototype)
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!["id", "values", "sparseValues", "sparse_values", "metadata"].includes(k))
      throw new SvcError("E_BAD_REQUEST", `unknown field '${k.slice(0, 40)}' (a line holds id, values, sparseValues, metadata)`, {
        field: k.slice(0, 40),
      });
  }
  return { id: o.id, values: o.values, sparseValues: o.sparseValues ?? o.sparse_values, metadata: o.metadata };
}

// ---- Parquet ---------------------------------------------------------------------------

const COLUMNS = ["id", "values", "sparse_values", "metadata"] as const;

/** The leaves (primitive columns) under a schema node. */
function leaves(node: SchemaTree): SchemaTree[] {
  return node.children.length === 0 ? [node] : node.children.flatMap(leaves);
}

const isString = (n: SchemaTree) => n.element.type === "BYTE_ARRAY" && n.children.length === 0;
const isFloatList = (n: SchemaTree) => {
  const l = leaves(n);
  return n.children.length > 0 && l.length === 1 && (l[0]!.element.type === "FLOAT" || l[0]!.element.type === "DOUBLE");
};
const isIntList = (n: SchemaTree) => {
  const l = leaves(n);
  return n.children.length > 0 && l.length === 1 && (l[0]!.element.type === "INT32" || l[0]!.element.type === "INT64");
};

/** E_IMPORT_SCHEMA unless the columns are id (string), values (list of float), and optionally sparse_values {indices: list of int, values: list of float} and metadata (JSON string). */
export function checkParquetSchema(meta: FileMetaData): void {
  const root = parquetSchema(meta);
  const bad = (msg: string, field: string) =>
    new SvcError(
      "E_IMPORT_SCHEMA",
      `Parquet schema: ${msg} (expected columns id: string, values: list<float>, sparse_values: struct<indices: list<int>, values: list<float>>, metadata: string with a JSON object)`,
      { field },
    );
  const byName = new Map(root.children.map((c) => [c.element.name, c]));
  for (const name of byName.keys())
    if (!(COLUMNS as readonly string[]).includes(name)) throw bad(`unknown column '${name.slice(0, 60)}'`, name.slice(0, 60));
  const id = byName.get("id");
  if (id === undefined) throw bad("no column 'id'", "id");
  if (!isString(id)) throw bad(`column 'id' is ${id.element.type ?? "a group"}, not a string`, "id");
  const values = byName.get("values");
  if (values === undefined) throw bad("no column 'values'", "values");
  if (!isFloatList(values)) throw bad("column 'values' is not a list of float or double", "values");
  const sparse = byName.get("sparse_values");
  if (sparse !== undefined) {
    const parts = new Map(sparse.children.map((c) => [c.element.name, c]));
    const ix = parts.get("indices");
    const vs = parts.get("values");
    if (ix === undefined || vs === undefined || sparse.children.length !== 2 || !isIntList(ix) || !isFloatList(vs))
      throw bad("column 'sparse_values' is not a struct of indices (list<int>) and values (list<float>)", "sparse_values");
  }
  const metadata = byName.get("metadata");
  if (metadata !== undefined && !isString(metadata))
    throw bad(`column 'metadata' is ${metadata.element.type ?? "a group"}, not a string holding a JSON object`, "metadata");
}

async function openParquet(file: AsyncBuffer): Promise<RowSource> {
  let meta: FileMetaData;
  try {
    meta = await parquetMetadataAsync(file);
  } catch (err) {
    throw new SvcError("E_IMPORT_SCHEMA", `not a readable Parquet file: ${(err as Error).message}`, { field: "uri" });
  }
  checkParquetSchema(meta);
  const total = Number(meta.num_rows);
  return {
    format: "parquet",
    rows: total,
    async *batches(dimension) {
      for (let start = 0; start < total; start += IMPORT_BATCH) {
        const end = Math.min(total, start + IMPORT_BATCH);
        let objects: Record<string, unknown>[];
        try {
          objects = (await parquetReadObjects({ file, metadata: meta, rowStart: start, rowEnd: end })) as Record<string, unknown>[];
        } catch (err) {
          // A page that cannot be decoded (an unsupported codec, damage): every row of the batch is bad, named by its number.
          yield Array.from({ length: end - start }, (_, i) => ({
            row: start + i + 1,
            error: `cannot be decoded: ${(err as Error).message}`,
          }));
          continue;
        }
        yield objects.map((o, i) => rowOf(start + i + 1, () => toVector(parquetFields(o), dimension)));
      }
    },
  };
}

function parquetFields(o: Record<string, unknown>): { id: unknown; values: unknown; sparseValues?: unknown; metadata?: unknown } {
  let metadata: unknown;
  if (typeof o.metadata === "string" && o.metadata !== "") {
    try {
      metadata = JSON.parse(o.metadata);
    } catch (err) {
      throw new SvcError("E_METADATA", `metadata is not JSON: ${(err as Error).message}`, { field: "metadata" });
    }
    checkValue(metadata, "metadata");
  }
  const s = o.sparse_values as { indices?: unknown; values?: unknown } | null | undefined;
  const sparseValues =
    s === null || s === undefined || (s.indices == null && s.values == null)
      ? undefined
      : { indices: numbers(s.indices), values: numbers(s.values) };
  return { id: o.id, values: numbers(o.values), sparseValues, metadata };
}

/** A Parquet list as numbers (INT64 arrives as bigint). */
function numbers(v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  return v.map((x) => (typeof x === "bigint" ? Number(x) : x));
}
