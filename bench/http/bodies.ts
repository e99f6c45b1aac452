/** @module bodies — request bodies encoded before any clock starts: upsert batches in each wire format, and query bodies. */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import protobuf from "protobufjs";
import { fileURLToPath } from "node:url";
import type { ClusteredVectors } from "../engine/vectors.js";

export type Format = "json" | "msgpack" | "msgpack-f32" | "protobuf";

export const FORMATS: Record<Format, { label: string; contentType: string }> = {
  json: { label: "JSON (values: numbers)", contentType: "application/json" },
  msgpack: { label: "msgpack (values: array of float64)", contentType: "application/msgpack" },
  "msgpack-f32": { label: "msgpack (values: bin of float32 LE)", contentType: "application/msgpack" },
  protobuf: { label: "protobuf (UpsertRequest, packed float)", contentType: "application/x-protobuf" },
};

const PROTO = fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url));
let upsertType: protobuf.Type | null = null;

function encodeBatch(format: Format, first: number, values: Float32Array, dim: number): Buffer {
  const count = values.length / dim;
  const row = (j: number) => values.subarray(j * dim, (j + 1) * dim);
  const vectors = (f: (v: Float32Array) => unknown) =>
    Array.from({ length: count }, (_, j) => ({ id: String(first + j), values: f(row(j)) }));
  switch (format) {
    case "json":
      return Buffer.from(JSON.stringify({ vectors: vectors((v) => Array.from(v)) }));
    case "msgpack":
    case "msgpack-f32": {
      const f =
        format === "msgpack"
          ? (v: Float32Array) => Array.from(v)
          : (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      const out = msgpackEncode({ vectors: vectors(f) });
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    }
    case "protobuf":
      upsertType ??= protobuf.loadSync(PROTO).lookupType("svc.v1.UpsertRequest");
      return Buffer.from(upsertType.encode({ vectors: vectors((v) => v) }).finish());
  }
}

/** Vectors [start, start + count) in one body (ids are the row numbers); `onRow(i, values, offset)` sees each generated row. */
export function upsertBody(
  format: Format,
  data: Pick<ClusteredVectors, "dim" | "write">,
  start: number,
  count: number,
  onRow?: (i: number, values: Float32Array, offset: number) => void,
): Buffer {
  const values = new Float32Array(count * data.dim);
  for (let j = 0; j < count; j++) {
    data.write(start + j, values, j * data.dim);
    onRow?.(start + j, values, j * data.dim);
  }
  return encodeBatch(format, start, values, data.dim);
}

/** Vectors [0, n) in batches of `batch`, one encoded body per batch (ids are the row numbers). */
export function upsertBodies(format: Format, data: ClusteredVectors, n: number, batch: number): Buffer[] {
  const out: Buffer[] = [];
  for (let start = 0; start < n; start += batch) out.push(upsertBody(format, data, start, Math.min(batch, n - start)));
  return out;
}

/** How a top-10 query body is sent: JSON numbers (as Pinecone clients send it), JSON with the vector as base64 of float32 LE (svc extension), or msgpack with it as a float32 LE bin. */
export type QueryCodec = "json" | "base64" | "msgpack";

/** A top-k query body; `exact` asks for the exact scan instead of the approximate index. */
export function queryBody(vector: Float32Array, topK = 10, o: { exact?: boolean; codec?: QueryCodec } = {}): Buffer {
  const extra = o.exact ? { exact: true } : {};
  if (o.codec === "msgpack") {
    const out = msgpackEncode({ vector: new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), topK, ...extra });
    return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  }
  if (o.codec === "base64")
    return Buffer.from(
      JSON.stringify({ vector: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64"), topK, ...extra }),
    );
  return Buffer.from(JSON.stringify({ vector: Array.from(vector), topK, ...extra }));
}
