/**
 * Nesting depth against the built `svc serve`: a body nests at most MAX_DEPTH (32) objects/arrays
 * (the body is level 1); deeper is 400 E_TOO_DEEP naming the path, on every route and codec and
 * for MCP tool arguments, never a 5xx. Property (fast-check, fixed seed): random nested and
 * hostile JSON as record meta, index metadata and filters never gets a 5xx; record meta is
 * accepted exactly when it has no reserved key and fits the depth cap, and reads back exactly.
 */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_DEPTH, RESERVED_KEYS } from "../../src/safe-values.js";
import { call, type Reply } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServerProcess({ args: ["--no-auth"] });
  expect((await call(srv.url, null, "POST", "/v1/indexes", { name: "deep", dimension: 4, metric: "cosine" })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await srv?.dispose();
});

/** `levels` objects {"a": {"a": ... {}}}, and the path below its root of the innermost one. */
function chain(levels: number): { value: unknown; innermost: string } {
  let value: unknown = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return { value, innermost: ".a".repeat(levels - 1) };
}

function tooDeep(r: Reply, field: string): void {
  expect([r.status, r.body?.error?.code, r.body?.error?.field], r.raw.toString().slice(0, 300)).toEqual([400, "E_TOO_DEEP", field]);
}

describe("the depth cap", () => {
  it("records meta: the body at exactly MAX_DEPTH levels is accepted and reads back, one more is refused at the path", async () => {
    // body (1) > items (2) > items[0] (3) > meta (4): meta may hold MAX_DEPTH - 3 levels.
    const fits = chain(MAX_DEPTH - 3);
    const ok = await call(srv.url, null, "POST", "/v1/records/deep", { items: [{ kind: "k", text: "deep enough", meta: fits.value }] });
    expect(ok.status, ok.raw.toString()).toBe(200);
    const back = await call(srv.url, null, "GET", `/v1/records/deep/${ok.body.ids[0]}`);
    expect([back.status, back.body.meta]).toEqual([200, fits.value]);
    const over = chain(MAX_DEPTH - 2);
    tooDeep(
      await call(srv.url, null, "POST", "/v1/records/deep", { items: [{ kind: "k", text: "t", meta: over.value }] }),
      `items[0].meta${over.innermost}`,
    );
  });

  it("98 and 3000 levels: 400 on records, index upsert and update, filters, msgpack bodies and arrays", async () => {
    const json = (body: string) => new Uint8Array(Buffer.from(body));
    for (const levels of [98, 3000]) {
      const value = '{"a":'.repeat(levels - 1) + "{}" + "}".repeat(levels - 1);
      const at = (prefix: string) => prefix + ".a".repeat(MAX_DEPTH - prefix.split(/[.[]/).length);
      const post = (path: string, body: string) => call(srv.url, null, "POST", path, json(body), "application/json");
      tooDeep(await post("/v1/records/deep", `{"items": [{"kind": "k", "text": "t", "meta": ${value}}]}`), at("items[0].meta"));
      tooDeep(
        await post("/v1/indexes/deep/vectors/upsert", `{"vectors": [{"id": "x", "values": [1, 2, 3, 4], "metadata": ${value}}]}`),
        at("vectors[0].metadata"),
      );
      tooDeep(await post("/v1/indexes/deep/vectors/update", `{"id": "x", "setMetadata": ${value}}`), at("setMetadata"));
      tooDeep(await post("/v1/indexes/deep/query", `{"vector": [1, 2, 3, 4], "topK": 1, "filter": ${value}}`), at("filter"));
      tooDeep(
        await post("/v1/records/deep/query", `{"text": ${"[".repeat(levels) + "]".repeat(levels)}}`),
        "text" + "[0]".repeat(MAX_DEPTH - 1),
      );
      // By hand: the msgpack encoder recurses, and this deep a value overflows the test's stack.
      const enc = (v: unknown) => msgpackEncode(v);
      const metadata = Buffer.concat([...new Array<Buffer>(levels - 1).fill(Buffer.from([0x81, 0xa1, 0x61])), Buffer.from([0x80])]); // {"a": ... {}}
      const packed = Buffer.concat([
        Buffer.from([0x81]),
        enc("vectors"),
        Buffer.from([0x91, 0x83]),
        enc("id"),
        enc("x"),
        enc("values"),
        enc([1, 2, 3, 4]),
        enc("metadata"),
        metadata,
      ]);
      tooDeep(
        await call(srv.url, null, "POST", "/v1/indexes/deep/vectors/upsert", packed, "application/msgpack"),
        at("vectors[0].metadata"),
      );
    }
    const stats = await call(srv.url, null, "GET", "/v1/indexes/deep/describe_index_stats");
    expect([stats.status, stats.body.totalVectorCount]).toEqual([200, 0]);
  });

  it("MCP tool arguments over the limit are an isError result with E_TOO_DEEP", async () => {
    const client = new Client({ name: "deep-nesting", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
    try {
      const { value, innermost } = chain(200);
      const r = (await client.callTool({
        name: "records_ingest",
        arguments: { namespace: "deep", items: [{ kind: "k", text: "t", meta: value }] },
      })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(r.isError).toBe(true);
      const field = `arguments.items[0].meta${innermost.slice(0, 2 * (MAX_DEPTH - 3))}`;
      expect(JSON.parse(r.content[0]!.text).error).toMatchObject({ code: "E_TOO_DEEP", field });
    } finally {
      await client.close();
    }
  });
});

// ---- property: hostile JSON as metadata ---------------------------------------------------------

/** A JSON text tree: leaves, arrays, objects whose keys may be reserved, operator-like or empty. */
type Tree = { leaf: unknown } | { arr: Tree[] } | { obj: Array<[string, Tree]> };

const key = fc.oneof(fc.constantFrom(...RESERVED_KEYS, "$gt", "", "toString", "hasOwnProperty", "a"), fc.string({ maxLength: 6 }));
const leaf = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
);
const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", maxDepth: 6 },
    leaf.map((l) => ({ leaf: l })),
    fc.array(tie("tree"), { maxLength: 3 }).map((arr) => ({ arr })),
    fc.array(fc.tuple(key, tie("tree")), { maxLength: 3 }).map((obj) => ({ obj })),
  ),
}));
/** A tree, sometimes wrapped in a long chain of objects or arrays so that both sides of the cap come up. */
const hostile = fc.oneof(
  tree,
  fc.tuple(fc.integer({ min: 1, max: 60 }), fc.boolean(), tree).map(([n, asArray, t]): Tree => {
    let out = t;
    for (let i = 0; i < n; i++) out = asArray ? { arr: [out] } : { obj: [["k", out]] };
    return out;
  }),
);

