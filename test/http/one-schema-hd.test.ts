/**
 * One schema per operation (issue 34), the hyperdimensional routes: for each /v1/hd operation with a JSON body,
 * the route's parser (http/input.ts), the OpenAPI document and the MCP tool that is that operation all come from
 * the one zod schema of tools/hd-ops.ts, and agree on fast-check-generated hostile bodies. Then the same kind of
 * bodies go through the in-process request path of a real server (`server.request()`, no socket): each is
 * answered, a refusal is a 4xx with a code from the error table and the offending field, never a 5xx, and a
 * refused request leaves the stored graph and model byte for byte as they were.
 */
import fc from "fast-check";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { ERRORS } from "../../src/errors.js";
import type { AnalogyService } from "../../src/hd/analogy/service.js";
import type { CausalService } from "../../src/hd/causal/service.js";
import type { KnowledgeGraphs } from "../../src/hd/kg/service.js";
import { jsonSchemaOf } from "../../src/http/input.js";
import { openApiDocument } from "../../src/http/openapi.js";
import type { Route } from "../../src/http/route.js";
import { hdAnalogyRoutes } from "../../src/http/routes/hd-analogy.js";
import { causalRoutes } from "../../src/http/routes/hd-causal.js";
import { kgRoutes } from "../../src/http/routes/hd-kg.js";
import { hdRolesRoutes } from "../../src/http/routes/hd-roles.js";
import { CATALOG } from "../../src/tools/catalog.js";
import { HD_OPS } from "../../src/tools/hd-ops.js";
import { COMMONS_OPS } from "../../src/tools/commons-ops.js";
import { commonsRoutes } from "../../src/http/routes/commons.js";
import type { Registry } from "../../src/helpers/registry.js";
import { refusal } from "../hd/route-check.js";
import { countInSrc } from "./src-text.js";

// Routes are only described and checked in the first part, never run: no services behind them.
const routes: Route[] = [
  ...kgRoutes({} as KnowledgeGraphs),
  ...causalRoutes({} as CausalService),
  ...hdAnalogyRoutes({} as AnalogyService),
  ...hdRolesRoutes(),
];
const routeOf = (op: string) => routes.find((r) => r.operationId === op)!;
const doc = openApiDocument(routes, "test") as {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
};

/** Each converted operation, its MCP tool and the tool argument naming the path's graph or model (if any). */
const OPS: Record<keyof typeof HD_OPS, { tool: string; pathArg?: string }> = {
  hd_kg_add: { tool: "hd_kg_add_fact", pathArg: "graph" },
  hd_kg_delete_fact: { tool: "hd_kg_delete_fact", pathArg: "graph" },
  hd_kg_query: { tool: "hd_kg_query", pathArg: "graph" },
  hd_causal_worlds: { tool: "hd_causal_add_worlds", pathArg: "model" },
  hd_causal_query: { tool: "hd_causal_query", pathArg: "model" },
  hd_analogy: { tool: "hd_analogy" },
  hd_roles_bind: { tool: "bind_role" },
  hd_roles_read: { tool: "read_roles" },
};
const opNames = Object.keys(OPS) as Array<keyof typeof HD_OPS>;

