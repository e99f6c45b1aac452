import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";

// Upsert, query and fetch in JSON, msgpack (numbers or a bin of float32) and protobuf; responses follow Accept.
// Clients here build their bodies independently: protobuf messages from vectors.proto with protobufjs,
// metadata and filters as google.protobuf.Struct written out by hand.

const JSON_T = "application/json";
const MSGPACK = "application/msgpack";
const PROTO = "application/x-protobuf";
type Codec = "json" | "msgpack" | "msgpack-bin" | "protobuf";

const root = protobuf.loadSync(fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url)));
const T = (name: string) => root.lookupType(`svc.v1.${name}`);

// ---- google.protobuf.Struct, by hand ------------------------------------------------------------
type PValue = Record<string, unknown>;
function toValue(v: unknown): PValue {
  if (v === null) return { nullValue: 0 };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v as Record<string, unknown>) };
}
function toStruct(o: Record<string, unknown>): { fields: Record<string, PValue> } {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)])) };
}
function fromValue(v: any): unknown {
  if ("stringValue" in v) return v.stringValue;
  if ("numberValue" in v) return v.numberValue;
  if ("boolValue" in v) return v.boolValue;
  if ("listValue" in v) return (v.listValue.values ?? []).map(fromValue);
  if ("structValue" in v) return fromStruct(v.structValue);
  return null;
}
function fromStruct(s: any): Record<string, unknown> {
  return Object.fromEntries(Object.entries(s?.fields ?? {}).map(([k, v]) => [k, fromValue(v)]));
}

function protoEncode(type: string, obj: Record<string, unknown>): Buffer {
  const t = T(type);
  const err = t.verify(t.fromObject(obj));
  if (err) throw new Error(`${type}: ${err}`);
  return Buffer.from(t.encode(t.fromObject(obj)).finish());
}
function protoDecode(type: string, buf: Uint8Array): any {
  const t = T(type);
  return t.toObject(t.decode(buf), { longs: Number, defaults: false, arrays: false, objects: false });
}

/** Little-endian float32 bytes, written explicitly (not relying on the host's byte order). */
function f32le(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const dv = new DataView(out.buffer);
  values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
  return out;
}

// ---- the data: float32-exact values, every metadata type --------------------------------------------
const DIM = 12;
const GENRES = ["drama", "comedy", "noir"];
const N = 40;
const vectors = Array.from({ length: N }, (_, i) => ({
  id: `doc-${i}`,
  values: Array.from({ length: DIM }, (_, d) => Math.fround(Math.cos(i * 1.7 + d * 0.9) * (1 + (i % 3)))),
  metadata: {
    genre: GENRES[i % 3]!,
    year: 1990 + i,
    rating: (i % 10) / 2,
    tags: i % 2 === 0 ? ["even", "x"] : ["odd"],
    active: i % 4 !== 1,
  },
}));
const QUERY = Array.from({ length: DIM }, (_, d) => Math.fround(Math.cos(7 * 1.7 + d * 0.9) + 0.25 * Math.sin(d)));
const FILTER = { $and: [{ genre: { $in: ["drama", "noir"] } }, { year: { $gte: 2000 } }, { active: true }] };

interface Sent {
  status: number;
  type: string;
  body: Buffer;
}

