/**
 * Long (~760 lines): the seeded generators and the one child-process server they share live together.
 * Fuzz of the HTTP API against the built `svc serve` as a child process: a seeded generator
 * (mulberry32) makes >= 2,000 malformed requests (garbled JSON, random and wrong-shaped
 * msgpack/protobuf, wrong dimensions, NaN/Infinity, bad ids, oversized or nested metadata,
 * bad filters, bad topK, unknown indexes, bad query strings, bad methods and content types,
 * bad control-plane bodies) and sends them 16 at a time. Every answer must be a 4xx with
 * {"error":{"code","message","field"}} from the ERRORS table; afterwards the process is alive
 * and what was stored before (stats, fetch, a fixed query, the index list) reads back
 * byte-identical. Every generated request is invalid by construction (see the notes on each
 * generator), so any 2xx is a server bug, not noise.
 */
import { fileURLToPath } from "node:url";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERRORS } from "../../src/errors.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

/** FUZZ_SEED / FUZZ_REQUESTS override the defaults for longer local runs. */
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_f022);
const REQUESTS = Math.max(2000, Number(process.env.FUZZ_REQUESTS ?? 2400));
const IN_FLIGHT = 16;
const DIM = 16;
const INDEX = "fuzz";
const NS_B = "ns-b";
const JSON_CT = "application/json";
const MSGPACK_CT = "application/msgpack";
const PROTO_CT = "application/x-protobuf";

const proto = protobuf.loadSync(fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url)));
const UpsertRequest = proto.lookupType("svc.v1.UpsertRequest");
const QueryRequest = proto.lookupType("svc.v1.QueryRequest");

// ---- seeded randomness --------------------------------------------------------------------

const next32 = mulberry32(SEED);
const rnd = (): number => next32() / 4294967296;
const int = (n: number): number => Math.floor(rnd() * n);
const between = (lo: number, hi: number): number => lo + int(hi - lo + 1);
const chance = (p: number): boolean => rnd() < p;
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => int(256));
const vec = (dim = DIM): number[] => Array.from({ length: dim }, () => Math.round((rnd() * 2 - 1) * 1e4) / 1e4 || 0.5);

// ---- requests -----------------------------------------------------------------------------

interface Req {
  cat: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array | string;
}

/** JSON text in which "@@RAW:tok@@" strings become the bare token tok (1e999, NaN, ...). */
const RAW = (tok: string): string => `@@RAW:${tok}@@`;
const json = (v: unknown): string => JSON.stringify(v).replace(/"@@RAW:([^@]*)@@"/g, "$1");
const mp = (v: unknown, float32 = false): Uint8Array => msgpackEncode(v, { forceFloat32: float32 });

const idx = (name = INDEX): string => `/v1/indexes/${name}`;
const UNKNOWN_INDEXES = [
  "nope",
  "no-such-index",
  "FUZZ",
  "fuzz-",
  "fuzz2",
  "f".repeat(46),
  "%E2%82%AC",
  "%00",
  "..%2F..%2Fetc",
  "__proto__",
  "constructor",
  "%ZZ",
  encodeURIComponent("名前"),
  "a%20b",
];
const unknownIndex = (): string => pick(UNKNOWN_INDEXES);
const UNKNOWN_NAMESPACES = [
  "nope",
  "ns-c",
  "NS-B",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "%E2%82%AC",
  "x".repeat(600),
  "%ZZ",
];

/** Data-plane POST routes taking a JSON body, as paths under an index. */
const UPSERT_PATHS = ["/vectors/upsert", `/namespaces/${NS_B}/upsert`, "/namespaces/__default__/upsert"];
const upsertPath = (): string => pick(UPSERT_PATHS);

/** Junk of any type (msgpack: also bins, NaN, Infinity, dates); arrays have at most 6 items so never DIM numbers. */
function junk(depth = 0, binary = true): unknown {
  const kinds = depth > 3 ? 8 : 11;
  switch (int(kinds)) {
    case 0:
      return null;
    case 1:
      return chance(0.5);
    case 2:
      return pick([0, -0, -1, 1.5, 2 ** 53 + 2, -(2 ** 63), 1e308, 5e-324, 4294967296]);
    case 3:
      return binary ? pick([NaN, Infinity, -Infinity, 1e300]) : pick([0, 7, -3.25]);
    case 4:
      return pick(["", "x", "$eq", "\u0000", "\ud800", "😀".repeat(between(1, 5)), "a".repeat(between(0, 700))]);
    case 5:
      return binary ? bytes(pick([0, 1, 3, 5, 63, 65, 100])) : "bin";
    case 6:
      return binary ? new Date(int(2 ** 40)) : "date";
    case 7:
      return pick([undefined, {}, []]) ?? null;
    case 8:
      return Array.from({ length: between(0, 6) }, () => junk(depth + 1, binary));
    case 9:
    default: {
      const o: Record<string, unknown> = {};
      for (let i = between(0, 5); i > 0; i--)
        o[pick(["vectors", "vector", "id", "values", "metadata", "filter", "topK", "namespace", "$and", "$foo", "a", "", "constructor"])] =
          junk(depth + 1, binary);
      return o;
    }
  }
}
/** Junk that is never a string (for ids) nor an array/bin (for values). */
function junkScalar(binary: boolean): unknown {
  return pick([null, true, false, 0, 42, -1.5, {}, { id: "v-1" }, ...(binary ? [NaN, new Date(0)] : [])]);
}

function goodVector(id: string): Record<string, unknown> {
  return { id, values: vec(), metadata: { genre: pick(["a", "b"]), year: between(1990, 2030) } };
}

