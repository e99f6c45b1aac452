/**
 * One schema per operation (issue 34): for every /v1/indexes operation with a request schema, the route's check
 * (http/input.ts, as a request runs it), the MCP tool that is that operation (its zod input, as mcp/server.ts
 * validates arguments) and the OpenAPI document (validated by the MCP SDK's own JSON Schema validator) judge
 * fast-check-generated hostile inputs alike: route and tool exactly; the document accepts everything the route
 * accepts (it cannot say "at most 512 bytes", only "at most 512 characters", so it may accept more, never less).
 * And the index-name pattern is written once in src/.
 */
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkInput, parseQuery, queryParamsOf } from "../../src/http/input.js";
import { refuseUnknownFields } from "../../src/http/invoke.js";
import { openApiDocument } from "../../src/http/openapi.js";
import type { Route, Schema } from "../../src/http/route.js";
import { indexRoutes } from "../../src/http/routes/indexes.js";
import type { IndexCatalog } from "../../src/memory/indexes.js";
import { CATALOG } from "../../src/tools/catalog.js";
import { WALLET_OPS } from "../../src/tools/wallet-ops.js";
import { toHttp } from "../../src/tools/operation.js";
import { countInSrc } from "./src-text.js";

// Routes are only described and checked here, never run: no catalog behind them.
const routes = indexRoutes({} as IndexCatalog).filter((r) => r.input !== undefined);
const doc = openApiDocument(routes, "test") as { paths: Record<string, Record<string, { requestBody?: unknown; parameters?: unknown }>> };
const ajv = new AjvJsonSchemaValidator();

/** The operation's tool: the catalog entry running exactly this operation, with the operation's own arguments. */
const TOOL_OF: Record<string, string> = {
  create_index: "create_index",
  configure_index: "configure_index",
  upsert: "upsert",
  query: "query",
  fetch: "fetch",
  list_vectors: "list_vectors",
  fetch_by_metadata: "fetch_by_metadata",
  delete: "delete",
  describe_index_stats: "stats",
  list_namespaces: "list_namespaces",
};
// Not compared: upsert_namespace (the upsert schema again, namespace in the path) and update, whose two tools
// (update, update_by_metadata) each take one of its two forms.
const SKIP = new Set(["upsert_namespace", "update"]);