// ---- hostile values, by field name: plausible ones often (so that some bodies pass), anything else too ----
const str = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "grapheme", minLength: 170, maxLength: 600 }),
  fc.constantFrom("", "a", "alice", "knows", "observation", "intervention", "do", " ", "\u0000", "é".repeat(257)),
);
const small = fc.integer({ min: 0, max: 3 });
const int = fc.oneof(fc.integer({ min: -3, max: 12 }), fc.constantFrom(0, 1, 2, 21, 1024, 1025, 65535, 65536, 2 ** 32, 2 ** 32 - 1));
const num = fc.oneof(small, small, int, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1.5, -0.5, 1e300));
const scalar = fc.oneof(fc.constant(null), fc.boolean(), num, str);
const ints = fc.oneof(
  fc.array(small, { minLength: 1, maxLength: 4 }),
  fc.array(int, { maxLength: 4 }),
  fc.array(scalar, { maxLength: 3 }),
  scalar,
);
const record = fc.oneof(
  fc.constant(Buffer.alloc(1024, 7).toString("base64")),
  fc.constant(Buffer.alloc(1024, 9).toString("base64")),
  fc.constant(Buffer.alloc(1023).toString("base64")),
  fc.constant("AAAA"),
  str,
  scalar,
);
const name = fc.constantFrom("alice", "bob", "knows", "r");
const term = fc.oneof(name, name, str, scalar);
const fact = fc.oneof(
  { weight: 3, arbitrary: fc.record({ subject: name, relation: name, object: name }) },
  { weight: 1, arbitrary: fc.record({ subject: term, relation: term, object: term }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: scalar },
);
const anyOf: Record<string, fc.Arbitrary<unknown>> = {
  facts: fc.oneof(fc.array(fact, { minLength: 1, maxLength: 3 }), fc.array(fact, { maxLength: 3 }), scalar),
  subject: term,
  relation: term,
  n_vars: fc.oneof(fc.integer({ min: 1, max: 3 }), num),
  vocab_per_var: fc.oneof(fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }), ints),
  worlds: fc.oneof(fc.array(ints, { minLength: 1, maxLength: 3 }), scalar),
  parents: fc.oneof(fc.array(ints, { maxLength: 3 }), fc.constant(null), scalar),
  query_type: fc.oneof(fc.constantFrom("observation", "intervention"), str, scalar),
  n_feat: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: -1, max: 9 }), fc.constantFrom(21, 1.5, "3", null)),
  seed: fc.oneof(small, small, num, scalar),
  pairs: fc.oneof(
    fc.dictionary(name, name, { minKeys: 1, maxKeys: 3 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constant("")), term, { maxKeys: 3 }),
    scalar,
  ),
  vector: record,
  roles: fc.oneof(fc.array(name, { minLength: 1, maxLength: 3 }), fc.array(term, { maxLength: 3 }), scalar),
  candidates: fc.oneof(fc.array(name, { minLength: 1, maxLength: 3 }), fc.array(term, { maxLength: 3 }), scalar),
};
/** A body for `op`: its fields with hostile values (usually all present; any may be left out), sometimes an unknown field. */
const bodyOf = (op: keyof typeof HD_OPS) => {
  const fields = Object.fromEntries(Object.keys(HD_OPS[op].body.shape).map((k) => [k, anyOf[k] ?? num]));
  const required = Object.keys(fields).filter((k) => k !== "seed" && k !== "parents");
  return fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.record(fields, { requiredKeys: required }) },
        { weight: 1, arbitrary: fc.record(fields, { requiredKeys: [] }) },
      ),
      fc.option(fc.oneof(num, str), { freq: 8 }),
    )
    .map(([body, extra]) => (extra === null ? body : { ...body, extra })) as fc.Arbitrary<Record<string, unknown>>;
};

describe("one schema per hd operation: route, OpenAPI document and MCP tool", () => {
  for (const op of opNames) {
    it(`${op}: the route, the document and the tool use the one schema of tools/hd-ops.ts`, () => {
      const route = routeOf(op);
      const schema = HD_OPS[op].body;
      expect(route.input?.body).toBe(schema);
      expect(route.requestBody, "no hand-written request body left").toBeUndefined();
      expect(route.queryParams).toBeUndefined();
      const documented = doc.paths[route.path]![route.method]!.requestBody!.content["application/json"]!.schema;
      expect(documented).toEqual({ ...jsonSchemaOf(schema), additionalProperties: false }); // closed: unknown fields are refused
      const tool = CATALOG.find((t) => t.name === OPS[op].tool)!;
      expect(tool.operations).toEqual([op]);
      const { pathArg } = OPS[op];
      // the tool's arguments: the operation's own fields (the very same zod schemas) plus the graph or model
      expect(Object.keys(tool.input.shape).sort()).toEqual([...Object.keys(schema.shape), ...(pathArg ? [pathArg] : [])].sort());
      for (const [k, s] of Object.entries(schema.shape)) expect(tool.input.shape[k], `${op}.${k}`).toBe(s);
    });

    it(`${op}: the route's check and the tool's input judge hostile bodies alike (property, fixed seed)`, () => {
      const route = routeOf(op);
      const tool = CATALOG.find((t) => t.name === OPS[op].tool)!;
      const { pathArg } = OPS[op];
      let accepted = 0;
      let refused = 0;
      fc.assert(
        fc.property(bodyOf(op), (body) => {
          const byRoute = refusal(route, body);
          if (byRoute !== null) {
            expect(byRoute.status).toBe(400);
            expect(byRoute.code).toBe("E_BAD_REQUEST");
            expect(typeof byRoute.field === "string" && byRoute.field !== "").toBe(true);
          }
          // the tool has no unknown-field rule of its own (zod strips): compare without the extra field
          const { extra: _, ...known } = body;
          const byTool = tool.input.safeParse({ ...known, ...(pathArg ? { [pathArg]: "x" } : {}) }).success;
          expect(byTool, `tool and route disagree on ${JSON.stringify(known).slice(0, 300)}`).toBe(refusal(route, known) === null);
          if (byRoute === null) accepted++;
          else refused++;
        }),
        { seed: 34, numRuns: 300 },
      );
      expect(refused).toBeGreaterThan(0);
      expect(accepted).toBeGreaterThan(0);
    });
  }

  it("the document helpers' verify body comes from tools/commons-ops.ts too (build's is the helper's own argument object)", () => {
    const helperRoutes = commonsRoutes({ registry: {} as Registry, dataDir: tmpdir() });
    const helperDoc = openApiDocument(helperRoutes, "test") as typeof doc;
    const verify = helperRoutes.find((r) => r.operationId === "commons_verify")!;
    expect(verify.input?.body).toBe(COMMONS_OPS.commons_verify.body);
    expect(verify.requestBody).toBeUndefined();
    const documented = helperDoc.paths[verify.path]![verify.method]!.requestBody!.content["application/json"]!.schema;
    expect(documented).toEqual({ ...jsonSchemaOf(COMMONS_OPS.commons_verify.body), additionalProperties: false });
    expect(CATALOG.find((t) => t.name === "commons_verify")!.input).toBe(COMMONS_OPS.commons_verify.body);
    expect(refusal(verify, { id: 7 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "id" });
    expect(refusal(verify, {})).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "id" });
    expect(refusal(verify, undefined)).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "id" });
    expect(refusal(verify, { id: "rec_00" })).toBeNull();
  });

  it("the hd name patterns are written once in src/ (hd/input-rules.ts)", () => {
    expect(countInSrc("/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/")).toBe(1);
    expect(countInSrc("/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/")).toBe(1);
  });
});

