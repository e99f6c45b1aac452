/**
 * @module safe-values — untrusted structured values: the one input check every write path runs
 * (nesting depth, reserved keys), and the decoders that read stored msgpack and JSON so that a
 * "__proto__" key written before that check existed never breaks a read nor changes a prototype.
 */
import { DecodeError, Decoder } from "@msgpack/msgpack";
import { SvcError } from "./errors.js";

/** Most objects/arrays nested in one another in any input value; the value (a request body) is level 1. */
export const MAX_DEPTH = 32;

/** Object keys no input may carry: they name or reach an object's prototype in JavaScript. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Where the safe msgpack decoder puts the value of a "__proto__" map key: under this symbol,
 * which Object.keys, for-in, JSON.stringify and the msgpack encoder all skip, so stored data
 * holding such a key reads back without it; checkValue refuses an input object holding it.
 */
export const PROTO_KEY: unique symbol = Symbol("msgpack __proto__ key");

/** `field.key`, or `key` at the root. */
export function childPath(field: string, key: string): string {
  return field === "" ? key : `${field}.${key}`;
}

/** Throws E_METADATA naming `path` when `key` is reserved. */
export function checkKey(key: string, path: string): void {
  if (RESERVED_KEYS.has(key)) throw reserved(key, path);
}

/**
 * The one check of a decoded input value (a request body, MCP tool arguments, a record of an
 * imported container, a line of a directory import, a board JSON upload): no object or array
 * nested deeper than MAX_DEPTH (E_TOO_DEEP) and no reserved key at any depth (E_METADATA), each
 * naming the path of the offending part, e.g. "items[0].meta.__proto__". `field` is the path of
 * `value` itself ("" for a whole body). Typed arrays and buffers are leaves.
 */
export function checkValue(value: unknown, field = ""): void {
  walk(value, field, 1);
}

function walk(v: unknown, path: string, depth: number): void {
  if (typeof v !== "object" || v === null || ArrayBuffer.isView(v)) return;
  if (depth > MAX_DEPTH) {
    throw new SvcError("E_TOO_DEEP", `values may nest at most ${MAX_DEPTH} objects or arrays deep (the body is level 1)`, {
      field: path === "" ? "body" : path,
    });
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x === "object" && x !== null) walk(x, `${path}[${i}]`, depth + 1);
    }
    return;
  }
  if (Object.prototype.hasOwnProperty.call(v, PROTO_KEY)) throw reserved("__proto__", childPath(path, "__proto__"));
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const at = childPath(path, key);
    checkKey(key, at);
    const x = o[key];
    if (typeof x === "object" && x !== null) walk(x, at, depth + 1);
  }
}

function reserved(key: string, path: string): SvcError {
  return new SvcError("E_METADATA", `the key "${key}" is reserved (it reaches a JavaScript object's prototype); use another name`, {
    field: path === "" ? "body" : path,
  });
}

/** `o[key] = v` as a plain own property even for "__proto__" (assignment would set the prototype instead). */
export function setOwn(o: Record<string, unknown>, key: string, v: unknown): void {
  if (key === "__proto__") Object.defineProperty(o, key, { value: v, enumerable: true, writable: true, configurable: true });
  else o[key] = v;
}

// ---- decoding stored data ----------------------------------------------------------------------

interface KeyDecoder {
  canBeCached(byteLength: number): boolean;
  decode(bytes: Uint8Array, inputOffset: number, byteLength: number): string;
}

const PROTO_BYTES = Buffer.from("__proto__");
const utf8 = new TextDecoder();
// The library's shared key cache (not exported, but every Decoder holds it); keys it would cache stay cached.
const sharedKeys = (new Decoder() as unknown as { keyDecoder: KeyDecoder | null }).keyDecoder;

/**
 * Map keys decode as the library decodes them, except "__proto__" (which the library refuses,
 * failing the whole value), which becomes PROTO_KEY.
 */
const keyDecoder: KeyDecoder = {
  canBeCached: (n) => n > 0,
  decode(bytes, at, n) {
    if (n === PROTO_BYTES.length && PROTO_BYTES.equals(bytes.subarray(at, at + n))) return PROTO_KEY as unknown as string;
    if (sharedKeys?.canBeCached(n)) return sharedKeys.decode(bytes, at, n);
    return utf8.decode(bytes.subarray(at, at + n));
  },
};

function mapKeyConverter(key: unknown): string | number {
  if (typeof key === "string" || typeof key === "number" || key === PROTO_KEY) return key as string | number;
  throw new DecodeError(`The type of key must be string or number but ${typeof key}`);
}

/** A msgpack Decoder that never fails on, nor is polluted by, a "__proto__" key (see PROTO_KEY). Use it for every msgpack read. */
export function safeDecoder(opts: { useBigInt64?: boolean } = {}): Decoder {
  return new Decoder({ ...opts, keyDecoder, mapKeyConverter });
}

const decoder = safeDecoder();

/** decode() of @msgpack/msgpack through the safe decoder. */
export function decodeMsgpack(bytes: ArrayLike<number> | BufferSource): unknown {
  return decoder.decode(bytes);
}

/**
 * JSON.parse for files the server wrote (checkpoints, configs, index records): a "__proto__"
 * key, which JSON.parse makes an own property that object spread, Object.assign and the
 * msgpack encoder then treat differently, is dropped. Text that cannot hold one parses as is.
 */
export function parseStoredJson(text: string): unknown {
  if (!text.includes("proto__") && !text.includes("\\u")) return JSON.parse(text);
  return JSON.parse(text, (k, v: unknown) => (k === "__proto__" ? undefined : v));
}
