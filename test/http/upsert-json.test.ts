/**
 * JSON upsert bodies read by upsert-json.ts: every value is exactly Math.fround of what JSON.parse reads (all
 * doubles, float32 values, long and exponent-heavy decimals, float32 rounding midpoints), every other field is
 * JSON.parse's, and a body it does not take (malformed, escaped or repeated keys, a non-number value) is left to
 * JSON.parse, so the server answers as before. Then over real HTTP with the official Pinecone client's body shape.
 * Property: fast-check, fixed seed.
 */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import fc from "fast-check";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { decodeBody } from "../../src/http/codecs.js";
import { readQueryJson, readUpsertJson } from "../../src/http/upsert-json.js";

const SEED = 20261126;

/** Number texts JSON allows, of every kind that takes a different path through the reader. */
const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  fc.float({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  // a float32 rounding midpoint (exact in a double) and its double neighbours
  fc
    .tuple(
      fc.float({ noNaN: true, noDefaultInfinity: true, min: Math.fround(-1e30), max: Math.fround(1e30) }),
      fc.integer({ min: -1, max: 1 }),
    )
    .map(([f, d]) => {
      const bits = new Float32Array([f]);
      const u = new Uint32Array(bits.buffer);
      u[0]! += 1;
      const mid = (f + bits[0]!) / 2;
      const mids = new Float64Array([mid]);
      new BigInt64Array(mids.buffer)[0]! += BigInt(d);
      return JSON.stringify(mids[0]!);
    }),
  // hand-made decimals: leading zeros after the point, up to 25 digits, exponents of any sign and size
  fc
    .tuple(
      fc.constantFrom("", "-"),
      fc.oneof(fc.constant("0"), fc.stringMatching(/^[1-9][0-9]{0,12}$/)),
      fc.option(fc.stringMatching(/^[0-9]{1,25}$/), { nil: undefined }),
      fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.integer({ min: 0, max: 400 })), { nil: undefined }),
    )
    .map(([s, i, f, e]) => `${s}${i}${f === undefined ? "" : `.${f}`}${e === undefined ? "" : `${e[0]}${e[1]}${e[2]}`}`),
);

const ws = fc.constantFrom("", " ", "\n  ", "\t", "\r\n");

/** Same float32 bits (so -0 and 0 differ, as they do on disk). */
function sameFloats(got: Float32Array, want: number[]): void {
  expect(Array.from(new Uint32Array(got.buffer, got.byteOffset, got.length))).toEqual(
    Array.from(new Uint32Array(Float32Array.from(want).buffer)),
  );
}

