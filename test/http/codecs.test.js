import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/app/start-server.js";
// Upsert, query and fetch in JSON, msgpack (numbers or a bin of float32) and protobuf; responses follow Accept.
// Clients here build their bodies independently: protobuf messages from vectors.proto with protobufjs,
// metadata and filters as google.protobuf.Struct written out by hand.
const JSON_T = "application/json";
const MSGPACK = "application/msgpack";
const PROTO = "application/x-protobuf";
const root = protobuf.loadSync(fileURLToPath(new URL("../../src/http/proto/vectors.proto", import.meta.url)));
const T = (name) => root.lookupType(`svc.v1.${name}`);
function toValue(v) {
    if (v === null)
        return { nullValue: 0 };
    if (typeof v === "string")
        return { stringValue: v };
    if (typeof v === "number")
        return { numberValue: v };
    if (typeof v === "boolean")
        return { boolValue: v };
    if (Array.isArray(v))
        return { listValue: { values: v.map(toValue) } };
    return { structValue: toStruct(v) };
}
function toStruct(o) {
    return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)])) };
}
function fromValue(v) {
    if ("stringValue" in v)
        return v.stringValue;
    if ("numberValue" in v)
        return v.numberValue;
    if ("boolValue" in v)
        return v.boolValue;
    if ("listValue" in v)
        return (v.listValue.values ?? []).map(fromValue);
    if ("structValue" in v)
        return fromStruct(v.structValue);
    return null;
}
function fromStruct(s) {
    return Object.fromEntries(Object.entries(s?.fields ?? {}).map(([k, v]) => [k, fromValue(v)]));
}
function protoEncode(type, obj) {
    const t = T(type);
    const err = t.verify(t.fromObject(obj));
    if (err)
        throw new Error(`${type}: ${err}`);
    return Buffer.from(t.encode(t.fromObject(obj)).finish());
}
function protoDecode(type, buf) {
    const t = T(type);
    return t.toObject(t.decode(buf), { longs: Number, defaults: false, arrays: false, objects: false });
}
/** Little-endian float32 bytes, written explicitly (not relying on the host's byte order). */
function f32le(values) {
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
    metadata: { genre: GENRES[i % 3], year: 1990 + i, rating: (i % 10) / 2, tags: i % 2 === 0 ? ["even", "x"] : ["odd"], active: i % 4 !== 1 },
}));
const QUERY = Array.from({ length: DIM }, (_, d) => Math.fround(Math.cos(7 * 1.7 + d * 0.9) + 0.25 * Math.sin(d)));
const FILTER = { $and: [{ genre: { $in: ["drama", "noir"] } }, { year: { $gte: 2000 } }, { active: true }] };
describe("codecs: JSON, msgpack and protobuf", () => {
    let dir;
    let server;
    const send = async (method, path, contentType, body, accept) => {
        const headers = {};
        if (contentType !== null)
            headers["content-type"] = contentType;
        if (accept !== undefined)
            headers.accept = accept;
        const res = await fetch(server.url + path, { method, headers, body: typeof body === "string" || body === undefined ? body : new Uint8Array(body) });
        return { status: res.status, type: res.headers.get("content-type") ?? "", body: Buffer.from(await res.arrayBuffer()) };
    };
    /** Decode a response by its Content-Type. */
    const decode = (r, protoType) => {
        if (r.type === JSON_T)
            return JSON.parse(r.body.toString("utf8"));
        if (r.type === MSGPACK)
            return msgpackDecode(r.body);
        if (r.type === PROTO)
            return protoDecode(protoType, r.body);
        throw new Error(`unexpected content-type ${r.type}`);
    };
    const upsertBody = (codec, ns, vs) => {
        switch (codec) {
            case "json":
                return [JSON_T, JSON.stringify({ vectors: vs, namespace: ns })];
            case "msgpack":
                return [MSGPACK, msgpackEncode({ vectors: vs, namespace: ns })];
            case "msgpack-bin":
                return [MSGPACK, msgpackEncode({ vectors: vs.map((v) => ({ ...v, values: f32le(v.values) })), namespace: ns })];
            case "protobuf":
                return [PROTO, protoEncode("UpsertRequest", { vectors: vs.map((v) => ({ id: v.id, values: v.values, metadata: toStruct(v.metadata) })), namespace: ns })];
        }
    };
    const queryBody = (codec, q) => {
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
    const matchesOf = (r) => {
        const body = decode(r, "QueryResponse");
        return (body.matches ?? []).map((m) => ({
            id: m.id,
            score: m.score,
            values: m.values,
            metadata: r.type === PROTO ? fromStruct(m.metadata) : m.metadata,
        }));
    };
    const fetchedOf = (r) => {
        const body = decode(r, "FetchResponse");
        const out = {};
        for (const [id, v] of Object.entries(body.vectors ?? {})) {
            out[id] = { id: v.id, values: v.values, ...(v.metadata === undefined ? {} : { metadata: r.type === PROTO ? fromStruct(v.metadata) : v.metadata }) };
        }
        return out;
    };
    const CODECS = ["json", "msgpack", "msgpack-bin", "protobuf"];
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
            if (CODECS.every((c) => stats.namespaces[c]?.vectorCount === N))
                break;
            if (Date.now() > deadline)
                throw new Error(`upserts not visible: ${JSON.stringify(stats)}`);
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
        const references = new Map();
        for (const filter of [undefined, FILTER]) {
            const [t0, b0] = queryBody("json", { namespace: "json", vector: QUERY, topK: 8, filter });
            references.set(filter, matchesOf(await send("POST", "/v1/indexes/c/query", t0, b0)));
        }
        // the filter changes the answer, so a codec that dropped it could not match the filtered reference
        expect(references.get(FILTER).map((m) => m.id)).not.toEqual(references.get(undefined).map((m) => m.id));
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
                const v = vectors.find((x) => x.id === m.id);
                expect(m.values).toEqual(v.values);
                expect(m.metadata).toEqual(v.metadata);
            }
            for (let i = 1; i < reference.length; i++)
                expect(reference[i - 1].score).toBeGreaterThanOrEqual(reference[i].score);
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
        const odd = await send("POST", "/v1/indexes/c/vectors/upsert", MSGPACK, msgpackEncode({ vectors: [{ id: "x", values: new Uint8Array(7) }] }));
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
//# sourceMappingURL=codecs.test.js.map