/** The one tool catalog: it covers the REST router, every entry is well-formed, and the argument mapping is REST's. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Server } from "../../src/app/start-server.js";
import { CATALOG, DEFAULT_GROUPS, GROUPS, NOT_TOOLS, RENAMED, selectTools } from "../../src/tools/catalog.js";
import { toHttp } from "../../src/tools/operation.js";

let dir: string;
let server: Server;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-catalog-"));
  server = await startServer({ dataDir: dir, port: 0 });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("tool catalog", () => {
  it("covers every REST operation, and runs only operations the router has", () => {
    const routed = new Set(server.routes.map((r) => r.operationId));
    const used = new Set(CATALOG.flatMap((t) => t.operations));
    const uncovered = [...routed].filter((op) => !used.has(op) && !(op in NOT_TOOLS));
    expect(uncovered, "REST operations without a tool (add one to src/tools, or a reason to NOT_TOOLS)").toEqual([]);
    expect(
      [...used].filter((op) => !routed.has(op)),
      "tools running operations the router lacks",
    ).toEqual([]);
    expect(
      Object.keys(NOT_TOOLS).filter((op) => !routed.has(op)),
      "stale NOT_TOOLS entries",
    ).toEqual([]);
  });

  it("names tools uniquely, in the pattern every major client accepts (OpenAI's ^[a-zA-Z0-9_-]{1,64}$), with the seed's names present", () => {
    const names = CATALOG.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const seed = [
      "create_index",
      "list_indexes",
      "describe_index",
      "stats",
      "embed",
      "upsert",
      "upsert_text",
      "query",
      "query_text",
      "fetch",
      "update",
      "replace_text",
      "delete",
      "forget_where",
      "export",
      "import",
      "bind_role",
      "read_roles",
      "records_ingest",
      "records_query",
      "records_timeline",
      "records_get",
      "records_delete",
      "records_forget",
      "records_stats",
      "hd_kg_add_fact",
      "hd_kg_delete_fact",
      "hd_kg_query",
      "hd_kg_stats",
      "hd_kg_export",
      "hd_kg_import",
      "hd_causal_add_worlds",
      "hd_causal_query",
      "hd_causal_export",
      "hd_causal_import",
      "hd_analogy",
    ];
    expect(seed.filter((n) => !names.includes(n))).toEqual([]);
    // the dotted seed names and the aliases are gone; calling one names its replacement
    for (const [old, now] of Object.entries(RENAMED)) {
      expect(names).not.toContain(old);
      expect(names).toContain(now.split(" ")[0]);
    }
  });

  it("has no duplicate handlers: no two tools run the same operations with the same arguments", () => {
    const seen = new Map<string, string>();
    for (const t of CATALOG) {
      const key = `${t.operations.join("+")} ${JSON.stringify(z.toJSONSchema(t.input, { io: "input" }))}`;
      expect(seen.get(key), `${t.name} duplicates ${seen.get(key)}`).toBeUndefined();
      seen.set(key, t.name);
    }
  });

  it("groups partition the catalog; the default set is every group but admin; subsets by group or name", () => {
    const grouped = Object.values(GROUPS).flat();
    expect(grouped.length).toBe(CATALOG.length);
    expect(new Set(grouped).size).toBe(CATALOG.length);
    expect(DEFAULT_GROUPS).not.toContain("admin");
    const names = (spec?: string) => selectTools(spec).map((t) => t.name);
    expect(names()).toEqual(names(DEFAULT_GROUPS.join(",")));
    expect(names()).not.toContain("admin_credit");
    expect(names("all")).toEqual(CATALOG.map((t) => t.name));
    expect(names("records")).toEqual(GROUPS.records!.map((t) => t.name));
    expect(names("indexes, records")).toEqual([...GROUPS.records!, ...GROUPS.indexes!].map((t) => t.name)); // catalog order
    expect(names("records,hd_kg_query")).toEqual([...GROUPS.records!.map((t) => t.name), "hd_kg_query"]);
    expect(() => selectTools("records,nope")).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "tools" }));
  });

  it("gives every tool a description, annotations and object schemas that convert to JSON Schema", () => {
    for (const t of CATALOG) {
      expect(t.description.length, t.name).toBeGreaterThan(20);
      expect(typeof t.annotations.readOnlyHint, t.name).toBe("boolean");
      expect(t.annotations.readOnlyHint && t.annotations.destructiveHint, `${t.name} cannot be read-only and destructive`).toBe(false);
      expect(z.toJSONSchema(t.input, { io: "input" }).type, t.name).toBe("object");
      expect(z.toJSONSchema(t.output, { io: "output" }).type, t.name).toBe("object");
    }
  });

  it("marks a tool read-only exactly when its operations are GETs or queries", () => {
    const method = new Map(server.routes.map((r) => [r.operationId, r.method]));
    for (const t of CATALOG) {
      if (t.operations.some((op) => method.get(op) === "delete")) expect(t.annotations.destructiveHint, t.name).toBe(true);
      if (t.operations.every((op) => method.get(op) === "get")) expect(t.annotations.readOnlyHint, t.name).toBe(true);
    }
  });
});

describe("toHttp", () => {
  const op = { operationId: "x", method: "get" as const, path: "/v1/records/{ns}/timeline", arrayQuery: new Set(["ids"]) };
  it("fills path parameters (percent-encoded), sends the rest as query; lists comma-joined or repeated", () => {
    const r = toHttp(op, { args: { ns: "a b/c", kind: ["note", "decision"], ids: ["1", "2"], limit: 5, skip: undefined } });
    expect(r.path).toBe("/v1/records/a%20b%2Fc/timeline");
    expect(r.params).toEqual({ ns: "a b/c" });
    expect(r.query.get("kind")).toBe("note,decision");
    expect(r.query.getAll("ids")).toEqual(["1", "2"]);
    expect(r.query.get("limit")).toBe("5");
    expect(r.query.has("skip")).toBe(false);
    expect(r.body).toBeUndefined();
  });
  it("sends a POST's other arguments as the JSON body, and refuses a missing path parameter", () => {
    const post = { ...op, method: "post" as const, path: "/v1/records/{ns}/query" };
    expect(toHttp(post, { args: { ns: "n", text: "t", topK: 3 } })).toMatchObject({
      body: { text: "t", topK: 3 },
      contentType: "application/json",
    });
    expect(() => toHttp(post, { args: { text: "t" } })).toThrow(/ns is required/);
  });
});