describe("readUpsertJson", () => {
  it("reads every value as Math.fround(JSON.parse) and every other field as JSON.parse", () => {
    const vector = fc.record({
      id: fc.string({ maxLength: 12 }),
      values: fc.array(numberText, { minLength: 0, maxLength: 12 }),
      metadata: fc.option(
        fc.dictionary(
          fc.string({ maxLength: 6 }).filter((k) => !["__proto__", "constructor", "prototype"].includes(k)),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(
        fc.array(vector, { minLength: 1, maxLength: 6 }),
        fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
        ws,
        (vectors, namespace, s) => {
          const parts = vectors.map((v) => {
            const fields = [`"id":${s}${JSON.stringify(v.id)}`, `"values"${s}:${s}[${s}${v.values.join(`${s},${s}`)}${s}]`];
            if (v.metadata !== undefined) fields.push(`"metadata":${JSON.stringify(v.metadata, null, s === "" ? undefined : 1)}`);
            return `{${s}${fields.join(`,${s}`)}${s}}`;
          });
          const text = `${s}{${s}"vectors"${s}:${s}[${parts.join(`,${s}`)}]${namespace === undefined ? "" : `,"namespace":${JSON.stringify(namespace)}`}${s}}${s}`;
          const want = JSON.parse(text) as { vectors: Array<Record<string, unknown>>; namespace?: string };
          const got = readUpsertJson(Buffer.from(text)) as { vectors: Array<Record<string, unknown>>; namespace?: string };
          expect(got).not.toBeNull();
          expect(got.namespace).toEqual(want.namespace);
          expect(got.vectors.length).toBe(want.vectors.length);
          got.vectors.forEach((g, i) => {
            const { values, ...rest } = want.vectors[i]!;
            sameFloats(g.values as Float32Array, values as number[]);
            const { values: _, ...gotRest } = g;
            expect(gotRest).toEqual(rest);
          });
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("reads the numbers at the edges of float32 and of its fast paths exactly", () => {
    const texts = [
      "0",
      "-0",
      "0.0",
      "-0.0e5",
      "1e22",
      "1e23",
      "1e-22",
      "1e-23",
      "123456789012345",
      "1234567890123456789",
      "12345678901234567890123",
      "3.4028234663852886e38",
      "3.4028235677973366e38",
      "3.40282357e38",
      "3.4028236e38",
      "1e39",
      "1e-45",
      "7e-46",
      "7.006492321624086e-46",
      "1.401298464324817e-45",
      "1.0000000596046448",
      "1.000000059604644775390625",
      "1.0000000596046449",
      "0.10000000149011612",
      "-0.5100473761558533",
      "16777217",
      "16777217.000000001",
      "0.000000000000000000000000000000000000000000001401298464324817",
      "1E+2",
      "1e-0",
      "2.5e-3",
    ];
    const got = readUpsertJson(Buffer.from(`{"vectors":[{"id":"a","values":[${texts.join(",")}]}]}`)) as {
      vectors: Array<{ values: Float32Array }>;
    };
    sameFloats(
      got.vectors[0]!.values,
      texts.map((t) => JSON.parse(t) as number),
    );
  });

  it("gives every vector's values in order as views of one buffer, and leaves other bodies to JSON.parse", () => {
    const got = readUpsertJson(Buffer.from('{"vectors":[{"id":"a","values":[1,2]},{"values":[3,4],"id":"b"}]}')) as {
      vectors: Array<{ values: Float32Array }>;
    };
    const [a, b] = got.vectors.map((v) => v.values);
    expect(a!.buffer).toBe(b!.buffer);
    expect([a!.byteOffset, b!.byteOffset]).toEqual([0, 8]);
    const notTaken = [
      "",
      "[1]",
      "\uFEFF{}",
      '{"vectors":[{"id":"a","values":[1,2,]}]}',
      '{"vectors":[{"id":"a","values":[1,"2"]}]}',
      '{"vectors":[{"id":"a","values":[1,[2]]}]}',
      '{"vectors":[{"id":"a","values":[01]}]}',
      '{"vectors":[{"id":"a","values":[1.]}]}',
      '{"vectors":[{"id":"a","values":[.5]}]}',
      '{"vectors":[{"id":"a","values":[-]}]}',
      '{"vectors":[{"id":"a","values":[1e]}]}',
      '{"vectors":[{"id":"a","values":[+1]}]}',
      '{"vectors":[{"id":"a","values":[NaN]}]}',
      '{"vectors":[{"id":"a","values":[1,2]}]} x',
      '{"vectors":[{"id":"a","values":[1,2]}',
      '{"vec\\u0074ors":[]}',
      '{"vectors":[],"vectors":[]}',
      '{"vectors":[{"id":"a","id":"b","values":[1]}]}',
      '{"vectors":[{"id":"a","values":[1],"values":[2]}]}',
      '{"__proto__":{},"vectors":[]}',
      '{"vectors":[{"__proto__":1,"values":[1]}]}',
      '{"vectors":[1]}',
      '{"vectors":[{"id":"a\u0001","values":[1]}]}',
      '{"vectors":[{"id":a,"values":[1]}]}',
      '{"namespace":"x" "vectors":[]}',
    ];
    for (const text of notTaken) expect(readUpsertJson(Buffer.from(text)), text).toBeNull();
    // not taken is not refused: JSON.parse decides (here: a body that is fine, and one that is not)
    expect(decodeBody("json", Buffer.from('{"vectors":[{"id":"a","values":[1],"values":[2]}]}'), undefined, "upsert")).toEqual({
      vectors: [{ id: "a", values: [2] }],
    });
    expect(() => decodeBody("json", Buffer.from('{"vectors":[{"id":"a","values":[1,2,]}]}'), undefined, "upsert")).toThrow(
      /malformed json body/,
    );
  });
});

describe("readQueryJson", () => {
  it("reads a query's vector as Math.fround(JSON.parse) when every number is finite in float32, and every other field as JSON.parse; else leaves the body to JSON.parse", () => {
    const other = fc.record(
      {
        topK: fc.integer({ min: -5, max: 20 }),
        namespace: fc.string({ maxLength: 8 }),
        filter: fc.dictionary(fc.constantFrom("a", "b", "vector"), fc.jsonValue({ maxDepth: 2 })),
        includeMetadata: fc.boolean(),
        id: fc.string({ maxLength: 4 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(numberText, { minLength: 0, maxLength: 12 }), other, fc.boolean(), ws, (numbers, rest, first, s) => {
        const vector = `"vector"${s}:${s}[${s}${numbers.join(`${s},${s}`)}${s}]`;
        const fields = Object.entries(rest).map(([k, v]) => `${JSON.stringify(k)}:${s}${JSON.stringify(v)}`);
        const text = `${s}{${s}${(first ? [vector, ...fields] : [...fields, vector]).join(`,${s}`)}${s}}${s}`;
        const want = JSON.parse(text) as Record<string, unknown>;
        const got = readQueryJson(Buffer.from(text));
        const floats = (want.vector as number[]).map((x) => Math.fround(x));
        if (numbers.length === 0 || floats.some((x) => !Number.isFinite(x))) {
          expect(got, text).toBeNull(); // JSON.parse's array goes to the engine, which answers as before
          return;
        }
        expect(got, text).not.toBeNull();
        sameFloats(got!.vector as Float32Array, floats);
        const { vector: _w, ...wantRest } = want;
        const { vector: _g, ...gotRest } = got!;
        expect(gotRest).toEqual(wantRest);
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it("leaves every other body to JSON.parse", () => {
    const notTaken = [
      '{"vector":[]}',
      '{"vector":[1,"2"]}',
      '{"vector":[1,2,]}',
      '{"vector":[1e39]}',
      '{"vector":[-1e39,1]}',
      '{"vector":[1],"vector":[2]}',
      '{"vector":[1],"__proto__":{}}',
      '{"vector":[1]',
      '{"vec\\u0074or":[1]}',
      '{"vector":[true]}',
      "[1,2]",
    ];
    for (const text of notTaken) expect(readQueryJson(Buffer.from(text)), text).toBeNull();
    // a nested "vector" is JSON.parse's, the top-level one the reader's
    const got = readQueryJson(Buffer.from('{"filter":{"vector":[1.5]},"vector":[0.1,-0,3e-7]}'))!;
    expect(got.filter).toEqual({ vector: [1.5] });
    sameFloats(got.vector as Float32Array, [0.1, -0, 3e-7]);
    // a 1536-d vector (past the first 1024 floats reserved)
    const big = Array.from({ length: 1536 }, (_, i) => (i - 700) / 9);
    sameFloats(readQueryJson(Buffer.from(JSON.stringify({ vector: big, topK: 3 })))!.vector as Float32Array, big);
    // decodeBody takes it for "query" routes only
    expect(decodeBody("json", Buffer.from('{"vector":[1,2]}'), undefined, "query")).toEqual({ vector: Float32Array.from([1, 2]) });
    expect(decodeBody("json", Buffer.from('{"vector":[1,2]}'), undefined)).toEqual({ vector: [1, 2] });
  });
});

describe("JSON upserts over HTTP (the Pinecone client's body shape)", () => {
  const DIM = 24;
  let dir: string;
  let server: Server;

  const post = async (path: string, body: string) => {
    const res = await fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json" }, body });
    return { status: res.status, json: (await res.json()) as any };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-upsert-json-"));
    server = await startServer({ dataDir: dir, port: 0, auth: false });
    expect((await post("/v1/indexes", JSON.stringify({ name: "j", dimension: DIM }))).status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("stores exactly Math.fround of each number sent, with ids and metadata", async () => {
    const texts = fc.sample(
      numberText.filter((t) => Number.isFinite(Math.fround(JSON.parse(t) as number))),
      { seed: SEED, numRuns: 40 * DIM },
    );
    const vectors = Array.from({ length: 40 }, (_, i) => ({
      id: `v${i}`,
      text: [`${i + 1}`, ...texts.slice(i * DIM + 1, (i + 1) * DIM)],
      metadata: { i, tag: `t${i % 3}` },
    }));
    const body = `{"vectors":[${vectors.map((v) => `{"id":"${v.id}","values":[${v.text.join(",")}],"metadata":${JSON.stringify(v.metadata)}}`).join(",")}],"namespace":"ns"}`;
    const r = await post("/v1/indexes/j/vectors/upsert", body);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.upsertedCount).toBe(40);
    const ids = vectors.map((v) => `ids=${v.id}`).join("&");
    let got: Record<string, { values: number[]; metadata: unknown }> = {};
    for (let t = 0; t < 500 && Object.keys(got).length < 40; t++) {
      got = ((await (await fetch(`${server.url}/v1/indexes/j/vectors/fetch?namespace=ns&${ids}`)).json()) as any).vectors;
      await new Promise((res) => setTimeout(res, 10));
    }
    for (const v of vectors) {
      // (the reply is JSON, which writes -0 as 0)
      expect(got[v.id]!.values, v.id).toEqual(Array.from(Float32Array.from(v.text.map((t) => JSON.parse(t) as number)), (x) => x + 0));
      expect(got[v.id]!.metadata).toEqual(v.metadata);
    }
  });

  it("bad values fail the batch with the same codes and fields as before", async () => {
    const row = (i: number, values = Array.from({ length: DIM }, (_, d) => `${(d + i) / 7}`)) =>
      `{"id":"b${i}","values":[${values.join(",")}]}`;
    const bad = (values: string[]) => `{"vectors":[${row(0)},${row(1, values)}],"namespace":"bad"}`;
    const ones = (n: number) => Array.from({ length: n }, () => "1");
    const cases: Array<[string, number, string, string]> = [
      [bad([...ones(2), '"x"', ...ones(DIM - 3)]), 400, "E_BAD_REQUEST", "vectors[1].values[2]"],
      [bad([...ones(5), "1e39", ...ones(DIM - 6)]), 400, "E_NON_FINITE", "vectors[1].values[5]"],
      [bad(ones(DIM - 1)), 400, "E_DIMENSION", "vectors[1].values"],
      [bad(Array.from({ length: DIM }, () => "0")), 400, "E_BAD_REQUEST", "vectors[1].values"],
      [bad([...ones(DIM), ""]), 400, "E_BODY", "body"],
      [
        `{"vectors":[{"id":"a","values":[${ones(DIM).join(",")}],"metadata":{"__proto__":{"x":1}}}]}`,
        400,
        "E_METADATA",
        "vectors[0].metadata.__proto__",
      ],
      [`{"vectors":[${row(0)}],"namespace":"bad","extra":1}`, 400, "E_BAD_REQUEST", "extra"],
    ];
    for (const [body, status, code, field] of cases) {
      const r = await post("/v1/indexes/j/vectors/upsert", body);
      expect([r.status, r.json.error?.code, r.json.error?.field], body.slice(0, 80)).toEqual([status, code, field]);
    }
    const stats = (await (await fetch(`${server.url}/v1/indexes/j/describe_index_stats`)).json()) as any;
    expect(stats.namespaces.bad).toBeUndefined();
  });
  it("a query's JSON vector answers as the same vector in msgpack float32 does; bad vectors keep their codes and fields", async () => {
    const texts = fc.sample(
      numberText.filter((t) => Number.isFinite(Math.fround(JSON.parse(t) as number)) && Math.abs(JSON.parse(t) as number) < 1e30),
      { seed: SEED + 1, numRuns: 8 * DIM },
    );
    for (let q = 0; q < 8; q++) {
      const text = [`${q + 1}`, ...texts.slice(q * DIM + 1, (q + 1) * DIM)];
      const json = await post("/v1/indexes/j/query", `{"vector":[${text.join(",")}],"topK":5,"namespace":"ns","includeValues":true}`);
      const f32 = Float32Array.from(text.map((t) => JSON.parse(t) as number));
      const res = await fetch(`${server.url}/v1/indexes/j/query`, {
        method: "POST",
        headers: { "content-type": "application/msgpack" },
        body: msgpackEncode({ vector: new Uint8Array(f32.buffer), topK: 5, namespace: "ns", includeValues: true }),
      });
      expect(json.status).toBe(200);
      expect(json.json).toEqual(await res.json());
      expect(json.json.matches.length).toBe(5);
    }
    const ones = (n: number) => Array.from({ length: n }, () => "1");
    const cases: Array<[string, string, string]> = [
      [`{"vector":[${[...ones(5), "1e39", ...ones(DIM - 6)].join(",")}]}`, "E_NON_FINITE", "vector[5]"],
      [`{"vector":[${[...ones(2), '"x"', ...ones(DIM - 3)].join(",")}]}`, "E_BAD_REQUEST", "vector[2]"],
      [`{"vector":[${ones(DIM - 1).join(",")}]}`, "E_DIMENSION", "vector"],
      [`{"vector":[]}`, "E_DIMENSION", "vector"],
      [
        `{"vector":[${ones(DIM)
          .map(() => "0")
          .join(",")}]}`,
        "E_BAD_REQUEST",
        "vector",
      ],
      [`{"vector":[${ones(DIM).join(",")}],"id":"a"}`, "E_BAD_REQUEST", "id"],
      [`{"vector":[${ones(DIM).join(",")},]}`, "E_BODY", "body"],
      [`{"vector":[${ones(DIM).join(",")}],"extra":1}`, "E_BAD_REQUEST", "extra"],
    ];
    for (const [body, code, field] of cases) {
      const r = await post("/v1/indexes/j/query", body);
      expect([r.status, r.json.error?.code, r.json.error?.field], body.slice(0, 60)).toEqual([400, code, field]);
    }
  });

  it("large JSON bodies in flight together (their buffers reused once decoded) each store their own values", async () => {
    const dim = 256;
    expect((await post("/v1/indexes", JSON.stringify({ name: "big", dimension: dim }))).status).toBe(201);
    const value = (b: number, i: number, d: number) => Math.fround(Math.sin(b * 7919 + i * 31 + d) * 3 + 0.25);
    const body = (b: number) =>
      JSON.stringify({
        namespace: "big",
        vectors: Array.from({ length: 600 }, (_, i) => ({
          id: `${b}-${i}`,
          values: Array.from({ length: dim }, (_, d) => value(b, i, d)),
        })),
      });
    expect(Buffer.byteLength(body(0))).toBeGreaterThan(2 << 20); // past the 1 MiB first reservation and the kept-buffer floor
    // 4 clients, 4 batches each, back to back: bodies arrive while others are decoded and applied
    const bodies = Array.from({ length: 16 }, (_, b) => body(b));
    await Promise.all(
      [0, 1, 2, 3].map(async (k) => {
        for (let j = 0; j < 4; j++) {
          const r = await post("/v1/indexes/big/vectors/upsert", bodies[j * 4 + k]!);
          expect([r.status, r.json.upsertedCount]).toEqual([200, 600]);
        }
      }),
    );
    for (let b = 0; b < 16; b++) {
      const ids = [0, 299, 599].map((i) => `${b}-${i}`);
      let got: Record<string, { values: number[] }> = {};
      for (let t = 0; t < 500 && Object.keys(got).length < ids.length; t++) {
        got = (
          (await (
            await fetch(`${server.url}/v1/indexes/big/vectors/fetch?namespace=big&${ids.map((id) => `ids=${id}`).join("&")}`)
          ).json()) as any
        ).vectors;
        if (Object.keys(got).length < ids.length) await new Promise((res) => setTimeout(res, 10));
      }
      for (const id of ids) {
        const i = Number(id.split("-")[1]);
        expect(got[id]!.values, id).toEqual(Array.from({ length: dim }, (_, d) => value(b, i, d)));
      }
    }
  });
});
