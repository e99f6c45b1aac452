/**
 * One schema per operation (issue 34) for the records, backups, imports, embed, admin and wallet routes: the route's parser,
 * the OpenAPI document and the MCP tool that is that operation use the same zod objects; hostile bodies and queries
 * sent to the records routes through the in-process request path (a real server) are a 4xx with a stable code and a
 * field, never a 5xx, and a refused request changes no stored record (fast-check, fixed seed). And an MCP tool refuses
 * an unknown argument naming it, as REST refuses an unknown body field.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import fc from "fast-check";
import type { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { jsonSchemaOf, queryParamsOf, requestBodyOf } from "../../src/http/input.js";
import type { Route } from "../../src/http/route.js";
import { adminRoutes } from "../../src/http/routes/admin.js";
import { backupRoutes } from "../../src/http/routes/backups.js";
import { embedRoutes } from "../../src/http/routes/embed.js";
import { importRoutes } from "../../src/http/routes/imports.js";
import { opsRoutes } from "../../src/http/routes/ops.js";
import { recordRoutes } from "../../src/http/routes/records.js";
import { mcpServer } from "../../src/mcp/server.js";
import { CATALOG } from "../../src/tools/catalog.js";
import type { Api } from "../../src/tools/tool.js";

// Described and checked only, never run here: no services behind them.
const none = {} as never;
const routes: Route[] = [
  ...recordRoutes(none, none),
  ...backupRoutes(none),
  ...importRoutes(none),
  ...embedRoutes(none),
  ...adminRoutes(none),
  ...opsRoutes(none),
];

/** The MCP tool of each operation with a request schema; absent: no tool by design (admin_create_key answers a secret). */
const TOOL_OF: Record<string, string | null> = {
  records_ingest: "records_ingest",
  records_query: "records_query",
  records_timeline: "records_timeline",
  records_forget: "records_forget",
  records_export: "export",
  create_backup: "create_backup",
  list_backups: "list_backups",
  list_index_backups: "list_backups",
  create_index_from_backup: "create_index_from_backup",
  list_restore_jobs: null,
  start_import: "start_import",
  list_imports: "list_imports",
  embed: "inference_embed",
  admin_create_key: null,
  admin_credit: "admin_credit",
  wallet: "wallet",
  wallet_usage: "wallet_usage",
};

const unwrapped = (s: z.ZodType): z.ZodType => ("unwrap" in s && typeof s.unwrap === "function" ? (s.unwrap() as z.ZodType) : s);