/** A valid-looking body for one of the POST routes of INDEX (garbling it keeps it invalid, see below). */
function validBody(): { path: string; body: Record<string, unknown> } {
  switch (int(5)) {
    case 0:
      return { path: idx() + upsertPath(), body: { vectors: [goodVector(`fz-${int(1e6)}`)], namespace: pick(["", NS_B]) } };
    case 1:
      return {
        path: idx() + "/query",
        body: { vector: vec(), topK: between(1, 20), filter: { genre: { $eq: "a" } }, includeMetadata: true },
      };
    case 2:
      return { path: idx() + "/vectors/update", body: { id: `missing-${int(1e6)}`, setMetadata: { genre: "z" } } };
    case 3:
      return { path: idx() + "/vectors/delete", body: { ids: [`missing-${int(1e6)}`], namespace: "nope" } };
    default:
      return { path: "/v1/indexes", body: { name: `fz-new-${int(1e6)}`, dimension: DIM, metric: "cosine" } };
  }
}

/** POST paths whose handlers reject an empty object `{}` (so random junk that happens to parse can never succeed). */
const STRICT_POSTS = [
  ...UPSERT_PATHS.map((p) => idx() + p),
  idx() + "/query",
  idx() + "/vectors/update",
  idx() + "/vectors/delete",
  "/v1/indexes",
];

type Gen = () => Omit<Req, "cat" | "headers"> & { headers?: Record<string, string> };

const post = (path: string, body: Uint8Array | string, ct = JSON_CT) => ({ method: "POST", path, body, headers: { "content-type": ct } });
const postJson = (path: string, v: unknown) => post(path, json(v));
const postAny = (path: string, v: unknown, ct = pick([JSON_CT, MSGPACK_CT])) =>
  post(path, ct === JSON_CT ? json(v) : mp(v, chance(0.3)), ct);