describe("hostile bodies through the request path (server.request, no socket)", () => {
  let dir: string;
  let server: Server;
  let key: string;
  const call = async (method: string, url: string, body?: string) => {
    const r = await server.request({ method, url, headers: { "api-key": key, "content-type": "application/json" }, body });
    return { status: r.status, body: r.body, contentType: r.contentType };
  };
  const stored = async () => {
    const g = await call("GET", "/v1/hd/kg/g/export");
    const m = await call("GET", "/v1/hd/causal/m/export");
    expect(g.status).toBe(200);
    expect(m.status).toBe(200);
    return Buffer.concat([Buffer.from(g.body), Buffer.from(m.body)]);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-one-schema-hd-"));
    server = await startServer({ dataDir: dir, port: 0, auth: true, directorySeed: null });
    key = (server.keys as unknown as { create(o: { admin: boolean }): { key: string } }).create({ admin: true }).key;
    const facts = [
      { subject: "alice", relation: "knows", object: "bob" },
      { subject: "bob", relation: "likes", object: "carol" },
    ];
    expect((await call("POST", "/v1/hd/kg/g/facts", JSON.stringify({ facts }))).status).toBe(200);
    const worlds = {
      n_vars: 3,
      vocab_per_var: [2, 3, 2],
      worlds: [
        [0, 1, 1],
        [1, 2, 0],
        [1, 0, 1],
      ],
      parents: [[], [0], [0, 1]],
    };
    expect((await call("POST", "/v1/hd/causal/m/worlds", JSON.stringify(worlds))).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const PATHS: Record<keyof typeof HD_OPS, string> = {
    hd_kg_add: "/v1/hd/kg/g/facts",
    hd_kg_delete_fact: "/v1/hd/kg/g/facts/delete",
    hd_kg_query: "/v1/hd/kg/g/query",
    hd_causal_worlds: "/v1/hd/causal/m/worlds",
    hd_causal_query: "/v1/hd/causal/m/query",
    hd_analogy: "/v1/hd/analogy",
    hd_roles_bind: "/v1/hd/roles/bind",
    hd_roles_read: "/v1/hd/roles/read",
  };
  /** A request: an operation with a hostile body, or a body that is not an object (or not JSON) at all. */
  const request = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...opNames).chain((op) => bodyOf(op).map((b) => ({ op, text: JSON.stringify(b) }))) },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constantFrom(...opNames),
        text: fc.oneof(
          fc.constantFrom("", "null", "[]", "[{}]", "1", '"x"', "{", '{"facts": [', "{}", '{"__proto__": {"x": 1}}'),
          fc.json({ maxDepth: 2 }),
        ),
      }),
    },
  );

  it("every hostile body is answered: a refusal is 4xx with a table code and a field, and changes nothing stored (property, fixed seed)", async () => {
    let before = await stored();
    const seen: Record<string, number> = {};
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(request, async ({ op, text }) => {
        const r = await call("POST", PATHS[op], text);
        expect(r.status, `${op} ${text.slice(0, 200)}: ${String(r.body).slice(0, 200)}`).toBeLessThan(500);
        if (r.status < 300) {
          accepted++;
          before = await stored(); // an accepted write may change the graph or model: the new baseline
          return;
        }
        const error = JSON.parse(String(r.body)).error as { code: string; field?: string };
        expect(Object.keys(ERRORS)).toContain(error.code);
        expect(r.status).toBe(ERRORS[error.code as keyof typeof ERRORS].status);
        expect(typeof error.field === "string" && error.field !== "", `${op} ${text.slice(0, 200)}: no field`).toBe(true);
        seen[error.code] = (seen[error.code] ?? 0) + 1;
        expect((await stored()).equals(before), `${op} ${text.slice(0, 200)} changed stored data`).toBe(true);
      }),
      { seed: 34, numRuns: 250 },
    );
    expect(seen.E_BAD_REQUEST).toBeGreaterThan(0);
    expect(accepted).toBeGreaterThan(0); // not vacuous: both answers occur
  }, 300_000);
});
