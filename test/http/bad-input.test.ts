/**
 * Long (~580 lines): one child-process server shared by every category of bad input, one block each.
 * Bad input, one category at a time, against the built `svc serve` as a child process: the
 * exact status, code and field of {"error":{"code","message","field"}} for malformed
 * JSON/msgpack/protobuf, wrong dimensions, NaN/Infinity, bad ids, oversized or malformed
 * metadata, bad filters, bad topK, unknown indexes and namespaces, bad fetch/delete/update,
 * an oversized body, wrong methods and content types. Boundaries are checked from both
 * sides (512-byte ids, 40 KB metadata, topK 10000, 1000 fetch ids, the body cap), so every
 * rejection is for the reason named and not for some other fault of the request.
 */
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { encode as msgpackEncode } from "@msgpack/msgpack";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERRORS, type ErrorCode } from "../../src/errors.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const DIM = 4;
const INDEX = "bad-input";
const JSON_CT = "application/json";
const MSGPACK_CT = "application/msgpack";
const PROTO_CT = "application/x-protobuf";

const proto = protobuf.loadSync(fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url)));
const UpsertRequest = proto.lookupType("svc.v1.UpsertRequest");
const QueryRequest = proto.lookupType("svc.v1.QueryRequest");

/** google.protobuf.Struct of a plain object. */
function struct(o: Record<string, unknown>): { fields: Record<string, unknown> } {
  const value = (v: unknown): unknown => {
    if (v === null) return { nullValue: 0 };
    if (typeof v === "number") return { numberValue: v };
    if (typeof v === "string") return { stringValue: v };
    if (typeof v === "boolean") return { boolValue: v };
    if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
    return { structValue: struct(v as Record<string, unknown>) };
  };
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, value(v)])) };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

interface Send {
  /** Sent as JSON text (application/json). */
  json?: unknown;
  /** Sent as is, with `ct` (if given) as Content-Type. */
  body?: Uint8Array | string | ReadableStream<Uint8Array>;
  ct?: string;
  headers?: Record<string, string>;
  /** Leave out the API key. */
  noKey?: boolean;
}

function client(server: () => ServerProcess) {
  return async (method: string, path: string, s: Send = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...(s.noKey ? {} : { "api-key": server().adminKey! }), ...s.headers };
    let body: Send["body"];
    if (s.json !== undefined) {
      body = JSON.stringify(s.json);
      headers["content-type"] = JSON_CT;
    } else body = s.body;
    if (s.ct !== undefined) headers["content-type"] = s.ct;
    const res = await fetch(server().url + path, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(15_000),
      ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
    } as RequestInit);
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

/** The answer is exactly {"error":{"code","message","field"}} with this status, code and field. */
function expectError(a: Answer, status: number, code: ErrorCode, field?: string | RegExp): void {
  expect(a.status, a.text).toBe(status);
  expect(ERRORS[code].status).toBe(status);
  expect(a.headers.get("content-type")).toBe(JSON_CT);
  expect(Object.keys(a.json)).toEqual(["error"]);
  const e = a.json.error;
  expect(e.code, a.text).toBe(code);
  expect(typeof e.message).toBe("string");
  expect(e.message.length).toBeGreaterThan(0);
  expect(Object.keys(e).every((k) => ["code", "message", "field"].includes(k))).toBe(true);
  if (field === undefined) return;
  expect(typeof e.field).toBe("string");
  if (typeof field === "string") expect(e.field, a.text).toBe(field);
  else expect(e.field, a.text).toMatch(field);
}

function expectOk(a: Answer, status = 200): void {
  expect(a.status, a.text).toBe(status);
}

const v = (seed: number, dim = DIM): number[] => Array.from({ length: dim }, (_, i) => (((i + 1) * (seed + 3)) % 7) - 3 || 0.5);
const base = `/v1/indexes/${INDEX}`;

