/** One rule for unknown fields: every route whose body names its fields (read from the route table via /v1/openapi.json) refuses an unknown top-level field with 400 naming it. Real process. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

interface Op {
  method: string;
  path: string;
  closed: boolean;
  fields: string[];
}

describe("unknown fields are refused everywhere", () => {
  let srv: ServerProcess;
  let ops: Op[];
  beforeAll(async () => {
    srv = await startServerProcess();
    const doc = (await (await fetch(`${srv.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema?: Record<string, unknown> }> } }>>;
    };
    ops = Object.entries(doc.paths).flatMap(([path, m]) =>
      Object.entries(m).flatMap(([method, op]) => {
        const schema = op.requestBody?.content["application/json"]?.schema;
        return schema?.properties && Object.keys(schema.properties).length > 0 // an open body (a helper's own arguments) names no field
          ? [{ method: method.toUpperCase(), path, closed: schema.additionalProperties === false, fields: Object.keys(schema.properties) }]
          : [];
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await srv?.dispose();
  });

  it("every JSON body with named fields is documented closed, and an unknown field is 400 E_BAD_REQUEST naming it", async () => {
    expect(ops.length).toBeGreaterThan(30);
    const wrong: string[] = [];
    for (const op of ops) {
      expect(op.closed, `${op.method} ${op.path}`).toBe(true);
      const url = srv.url + op.path.replace(/\{\w+\}/g, "x");
      // a known field plus a misspelt one: the misspelt one is named, whatever the known one holds
      const r = await fetch(url, {
        method: op.method,
        headers: { "api-key": srv.adminKey!, "content-type": "application/json" },
        body: JSON.stringify({ [op.fields[0]!]: null, includeMetadta: true }),
      });
      const body = (await r.json()) as { error?: { code: string; field?: string } };
      if (r.status !== 400 || body.error?.code !== "E_BAD_REQUEST" || body.error.field !== "includeMetadta")
        wrong.push(`${op.method} ${op.path}: ${r.status} ${JSON.stringify(body)}`);
    }
    expect(wrong).toEqual([]);
  });
});