describe("codecs: JSON, msgpack and protobuf", () => {
  let dir: string;
  let server: Server;

  const send = async (
    method: string,
    path: string,
    contentType: string | null,
    body: Uint8Array | string | undefined,
    accept?: string,
  ): Promise<Sent> => {
    const headers: Record<string, string> = {};
    if (contentType !== null) headers["content-type"] = contentType;
    if (accept !== undefined) headers.accept = accept;
    const res = await fetch(server.url + path, {
      method,
      headers,
      body: typeof body === "string" || body === undefined ? body : new Uint8Array(body),
    });
    return { status: res.status, type: res.headers.get("content-type") ?? "", body: Buffer.from(await res.arrayBuffer()) };
  };

  /** Decode a response by its Content-Type. */
  const decode = (r: Sent, protoType: string): any => {
    if (r.type === JSON_T) return JSON.parse(r.body.toString("utf8"));
    if (r.type === MSGPACK) return msgpackDecode(r.body);
    if (r.type === PROTO) return protoDecode(protoType, r.body);
    throw new Error(`unexpected content-type ${r.type}`);
  };

  const upsertBody = (codec: Codec, ns: string, vs: typeof vectors): [string, Uint8Array | string] => {
    switch (codec) {
      case "json":
        return [JSON_T, JSON.stringify({ vectors: vs, namespace: ns })];
      case "msgpack":
        return [MSGPACK, msgpackEncode({ vectors: vs, namespace: ns })];
      case "msgpack-bin":
        return [MSGPACK, msgpackEncode({ vectors: vs.map((v) => ({ ...v, values: f32le(v.values) })), namespace: ns })];
      case "protobuf":
        return [
          PROTO,
          protoEncode("UpsertRequest", {
            vectors: vs.map((v) => ({ id: v.id, values: v.values, metadata: toStruct(v.metadata) })),
            namespace: ns,
          }),
        ];
    }
  };

  const queryBody = (
    codec: Codec,
    q: { namespace: string; vector: number[]; topK: number; filter?: Record<string, unknown> | undefined },
  ): [string, Uint8Array | string] => {
    const common = { namespace: q.namespace, topK: q.topK, includeValues: true, includeMetadata: true };
    switch (codec) {
      case "json":
        return [JSON_T, JSON.stringify({ ...common, vector: q.vector, filter: q.filter })];
      case "msgpack":
        return [MSGPACK, msgpackEncode({ ...common, vector: q.vector, ...(q.filter ? { filter: q.filter } : {}) })];
      case "msgpack-bin":
        return [MSGPACK, msgpackEncode({ ...common, vector: f32le(q.vector), ...(q.filter ? { filter: q.filter } : {}) })];
      case "protobuf":
        return [PROTO, protoEncode("QueryRequest", { ...common, vector: q.vector, ...(q.filter ? { filter: toStruct(q.filter) } : {}) })];
    }
  };

  /** A query response's matches in one shape whatever the codec. */
  const matchesOf = (r: Sent): Array<{ id: string; score: number; values: number[]; metadata: Record<string, unknown> }> => {
    const body = decode(r, "QueryResponse");
    return (body.matches ?? []).map((m: any) => ({
      id: m.id,
      score: m.score,
      values: m.values,
      metadata: r.type === PROTO ? fromStruct(m.metadata) : m.metadata,
    }));
  };

  const fetchedOf = (r: Sent): Record<string, { id: string; values: number[]; metadata?: Record<string, unknown> }> => {
    const body = decode(r, "FetchResponse");
    const out: Record<string, { id: string; values: number[]; metadata?: Record<string, unknown> }> = {};
    for (const [id, v] of Object.entries<any>(body.vectors ?? {})) {
      out[id] = {
        id: v.id,
        values: v.values,
        ...(v.metadata === undefined ? {} : { metadata: r.type === PROTO ? fromStruct(v.metadata) : v.metadata }),
      };
    }
    return out;
  };

  const CODECS: Codec[] = ["json", "msgpack", "msgpack-bin", "protobuf"];
  const ACCEPTS = [JSON_T, MSGPACK, PROTO];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-codecs-"));
    server = await startServer({ dataDir: dir, port: 0, auth: false });
    const r = await send("POST", "/v1/indexes", JSON_T, JSON.stringify({ name: "c", dimension: DIM }));
    expect(r.status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("upserts in every codec, each acknowledged in the codec Accept asks for", async () => {
    for (const codec of CODECS) {
      for (const [i, accept] of ACCEPTS.entries()) {
        // the same data in every namespace; three upserts per namespace (one per Accept), a third of the vectors each
        const part = vectors.filter((_, k) => k % 3 === i);
        const [type, body] = upsertBody(codec, codec, part);
        const r = await send("POST", "/v1/indexes/c/vectors/upsert", type, body, accept);
        expect(r.status, `${codec} -> ${accept}: ${r.body.toString()}`).toBe(200);
        expect(r.type).toBe(accept);
        expect(decode(r, "UpsertResponse")).toEqual({ upsertedCount: part.length });
      }
    }
    const deadline = Date.now() + 10_000;
    for (;;) {
      const stats = JSON.parse((await send("GET", "/v1/indexes/c/describe_index_stats", null, undefined)).body.toString());
      if (CODECS.every((c) => stats.namespaces[c]?.vectorCount === N)) break;
      if (Date.now() > deadline) throw new Error(`upserts not visible: ${JSON.stringify(stats)}`);
      await new Promise((res) => setTimeout(res, 20));
    }
  });

  it("fetch returns exactly what was written, whichever codec wrote it and whichever codec reads it", async () => {
    const ids = vectors.map((v) => `ids=${v.id}`).join("&");
    const expected = Object.fromEntries(vectors.map((v) => [v.id, v]));
    for (const ns of CODECS) {
      for (const accept of ACCEPTS) {
        const r = await send("GET", `/v1/indexes/c/vectors/fetch?namespace=${ns}&${ids}&ids=missing`, null, undefined, accept);
        expect(r.status).toBe(200);
        expect(r.type).toBe(accept);
        expect(fetchedOf(r), `${ns} read as ${accept}`).toEqual(expected);
        const body = decode(r, "FetchResponse");
        expect(body.namespace).toBe(ns);
        expect(body.usage.readUnits).toBe(N);
      }
    }
  });

  it("query results (ids, scores, values, metadata) are identical for every request codec, response codec and writer codec", async () => {
    const references = new Map<typeof FILTER | undefined, ReturnType<typeof matchesOf>>();
    for (const filter of [undefined, FILTER]) {
      const [t0, b0] = queryBody("json", { namespace: "json", vector: QUERY, topK: 8, filter });
      references.set(filter, matchesOf(await send("POST", "/v1/indexes/c/query", t0, b0)));
    }
    // the filter changes the answer, so a codec that dropped it could not match the filtered reference
    expect(references.get(FILTER)!.map((m) => m.id)).not.toEqual(references.get(undefined)!.map((m) => m.id));
    for (const [filter, reference] of references) {
      expect(reference).toHaveLength(8);
      if (filter) {
        for (const m of reference) {
          expect(["drama", "noir"]).toContain(m.metadata.genre);
          expect(m.metadata.year).toBeGreaterThanOrEqual(2000);
          expect(m.metadata.active).toBe(true);
        }
      }
      for (const m of reference) {
        const v = vectors.find((x) => x.id === m.id)!;
        expect(m.values).toEqual(v.values);
        expect(m.metadata).toEqual(v.metadata);
      }
      for (let i = 1; i < reference.length; i++) expect(reference[i - 1]!.score).toBeGreaterThanOrEqual(reference[i]!.score);

      for (const ns of CODECS) {
        for (const codec of CODECS) {
          for (const accept of ACCEPTS) {
            const [type, body] = queryBody(codec, { namespace: ns, vector: QUERY, topK: 8, filter });
            const r = await send("POST", "/v1/indexes/c/query", type, body, accept);
            expect(r.status, `${codec} -> ${accept} on ${ns}: ${r.body.toString()}`).toBe(200);
            expect(r.type).toBe(accept);
            const decoded = decode(r, "QueryResponse");
            expect(decoded.namespace).toBe(ns);
            // protobuf carries scores as float (32-bit), as Pinecone's ScoredVector does
            const want = accept === PROTO ? reference.map((m) => ({ ...m, score: Math.fround(m.score) })) : reference;
            expect(matchesOf(r), `${codec} -> ${accept} on ${ns}${filter ? " (filtered)" : ""}`).toEqual(want);
          }
        }
      }
    }
  });

  it("refuses bodies it cannot decode or does not accept on a route", async () => {
    const garbage = Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01]);
    for (const type of [PROTO, MSGPACK]) {
      const r = await send("POST", "/v1/indexes/c/vectors/upsert", type, garbage);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body.toString()).error).toMatchObject({ code: "E_BODY", field: "body" });
    }
    // a bin that is not whole float32s
    const odd = await send(
      "POST",
      "/v1/indexes/c/vectors/upsert",
      MSGPACK,
      msgpackEncode({ vectors: [{ id: "x", values: new Uint8Array(7) }] }),
    );
    expect(odd.status).toBe(400);
    expect(JSON.parse(odd.body.toString()).error.field).toBe("vectors[0].values");
    // binary codecs only where the route declares them; an unknown type nowhere
    const create = await send("POST", "/v1/indexes", MSGPACK, msgpackEncode({ name: "mp", dimension: 2 }));
    expect(create.status).toBe(415);
    expect(JSON.parse(create.body.toString()).error.code).toBe("E_MEDIA_TYPE");
    const text = await send("POST", "/v1/indexes/c/query", "text/plain", "vector=1");
    expect(text.status).toBe(415);
    // a route without binary codecs answers JSON whatever Accept says
    const described = await send("GET", "/v1/indexes/c", null, undefined, `${PROTO}, ${MSGPACK}`);
    expect(described.status).toBe(200);
    expect(described.type).toBe(JSON_T);
    expect(JSON.parse(described.body.toString()).dimension).toBe(DIM);
  });
});