describe("bad input gets the exact 4xx, code and field", () => {
  let srv: ServerProcess;
  const call = client(() => srv);
  /** Resolves once every write acknowledged so far is visible (update waits for that before its 404). */
  const settle = async () =>
    expectError(
      await call("POST", `${base}/vectors/update`, { json: { id: "settle-missing", setMetadata: { a: 1 } } }),
      404,
      "E_NOT_FOUND",
      "id",
    );
  let snapshot: string;
  const read = async () => {
    await settle();
    const a = await call("GET", `${base}/vectors/fetch?ids=a&ids=b`);
    const b = await call("GET", `${base}/vectors/fetch?namespace=ns&ids=a`);
    const s = await call("GET", `${base}/describe_index_stats`);
    return [a.text, b.text, s.text].join("\n");
  };

  beforeAll(async () => {
    srv = await startServerProcess();
    expect(srv.adminKey).toMatch(/^svc_/);
    expectOk(await call("POST", "/v1/indexes", { json: { name: INDEX, dimension: DIM } }), 201);
    expectOk(
      await call("POST", `${base}/vectors/upsert`, {
        json: {
          vectors: [
            { id: "a", values: v(1), metadata: { genre: "x", year: 2000 } },
            { id: "b", values: v(2) },
          ],
        },
      }),
    );
    expectOk(await call("POST", `${base}/vectors/upsert`, { json: { namespace: "ns", vectors: [{ id: "a", values: v(3) }] } }));
    snapshot = await read();
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  it("malformed JSON -> 400 E_BODY (body)", async () => {
    for (const text of [
      '{"vectors": [',
      '{"vectors": [],}',
      "{'vectors': []}",
      '{"vector": [1, 2, 3, 4]\u0001}',
      '{"vector": NaN}',
      "\ufeff{}",
      '{"a":1}{"b":2}',
      '"unterminated',
    ]) {
      expectError(await call("POST", `${base}/vectors/upsert`, { body: text, ct: JSON_CT }), 400, "E_BODY", "body");
      expectError(await call("POST", `${base}/query`, { body: text, ct: "application/json; charset=utf-8" }), 400, "E_BODY", "body");
    }
    // a body without Content-Type is not read as JSON (issue 20.10: no cross-site simple request can write)
    expectError(await call("POST", `${base}/vectors/delete`, { body: Buffer.from("{ids:") }), 415, "E_MEDIA_TYPE", "content-type");
    expectError(await call("POST", "/v1/indexes", { body: '{"name": "x", "dimension": 4', ct: JSON_CT }), 400, "E_BODY", "body");
    // well-formed JSON of the wrong shape is E_BAD_REQUEST, not E_BODY
    for (const text of ["[]", "5", "null", '"x"'])
      expectError(await call("POST", `${base}/query`, { body: text, ct: JSON_CT }), 400, "E_BAD_REQUEST", "body");
  });

  it("malformed msgpack -> 400 E_BODY (body); wrong shapes -> 400 E_BAD_REQUEST", async () => {
    const good = msgpackEncode({ vectors: [{ id: "m", values: v(5) }] });
    for (const b of [
      good.subarray(0, good.length - 3),
      Uint8Array.from([0xc1]),
      Uint8Array.from([...msgpackEncode({ vector: v(1) }), 0x01]),
      Uint8Array.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
      Uint8Array.from([0x81, 0x91, 0x01, 0x01]),
    ]) {
      expectError(await call("POST", `${base}/vectors/upsert`, { body: b, ct: MSGPACK_CT }), 400, "E_BODY", "body");
    }
    expectError(await call("POST", `${base}/query`, { body: msgpackEncode([1, 2]), ct: MSGPACK_CT }), 400, "E_BAD_REQUEST", "body");
    expectError(
      await call("POST", `${base}/vectors/upsert`, { body: msgpackEncode({ vectors: "x" }), ct: MSGPACK_CT }),
      400,
      "E_BAD_REQUEST",
      "vectors",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, { body: msgpackEncode({ vectors: [7] }), ct: MSGPACK_CT }),
      400,
      "E_BAD_REQUEST",
      "vectors[0]",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "m", values: Uint8Array.from([1, 2, 3]) }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_BAD_REQUEST",
      "vectors[0].values",
    );
    // the same body, well formed, is accepted (so the rejections above are for the encoding)
    expectOk(await call("POST", `${base}/vectors/upsert`, { body: good, ct: "application/x-msgpack" }));
    expectOk(await call("POST", `${base}/vectors/delete`, { json: { ids: ["m"] } }));
  });

  it("malformed protobuf -> 400 E_BODY (body)", async () => {
    const good = UpsertRequest.encode({ vectors: [{ id: "p", values: v(6), metadata: struct({ genre: "p" }) }] }).finish();
    for (const b of [
      Uint8Array.from([0x0f, 0x05]),
      Uint8Array.from([0x0a, 0x10, 0x0a]),
      good.subarray(0, good.length - 2),
      Uint8Array.from([0x0b, 0x01]),
    ]) {
      expectError(await call("POST", `${base}/vectors/upsert`, { body: b, ct: PROTO_CT }), 400, "E_BODY", "body");
    }
    expectError(await call("POST", `${base}/query`, { body: Uint8Array.from([0x17]), ct: PROTO_CT }), 400, "E_BODY", "body");
    expectOk(await call("POST", `${base}/vectors/upsert`, { body: good, ct: PROTO_CT }));
    expectOk(await call("POST", `${base}/vectors/delete`, { json: { ids: ["p"] } }));
  });

  it("wrong dimension -> 400 E_DIMENSION at the offending vector", async () => {
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        json: {
          vectors: [
            { id: "ok", values: v(1) },
            { id: "d", values: v(1, DIM + 1) },
          ],
        },
      }),
      400,
      "E_DIMENSION",
      "vectors[1].values",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, { json: { vectors: [{ id: "d", values: [] }] } }),
      400,
      "E_DIMENSION",
      "vectors[0].values",
    );
    expectError(
      await call("POST", `${base}/namespaces/ns/upsert`, { json: { vectors: [{ id: "d", values: v(1, DIM - 1) }] } }),
      400,
      "E_DIMENSION",
      "vectors[0].values",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, { body: msgpackEncode({ vectors: [{ id: "d", values: v(1, 100) }] }), ct: MSGPACK_CT }),
      400,
      "E_DIMENSION",
      "vectors[0].values",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "d", values: new Uint8Array(new Float32Array(v(1, 3)).buffer) }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_DIMENSION",
      "vectors[0].values",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "d", values: v(1, 2) }] }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_DIMENSION",
      "vectors[0].values",
    );
    expectError(await call("POST", `${base}/query`, { json: { vector: v(1, DIM + 1) } }), 400, "E_DIMENSION", "vector");
    expectError(
      await call("POST", `${base}/query`, { body: QueryRequest.encode({ vector: v(1, 1), topK: 2 }).finish(), ct: PROTO_CT }),
      400,
      "E_DIMENSION",
      "vector",
    );
    expectError(await call("POST", `${base}/vectors/update`, { json: { id: "a", values: v(1, DIM * 2) } }), 400, "E_DIMENSION", "values");
    expect(await read()).toBe(snapshot);
  });

  it("NaN / Infinity -> 400 E_NON_FINITE at the offending value", async () => {
    const json = (_: string, tok: string) => `[1, 2, ${tok}, 4]`;
    expectError(
      await call("POST", `${base}/vectors/upsert`, { body: `{"vectors": [{"id": "n", "values": ${json("", "1e999")}}]}`, ct: JSON_CT }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[2]",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: `{"vectors": [{"id": "ok", "values": [1,1,1,1]}, {"id": "n", "values": ${json("", "-1e999")}}]}`,
        ct: JSON_CT,
      }),
      400,
      "E_NON_FINITE",
      "vectors[1].values[2]",
    );
    // finite as a double, Infinity as the float32 the server stores
    expectError(
      await call("POST", `${base}/vectors/upsert`, { body: `{"vectors": [{"id": "n", "values": ${json("", "1e39")}}]}`, ct: JSON_CT }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[2]",
    );
    expectError(
      await call("POST", `${base}/query`, { body: `{"vector": ${json("", "1e999")}}`, ct: JSON_CT }),
      400,
      "E_NON_FINITE",
      "vector[2]",
    );
    expectError(
      await call("POST", `${base}/vectors/update`, { body: `{"id": "a", "values": ${json("", "-1e999")}}`, ct: JSON_CT }),
      400,
      "E_NON_FINITE",
      "values[2]",
    );
    // msgpack carries real NaN and Infinity (float64 and float32)
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "n", values: [1, NaN, 1, 1] }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[1]",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "n", values: [1, 1, 1, -Infinity] }] }, { forceFloat32: true }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[3]",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "n", values: new Uint8Array(new Float32Array([1, 1, NaN, 1]).buffer) }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[2]",
    );
    expectError(
      await call("POST", `${base}/query`, { body: msgpackEncode({ vector: [Infinity, 1, 1, 1] }), ct: MSGPACK_CT }),
      400,
      "E_NON_FINITE",
      "vector[0]",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "n", values: [1, 1, 1, NaN] }] }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_NON_FINITE",
      "vectors[0].values[3]",
    );
    expectError(
      await call("POST", `${base}/query`, { body: QueryRequest.encode({ vector: [1, Infinity, 1, 1] }).finish(), ct: PROTO_CT }),
      400,
      "E_NON_FINITE",
      "vector[1]",
    );
    // all zeros is finite but has no direction for cosine
    expectError(
      await call("POST", `${base}/vectors/upsert`, { json: { vectors: [{ id: "z", values: [0, 0, 0, 0] }] } }),
      400,
      "E_BAD_REQUEST",
      "vectors[0].values",
    );
    // NaN as metadata or as a filter operand is those checks' error
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "n", values: v(1), metadata: { score: NaN } }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_METADATA",
      "vectors[0].metadata.score",
    );
    expectError(
      await call("POST", `${base}/query`, { body: msgpackEncode({ vector: v(1), filter: { year: { $gt: Infinity } } }), ct: MSGPACK_CT }),
      400,
      "E_FILTER",
      "filter.year.$gt",
    );
    expect(await read()).toBe(snapshot);
  });

  it("ids that are not strings, empty or over 512 bytes -> 400 naming the id; 512 bytes is fine", async () => {
    for (const id of [5, null, true, [], {}, ["a"], "", "i".repeat(513), "€".repeat(171), "😀".repeat(129)]) {
      expectError(
        await call("POST", `${base}/vectors/upsert`, {
          json: {
            vectors: [
              { id: "ok", values: v(1) },
              { id, values: v(2) },
            ],
          },
        }),
        400,
        "E_BAD_REQUEST",
        "vectors[1].id",
      );
      expectError(
        await call("POST", `${base}/vectors/upsert`, { body: msgpackEncode({ vectors: [{ id, values: v(2) }] }), ct: MSGPACK_CT }),
        400,
        "E_BAD_REQUEST",
        "vectors[0].id",
      );
      expectError(await call("POST", `${base}/vectors/update`, { json: { id, setMetadata: { a: 1 } } }), 400, "E_BAD_REQUEST", "id");
      expectError(await call("POST", `${base}/vectors/delete`, { json: { ids: ["a", id] } }), 400, "E_BAD_REQUEST", "ids[1]");
    }
    expectError(
      await call("POST", `${base}/vectors/upsert`, { json: { vectors: [{ values: v(2) }] } }),
      400,
      "E_BAD_REQUEST",
      "vectors[0].id",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "€".repeat(171), values: v(2) }] }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_BAD_REQUEST",
      "vectors[0].id",
    );
    for (const id of [5, null, [], ""]) expectError(await call("POST", `${base}/query`, { json: { id } }), 400, "E_BAD_REQUEST", "id");
    for (const id of ["", "i".repeat(513)])
      expectError(await call("GET", `${base}/vectors/fetch?ids=a&ids=${id}`), 400, "E_BAD_REQUEST", "ids[1]");
    // the delete above named "a" first: nothing was deleted
    expect(await read()).toBe(snapshot);
    // exactly 512 UTF-8 bytes, ASCII and multi-byte, is accepted
    const long = ["i".repeat(512), `${"€".repeat(170)}ab`];
    expectOk(
      await call("POST", `${base}/vectors/upsert`, { json: { namespace: "ids", vectors: long.map((id, i) => ({ id, values: v(i) })) } }),
    );
    await settle();
    const f = await call("GET", `${base}/vectors/fetch?namespace=ids&${long.map((id) => `ids=${encodeURIComponent(id)}`).join("&")}`);
    expect(Object.keys(f.json.vectors).sort()).toEqual([...long].sort());
    expectOk(await call("DELETE", `${base}/namespaces/ids`), 202);
  });

  it("metadata over 40 KB, nested, null or of the wrong type -> 400 E_METADATA at its path", async () => {
    // {"k":"xxx..."} is N + 8 bytes of JSON: 40,960 bytes is the limit, one more is over
    const at = (n: number) => ({ k: "x".repeat(n - 8) });
    expectError(
      await call("POST", `${base}/vectors/upsert`, { json: { vectors: [{ id: "m", values: v(1), metadata: at(40_961) }] } }),
      400,
      "E_METADATA",
      "vectors[0].metadata",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ vectors: [{ id: "m", values: v(1), metadata: { wide: "€".repeat(14_000) } }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_METADATA",
      "vectors[0].metadata",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "m", values: v(1), metadata: struct({ big: "m".repeat(41_000) }) }] }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_METADATA",
      "vectors[0].metadata",
    );
    expectError(
      await call("POST", `${base}/vectors/update`, { json: { id: "a", setMetadata: at(40_961) } }),
      400,
      "E_METADATA",
      "setMetadata",
    );
    const cases: Array<[unknown, string]> = [
      [{ a: { b: 1 } }, "vectors[0].metadata.a"],
      [{ ok: 1, b: null }, "vectors[0].metadata.b"],
      [{ tags: ["x", 2] }, "vectors[0].metadata.tags[1]"],
      [{ tags: ["x", ["y"]] }, "vectors[0].metadata.tags[1]"],
      [{ $op: 1 }, "vectors[0].metadata.$op"],
      [{ "": 1 }, 'vectors[0].metadata[""]'],
      ["a string", "vectors[0].metadata"],
      [["a", "list"], "vectors[0].metadata"],
      [5, "vectors[0].metadata"],
    ];
    for (const [metadata, field] of cases) {
      expectError(
        await call("POST", `${base}/vectors/upsert`, { json: { vectors: [{ id: "m", values: v(1), metadata }] } }),
        400,
        "E_METADATA",
        field,
      );
    }
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "m", values: v(1), metadata: struct({ n: null }) }] }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_METADATA",
      "vectors[0].metadata.n",
    );
    expectError(
      await call("POST", `${base}/vectors/update`, { json: { id: "a", setMetadata: { genre: { $eq: "x" } } } }),
      400,
      "E_METADATA",
      "setMetadata.genre",
    );
    expect(await read()).toBe(snapshot);
    // exactly 40,960 bytes is accepted
    expectOk(
      await call("POST", `${base}/vectors/upsert`, {
        json: { namespace: "md", vectors: [{ id: "m", values: v(1), metadata: at(40_960) }] },
      }),
    );
    await settle();
    expectOk(await call("DELETE", `${base}/namespaces/md`), 202);
  });

  it("unknown filter operators, wrong operand types, too deep -> 400 E_FILTER at the exact path", async () => {
    const cases: Array<[unknown, string | RegExp]> = [
      [{ year: { $foo: 1 } }, "filter.year.$foo"],
      [{ $foo: [] }, "filter.$foo"],
      [{ $eq: 1 }, "filter.$eq"],
      [{ $and: [{ genre: "x" }, { genre: { $regex: "x.*" } }] }, "filter.$and[1].genre.$regex"],
      [{ year: { $gt: "1990" } }, "filter.year.$gt"],
      [{ year: { $in: 5 } }, "filter.year.$in"],
      [{ year: { $in: [1, [2]] } }, "filter.year.$in[1]"],
      [{ year: { $exists: "yes" } }, "filter.year.$exists"],
      [{ genre: ["x"] }, "filter.genre"],
      [{ genre: null }, "filter.genre"],
      [{ $or: [] }, "filter.$or"],
      [{ $and: [{}] }, "filter.$and[0]"],
      ["genre", "filter"],
      [[{ genre: "x" }], "filter"],
    ];
    let deep: Record<string, unknown> = { genre: "x" };
    for (let i = 0; i < 9; i++) deep = { $and: [deep, { year: 1 }] };
    cases.push([deep, /^filter(\.\$and\[0\]){8}$/]);
    for (const [filter, field] of cases) {
      expectError(await call("POST", `${base}/query`, { json: { vector: v(1), filter } }), 400, "E_FILTER", field);
      expectError(await call("POST", `${base}/vectors/delete`, { json: { filter } }), 400, "E_FILTER", field);
      expectError(await call("POST", `${base}/describe_index_stats`, { json: { filter } }), 400, "E_FILTER", field);
    }
    expectError(
      await call("POST", `${base}/query`, {
        body: QueryRequest.encode({ vector: v(1), filter: struct({ year: { $foo: 1 } }) }).finish(),
        ct: PROTO_CT,
      }),
      400,
      "E_FILTER",
      "filter.year.$foo",
    );
    // an empty filter would delete everything: refused (deleteAll says that on purpose)
    expectError(await call("POST", `${base}/vectors/delete`, { json: { filter: {} } }), 400, "E_FILTER", "filter");
    expect(await read()).toBe(snapshot);
  });

  it("unknown index -> 404 E_NOT_FOUND (name) on every route", async () => {
    const x = "/v1/indexes/no-such-index";
    const answers = [
      await call("POST", `${x}/vectors/upsert`, { json: { vectors: [{ id: "a", values: v(1) }] } }),
      await call("POST", `${x}/namespaces/ns/upsert`, { json: { vectors: [{ id: "a", values: v(1) }] } }),
      await call("POST", `${x}/vectors/upsert`, {
        body: UpsertRequest.encode({ vectors: [{ id: "a", values: v(1) }] }).finish(),
        ct: PROTO_CT,
      }),
      await call("POST", `${x}/query`, { json: { vector: v(1) } }),
      await call("POST", `${x}/query`, { body: msgpackEncode({ vector: v(1) }), ct: MSGPACK_CT }),
      await call("GET", `${x}/vectors/fetch?ids=a`),
      await call("POST", `${x}/vectors/update`, { json: { id: "a", setMetadata: { a: 1 } } }),
      await call("POST", `${x}/vectors/delete`, { json: { deleteAll: true } }),
      await call("GET", `${x}/describe_index_stats`),
      await call("POST", `${x}/describe_index_stats`, { json: {} }),
      await call("GET", `${x}/namespaces`),
      await call("GET", `${x}/namespaces/ns`),
      await call("DELETE", `${x}/namespaces/ns`),
      await call("GET", x),
      await call("PATCH", x, { json: { deletion_protection: "enabled" } }),
      await call("DELETE", x),
      await call("GET", "/v1/indexes/__proto__"),
      await call("GET", "/v1/indexes/BAD-INPUT"),
    ];
    for (const a of answers) expectError(a, 404, "E_NOT_FOUND", "name");
    expectError(await call("GET", "/v1/indexes/%ZZ"), 400, "E_BAD_REQUEST", "name");
  });

  it("unknown namespace -> 404 (namespace), also for names of Object.prototype members", async () => {
    for (const n of ["nope", "constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expectError(await call("GET", `${base}/namespaces/${n}`), 404, "E_NOT_FOUND", "namespace");
      expectError(await call("DELETE", `${base}/namespaces/${n}`), 404, "E_NOT_FOUND", "namespace");
    }
    // and a namespace really named so is one like any other
    expectOk(await call("POST", `${base}/namespaces/__proto__/upsert`, { json: { vectors: [{ id: "p", values: v(1) }] } }));
    await settle();
    expect((await call("GET", `${base}/namespaces/__proto__`)).json).toEqual({ name: "__proto__", record_count: 1 });
    expect((await call("GET", `${base}/describe_index_stats`)).json.namespaces).toEqual({
      __default__: { vectorCount: 2 },
      ns: { vectorCount: 1 },
      ["__proto__"]: { vectorCount: 1 },
    });
    expect((await call("GET", `${base}/namespaces`)).json.namespaces.map((n: { name: string }) => n.name)).toEqual([
      "__default__",
      "__proto__",
      "ns",
    ]);
    expectOk(await call("DELETE", `${base}/namespaces/__proto__`), 202);
    expect(await read()).toBe(snapshot);
  });

  it("namespace that is not a string or over 512 bytes -> 400 (namespace)", async () => {
    for (const namespace of [5, true, [], {}, ["ns"]]) {
      expectError(
        await call("POST", `${base}/vectors/upsert`, { json: { namespace, vectors: [{ id: "a", values: v(1) }] } }),
        400,
        "E_BAD_REQUEST",
        "namespace",
      );
      expectError(await call("POST", `${base}/query`, { json: { namespace, vector: v(1) } }), 400, "E_BAD_REQUEST", "namespace");
      expectError(
        await call("POST", `${base}/vectors/update`, { json: { namespace, id: "a", setMetadata: { a: 1 } } }),
        400,
        "E_BAD_REQUEST",
        "namespace",
      );
      expectError(await call("POST", `${base}/vectors/delete`, { json: { namespace, ids: ["a"] } }), 400, "E_BAD_REQUEST", "namespace");
    }
    expectError(
      await call("POST", `${base}/vectors/upsert`, {
        body: msgpackEncode({ namespace: 7, vectors: [{ id: "a", values: v(1) }] }),
        ct: MSGPACK_CT,
      }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expectError(
      await call("POST", `${base}/vectors/upsert`, { json: { namespace: "n".repeat(513), vectors: [{ id: "a", values: v(1) }] } }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expectError(
      await call("POST", `${base}/query`, { json: { namespace: "n".repeat(513), vector: v(1) } }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expectError(await call("GET", `${base}/vectors/fetch?ids=a&namespace=${"n".repeat(513)}`), 400, "E_BAD_REQUEST", "namespace");
    expectError(
      await call("POST", `${base}/namespaces/${"€".repeat(171)}/upsert`, { json: { vectors: [{ id: "a", values: v(1) }] } }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expectError(
      await call("POST", `${base}/namespaces/%E2%82/upsert`, { json: { vectors: [{ id: "a", values: v(1) }] } }),
      400,
      "E_BAD_REQUEST",
      "namespace",
    );
    expect(await read()).toBe(snapshot);
  });

  it("topK that is not an integer in [1, 10000] -> 400 E_TOP_K (topK)", async () => {
    for (const topK of [0, -1, 1e9, "10", 1.5, 10_001, true, [], {}]) {
      expectError(await call("POST", `${base}/query`, { json: { vector: v(1), topK } }), 400, "E_TOP_K", "topK");
    }
    for (const topK of [NaN, Infinity, -0.5])
      expectError(
        await call("POST", `${base}/query`, { body: msgpackEncode({ vector: v(1), topK }), ct: MSGPACK_CT }),
        400,
        "E_TOP_K",
        "topK",
      );
    expectError(
      await call("POST", `${base}/query`, { body: QueryRequest.encode({ vector: v(1), topK: 20_000 }).finish(), ct: PROTO_CT }),
      400,
      "E_TOP_K",
      "topK",
    );
    expectOk(await call("POST", `${base}/query`, { json: { vector: v(1), topK: 10_000 } }));
    expectOk(await call("POST", `${base}/query`, { json: { vector: v(1), topK: 1 } }));
  });

  it("query with neither or both of vector and id, or bad flags -> 400", async () => {
    expectError(await call("POST", `${base}/query`, { json: { topK: 3 } }), 400, "E_BAD_REQUEST", "vector");
    expectError(await call("POST", `${base}/query`, { json: { vector: v(1), id: "a" } }), 400, "E_BAD_REQUEST", "id");
    expectError(await call("POST", `${base}/query`, { json: { id: "missing" } }), 404, "E_NOT_FOUND", "id");
    expectError(
      await call("POST", `${base}/query`, { json: { vector: v(1), includeValues: "yes" } }),
      400,
      "E_BAD_REQUEST",
      "includeValues",
    );
    expectError(
      await call("POST", `${base}/query`, { json: { vector: v(1), includeMetadata: 1 } }),
      400,
      "E_BAD_REQUEST",
      "includeMetadata",
    );
    expectError(await call("POST", `${base}/query`, { json: { vector: v(1).map(String) } }), 400, "E_BAD_REQUEST", "vector[0]");
    expectError(
      await call("POST", `${base}/query`, { json: { vector: v(1), sparseVector: { indices: [1, 0], values: [1, 1] } } }),
      400,
      "E_BAD_REQUEST",
      "sparseVector.indices[1]",
    );
  });

  it("fetch without ids or with more than 1000 -> 400 (ids)", async () => {
    for (const q of ["", "?namespace=ns", "?id=a", "?ids[]=a"])
      expectError(await call("GET", `${base}/vectors/fetch${q}`), 400, "E_BAD_REQUEST", "ids");
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `ids=id-${i}`).join("&");
    expectError(await call("GET", `${base}/vectors/fetch?${ids(1001)}`), 400, "E_BAD_REQUEST", "ids");
    const ok = await call("GET", `${base}/vectors/fetch?${ids(1000)}&ids=a`.replace("ids=id-0&", ""));
    expectOk(ok);
    expect(Object.keys(ok.json.vectors)).toEqual(["a"]);
  });

  it("delete with none or several of ids/filter/deleteAll -> 400 (ids); deleteAll not a boolean -> 400 (deleteAll)", async () => {
    for (const body of [
      {},
      { namespace: "ns" },
      { deleteAll: false },
      { ids: ["a"], filter: { genre: "x" } },
      { ids: ["a"], deleteAll: true },
      { filter: { genre: "x" }, deleteAll: true },
      { ids: null, filter: null },
    ]) {
      expectError(await call("POST", `${base}/vectors/delete`, { json: body }), 400, "E_BAD_REQUEST", "ids");
    }
    // deleteAll not a boolean names deleteAll, also alone (its request schema refuses it before the one-of rule)
    for (const body of [{ ids: ["a"], deleteAll: "yes" }, { deleteAll: "true" }])
      expectError(await call("POST", `${base}/vectors/delete`, { json: body }), 400, "E_BAD_REQUEST", "deleteAll");
    expectError(await call("POST", `${base}/vectors/delete`, { json: { ids: "a" } }), 400, "E_BAD_REQUEST", "ids");
    expectError(
      await call("POST", `${base}/vectors/delete`, { body: msgpackEncode({ ids: ["a"] }), ct: MSGPACK_CT }),
      415,
      "E_MEDIA_TYPE",
      "content-type",
    );
    expect(await read()).toBe(snapshot);
  });

  it("update of a missing id -> 404 (id); update with nothing to change -> 400", async () => {
    expectError(await call("POST", `${base}/vectors/update`, { json: { id: "missing", values: v(1) } }), 404, "E_NOT_FOUND", "id");
    expectError(await call("POST", `${base}/vectors/update`, { json: { id: "missing", setMetadata: { a: 1 } } }), 404, "E_NOT_FOUND", "id");
    expectError(
      await call("POST", `${base}/vectors/update`, { json: { id: "b", namespace: "ns", setMetadata: { a: 1 } } }),
      404,
      "E_NOT_FOUND",
      "id",
    );
    expectError(
      await call("POST", `${base}/vectors/update`, { json: { id: "a", namespace: "__proto__", setMetadata: { a: 1 } } }),
      404,
      "E_NOT_FOUND",
      "id",
    );
    expectError(await call("POST", `${base}/vectors/update`, { json: { id: "a" } }), 400, "E_BAD_REQUEST", "values");
    expectError(await call("POST", `${base}/vectors/update`, { json: { id: "a", values: "1,2,3,4" } }), 400, "E_BAD_REQUEST", "values");
    expect(await read()).toBe(snapshot);
  });

  it("wrong method -> 405 E_METHOD (method) with Allow (HEAD wherever GET)", async () => {
    const cases: Array<[string, string, string]> = [
      ["PUT", "/v1/indexes", "GET, HEAD, POST"],
      ["DELETE", "/v1/indexes", "GET, HEAD, POST"],
      ["POST", base, "GET, HEAD, PATCH, DELETE"],
      ["GET", `${base}/vectors/upsert`, "POST"],
      ["GET", `${base}/query`, "POST"],
      ["POST", `${base}/vectors/fetch`, "GET, HEAD"],
      ["DELETE", `${base}/vectors/delete`, "POST"],
      ["PUT", `${base}/describe_index_stats`, "GET, HEAD, POST"],
      ["POST", `${base}/namespaces/ns`, "GET, HEAD, DELETE"],
      ["POST", "/v1/health", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const a = await call(method, path, method === "GET" ? {} : { json: { vectors: [] } });
      expectError(a, 405, "E_METHOD", "method");
      expect(a.headers.get("allow")?.split(", ").sort()).toEqual(allow.split(", ").sort());
    }
  });

  it("unknown path -> 404 E_NOT_FOUND (path)", async () => {
    for (const path of ["/", "/v2/indexes", "/v1/indexes/", `${base}/`, `${base}/vectors`, `${base}/vectors/scan`, "/v1/indexes//query"]) {
      expectError(await call("GET", path), 404, "E_NOT_FOUND", "path");
    }
  });

  it("unsupported Content-Type -> 415 E_MEDIA_TYPE (content-type); binary types only where protobuf is spoken", async () => {
    for (const ct of [
      "text/plain",
      "text/plain;charset=UTF-8",
      "application/xml",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/octet-stream",
      "application/jsonx",
    ]) {
      expectError(await call("POST", `${base}/query`, { body: JSON.stringify({ vector: v(1) }), ct }), 415, "E_MEDIA_TYPE", "content-type");
      expectError(
        await call("POST", `${base}/vectors/upsert`, { body: JSON.stringify({ vectors: [{ id: "ct", values: v(1) }] }), ct }),
        415,
        "E_MEDIA_TYPE",
        "content-type",
      );
      expectError(
        await call("POST", "/v1/indexes", { body: JSON.stringify({ name: "ct", dimension: 4 }), ct }),
        415,
        "E_MEDIA_TYPE",
        "content-type",
      );
    }
    // routes that speak JSON only refuse msgpack and protobuf bodies, even ones that would decode
    expectError(
      await call("POST", `${base}/vectors/update`, { body: msgpackEncode({ id: "a", setMetadata: { genre: "y" } }), ct: MSGPACK_CT }),
      415,
      "E_MEDIA_TYPE",
      "content-type",
    );
    expectError(
      await call("POST", `${base}/describe_index_stats`, { body: msgpackEncode({}), ct: MSGPACK_CT }),
      415,
      "E_MEDIA_TYPE",
      "content-type",
    );
    expectError(
      await call("POST", "/v1/indexes", { body: msgpackEncode({ name: "ct", dimension: 4 }), ct: MSGPACK_CT }),
      415,
      "E_MEDIA_TYPE",
      "content-type",
    );
    expectError(
      await call("PATCH", base, { body: msgpackEncode({ tags: { a: "b" } }), ct: PROTO_CT }),
      415,
      "E_MEDIA_TYPE",
      "content-type",
    );
    expect((await call("GET", "/v1/indexes")).json.indexes.map((i: { name: string }) => i.name)).toEqual([INDEX]);
    expect(await read()).toBe(snapshot);
  });

  it("control plane: bad name, dimension, metric, spec, tags or protection -> 400 at the field; a taken name -> 409", async () => {
    const good = { name: "fresh", dimension: 4, metric: "cosine" };
    const cases: Array<[Record<string, unknown>, ErrorCode, string]> = [
      [{ name: "Bad_Name" }, "E_BAD_REQUEST", "name"],
      [{ name: "" }, "E_BAD_REQUEST", "name"],
      [{ name: "-a" }, "E_BAD_REQUEST", "name"],
      [{ name: "a".repeat(46) }, "E_BAD_REQUEST", "name"],
      [{ name: 5 }, "E_BAD_REQUEST", "name"],
      [{ dimension: 0 }, "E_DIMENSION", "dimension"],
      [{ dimension: -1 }, "E_DIMENSION", "dimension"],
      [{ dimension: 20_001 }, "E_DIMENSION", "dimension"],
      [{ dimension: 1.5 }, "E_DIMENSION", "dimension"],
      [{ dimension: "4" }, "E_DIMENSION", "dimension"],
      [{ dimension: undefined }, "E_DIMENSION", "dimension"],
      [{ metric: "manhattan" }, "E_BAD_REQUEST", "metric"],
      [{ metric: 5 }, "E_BAD_REQUEST", "metric"],
      [{ spec: "serverless" }, "E_BAD_REQUEST", "spec"],
      [{ spec: [] }, "E_BAD_REQUEST", "spec"],
      [{ deletion_protection: "on" }, "E_BAD_REQUEST", "deletion_protection"],
      [{ tags: "x" }, "E_BAD_REQUEST", "tags"],
      [{ tags: { team: 5 } }, "E_BAD_REQUEST", "tags.team"],
    ];
    for (const [patch, code, field] of cases)
      expectError(await call("POST", "/v1/indexes", { json: { ...good, ...patch } }), 400, code, field);
    expectError(await call("POST", "/v1/indexes", { json: [good] }), 400, "E_BAD_REQUEST", "body");
    expectError(await call("POST", "/v1/indexes", { json: { ...good, name: INDEX } }), 409, "E_CONFLICT", "name");
    expectError(await call("PATCH", base, { json: { deletion_protection: "maybe" } }), 400, "E_BAD_REQUEST", "deletion_protection");
    expectError(await call("PATCH", base, { json: { tags: { a: 1 } } }), 400, "E_BAD_REQUEST", "tags.a");
    expect((await call("GET", "/v1/indexes")).json.indexes.map((i: { name: string }) => i.name)).toEqual([INDEX]);
    expect((await call("GET", base)).json).toMatchObject({ name: INDEX, dimension: DIM, deletion_protection: "disabled", tags: null });
  });

  it("missing or unknown API key -> 401 E_AUTH (api-key)", async () => {
    expectError(await call("POST", `${base}/vectors/delete`, { json: { deleteAll: true }, noKey: true }), 401, "E_AUTH", "api-key");
    expectError(
      await call("GET", `${base}/vectors/fetch?ids=a`, { noKey: true, headers: { "api-key": "svc_nope" } }),
      401,
      "E_AUTH",
      "api-key",
    );
    expectError(await call("DELETE", base, { noKey: true, headers: { authorization: "Bearer svc_nope" } }), 401, "E_AUTH", "api-key");
    expect(await read()).toBe(snapshot);
  });

  it("a malformed x-svc-after (read-your-writes token) -> 400 E_BAD_REQUEST (x-svc-after); a well-formed one is accepted; one node sends no x-svc-log-seq", async () => {
    for (const bad of ["-1", "1.5", "abc", "1e400", "9007199254740993"]) {
      expectError(
        await call("POST", `${base}/query`, { json: { vector: v(1), topK: 1 }, headers: { "x-svc-after": bad } }),
        400,
        "E_BAD_REQUEST",
        "x-svc-after",
      );
      expectError(
        await call("GET", `${base}/vectors/fetch?ids=a`, { headers: { "x-svc-after": bad } }),
        400,
        "E_BAD_REQUEST",
        "x-svc-after",
      );
    }
    expectOk(await call("POST", `${base}/query`, { json: { vector: v(1), topK: 1 }, headers: { "x-svc-after": "12" } }));
    expectOk(await call("GET", `${base}/describe_index_stats`, { headers: { "x-svc-after": "0" } }));
    const w = await call("POST", `${base}/vectors/update`, { json: { id: "a", setMetadata: { genre: "x" } } });
    expectOk(w);
    expect(w.headers.get("x-svc-log-seq")).toBeNull();
    expect(await read()).toBe(snapshot);
  });

  it("after all that the process is alive, logged no server error, and the stored data is unchanged", async () => {
    expectOk(await call("GET", "/v1/health"));
    expect(srv.child.exitCode).toBeNull();
    expect(srv.output()).not.toMatch(/"level":(50|60)/);
    expect(await read()).toBe(snapshot);
  });
});

describe("a body over the cap -> 413 E_TOO_LARGE (body)", () => {
  let srv: ServerProcess;
  const call = client(() => srv);

  beforeAll(async () => {
    srv = await startServerProcess({ args: ["--body-limit", "1000"] });
    expectOk(await call("POST", "/v1/indexes", { json: { name: "cap", dimension: DIM } }), 201);
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  const upsertOf = (bytes: number): string => {
    const head = '{"vectors":[{"id":"a","values":[1,2,3,4],"metadata":{"pad":"';
    const tail = '"}}]}';
    return head + "p".repeat(bytes - head.length - tail.length) + tail;
  };

  /**
   * The server answers 413 and closes the connection while a client may still be sending, so
   * fetch can see EPIPE instead of the answer; here the whole request goes out in one write on
   * a fresh connection and the answer is read back raw.
   */
  const raw = (head: string, body: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const { hostname, port } = new URL(srv.url);
      const socket = connect({ host: hostname, port: Number(port) });
      let got = Buffer.alloc(0);
      const done = () => {
        const text = got.toString("latin1");
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return false;
        const lines = text.slice(0, end).split("\r\n");
        const headers = new Headers(
          lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()] as [string, string]),
        );
        const payload = got.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1"));
        if (payload.length < Number(headers.get("content-length") ?? Infinity)) return false;
        const answer = payload.toString("utf8");
        socket.destroy();
        resolve({ status: Number(lines[0]!.split(" ")[1]), headers, text: answer, json: JSON.parse(answer) });
        return true;
      };
      socket.setTimeout(10_000, () => socket.destroy(new Error("no answer in 10 s")));
      socket.on("connect", () => socket.write(`${head}\r\nhost: ${hostname}\r\napi-key: ${srv.adminKey}\r\n\r\n${body}`));
      socket.on("data", (b: Buffer) => {
        got = Buffer.concat([got, b]);
        done();
      });
      socket.on("close", () => done() || reject(new Error(`connection closed after ${JSON.stringify(got.toString())}`)));
      socket.on("error", () => {}); // a reset after the answer arrived is fine; "close" follows
    });
  const chunked = (parts: string[]): string => parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join("") + "0\r\n\r\n";

  it("refuses a declared Content-Length over the cap, before reading", async () => {
    expect(upsertOf(1001)).toHaveLength(1001);
    expectError(
      await raw("POST /v1/indexes/cap/vectors/upsert HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 1001", upsertOf(1001)),
      413,
      "E_TOO_LARGE",
      "body",
    );
    // declared, not yet sent: refused on the headers alone
    expectError(
      await raw("POST /v1/indexes/cap/query HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 100000", "{}"),
      413,
      "E_TOO_LARGE",
      "body",
    );
    // before the content type or anything else is looked at
    expectError(
      await raw("POST /v1/indexes HTTP/1.1\r\ncontent-type: text/plain\r\ncontent-length: 5000", "x".repeat(5000)),
      413,
      "E_TOO_LARGE",
      "body",
    );
    // exactly the cap is read
    expectOk(await call("POST", "/v1/indexes/cap/vectors/upsert", { body: upsertOf(1000), ct: JSON_CT }));
  });

  it("refuses a chunked body (no Content-Length) once it passes the cap", async () => {
    const spaces = (n: number, size: number) => Array.from({ length: n }, () => " ".repeat(size));
    expectError(
      await raw(
        "POST /v1/indexes/cap/query HTTP/1.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked",
        chunked([...spaces(8, 400), "{}"]),
      ),
      413,
      "E_TOO_LARGE",
      "body",
    );
    // under the cap, chunked is read like any body (by fetch too)
    expectError(
      await raw(
        "POST /v1/indexes/cap/query HTTP/1.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked",
        chunked([...spaces(2, 100), "{}"]),
      ),
      400,
      "E_BAD_REQUEST",
      "vector",
    );
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"vector": [1, 2,'));
        c.enqueue(new TextEncoder().encode(" 3]}"));
        c.close();
      },
    });
    expectError(await call("POST", "/v1/indexes/cap/query", { body: stream, ct: JSON_CT }), 400, "E_DIMENSION", "vector");
  });

  it("a streamed upload that passes the cap gets the 413 (read to its end and dropped), not a reset, also through fetch", async () => {
    const big = (bytes: number) =>
      new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes; i += 65536) c.enqueue(new Uint8Array(Math.min(65536, bytes - i)).fill(32));
          c.close();
        },
      });
    for (const bytes of [200_000, 8 << 20]) {
      expectError(await call("POST", "/v1/indexes/cap/query", { body: big(bytes), ct: JSON_CT }), 413, "E_TOO_LARGE", "body");
      expectError(
        await call("POST", "/v1/records/n/import", { body: big(bytes), ct: "multipart/form-data; boundary=x" }),
        413,
        "E_TOO_LARGE",
        "body",
      );
    }
  });

  it("stays up and keeps what it accepted", async () => {
    expectOk(await call("GET", "/v1/health"));
    expect(srv.child.exitCode).toBeNull();
    const f = await call("GET", "/v1/indexes/cap/vectors/fetch?ids=a");
    expectOk(f);
    expect(f.json.vectors.a.values).toEqual([1, 2, 3, 4]);
  });
});