const GENERATORS: Record<string, { weight: number; gen: Gen }> = {
  // A proper prefix of compact JSON for an object never parses (its closing brace comes last). Never empty.
  json_truncated: {
    weight: 8,
    gen: () => {
      const { path, body } = validBody();
      const text = json(body);
      return post(path, text.slice(0, between(1, text.length - 1)));
    },
  },
  // A raw control character (other than whitespace) is invalid anywhere in JSON, inside strings too.
  json_control_char: {
    weight: 6,
    gen: () => {
      const { path, body } = validBody();
      let text = json(body);
      for (let i = between(1, 3); i > 0; i--) {
        const at = int(text.length + 1);
        text = text.slice(0, at) + String.fromCharCode(pick([0, 1, 2, 7, 8, 11, 12, 14, 27, 31])) + text.slice(at);
      }
      return post(path, text);
    },
  },
  // Free-form garbage: to routes that reject `{}` and anything short of a full valid request.
  json_garbage: {
    weight: 6,
    gen: () => {
      const path = chance(0.8) ? pick(STRICT_POSTS) : idx(unknownIndex()) + pick(["/query", "/describe_index_stats", "/vectors/upsert"]);
      const alphabet = "{}[]\":,.-+eE0123456789abcnlrtu \\\n\t'";
      const body = pick([
        () => Array.from({ length: between(1, 80) }, () => alphabet[int(alphabet.length)]).join(""),
        () => Buffer.from(bytes(between(1, 200))),
        () =>
          pick([
            "{'vectors': []}",
            '{"vectors": [],}',
            "NaN",
            "{vector: [1]}",
            "\ufeff{}",
            '{"a":1}{"b":2}',
            "[",
            "]",
            "nul",
            "tru",
            '"unterminated',
            '{"a":1e}',
            "0x10",
            '{"a":-}',
            '{"__proto__":{"vectors":1}}',
          ]),
        () => json(junk(0, false)),
      ])();
      return post(path, body, pick([JSON_CT, "application/json; charset=utf-8", "application/vnd.api+json", ""]));
    },
  },
  // Random bytes as msgpack: to proto routes (decode errors or wrong shapes) and to JSON-only routes (415).
  msgpack_random: {
    weight: 8,
    gen: () => {
      const path = chance(0.8)
        ? idx() + pick([...UPSERT_PATHS, "/query"])
        : idx() + pick(["/vectors/update", "/vectors/delete", "/describe_index_stats"]);
      const b = pick([
        () => bytes(between(1, 120)),
        () => Uint8Array.from([pick([0xdc, 0xdd, 0xde, 0xdf, 0xc6, 0xdb, 0xc9]), 0xff, 0xff, 0xff, 0xff, ...bytes(between(0, 8))]),
        () => Uint8Array.from([0xc1]),
        () => {
          const ok = mp({ vectors: [{ id: "x", values: vec() }] });
          return ok.subarray(0, between(1, ok.length - 1));
        },
        () => Uint8Array.from([...mp({ vector: vec(), topK: 5 }), ...bytes(between(1, 4))]),
        () => Uint8Array.from([0x81, 0x91, 0x01, 0x01]),
      ])();
      return post(path, b, pick([MSGPACK_CT, "application/x-msgpack", "application/vnd.msgpack"]));
    },
  },
  // Valid msgpack of the wrong shape: top-level non-maps, maps whose required field is junk.
  msgpack_wrong_shape: {
    weight: 8,
    gen: () => {
      const route = pick(["upsert", "query"] as const);
      const path = idx() + (route === "upsert" ? upsertPath() : "/query");
      const v = pick([
        () => junk(0),
        () => [junk(1), junk(1)],
        () => "vectors",
        () => bytes(between(1, 40)),
        () => (route === "upsert" ? { vectors: pick([junkScalar(true), "x", bytes(64), []]) } : { vector: junkScalar(true), topK: 3 }),
        () => (route === "upsert" ? { vectors: [junkScalar(true), goodVector("ok")] } : { id: junkScalar(true) }),
        () =>
          route === "upsert"
            ? { vectors: [{ id: junkScalar(true), values: vec() }] }
            : { vector: vec(), includeValues: pick(["yes", 1, null]) },
        () =>
          route === "upsert"
            ? {
                vectors: [
                  { id: "x", values: pick([junkScalar(true), bytes(pick([3, 5, 63, 65])), Array.from({ length: DIM }, () => "1")]) },
                ],
              }
            : { vector: bytes(pick([3, 60, 65])) },
        () =>
          route === "upsert"
            ? {
                vectors: [
                  {
                    id: "x",
                    values: vec(),
                    sparseValues: pick([
                      { indices: [2, 1], values: [1, 1] },
                      { indices: [1, 1], values: [1, 1] },
                      { indices: [1], values: [] },
                      { indices: [-1], values: [1] },
                      {},
                    ]),
                  },
                ],
              }
            : { vector: vec(), sparseVector: {} },
      ])();
      return post(path, mp(v), MSGPACK_CT);
    },
  },
  // Real NaN/Infinity floats (float64 and float32), and finite float64s that overflow float32.
  msgpack_non_finite: {
    weight: 6,
    gen: () => {
      const bad = pick([NaN, Infinity, -Infinity, 1e300, -3.5e38]);
      const v = vec();
      v[int(DIM)] = bad;
      const f32 = chance(0.3);
      if (chance(0.2)) {
        const bin = new Float32Array(v);
        return post(idx() + pick(UPSERT_PATHS), mp({ vectors: [{ id: "nf", values: new Uint8Array(bin.buffer) }] }), MSGPACK_CT);
      }
      return chance(0.5)
        ? post(idx() + pick(UPSERT_PATHS), mp({ vectors: [goodVector("ok"), { id: "nf", values: v }] }, f32), MSGPACK_CT)
        : post(idx() + "/query", mp({ vector: v, topK: 3 }, f32), MSGPACK_CT);
    },
  },
  // Random protobuf bytes: at most 60 bytes, so no Vector nor query vector can hold DIM floats.
  protobuf_random: {
    weight: 6,
    gen: () =>
      post(
        idx() + pick([...UPSERT_PATHS, "/query"]),
        bytes(between(1, 60)),
        pick([PROTO_CT, "application/protobuf", "application/vnd.google.protobuf"]),
      ),
  },
  // Fields 1..7 with random wire types (3, 4, 6, 7 are invalid; others mismatch the declared type), still <= 60 bytes.
  protobuf_wire_types: {
    weight: 6,
    gen: () => {
      const out: number[] = [];
      for (let i = between(1, 4); i > 0; i--) {
        const wt = int(8);
        out.push((between(1, 7) << 3) | wt);
        if (wt === 0) out.push(...(chance(0.5) ? [0xff, 0xff, 0xff, 0xff, 0x0f] : [int(128)]));
        else if (wt === 1) out.push(...bytes(8));
        else if (wt === 2) {
          const n = between(0, 10);
          out.push(chance(0.3) ? n + 20 : n, ...bytes(n));
        } else if (wt === 5) out.push(...bytes(4));
        else out.push(...bytes(between(0, 3)));
      }
      return post(idx() + pick([...UPSERT_PATHS, "/query"]), Uint8Array.from(out.slice(0, 60)), PROTO_CT);
    },
  },
  // Well-formed protobuf of bad requests: wrong dimension, NaN, empty/long ids, null/nested metadata, bad filters.
  protobuf_bad_values: {
    weight: 8,
    gen: () => {
      const s = (v: unknown): unknown => {
        if (v === null) return { nullValue: 0 };
        if (typeof v === "number") return { numberValue: v };
        if (typeof v === "string") return { stringValue: v };
        if (typeof v === "boolean") return { boolValue: v };
        if (Array.isArray(v)) return { listValue: { values: v.map(s) } };
        return { structValue: struct(v as Record<string, unknown>) };
      };
      const struct = (o: Record<string, unknown>) => ({ fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, s(v)])) });
      if (chance(0.5)) {
        const v = { id: "p", values: vec(), metadata: struct({ genre: "a" }) } as Record<string, unknown>;
        switch (int(6)) {
          case 0:
            v.values = vec(pick([1, DIM - 1, DIM + 1, 100]));
            break;
          case 1:
            (v.values as number[])[int(DIM)] = pick([NaN, Infinity, -Infinity]);
            break;
          case 2:
            v.id = pick(["", "i".repeat(513), "€".repeat(171)]);
            break;
          case 3:
            v.metadata = struct(pick([{ a: null }, { a: { b: 1 } }, { a: [1, 2] }, { $a: 1 }, { big: "m".repeat(41_000) }]));
            break;
          case 4:
            v.values = new Array(DIM).fill(0);
            break;
          default:
            delete v.values;
            break;
        }
        return post(idx() + pick(UPSERT_PATHS), UpsertRequest.encode(v).finish(), PROTO_CT);
      }
      const q: Record<string, unknown> = { vector: vec(), topK: 5 };
      switch (int(6)) {
        case 0:
          q.vector = vec(pick([1, DIM + 1]));
          break;
        case 1:
          (q.vector as number[])[0] = NaN;
          break;
        case 2:
          q.filter = struct(
            pick([{ year: { $foo: 1 } }, { $nope: [] }, { genre: null }, { genre: ["a"] }, { $and: [] }, { year: { $gt: "x" } }]),
          );
          break;
        case 3:
          q.topK = pick([10_001, 1e9, 4294967295]);
          break;
        case 4:
          delete q.vector;
          break;
        default:
          q.id = `missing-${int(1e6)}`;
          if (chance(0.5)) delete q.vector;
          break;
      }
      return post(idx() + "/query", QueryRequest.encode(q).finish(), PROTO_CT);
    },
  },
  wrong_dimension: {
    weight: 8,
    gen: () => {
      const d = pick([0, 1, DIM - 1, DIM + 1, 2 * DIM, 1000]);
      switch (int(4)) {
        case 0:
          return postAny(idx() + upsertPath(), { vectors: [goodVector("ok"), { id: "bad", values: vec(d) }] });
        case 1:
          return postAny(idx() + "/query", { vector: vec(d), topK: 3 });
        case 2:
          return postJson(idx() + "/vectors/update", { id: pick(["v-1", "missing"]), values: vec(d) });
        default:
          return postAny(idx() + upsertPath(), { vectors: [{ id: "bad", values: vec(d) }] });
      }
    },
  },
  // NaN/Infinity in JSON: 1e999 parses to Infinity; 1e39 overflows float32; also an all-zero vector (no cosine direction).
  json_non_finite: {
    weight: 6,
    gen: () => {
      const v: unknown[] = vec();
      v[int(DIM)] = RAW(pick(["1e999", "-1e999", "1e39", "-4e38"]));
      if (chance(0.15)) v.fill(0);
      switch (int(3)) {
        case 0:
          return postJson(idx() + upsertPath(), { vectors: [{ id: "nf", values: v }] });
        case 1:
          return postJson(idx() + "/query", { vector: v, topK: 3 });
        default:
          return postJson(idx() + "/vectors/update", { id: "v-1", values: v });
      }
    },
  },
  // ids: non-strings, empty, over 512 UTF-8 bytes (ASCII and multi-byte).
  bad_ids: {
    weight: 8,
    gen: () => {
      const bad = pick([null, 5, true, [], {}, ["v-1"], "", "i".repeat(513), "€".repeat(171), "😀".repeat(129), "x".repeat(5000)]);
      switch (int(5)) {
        case 0:
          return postAny(idx() + upsertPath(), { vectors: [goodVector("ok"), { id: bad, values: vec() }] });
        case 1:
          return postJson(idx() + "/vectors/update", { id: bad, setMetadata: { a: 1 } });
        case 2:
          return postJson(idx() + "/vectors/delete", { ids: ["v-1", bad].slice(chance(0.5) ? 1 : 0), namespace: "nope" });
        case 3:
          return postAny(idx() + "/query", { id: typeof bad === "string" && bad !== "" ? 7 : bad, topK: 3 });
        default:
          return postAny(idx() + upsertPath(), { vectors: [{ values: vec() }] });
      }
    },
  },
  big_metadata: {
    weight: 5,
    gen: () => {
      const md = pick([
        () => ({ big: "m".repeat(between(41_000, 60_000)) }),
        () => Object.fromEntries(Array.from({ length: 1200 }, (_, i) => [`key-${i}`, "v".repeat(30)])),
        () => ({ tags: Array.from({ length: 5000 }, (_, i) => `tag-${i}`) }),
        () => ({ esc: "\u0001".repeat(7000) }), // 7,000 chars, 42,000 JSON bytes
        () => ({ wide: "€".repeat(14_000) }), // 42,000 UTF-8 bytes
      ])();
      return chance(0.7)
        ? postAny(idx() + upsertPath(), { vectors: [{ id: "md", values: vec(), metadata: md }] })
        : postJson(idx() + "/vectors/update", { id: pick(["v-1", "missing"]), setMetadata: md });
    },
  },
  bad_metadata: {
    weight: 7,
    gen: () => {
      const md = pick([
        { a: { b: 1 } },
        { a: null },
        { a: [1, 2] },
        { a: ["x", null] },
        { a: [["x"]] },
        { $a: 1 },
        { "": 1 },
        "str",
        5,
        ["x"],
        true,
        { a: { $eq: 1 } },
        { ok: 1, deep: { d: { e: {} } } },
      ]);
      return chance(0.7)
        ? postAny(idx() + upsertPath(), { vectors: [goodVector("ok"), { id: "md", values: vec(), metadata: md }] })
        : postJson(idx() + "/vectors/update", { id: pick(["v-1", "w-1", "missing"]), namespace: pick(["", NS_B]), setMetadata: md });
    },
  },
  // Unknown operators, wrong operand types, lists/nulls as values, too deep. Queries, deletes by filter, stats.
  bad_filter: {
    weight: 10,
    gen: () => {
      let deep: Record<string, unknown> = { genre: "a" };
      for (let i = between(8, 20); i > 0; i--) deep = { [pick(["$and", "$or"])]: [deep, { year: 1 }] };
      const f = pick([
        { year: { $foo: 1 } },
        { $foo: 1 },
        { $eq: 1 },
        { year: { $in: 5 } },
        { year: { $in: [] } },
        { year: { $gt: "1990" } },
        { year: { $lt: null } },
        { year: { $exists: "yes" } },
        { genre: ["a"] },
        { genre: null },
        { genre: {} },
        { $and: [] },
        { $or: {} },
        { $and: [1] },
        { $or: [{}] },
        { "": 1 },
        { year: { $in: [1, [2]] } },
        { year: { $in: Array.from({ length: 10_001 }, (_, i) => i) } },
        { year: { gt: 1 } },
        deep,
        "genre",
        5,
        [{ genre: "a" }],
        true,
        { year: { $gte: RAW("1e999") } },
      ] as unknown[]);
      switch (int(3)) {
        case 0:
          return postJson(idx() + "/query", { vector: vec(), topK: 3, filter: f, namespace: pick(["", NS_B, "nope"]) });
        case 1:
          return postJson(idx() + "/vectors/delete", { filter: f, namespace: pick(["", NS_B]) });
        default:
          return postJson(idx() + "/describe_index_stats", { filter: f });
      }
    },
  },
  // An empty filter is a no-op in a query, so delete by {} (which would delete everything) must be refused.
  delete_empty_filter: {
    weight: 2,
    gen: () => postJson(idx() + "/vectors/delete", { filter: {}, namespace: pick(["", NS_B]) }),
  },
  bad_top_k: {
    weight: 7,
    gen: () =>
      postAny(
        idx() + "/query",
        {
          vector: vec(),
          topK: pick([0, -1, 1e9, "10", 1.5, 10_001, true, [], {}, -0.5, 2 ** 53, RAW("1e999"), RAW("-0.0e1")]),
          namespace: pick(["", NS_B]),
        },
        JSON_CT,
      ),
  },
  msgpack_bad_top_k: {
    weight: 3,
    gen: () =>
      post(idx() + "/query", mp({ vector: vec(), topK: pick([NaN, Infinity, -Infinity, 0, -1, 1e9, "10", 1.5, bytes(2)]) }), MSGPACK_CT),
  },
  bad_namespace: {
    weight: 6,
    gen: () => {
      const bad = pick([5, true, [], {}, ["a"], 0, ...(chance(0.4) ? ["n".repeat(513)] : [])]);
      switch (int(5)) {
        case 0:
          return postAny(idx() + "/vectors/upsert", { vectors: [goodVector("ok")], namespace: bad });
        case 1:
          return postAny(idx() + "/query", { vector: vec(), namespace: typeof bad === "string" ? 5 : bad });
        case 2:
          return postJson(idx() + "/vectors/update", { id: "v-1", setMetadata: { a: 1 }, namespace: bad });
        case 3:
          return postJson(idx() + "/vectors/delete", { ids: ["v-1"], namespace: bad });
        default:
          return postJson(`${idx()}/namespaces/${pick(["n".repeat(513), "€".repeat(171), "%ZZ", "%E2%82"])}/upsert`, {
            vectors: [goodVector("ok")],
          });
      }
    },
  },
  unknown_index: {
    weight: 10,
    gen: () => {
      const base = idx(unknownIndex());
      return pick([
        () => postAny(base + upsertPath(), { vectors: [goodVector("ok")] }),
        () => postAny(base + "/query", { vector: vec(), topK: 3 }),
        () => postJson(base + "/vectors/update", { id: "v-1", setMetadata: { a: 1 } }),
        () => postJson(base + "/vectors/delete", pick([{ ids: ["v-1"] }, { deleteAll: true }, { filter: { genre: "a" } }])),
        () => postJson(base + "/describe_index_stats", pick([{}, { filter: { genre: "a" } }])),
        () => ({ method: "GET", path: base + "/describe_index_stats" }),
        () => ({ method: "GET", path: `${base}/vectors/fetch?ids=v-1&ids=v-2` }),
        () => ({ method: "GET", path: base + "/namespaces" }),
        () => ({ method: "GET", path: `${base}/namespaces/${NS_B}` }),
        () => ({ method: "DELETE", path: `${base}/namespaces/${NS_B}` }),
        () => ({ method: "GET", path: base }),
        () => ({ method: "DELETE", path: base }),
        () => ({ method: "PATCH", path: base, body: json({ deletion_protection: "disabled" }), headers: { "content-type": JSON_CT } }),
        () => post(base + "/query", mp({ vector: vec() }), MSGPACK_CT),
        () => post(base + "/query", QueryRequest.encode({ vector: vec(), topK: 3 }).finish(), PROTO_CT),
      ])();
    },
  },
  bad_fetch: {
    weight: 6,
    gen: () => {
      const q = pick([
        () => "",
        () => "?",
        () => `?namespace=${NS_B}`,
        () => "?id=v-1&ID=v-2&ids[]=v-3",
        () => `?${Array.from({ length: between(1001, 1100) }, (_, i) => `ids=v-${i}`).join("&")}`,
        () => `?namespace=&${Array.from({ length: 1001 }, () => "ids=").join("&")}`,
      ])();
      return { method: "GET", path: `${idx()}/vectors/fetch${q}` };
    },
  },
  bad_delete: {
    weight: 6,
    gen: () =>
      postJson(
        idx() + "/vectors/delete",
        pick([
          {},
          { namespace: NS_B },
          { deleteAll: false },
          { deleteAll: "true" },
          { deleteAll: 1 },
          { ids: ["v-1"], filter: { genre: "a" } },
          { ids: ["v-1"], deleteAll: true },
          { filter: { genre: "a" }, deleteAll: true },
          { ids: ["v-1"], deleteAll: "yes" },
          { ids: "v-1" },
          { ids: { 0: "v-1" } },
          { ids: null, filter: null },
          { ids: ["v-1"], filter: { genre: "a" }, deleteAll: true },
        ] as unknown[]),
      ),
  },
  update_bad: {
    weight: 6,
    gen: () =>
      postJson(
        idx() + "/vectors/update",
        pick([
          { id: `missing-${int(1e6)}`, values: vec() },
          { id: `missing-${int(1e6)}`, setMetadata: { genre: "x" } },
          { id: "v-1", namespace: NS_B, setMetadata: { genre: "x" } }, // v-1 lives in the default namespace only
          { id: "w-1", setMetadata: { genre: "x" } }, // w-1 lives in ns-b only
          { id: "v-1" },
          { id: "v-1", values: "1,2,3" },
          { id: "v-1", values: vec().map(String) },
          {},
          { setMetadata: { a: 1 } },
        ] as unknown[]),
      ),
  },
  stats_bad: {
    weight: 4,
    gen: () =>
      pick([
        () => post(idx() + "/describe_index_stats", pick(["[]", '"x"', "5", "null", "true", '{"filter":'])),
        () => post(idx() + "/describe_index_stats", mp({ filter: { genre: "a" } }), MSGPACK_CT),
        () => post(idx() + "/describe_index_stats", UpsertRequest.encode({ namespace: "x" }).finish(), PROTO_CT),
      ])(),
  },
  namespaces_bad: {
    weight: 5,
    gen: () =>
      pick([
        () => ({ method: "GET", path: `${idx()}/namespaces?limit=${pick(["0", "-1", "1001", "1.5", "abc", "", "1e3x", "NaN"])}` }),
        () => ({
          method: "GET",
          path: `${idx()}/namespaces?paginationToken=${pick(["!!", "YQ==", "a.b", "%FF", "bnMtYg=", "====", "nope!"])}`,
        }),
        () => ({ method: "GET", path: `${idx()}/namespaces?pagination_token=${pick(["!!", "YQ=="])}&limit=5` }),
        () => ({ method: "GET", path: `${idx()}/namespaces/${pick(UNKNOWN_NAMESPACES)}` }),
        () => ({ method: "DELETE", path: `${idx()}/namespaces/${pick(UNKNOWN_NAMESPACES)}` }),
      ])(),
  },
  // Every create has exactly one invalid field (or the name taken), so nothing is ever created.
  control_plane: {
    weight: 8,
    gen: () => {
      const good = {
        name: `fz-new-${int(1e6)}`,
        dimension: DIM,
        metric: "cosine",
        spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      };
      const field = pick(["name", "dimension", "metric", "spec", "deletion_protection", "tags", "taken", "body"] as const);
      const bad: Record<string, unknown> = { ...good };
      switch (field) {
        case "name":
          bad.name = pick(["", "A", "-a", "a-", "a_b", "f".repeat(46), "ünï", 5, null, [], {}, "a b", "a.b", "a/b"]);
          break;
        case "dimension":
          bad.dimension = pick([0, -1, 20_001, 1.5, "16", null, [], true, RAW("1e999"), 2 ** 31]);
          break;
        case "metric":
          bad.metric = pick(["manhattan", "dot", 5, "", "cos ine", []]);
          break;
        case "spec":
          bad.spec = pick(["x", [], 5, true]);
          break;
        case "deletion_protection":
          bad.deletion_protection = pick(["on", true, 1, null, "ENABLED"]);
          break;
        case "tags":
          bad.tags = pick(["x", [], 5, { a: 1 }, { ["k".repeat(81)]: "v" }, { a: "v".repeat(121) }, { a: null }]);
          break;
        case "taken":
          bad.name = INDEX;
          break;
        case "body":
          return post("/v1/indexes", pick(["[]", '"fz"', "5", "null", "", json([good])]));
      }
      if (chance(0.3) && field !== "metric" && field !== "spec") delete bad[pick(["metric", "spec"])];
      return postJson("/v1/indexes", bad);
    },
  },
  configure_bad: {
    weight: 4,
    gen: () => ({
      method: "PATCH",
      path: idx(),
      headers: { "content-type": JSON_CT },
      body: pick([
        json({ deletion_protection: pick(["maybe", true, 1, null, ""]) }),
        json({ tags: pick(["x", [], { a: 1 }, { a: "v".repeat(121) }]) }),
        "[]",
        "5",
        '{"tags":',
      ]),
    }),
  },
  wrong_method: {
    weight: 6,
    gen: () => {
      const [method, path] = pick([
        ["PUT", "/v1/indexes"],
        ["DELETE", "/v1/indexes"],
        ["PATCH", "/v1/indexes"],
        ["POST", idx()],
        ["PUT", idx()],
        ["GET", idx() + "/vectors/upsert"],
        ["PUT", idx() + "/vectors/upsert"],
        ["DELETE", idx() + "/query"],
        ["GET", idx() + "/query"],
        ["POST", idx() + "/vectors/fetch"],
        ["DELETE", idx() + "/vectors/fetch"],
        ["GET", idx() + "/vectors/update"],
        ["PATCH", idx() + "/vectors/delete"],
        ["PUT", idx() + "/describe_index_stats"],
        ["POST", idx() + "/namespaces"],
        ["POST", `${idx()}/namespaces/${NS_B}`],
        ["GET", `${idx()}/namespaces/${NS_B}/upsert`],
        ["POST", "/v1/health"],
        ["DELETE", "/metrics"],
        ["POST", "/v1/openapi.json"],
        ["OPTIONS", idx() + "/query"],
        ["OPTIONS", "/v1/indexes"],
      ] as const);
      const withBody = method !== "GET" && chance(0.5);
      return { method, path, ...(withBody ? { body: json(junk(0, false)), headers: { "content-type": JSON_CT } } : {}) };
    },
  },
  unknown_path: {
    weight: 4,
    gen: () => {
      const path = pick([
        "/",
        "/v1",
        "/v1/",
        "/v2/indexes",
        "/v1/indexes/",
        `${idx()}/`,
        `${idx()}/vectors`,
        `${idx()}/vectors/scan`,
        `${idx()}/query/`,
        `${idx()}/namespaces/a/b`,
        "/v1/indexes//query",
        "/%00",
        "/v1/collections",
        "/v1/indexes/fuzz/vectors/upsert/x",
      ]);
      return { method: pick(["GET", "POST", "DELETE"]), path };
    },
  },
  bad_content_type: {
    weight: 7,
    gen: () => {
      const ct = pick([
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/xml",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "application/octet-stream",
        "image/png",
        "application/jsonx",
        "json",
        "*/*",
        "application/msgpack2",
        "application/grpc",
      ]);
      const path = pick([...STRICT_POSTS, idx() + "/describe_index_stats", idx(unknownIndex()) + "/query"]);
      const body = pick([json(validBody().body), "{}", "x"]);
      if (path.endsWith("/describe_index_stats") || chance(0.2)) {
        // a PATCH or stats POST with a valid body: only the content type is wrong
        return {
          method: path.endsWith("/describe_index_stats") ? "POST" : "PATCH",
          path: path.endsWith("/describe_index_stats") ? path : idx(),
          body: "{}",
          headers: { "content-type": ct },
        };
      }
      return post(path, body, ct);
    },
  },
  // Binary content types on routes that speak only JSON, with bodies that would be fine as JSON.
  binary_on_json_route: {
    weight: 4,
    gen: () => {
      const ct = pick([MSGPACK_CT, PROTO_CT]);
      const [method, path, v] = pick([
        ["POST", idx() + "/vectors/update", { id: "v-1", setMetadata: { genre: "x" } }],
        ["POST", idx() + "/vectors/delete", { ids: ["v-1"] }],
        ["POST", idx() + "/describe_index_stats", {}],
        ["POST", "/v1/indexes", { name: `fz-new-${int(1e6)}`, dimension: DIM }],
        ["PATCH", idx(), { tags: { a: "b" } }],
      ] as const);
      return { method, path, body: ct === MSGPACK_CT ? mp(v) : Uint8Array.from([0x0a, 0x01, 0x78]), headers: { "content-type": ct } };
    },
  },
  // Bodies on DELETE routes (which never read them) aimed at things that do not exist.
  delete_with_body: {
    weight: 3,
    gen: () => ({
      method: "DELETE",
      path: chance(0.5) ? idx(unknownIndex()) : `${idx()}/namespaces/${pick(UNKNOWN_NAMESPACES)}`,
      body: pick([json({ deleteAll: true }), "x".repeat(between(1, 100_000)), Buffer.from(bytes(64))]),
      headers: { "content-type": JSON_CT },
    }),
  },
  auth: {
    weight: 3,
    gen: () => {
      const headers: Record<string, string> = pick<Record<string, string>>([
        {},
        { "api-key": "svc_nope" },
        { authorization: "Bearer svc_nope" },
        { authorization: "Basic eDp5" },
        { "api-key": "" },
        { "api-key": "x".repeat(2000) },
      ]);
      const r = pick<() => ReturnType<Gen>>([
        () => postJson(idx() + "/vectors/delete", { deleteAll: true }),
        () => postJson(idx() + upsertPath(), { vectors: [goodVector("ok")] }),
        () => ({ method: "DELETE", path: idx() }),
        () => ({ method: "GET", path: "/v1/indexes" }),
        () => ({ method: "GET", path: `${idx()}/vectors/fetch?ids=v-1` }),
        () => ({ method: "GET", path: "/v1/wallet" }),
      ])();
      return { ...r, headers: { ...r.headers, ...headers, "x-no-auth": "1" } };
    },
  },
  wallet_bad: {
    weight: 1,
    gen: () => ({ method: "GET", path: `/v1/wallet?limit=${pick(["0", "101", "x", "1.5", "-3"])}` }),
  },
  oversized_batch: {
    weight: 1,
    gen: () => postAny(idx() + "/vectors/upsert", { vectors: Array.from({ length: 10_001 }, (_, i) => ({ id: `b-${i}`, values: [1] })) }),
  },
};

