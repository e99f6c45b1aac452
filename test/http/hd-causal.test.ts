/**
 * The causal routes through the built `svc serve` process: a confounded SCM uploaded (with and
 * without a graph), observation vs intervention against exact values, append, .hdscm export and
 * import (raw octet-stream), determinism, restart, tenant isolation, bad input and metering.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";
import { call, newTenantKey } from "../e2e/client.js";

// Z -> X, Z -> Y, X -> Y over binary variables (0=Z, 1=X, 2=Y); replicated exactly, N = 1000
const PZ1 = 0.4,
  PX1_Z = [0.2, 0.8],
  PY1_XZ = [
    [0.1, 0.5],
    [0.3, 0.9],
  ];
const worlds: number[][] = [];
for (const z of [0, 1])
  for (const x of [0, 1])
    for (const y of [0, 1]) {
      const p = (z ? PZ1 : 1 - PZ1) * (x ? PX1_Z[z]! : 1 - PX1_Z[z]!) * (y ? PY1_XZ[x]![z]! : 1 - PY1_XZ[x]![z]!);
      for (let i = 0; i < Math.round(1000 * p); i++) worlds.push([z, x, y]);
    }
const EXACT_OBS = (0.6 * 0.2 * 0.3 + 0.4 * 0.8 * 0.9) / (0.6 * 0.2 + 0.4 * 0.8);
const EXACT_DO = 0.6 * 0.3 + 0.4 * 0.9;
const GRAPH = [[], [0], [0, 1]];
const upload = { n_vars: 3, vocab_per_var: [2, 2, 2], worlds, seed: 1, parents: GRAPH };
const query = (query_type: string) => ({ query_type, condition_var: 1, condition_value: 1, query_var: 2, query_value: 1 });

describe("causal over HTTP (svc serve process)", () => {
  let srv: ServerProcess;
  let key: string;
  let other: string;

  beforeAll(async () => {
    srv = await startServerProcess();
    [key, other] = [(await newTenantKey(srv)).key, (await newTenantKey(srv)).key];
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("observation and intervention differ and match the exact values; the same request gives the same bytes", async () => {
    const up = await call(srv.url, key, "POST", "/v1/hd/causal/scm/worlds", upload);
    expect(up.status, up.raw.toString()).toBe(200);
    expect(up.body).toEqual({
      name: "scm",
      n_vars: 3,
      vocab_per_var: [2, 2, 2],
      has_graph: true,
      seed: 1,
      rows_added: 1000,
      rows_total: 1000,
      created: true,
    });
    const obs = await call(srv.url, key, "POST", "/v1/hd/causal/scm/query", query("observation"));
    const int = await call(srv.url, key, "POST", "/v1/hd/causal/scm/query", query("intervention"));
    expect(obs.status).toBe(200);
    expect(obs.body.probability).toBeCloseTo(EXACT_OBS, 12);
    expect(obs.body).toMatchObject({
      query_type: "observation",
      adjustment_set: [],
      adjusted_for: "none",
      warnings: [],
      support: { rows_total: 1000, rows_matching_condition: 440, rows_matching_both: 324 },
    });
    expect(int.body.probability).toBeCloseTo(EXACT_DO, 12);
    expect(int.body).toMatchObject({
      query_type: "intervention",
      adjustment_set: [0],
      adjusted_for: "parents",
      warnings: [],
      support: { strata_total: 2, strata_empty: 0 },
    });
    const again = await call(srv.url, key, "POST", "/v1/hd/causal/scm/query", query("intervention"));
    expect(again.raw.equals(int.raw)).toBe(true);
  });

  it("without a graph the adjustment is all other variables and the response says so", async () => {
    const { parents: _, ...noGraph } = upload;
    expect((await call(srv.url, key, "POST", "/v1/hd/causal/nog/worlds", noGraph)).status).toBe(200);
    const int = await call(srv.url, key, "POST", "/v1/hd/causal/nog/query", query("intervention"));
    expect(int.body.adjusted_for).toBe("all_other_variables");
    expect(int.body.adjustment_set).toEqual([0]);
    expect(int.body.warnings[0]).toMatch(/no causal graph/);
    expect(int.body.probability).toBeCloseTo(EXACT_DO, 12);
  });

  it("append, export, import (octet-stream), survive a restart, delete", async () => {
    const app = await call(srv.url, key, "POST", "/v1/hd/causal/scm/worlds", { n_vars: 3, vocab_per_var: [2, 2, 2], worlds: [[1, 1, 1]] });
    expect(app.body).toMatchObject({ created: false, rows_added: 1, rows_total: 1001 });
    const exp = await call(srv.url, key, "GET", "/v1/hd/causal/scm/export");
    expect(exp.status).toBe(200);
    expect(exp.headers.get("content-type")).toBe("application/octet-stream");
    expect(exp.headers.get("content-disposition")).toBe('attachment; filename="scm.hdscm"');
    expect(exp.raw.subarray(0, 6).toString("latin1")).toBe("HDSCM\0");
    expect((await call(srv.url, key, "GET", "/v1/hd/causal/scm/export")).raw.equals(exp.raw)).toBe(true);
    const imp = await call(srv.url, key, "POST", "/v1/hd/causal/copy/import", new Uint8Array(exp.raw));
    expect(imp.status, imp.raw.toString()).toBe(200);
    expect(imp.body).toEqual({ name: "copy", imported: 1001, n_vars: 3, vocab_per_var: [2, 2, 2], has_graph: true });
    const before = (await call(srv.url, key, "POST", "/v1/hd/causal/copy/query", query("intervention"))).raw;
    expect(before.equals((await call(srv.url, key, "POST", "/v1/hd/causal/scm/query", query("intervention"))).raw)).toBe(true);
    // wrong media type and damaged bytes
    expect((await call(srv.url, key, "POST", "/v1/hd/causal/copy/import", new Uint8Array(exp.raw), "text/plain")).body.error).toMatchObject(
      { code: "E_MEDIA_TYPE", field: "content-type" },
    );
    const bad = await call(srv.url, key, "POST", "/v1/hd/causal/copy/import", new Uint8Array(exp.raw.subarray(0, 50)));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "body" });

    // restart on the same data dir
    await srv.stop();
    srv = await startServerProcess({ dataDir: srv.dataDir });
    await until(
      "the server to accept the key",
      () => call(srv.url, key, "GET", "/v1/wallet"),
      (x) => x.status === 200,
    );
    const after = await call(srv.url, key, "POST", "/v1/hd/causal/copy/query", query("intervention"));
    expect(after.raw.equals(before)).toBe(true);
    expect((await call(srv.url, key, "GET", "/v1/hd/causal/scm/export")).raw.equals(exp.raw)).toBe(true);

    expect((await call(srv.url, key, "DELETE", "/v1/hd/causal/copy")).body).toEqual({ deleted: true });
    const gone = await call(srv.url, key, "POST", "/v1/hd/causal/copy/query", query("observation"));
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ code: "E_NOT_FOUND", field: "name" });
    expect((await call(srv.url, key, "DELETE", "/v1/hd/causal/copy")).status).toBe(404);
  });

  it("another tenant's model is not found", async () => {
    for (const [m, p, b] of [
      ["POST", "/v1/hd/causal/scm/query", query("observation")],
      ["GET", "/v1/hd/causal/scm/export", undefined],
      ["DELETE", "/v1/hd/causal/scm", undefined],
    ] as const) {
      const r = await call(srv.url, other, m, p, b);
      expect(r.status, p).toBe(404);
      expect(r.body.error.code).toBe("E_NOT_FOUND");
    }
    expect((await call(srv.url, key, "POST", "/v1/hd/causal/scm/query", query("observation"))).status).toBe(200);
  });

  it("bad input is a 4xx naming the field", async () => {
    const cases: Array<[string, unknown, number, string, string]> = [
      ["/v1/hd/causal/b/worlds", { ...upload, worlds: [[0, 1]] }, 400, "E_BAD_REQUEST", "worlds[0]"],
      ["/v1/hd/causal/b/worlds", { ...upload, worlds: [[0, 1, 2]] }, 400, "E_BAD_REQUEST", "worlds[0][2]"],
      ["/v1/hd/causal/b/worlds", { ...upload, vocab_per_var: [2, 2] }, 400, "E_BAD_REQUEST", "vocab_per_var"],
      ["/v1/hd/causal/b/worlds", { ...upload, worlds: [] }, 400, "E_BAD_REQUEST", "worlds"],
      ["/v1/hd/causal/scm/worlds", { ...upload, vocab_per_var: [2, 2, 3] }, 409, "E_CONFLICT", "vocab_per_var[2]"],
      ["/v1/hd/causal/scm/query", { ...query("intervention"), condition_var: 3 }, 400, "E_BAD_REQUEST", "condition_var"],
      ["/v1/hd/causal/scm/query", { ...query("intervention"), query_value: 2 }, 400, "E_BAD_REQUEST", "query_value"],
      ["/v1/hd/causal/scm/query", { ...query("intervention"), query_type: "counterfactual" }, 400, "E_BAD_REQUEST", "query_type"],
      ["/v1/hd/causal/nothing/query", query("observation"), 404, "E_NOT_FOUND", "name"],
      ["/v1/hd/causal/bad%2Fname/query", query("observation"), 400, "E_BAD_REQUEST", "name"],
    ];
    for (const [path, body, status, code, field] of cases) {
      const r = await call(srv.url, key, "POST", path, body);
      expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(status);
      expect(r.body.error, path).toMatchObject({ code, field });
    }
  });

  it("is metered under hd_causal_* operations", async () => {
    const w = (await call(srv.url, key, "GET", "/v1/wallet?limit=100")).body;
    const ops = (w.recent as Array<{ op: string; written: number; scanned: number }>).map((e) => e.op);
    for (const op of ["hd_causal_worlds", "hd_causal_query", "hd_causal_export", "hd_causal_import", "hd_causal_delete"])
      expect(ops).toContain(op);
    const worldsOp = (w.recent as Array<{ op: string; written: number }>).find((e) => e.op === "hd_causal_worlds")!;
    expect(worldsOp.written).toBeGreaterThan(0);
  });

  it("a damaged stored model is a server-side 503 E_STORE_OFFLINE naming the model (listed by /v1/health), never 400; the body holds no absolute path", async () => {
    const t = await newTenantKey(srv);
    expect((await call(srv.url, t.key, "POST", "/v1/hd/causal/dmg/worlds", upload)).status).toBe(200);
    // restart so the model is read from disk, after flipping a byte in the middle of the snapshot
    await srv.stop();
    const file = join(srv.dataDir, "tenants", t.tenant, "hd", "causal", "dmg", "model.hdscm");
    const bytes = readFileSync(file);
    bytes[bytes.length >> 1]! ^= 0xff;
    writeFileSync(file, bytes);
    srv = await startServerProcess({ dataDir: srv.dataDir });
    const q = await call(srv.url, t.key, "POST", "/v1/hd/causal/dmg/query", query("observation"));
    expect(q.status, q.raw.toString()).toBe(503);
    expect(q.body.error).toMatchObject({ code: "E_STORE_OFFLINE", field: "name" });
    expect(q.raw.toString()).not.toContain(srv.dataDir);
    const health = await call(srv.url, null, "GET", "/v1/health");
    expect(health.body.status).toBe("degraded");
    expect(health.body.damage).toEqual([expect.objectContaining({ store: `causal:${t.tenant}/dmg`, kind: "unreadable", offline: true })]);
    // an uploaded file with the same damage stays the client's fault
    const imp = await fetch(`${srv.url}/v1/hd/causal/other/import`, {
      method: "POST",
      headers: { "api-key": t.key, "content-type": "application/octet-stream" },
      body: bytes,
    });
    expect(imp.status).toBe(400);
  });

  it("a 5xx body never carries an absolute server path (the log does)", async () => {
    const t = await newTenantKey(srv);
    // a file where the model's directory belongs: the write fails with E_IO
    mkdirSync(join(srv.dataDir, "tenants", t.tenant, "hd", "causal"), { recursive: true });
    writeFileSync(join(srv.dataDir, "tenants", t.tenant, "hd", "causal", "blocked"), "not a directory");
    const r = await call(srv.url, t.key, "POST", "/v1/hd/causal/blocked/worlds", upload);
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe("E_IO");
    expect(r.raw.toString()).not.toContain(srv.dataDir);
    expect(r.raw.toString()).not.toMatch(/\/tmp\//);
    expect(r.body.error.message).toContain("<server path>");
  });
});