const str = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", minLength: 500, maxLength: 700 }),
  fc.constantFrom("", "a", "__default__", "cosine", "DotProduct", "sparse", "enabled", "my-index-1", "-bad", "ZZ"),
);
const num = fc.oneof(
  fc.integer({ min: -5, max: 30_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1, 10, 1000, 1001, 10_000, 10_001),
);
const scalar = fc.oneof(fc.constant(null), fc.boolean(), num, str);
const metaValue = fc.oneof(
  str,
  num,
  fc.boolean(),
  fc.array(str, { maxLength: 3 }),
  fc.constant(null),
  fc.dictionary(str, str, { maxKeys: 1 }),
);
const meta = fc.dictionary(fc.string({ maxLength: 6 }), metaValue, { maxKeys: 3 });
const sparse = fc.record(
  {
    indices: fc.array(fc.oneof(fc.nat(10), fc.constant(-1), fc.constant(2 ** 32)), { maxLength: 3 }),
    values: fc.array(num, { maxLength: 3 }),
  },
  { requiredKeys: [] },
);
const values = fc.oneof(fc.array(num, { maxLength: 4 }), fc.array(scalar, { maxLength: 3 }), str, scalar);
const vector = fc.oneof(
  fc.record({ id: str, values, sparseValues: sparse, metadata: fc.oneof(meta, scalar) }, { requiredKeys: [] }),
  scalar,
);
/** A hostile value of one argument: plausible shapes for its name, anything for the rest. */
const anyOf: Record<string, fc.Arbitrary<unknown>> = {
  vectors: fc.oneof(fc.array(vector, { maxLength: 3 }), scalar),
  ids: fc.oneof(fc.array(str, { maxLength: 3 }), scalar),
  filter: fc.oneof(meta, scalar, fc.array(scalar, { maxLength: 2 })),
  setMetadata: fc.oneof(meta, scalar),
  vector: values,
  values,
  sparseVector: fc.oneof(sparse, scalar),
  sparseValues: fc.oneof(sparse, scalar),
  tags: fc.oneof(fc.dictionary(fc.string({ maxLength: 84 }), fc.oneof(fc.string({ maxLength: 124 }), num), { maxKeys: 2 }), scalar),
  deletion_protection: fc.oneof(fc.constantFrom("enabled", "disabled"), scalar),
  metric: fc.oneof(fc.constantFrom("cosine", "Euclidean", "dotproduct"), str, scalar),
  vector_type: fc.oneof(fc.constantFrom("dense", "SPARSE"), str, scalar),
  name: fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,46}$/), str, scalar),
  spec: fc.oneof(meta, scalar, fc.array(scalar, { maxLength: 1 })),
  ...Object.fromEntries(
    ["includeValues", "includeMetadata", "exact", "dryRun", "deleteAll"].map((k) => [k, fc.oneof(fc.boolean(), fc.boolean(), scalar)]),
  ),
  ...Object.fromEntries(["namespace", "id", "paginationToken", "prefix"].map((k) => [k, fc.oneof(str, str, scalar)])),
  ...Object.fromEntries(["topK", "limit", "dimension"].map((k) => [k, fc.oneof(num, num, scalar)])),
};
const argsOf = (names: string[]) =>
  fc.record(Object.fromEntries(names.map((n) => [n, anyOf[n] ?? scalar])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;

/** Query arguments as a client can send them: a list for an array parameter, one text or number otherwise. */
const queryArgsOf = (params: ReturnType<typeof queryParamsOf>) =>
  fc.record(
    Object.fromEntries(
      params.map((p) => [p.name, p.schema.type === "array" ? fc.array(str, { maxLength: 1002 }) : p.schema.type === "integer" ? num : str]),
    ),
    { requiredKeys: [] },
  ) as fc.Arbitrary<Record<string, unknown>>;

/** The index a data-plane operation runs on (a path parameter; create_index names it in the body). */
const pathArg = (route: Route, as: string): Record<string, string> => (route.path.includes("{name}") ? { [as]: "ix" } : {});

const routeAccepts = (route: Route, args: Record<string, unknown>): boolean => {
  const op = {
    operationId: route.operationId,
    method: route.method,
    path: route.path,
    arrayQuery: new Set(
      queryParamsOf(route)
        .filter((p) => p.schema.type === "array")
        .map((p) => p.name),
    ),
  };
  const http = toHttp(op, { args: { ...args, ...pathArg(route, "name") } });
  try {
    refuseUnknownFields(route, http.body);
    checkInput(route, { body: http.body, query: http.query });
    return true;
  } catch (err) {
    expect((err as { status?: number }).status).toBe(400); // a refusal is always a 400 with a stable code
    return false;
  }
};

/** The document's schema of the operation's arguments: its JSON body, or its query parameters as one object. */
function documentSchema(route: Route): Schema {
  const op = doc.paths[route.path]![route.method]!;
  const body = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content?.["application/json"]?.schema;
  if (body) return body;
  const params = (op.parameters as Array<{ name: string; in: string; required: boolean; schema: Schema }>).filter((p) => p.in === "query");
  return {
    type: "object",
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
    required: params.filter((p) => p.required).map((p) => p.name),
  };
}

describe("one schema per operation: route, MCP tool and OpenAPI document agree", () => {
  it("covers every index operation with a request schema", () => {
    expect(
      routes
        .map((r) => r.operationId)
        .filter((id) => !SKIP.has(id))
        .sort(),
    ).toEqual(Object.keys(TOOL_OF).sort());
  });

  for (const route of routes.filter((r) => !SKIP.has(r.operationId))) {
    it(`${route.operationId}: hostile arguments (property, fixed seed)`, () => {
      const tool = CATALOG.find((t) => t.name === TOOL_OF[route.operationId])!;
      expect(tool.operations).toEqual([route.operationId]);
      const validate = ajv.getValidator(documentSchema(route));
      const names = route.input!.body ? Object.keys(route.input!.body.shape) : [];
      const gen = route.input!.body ? argsOf(names) : queryArgsOf(queryParamsOf(route));
      let accepted = 0;
      let refused = 0;
      fc.assert(
        fc.property(gen, (args) => {
          const byRoute = routeAccepts(route, args);
          const byTool = tool.input.safeParse({ ...args, ...pathArg(route, "index" in tool.input.shape ? "index" : "name") }).success;
          expect(byTool, "tool input and route disagree").toBe(byRoute);
          // metric and vector_type are read in any case (the official client sends them as given); the document lists them in lowercase
          const lowered = Object.fromEntries(
            Object.entries(args).map(([k, v]) => [
              k,
              (k === "metric" || k === "vector_type") && typeof v === "string" ? v.toLowerCase() : v,
            ]),
          );
          if (byRoute)
            expect(validate(lowered).valid, `the document refuses what the route takes: ${JSON.stringify(args).slice(0, 300)}`).toBe(true);
          if (byRoute) accepted++;
          else refused++;
        }),
        { seed: 34, numRuns: 400 },
      );
      // not vacuous: both verdicts occur
      expect(accepted).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
    });
  }
});

describe("each input rule is written once in src/", () => {
  it("the index-name pattern appears once (src/input-rules.ts)", () => {
    expect(countInSrc("[a-z0-9-]{0,43}")).toBe(1);
  });
});

describe("a request's query is parsed once", () => {
  it("the handler's parseQuery returns what the route's check parsed, without parsing again", () => {
    const schema = WALLET_OPS.wallet.query;
    const route = { input: { query: schema } } as unknown as Route;
    const query = new URLSearchParams("limit=7");
    let parses = 0;
    const parse = schema.safeParse.bind(schema);
    schema.safeParse = ((v: unknown) => (parses++, parse(v))) as typeof schema.safeParse;
    try {
      checkInput(route, { body: undefined, query });
      const first = parseQuery(schema, query);
      expect(first).toEqual({ limit: 7 });
      expect(parseQuery(schema, query)).toBe(first);
      expect(parses).toBe(1);
      expect(parseQuery(schema, new URLSearchParams("limit=8"))).toEqual({ limit: 8 });
      expect(parses).toBe(2);
      expect(() => parseQuery(schema, new URLSearchParams("limit=x"))).toThrow(/limit/);
    } finally {
      schema.safeParse = parse;
    }
  });
});