describe("codecs: sparse values in protobuf and msgpack", () => {
  let dir: string;
  let server: Server;
  const post = async (path: string, type: string, body: Uint8Array | string, accept = type) => {
    const res = await fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": type, accept },
      body: typeof body === "string" ? body : new Uint8Array(body),
    });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  };
  const sv = (i: number) => ({ indices: [i, 10 + i, 3_000_000_000], values: [0.5 + i, 2, 0.25] });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-codecs-sparse-"));
    server = await startServer({ dataDir: dir, port: 0, auth: false });
    for (const body of [
      { name: "hy", dimension: 2, metric: "dotproduct" },
      { name: "sp", vector_type: "sparse" },
    ]) {
      expect((await post("/v1/indexes", JSON_T, JSON.stringify(body))).status).toBe(201);
    }
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("protobuf carries sparseValues on upsert, sparseVector on query, and both back in matches and fetch (dotproduct and sparse indexes)", async () => {
    // hybrid: dense dot + sparse dot
    const up = await post(
      "/v1/indexes/hy/vectors/upsert",
      PROTO,
      protoEncode("UpsertRequest", { vectors: [0, 1, 2].map((i) => ({ id: `h${i}`, values: [1, i], sparseValues: sv(i) })) }),
    );
    expect(up.status).toBe(200);
    expect(protoDecode("UpsertResponse", up.body).upsertedCount).toBe(3);
    const q = await post(
      "/v1/indexes/hy/query",
      PROTO,
      protoEncode("QueryRequest", {
        vector: [1, 1],
        sparseVector: { indices: [2, 3_000_000_000], values: [1, 4] },
        topK: 3,
        includeValues: true,
      }),
    );
    expect(q.status).toBe(200);
    const matches = protoDecode("QueryResponse", q.body).matches;
    // h2: 1 + 2 + (2.5 * 1) + 0.25 * 4 = 6.5; h1: 1 + 1 + 0.25 * 4 = 3; h0: 1 + 0 + 1 = 2
    expect(matches.map((m: any) => [m.id, m.score])).toEqual([
      ["h2", 6.5],
      ["h1", 3],
      ["h0", 2],
    ]);
    expect(matches[0].sparseValues).toEqual(sv(2));
    // sparse-only: values empty, sparse values both ways; msgpack too
    expect(
      (await post("/v1/indexes/sp/vectors/upsert", PROTO, protoEncode("UpsertRequest", { vectors: [{ id: "p0", sparseValues: sv(0) }] })))
        .status,
    ).toBe(200);
    expect(
      (await post("/v1/indexes/sp/vectors/upsert", MSGPACK, msgpackEncode({ vectors: [{ id: "p1", sparseValues: sv(1) }] }))).status,
    ).toBe(200);
    const sq = await post(
      "/v1/indexes/sp/query",
      PROTO,
      protoEncode("QueryRequest", { sparseVector: { indices: [3_000_000_000], values: [2] }, topK: 5, includeValues: true }),
    );
    const sm = protoDecode("QueryResponse", sq.body).matches;
    expect(sm.map((m: any) => [m.id, m.score, m.values ?? [], m.sparseValues])).toEqual([
      ["p0", 0.5, [], sv(0)],
      ["p1", 0.5, [], sv(1)],
    ]);
    const mq = msgpackDecode(
      (await post("/v1/indexes/sp/query", MSGPACK, msgpackEncode({ sparseVector: { indices: [11], values: [1] }, topK: 5 }))).body,
    ) as any;
    expect(mq.matches).toEqual([{ id: "p1", score: 2 }]);
    const f = await fetch(`${server.url}/v1/indexes/sp/vectors/fetch?ids=p0&ids=p1`, { headers: { accept: PROTO } });
    const fetched = protoDecode("FetchResponse", Buffer.from(await f.arrayBuffer())).vectors;
    expect(fetched.p1.sparseValues).toEqual(sv(1));
    // a bad sparse vector in protobuf is the same 400, naming the field
    const bad = await post(
      "/v1/indexes/sp/vectors/upsert",
      PROTO,
      protoEncode("UpsertRequest", { vectors: [{ id: "p2", sparseValues: { indices: [5, 5], values: [1, 1] } }] }),
      JSON_T,
    );
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body.toString()).error.field).toBe("vectors[0].sparseValues.indices[1]");
  });
});