function text(t: Tree): string {
  if ("leaf" in t) return JSON.stringify(t.leaf);
  if ("arr" in t) return `[${t.arr.map(text).join(",")}]`;
  return `{${t.obj.map(([k, v]) => `${JSON.stringify(k)}:${text(v)}`).join(",")}}`;
}

/** Containers nested in `v` (a leaf is 0), and whether any own key at any depth is reserved: the reference the server must agree with. */
function shape(v: unknown): { depth: number; reserved: boolean } {
  if (typeof v !== "object" || v === null) return { depth: 0, reserved: false };
  const kids = Array.isArray(v) ? v : Object.values(v);
  const reserved = !Array.isArray(v) && Object.keys(v).some((k) => RESERVED_KEYS.has(k));
  return kids
    .map(shape)
    .reduce((a, b) => ({ depth: Math.max(a.depth, b.depth + 1), reserved: a.reserved || b.reserved }), { depth: 1, reserved });
}

describe("property: random nested and hostile JSON as metadata", () => {
  it("never gets a 5xx; record meta is accepted exactly when it fits, and round-trips exactly", async () => {
    await fc.assert(
      fc.asyncProperty(hostile, async (t) => {
        const meta = `{"v":${text(t)}}`;
        const parsed = JSON.parse(meta) as unknown;
        const s = shape(parsed);
        const rec = await call(
          srv.url,
          null,
          "POST",
          "/v1/records/prop",
          new Uint8Array(Buffer.from(`{"items":[{"kind":"k","text":"t","meta":${meta}}]}`)),
          "application/json",
        );
        // meta sits at level 4 of the body (body > items > items[0] > meta).
        const shallow = s.depth + 3 <= MAX_DEPTH;
        const fits = shallow && !s.reserved;
        const code = fits
          ? undefined
          : !s.reserved
            ? "E_TOO_DEEP"
            : shallow
              ? "E_METADATA"
              : expect.stringMatching(/^E_(METADATA|TOO_DEEP)$/);
        expect([rec.status, rec.body.error?.code], rec.raw.toString().slice(0, 300)).toEqual([fits ? 200 : 400, code]);
        if (fits) {
          const back = await call(srv.url, null, "GET", `/v1/records/prop/${rec.body.ids[0]}`);
          expect([back.status, back.body.meta]).toEqual([200, parsed]);
        }
        const up = await call(
          srv.url,
          null,
          "POST",
          "/v1/indexes/deep/vectors/upsert",
          new Uint8Array(Buffer.from(`{"namespace":"prop","vectors":[{"id":"p","values":[1,2,3,4],"metadata":${meta}}]}`)),
          "application/json",
        );
        expect([200, 400], up.raw.toString().slice(0, 300)).toContain(up.status);
        if (up.status === 200) {
          const f = await call(srv.url, null, "GET", "/v1/indexes/deep/vectors/fetch?namespace=prop&ids=p");
          expect([f.status, f.body.vectors.p.metadata]).toEqual([200, parsed]);
        }
        const q = await call(
          srv.url,
          null,
          "POST",
          "/v1/indexes/deep/query",
          new Uint8Array(Buffer.from(`{"namespace":"prop","vector":[1,2,3,4],"topK":1,"filter":${text(t)}}`)),
          "application/json",
        );
        expect([200, 400], q.raw.toString().slice(0, 300)).toContain(q.status);
      }),
      { seed: 20_01, numRuns: 120 },
    );
  }, 60_000);
});