function generate(n: number, adminKey: string): Req[] {
  const table = Object.entries(GENERATORS);
  const total = table.reduce((s, [, g]) => s + g.weight, 0);
  const out: Req[] = [];
  for (let i = 0; i < n; i++) {
    let w = rnd() * total;
    let entry = table[0]!;
    for (const e of table) {
      w -= e[1].weight;
      if (w < 0) {
        entry = e;
        break;
      }
    }
    const [cat, g] = entry;
    const r = g.gen();
    const headers: Record<string, string> = { ...(r.headers ?? {}) };
    if (headers["x-no-auth"] === undefined) headers["api-key"] = adminKey;
    delete headers["x-no-auth"];
    if (headers["content-type"] === "") delete headers["content-type"];
    if (chance(0.2))
      headers.accept = pick([MSGPACK_CT, PROTO_CT, "*/*", "text/html", "application/json;q=0.1, application/msgpack", "garbage/"]);
    if (chance(0.1)) headers["x-request-id"] = pick(["fz-1", "x".repeat(100), "bad id!", ""]);
    out.push({ cat, method: r.method, path: r.path, headers, body: r.body });
  }
  return out;
}

// ---- the test -----------------------------------------------------------------------------

let srv: ServerProcess;
let key: string;

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(srv.url + path, {
    method,
    headers: { "api-key": key, ...(body === undefined ? {} : { "content-type": JSON_CT }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, text: await res.text() };
}

const SEEDED = {
  "": Array.from({ length: 40 }, (_, i) => ({
    id: `v-${i}`,
    values: vec(),
    ...(i % 5 === 4 ? {} : { metadata: { genre: pick(["a", "b", "c"]), year: 1990 + i, tags: [`t${i % 3}`], flag: i % 2 === 0 } }),
  })),
  [NS_B]: [
    ...Array.from({ length: 30 }, (_, i) => ({ id: `w-${i}`, values: vec(), metadata: { genre: pick(["a", "b"]), year: 2000 + i } })),
    { id: "é-ünïcode-😀", values: vec(), metadata: { note: "multi-byte id" } },
    { id: "i".repeat(512), values: vec(), metadata: { note: "512-byte id" } },
  ],
};
const QUERY = vec();

async function snapshot(): Promise<string[]> {
  const out: string[] = [];
  const add = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(r.status, `${method} ${path}: ${r.text}`).toBe(200);
    out.push(`${method} ${path} ${body === undefined ? "" : JSON.stringify(body)}\n${r.text}`);
  };
  await add("GET", "/v1/indexes");
  await add("GET", idx());
  await add("GET", `${idx()}/describe_index_stats`);
  await add("POST", `${idx()}/describe_index_stats`, { filter: { genre: "a" } });
  await add("GET", `${idx()}/namespaces`);
  for (const [ns, vs] of Object.entries(SEEDED)) {
    await add(
      "GET",
      `${idx()}/vectors/fetch?namespace=${encodeURIComponent(ns)}&${vs.map((v) => `ids=${encodeURIComponent(v.id)}`).join("&")}`,
    );
    await add("POST", `${idx()}/query`, { vector: QUERY, topK: 100, namespace: ns, includeValues: true, includeMetadata: true });
    await add("POST", `${idx()}/query`, {
      vector: QUERY,
      topK: 5,
      namespace: ns,
      filter: { genre: { $in: ["a", "b"] } },
      includeMetadata: true,
    });
  }
  return out;
}

/** Resolves once every write acknowledged so far is visible: update waits for that before its 404. */
async function settle(): Promise<void> {
  const r = await call("POST", `${idx()}/vectors/update`, { id: "settle-missing", setMetadata: { a: 1 } });
  expect(r.status).toBe(404);
}

describe("HTTP fuzz: malformed requests get 4xx, the process lives, stored data is unchanged", () => {
  let before: string[];

  beforeAll(async () => {
    srv = await startServerProcess();
    key = srv.adminKey!;
    expect(key).toMatch(/^svc_/);
    expect((await call("POST", "/v1/indexes", { name: INDEX, dimension: DIM, metric: "cosine" })).status).toBe(201);
    for (const [ns, vs] of Object.entries(SEEDED)) {
      const r = await call("POST", `${idx()}/vectors/upsert`, { vectors: vs, namespace: ns });
      expect(r.status, r.text).toBe(200);
    }
    await settle();
    before = await snapshot();
    // The snapshot holds what was upserted (float32 values, metadata), so "unchanged" means something.
    const fetched = JSON.parse(before.find((s) => s.startsWith(`GET ${idx()}/vectors/fetch?namespace=${NS_B}`))!.split("\n")[1]!) as {
      vectors: Record<string, { values: number[]; metadata?: unknown }>;
    };
    expect(Object.keys(fetched.vectors)).toHaveLength(SEEDED[NS_B].length);
    for (const v of SEEDED[NS_B]) {
      expect(fetched.vectors[v.id]!.values).toEqual(Array.from(Float32Array.from(v.values)));
      expect(fetched.vectors[v.id]!.metadata).toEqual(v.metadata);
    }
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  it(`answers ${REQUESTS} random malformed requests with 4xx errors from the ERRORS table`, async () => {
    const reqs = generate(REQUESTS, key);
    const byStatus = new Map<number, number>();
    const byCode = new Map<string, number>();
    const byCat = new Map<string, Map<string, number>>();
    const failures: string[] = [];
    let cursor = 0;
    const t0 = performance.now();
    const worker = async () => {
      while (cursor < reqs.length) {
        const i = cursor++;
        const r = reqs[i]!;
        const label = `#${i} [${r.cat}] ${r.method} ${r.path.slice(0, 160)} ${r.headers["content-type"] ?? "-"} body=${r.body === undefined ? "-" : typeof r.body === "string" ? JSON.stringify(r.body.slice(0, 200)) : Buffer.from(r.body.subarray(0, 80)).toString("hex")}`;
        let status: number;
        let text: string;
        try {
          const res = await fetch(srv.url + r.path, {
            method: r.method,
            headers: r.headers,
            body: r.body as BodyInit | undefined,
            signal: AbortSignal.timeout(15_000),
          });
          status = res.status;
          text = await res.text();
        } catch (err) {
          failures.push(`${label}\n  -> request failed: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? "")}`);
          continue;
        }
        byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
        let code = `(status ${status})`;
        try {
          const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; field?: unknown } };
          const e = body.error;
          if (typeof e !== "object" || e === null) throw new Error("no error object");
          if (typeof e.code !== "string" || !(e.code in ERRORS)) throw new Error(`code ${String(e.code)} is not in ERRORS`);
          code = e.code;
          if (ERRORS[e.code as keyof typeof ERRORS].status !== status)
            throw new Error(`status ${status} but ${e.code} is ${ERRORS[e.code as keyof typeof ERRORS].status}`);
          if (typeof e.message !== "string" || e.message === "") throw new Error("message is not a non-empty string");
          if (e.field !== undefined && typeof e.field !== "string") throw new Error("field is not a string");
          // every error these requests can get names the part at fault
          if (typeof e.field !== "string") throw new Error("no field");
          const keys = Object.keys(body).join(",") + "/" + Object.keys(e).join(",");
          if (!/^error\/code,message(,field)?$/.test(keys)) throw new Error(`unexpected keys ${keys}`);
        } catch (err) {
          failures.push(`${label}\n  -> ${status} ${text.slice(0, 300)}\n  -> ${(err as Error).message}`);
        }
        if ((status < 400 || status > 499) && failures.at(-1)?.startsWith(label) !== true)
          failures.push(`${label}\n  -> not a 4xx: ${status} ${text.slice(0, 300)}`);
        byCode.set(code, (byCode.get(code) ?? 0) + 1);
        const c = byCat.get(r.cat) ?? new Map<string, number>();
        c.set(code, (c.get(code) ?? 0) + 1);
        byCat.set(r.cat, c);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const ms = performance.now() - t0;

    const sorted = <K>(m: Map<K, number>) =>
      [...m]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${String(k)}=${n}`)
        .join(" ");
    console.log(
      [
        `fuzz: ${reqs.length} requests in ${Math.round(ms)} ms (${IN_FLIGHT} in flight, seed ${SEED.toString(16)})`,
        `statuses: ${sorted(byStatus)}`,
        `codes: ${sorted(byCode)}`,
        ...[...byCat].sort().map(([cat, m]) => `  ${cat.padEnd(22)} ${sorted(m)}`),
      ].join("\n"),
    );

    expect(failures.slice(0, 20), `${failures.length} bad answers; first ones:\n${failures.slice(0, 20).join("\n")}`).toEqual([]);
    expect([...byStatus.values()].reduce((a, b) => a + b, 0)).toBe(reqs.length);
    expect(reqs.length).toBeGreaterThanOrEqual(2000);
    for (const code of [
      "E_BODY",
      "E_BAD_REQUEST",
      "E_DIMENSION",
      "E_NON_FINITE",
      "E_FILTER",
      "E_METADATA",
      "E_NOT_FOUND",
      "E_TOP_K",
      "E_MEDIA_TYPE",
      "E_METHOD",
      "E_AUTH",
      "E_CONFLICT",
    ]) {
      expect(byCode.get(code) ?? 0, `code ${code} never seen`).toBeGreaterThan(0);
    }
    for (const status of [400, 401, 404, 405, 409, 415])
      expect(byStatus.get(status) ?? 0, `status ${status} never seen`).toBeGreaterThan(0);
    for (const cat of Object.keys(GENERATORS)) expect(byCat.has(cat), `generator ${cat} never ran`).toBe(true);
  });

  it("is still alive and healthy, logged no server errors, and stored data reads back byte-identical", async () => {
    const health = await call("GET", "/v1/health");
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ status: "ok" });
    expect(srv.child.exitCode).toBeNull();
    expect(srv.child.signalCode).toBeNull();
    // pino writes JSON lines to stdout; level 50 is "error" (every 5xx is logged at that level)
    expect(srv.output()).not.toMatch(/"level":(50|60)/);
    await settle();
    const after = await snapshot();
    expect(after.length).toBe(before.length);
    for (let i = 0; i < before.length; i++) expect(after[i]).toBe(before[i]);
  });
});
