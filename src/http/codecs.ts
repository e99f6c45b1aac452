/** @module codecs — request bodies in and responses out as JSON, msgpack or protobuf (src/http/proto/vectors.proto). */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import protobuf from "protobufjs";
import { fileURLToPath } from "node:url";
import { SvcError } from "../errors.js";
import { checkValue, safeDecoder, setOwn } from "../safe-values.js";
import { readQueryJson, readUpsertJson } from "./upsert-json.js";

export const JSON_TYPE = "application/json";
export const MSGPACK_TYPE = "application/msgpack";
export const PROTOBUF_TYPE = "application/x-protobuf";

export type Codec = "json" | "msgpack" | "protobuf";

/** Message names in vectors.proto for a route that speaks protobuf. */
export interface ProtoMessages {
  request?: string;
  response: string;
}

// From src/http/ and from dist/http/ alike, ../../src/http/proto is the source folder.
const PROTO_PATH = fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url));
let root: protobuf.Root | null = null;
const msgpackDecoder = safeDecoder({ useBigInt64: false });

function protoType(name: string): protobuf.Type {
  root ??= protobuf.loadSync(PROTO_PATH);
  return root.lookupType(`svc.v1.${name}`);
}

/**
 * The codec a Content-Type names; null when it names none we speak. A missing header names none: a body must say
 * it is JSON, so a cross-site form or `text/plain` request (no CORS preflight) can never be read as one.
 */
export function requestCodec(contentType: string): Codec | null {
  const type = contentType.split(";", 1)[0]!.trim().toLowerCase();
  if (type === JSON_TYPE || type.endsWith("+json")) return "json";
  if (type === MSGPACK_TYPE || type === "application/x-msgpack" || type === "application/vnd.msgpack") return "msgpack";
  if (type === PROTOBUF_TYPE || type === "application/protobuf" || type === "application/vnd.google.protobuf") return "protobuf";
  return null;
}

/** The response codec Accept asks for (first listed wins); JSON when Accept names nothing else we speak. */
export function responseCodec(accept: string, binary: boolean): Codec {
  if (!binary || accept === "") return "json";
  for (const part of accept.split(",")) {
    const type = part.split(";", 1)[0]!.trim().toLowerCase();
    if (type === JSON_TYPE) return "json";
    if (type === MSGPACK_TYPE || type === "application/x-msgpack" || type === "application/vnd.msgpack") return "msgpack";
    if (type === PROTOBUF_TYPE || type === "application/protobuf") return "protobuf";
  }
  return "json";
}

export const CONTENT_TYPE: Record<Codec, string> = { json: JSON_TYPE, msgpack: MSGPACK_TYPE, protobuf: PROTOBUF_TYPE };

/**
 * Decode a body to the same plain object whatever the codec (protobuf fields become the
 * camelCase names of the JSON body, Structs become objects). An empty body is undefined.
 * `floats`: a JSON upsert body's vector values ("upsert") or a JSON query body's `vector` ("query") are read
 * straight into float32 (upsert-json.ts).
 * Every decoded body passes checkValue (src/safe-values.ts), so no route sees one nested over
 * MAX_DEPTH levels (E_TOO_DEEP) or holding a reserved key such as "__proto__" (E_METADATA).
 */
export function decodeBody(codec: Codec, body: Buffer, proto: ProtoMessages | undefined, floats?: "upsert" | "query"): unknown {
  if (body.length === 0) return undefined;
  const fast = codec !== "json" || floats === undefined ? null : floats === "upsert" ? readUpsertJson(body) : readQueryJson(body);
  const value = fast ?? decodeBytes(codec, body, proto);
  checkValue(value);
  return value;
}

function decodeBytes(codec: Codec, body: Buffer, proto: ProtoMessages | undefined): unknown {
  try {
    switch (codec) {
      case "json":
        return JSON.parse(body.toString("utf8"));
      case "msgpack":
        return msgpackDecoder.decode(body);
      case "protobuf": {
        const type = protoType(proto!.request!);
        return fromProto(type.toObject(type.decode(body), { longs: Number, defaults: false, arrays: false }));
      }
    }
  } catch (err) {
    throw new SvcError("E_BODY", `malformed ${codec} body: ${(err as Error).message}`, { field: "body", cause: err });
  }
}

export function encodeBody(codec: Codec, value: unknown, proto: ProtoMessages | undefined): Buffer {
  switch (codec) {
    case "json":
      return Buffer.from(JSON.stringify(value));
    case "msgpack": {
      const out = msgpackEncode(value, { ignoreUndefined: true });
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    }
    case "protobuf": {
      const type = protoType(proto!.response);
      return Buffer.from(type.encode(type.fromObject(toProto(value) as Record<string, unknown>)).finish());
    }
  }
}

// ---- google.protobuf.Struct <-> plain objects ------------------------------------------------

type ProtoValue = {
  nullValue?: unknown;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: { fields?: Record<string, ProtoValue> };
  listValue?: { values?: ProtoValue[] };
};

const STRUCT_FIELDS = new Set(["metadata", "filter"]);

/** Replace every `metadata`/`filter` Struct in a decoded message by the object it encodes. */
function fromProto(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(fromProto);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (STRUCT_FIELDS.has(k)) setOwn(out, k, structToObject(x as { fields?: Record<string, ProtoValue> }));
    else if (k === "vectors" && !Array.isArray(x)) setOwn(out, k, mapValues(x as Record<string, unknown>, fromProto));
    else setOwn(out, k, fromProto(x));
  }
  return out;
}

function structToObject(s: { fields?: Record<string, ProtoValue> }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s.fields ?? {})) setOwn(out, k, valueToJs(v));
  return out;
}

function valueToJs(v: ProtoValue): unknown {
  if (v.numberValue !== undefined) return v.numberValue;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.structValue !== undefined) return structToObject(v.structValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(valueToJs);
  return null;
}

function toProto(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toProto);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    if (STRUCT_FIELDS.has(k)) out[k] = objectToStruct(x as Record<string, unknown>);
    else if (k === "vectors" && !Array.isArray(x)) out[k] = mapValues(x as Record<string, unknown>, toProto);
    else out[k] = toProto(x);
  }
  return out;
}

/** A proto map (FetchResponse.vectors): its keys are ids, never field names. */
function mapValues(m: Record<string, unknown>, f: (v: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [id, v] of Object.entries(m)) setOwn(out, id, f(v));
  return out;
}

function objectToStruct(o: Record<string, unknown>): { fields: Record<string, ProtoValue> } {
  const fields: Record<string, ProtoValue> = {};
  for (const [k, v] of Object.entries(o)) fields[k] = jsToValue(v);
  return { fields };
}

function jsToValue(v: unknown): ProtoValue {
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsToValue) } };
  if (typeof v === "object" && v !== null) return { structValue: objectToStruct(v as Record<string, unknown>) };
  return { nullValue: 0 };
}