describe("one schema per operation: records, backups, imports, embed, admin, wallet", () => {
  it("every JSON route of these families declares its input schema, and no hand-written requestBody or queryParams beside it", () => {
    const withInput = routes.filter((r) => r.input !== undefined).map((r) => r.operationId);
    expect(withInput.sort()).toEqual(Object.keys(TOOL_OF).sort());
    for (const r of routes) {
      if (r.rawBody) continue; // an upload (records_import) is parsed by its handler (multipart)
      expect(r.requestBody, r.operationId).toBeUndefined();
      expect(r.queryParams, r.operationId).toBeUndefined();
    }
  });

  for (const route of routes.filter((r) => r.input !== undefined)) {
    it(`${route.operationId}: the OpenAPI schema is made from the route's schema, and the MCP tool takes the same fields`, () => {
      const schema = (route.input!.body ?? route.input!.query)!;
      if (route.input!.body) expect(requestBodyOf(route)).toBe(jsonSchemaOf(route.input!.body));
      else expect(queryParamsOf(route).map((p) => p.name)).toEqual(Object.keys(route.input!.query!.shape));
      const toolName = TOOL_OF[route.operationId];
      if (!toolName) return;
      const tool = CATALOG.find((t) => t.name === toolName)!;
      expect(tool.operations).toContain(route.operationId);
      let shared = 0;
      for (const [k, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
        const mine = tool.input.shape[k] as z.ZodType | undefined;
        // a body field the tool cannot name (create_backup's `name`: the tool's `name` is the index, a path parameter)
        if (mine === undefined || route.path.includes(`{${k}}`)) continue;
        shared++;
        // the very same zod object (or the one it makes optional, where the tool requires what REST's cross-field rule decides)
        expect(mine === field || mine === unwrapped(field), `${toolName}.${k}`).toBe(true);
      }
      expect(shared).toBeGreaterThan(0);
    });
  }
});

describe("MCP refuses an unknown argument, naming it (as REST refuses an unknown body field)", () => {
  it("a misspelt argument is a tool error E_BAD_REQUEST with the field; the operation is never called", async () => {
    let called = 0;
    const api: Api = {
      call: async () => {
        called++;
        return { status: 200, body: { records: [], namespace: "n" }, headers: {} };
      },
    };
    const [a, b] = InMemoryTransport.createLinkedPair();
    const server = mcpServer(api, { keyed: true });
    await server.connect(a);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(b);
    try {
      const bad = (await client.callTool({ name: "records_query", arguments: { namespace: "n", text: "x", topk: 3 } })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(bad.isError).toBe(true);
      expect(JSON.parse(bad.content[0]!.text).error).toMatchObject({ code: "E_BAD_REQUEST", field: "topk" });
      // a GET operation's tool too (its arguments become the query string)
      const badGet = (await client.callTool({ name: "records_timeline", arguments: { namespace: "n", limt: 3 } })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(JSON.parse(badGet.content[0]!.text).error).toMatchObject({ code: "E_BAD_REQUEST", field: "limt" });
      expect(called).toBe(0);
      const ok = (await client.callTool({ name: "records_query", arguments: { namespace: "n", text: "x", topK: 3 } })) as {
        isError?: boolean;
      };
      expect(ok.isError).toBeFalsy();
      expect(called).toBe(1);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe("hostile requests to the records routes (in-process request path, real server)", () => {
  let dir: string;
  let server: Server;
  let key: string;
  const headers = () => ({ "api-key": key, "content-type": "application/json" });
  const json = (body: Buffer | string) => JSON.parse(body.toString()) as any;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-one-schema-records-"));
    server = await startServer({ dataDir: dir, port: 0, auth: true });
    key = (server.keys as unknown as { create(o: { admin: boolean }): { key: string } }).create({ admin: true }).key;
    const items = Array.from({ length: 12 }, (_, i) => ({
      kind: i % 2 ? "note" : "decision",
      text: `record ${i}`,
      tags: [`t${i % 3}`],
      ts: 1000 + i,
    }));
    const r = await server.request({ method: "POST", url: "/v1/records/keep", headers: headers(), body: JSON.stringify({ items }) });
    expect(r.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const stats = async () => json((await server.request({ method: "GET", url: "/v1/records/keep/stats", headers: headers() })).body);

  const str = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.constantFrom("", " ", " , ", "note", "decision", "t1", "vector", "hybrid", "lexical", "rec_1", "0x10", "1e3", "-1", "501", "2"),
    fc.string({ unit: "grapheme", minLength: 250, maxLength: 300 }),
  );
  const num = fc.oneof(
    fc.integer({ min: -3, max: 2000 }),
    fc.double({ noNaN: true }),
    fc.constantFrom(0, 1, 500, 501, 1000, 1001, 2 ** 53),
  );
  const scalar = fc.oneof(fc.constant(null), fc.boolean(), num, str);
  const anyValue = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(str, scalar, { maxKeys: 2 }));
  const item = fc.oneof(
    fc.record(
      {
        kind: fc.oneof(str, scalar),
        text: fc.oneof(str, scalar),
        tags: anyValue,
        ts: fc.oneof(num, scalar),
        meta: anyValue,
        ttlDays: fc.oneof(num, scalar),
      },
      { requiredKeys: [] },
    ),
    scalar,
  );
  const FIELDS = [
    "text",
    "topK",
    "kind",
    "tagsAny",
    "tagsAll",
    "tsGte",
    "tsLt",
    "includeText",
    "includeMeta",
    "mode",
    "ids",
    "items",
    "misspelt",
  ];
  const body = fc.oneof(
    fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(anyValue, fc.array(item, { maxLength: 3 })), { maxKeys: 4 }),
    fc.record({ items: fc.oneof(fc.array(item, { minLength: 1, maxLength: 3 }), anyValue) }),
    scalar,
    fc.array(scalar, { maxLength: 2 }),
  );
  const QUERY = ["since", "until", "after", "kind", "tagsAny", "tagsAll", "limit", "schema", "other"];
  const query = fc.array(fc.tuple(fc.constantFrom(...QUERY), fc.oneof(str, num.map(String))), { maxLength: 4 });
  const request = fc.oneof(
    fc.record({ method: fc.constant("POST"), path: fc.constantFrom("", "/query", "/forget"), body }),
    fc.record({ method: fc.constant("GET"), path: fc.constantFrom("/timeline", "/export"), query }),
  );

  it("every answer is 2xx or a 4xx with a stable code and the field; a refused request changes nothing (property, fixed seed)", async () => {
    let refused = 0;
    let accepted = 0;
    const codes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const before = await stats();
        const url =
          `/v1/records/keep${req.path}` +
          ("query" in req && req.query.length > 0 ? `?${new URLSearchParams(req.query as Array<[string, string]>).toString()}` : "");
        const r = await server.request({
          method: req.method,
          url,
          headers: headers(),
          ...("body" in req ? { body: JSON.stringify(req.body) } : {}),
        });
        expect(r.status, `${req.method} ${url} ${String(r.body).slice(0, 300)}`).toBeLessThan(500);
        if (r.status >= 400) {
          refused++;
          expect(r.status).toBe(400);
          const e = json(r.body).error;
          expect(e.code).toMatch(/^E_[A-Z_]+$/);
          expect(typeof e.field === "string" && e.field.length > 0, JSON.stringify(e)).toBe(true);
          codes.add(e.code);
          expect(await stats(), "a refused request changed the stored records").toEqual(before);
        } else accepted++;
      }),
      { seed: 34, numRuns: 300 },
    );
    // not vacuous: both verdicts occur, and topK's own code among the refusals
    expect(accepted).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(100);
    expect(codes).toContain("E_TOP_K");
  }, 120_000);
});
