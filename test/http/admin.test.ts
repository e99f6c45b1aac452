import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";
import { DASHBOARD_DIR } from "../../src/http/routes/dashboard.js";

// The admin operations, the tenant-side lists the dashboard reads, and the dashboard's static
// files, against the built `svc serve` process.
describe("admin REST operations, tenant lists and the dashboard files", () => {
  let srv: ServerProcess;
  let admin: string;

  beforeAll(async () => {
    srv = await startServerProcess();
    admin = srv.adminKey!;
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("issues a key once, lists tenants with keys and balances, credits a wallet and revokes a key", async () => {
    const made = await call(srv.url, admin, "POST", "/v1/admin/keys", { tenant: "acme", name: "laptop" });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ tenant: "acme", name: "laptop", admin: false, revokedAt: null });
    expect(made.body.key).toMatch(/^svc_/);
    expect(made.body.id).toMatch(/^key_[0-9a-f]+$/);
    expect(made.body).not.toHaveProperty("hash");
    const key = made.body.key as string;

    // the key works at once (same process), and its first use opens the wallet with the signup credit
    const w0 = await call(srv.url, key, "GET", "/v1/wallet");
    expect(w0.status).toBe(200);
    expect(w0.body.tenant).toBe("acme");

    // without a tenant: a new tenant t_<hex>
    const fresh = await call(srv.url, admin, "POST", "/v1/admin/keys", {});
    expect(fresh.status).toBe(201);
    expect(fresh.body.tenant).toMatch(/^t_[0-9a-f]{12}$/);

    const list = await call(srv.url, admin, "GET", "/v1/admin/tenants");
    expect(list.status).toBe(200);
    const tenants = list.body.tenants as Array<{
      tenant: string;
      keys: Array<Record<string, unknown>>;
      wallet: { balanceUsd: number } | null;
    }>;
    expect(tenants.map((t) => t.tenant)).toEqual([...tenants.map((t) => t.tenant)].sort());
    const acme = tenants.find((t) => t.tenant === "acme")!;
    expect(acme.keys).toEqual([
      { id: made.body.id, tenant: "acme", admin: false, name: "laptop", createdAt: made.body.createdAt, revokedAt: null },
    ]);
    expect(acme.wallet?.balanceUsd).toBe(w0.body.balanceUsd);
    // a tenant whose key was never used has no wallet yet (listing does not open one)
    expect(tenants.find((t) => t.tenant === fresh.body.tenant)!.wallet).toBeNull();
    expect(tenants.find((t) => t.tenant === "admin")!.keys[0]).toMatchObject({ admin: true });
    for (const t of tenants) for (const k of t.keys) expect(k).not.toHaveProperty("hash");

    const credited = await call(srv.url, admin, "POST", "/v1/admin/tenants/acme/credit", { usd: 2.5 });
    expect(credited.status).toBe(200);
    expect(credited.body.tenant).toBe("acme");
    expect(Math.round((credited.body.balanceUsd - w0.body.balanceUsd) * 1e9)).toBe(2_500_000_000);
    const w1 = await call(srv.url, key, "GET", "/v1/wallet");
    expect(w1.body.balanceUsd).toBe(credited.body.balanceUsd);
    expect(w1.body.recent[0]).toMatchObject({ op: "credit:admin", costUsd: -2.5 });

    const revoked = await call(srv.url, admin, "DELETE", `/v1/admin/keys/${made.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: made.body.id, tenant: "acme" });
    expect(revoked.body.revokedAt).toEqual(expect.any(Number));
    expect((await call(srv.url, key, "GET", "/v1/wallet")).status).toBe(401);
    // revoking again keeps the first time
    const again = await call(srv.url, admin, "DELETE", `/v1/admin/keys/${made.body.id}`);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
  });

  it("refuses bad input with a stable code and the field, non-admin keys with 403, no key with 401", async () => {
    const tenantKey = (await call(srv.url, admin, "POST", "/v1/admin/keys", { tenant: "plain" })).body.key as string;
    const cases: Array<[string, string, unknown, number, string, string]> = [
      ["POST", "/v1/admin/keys", { tenant: "Bad Tenant" }, 400, "E_BAD_REQUEST", "tenant"],
      ["POST", "/v1/admin/keys", { tenant: 7 }, 400, "E_BAD_REQUEST", "tenant"],
      ["POST", "/v1/admin/keys", { name: "x".repeat(101) }, 400, "E_BAD_REQUEST", "name"],
      ["POST", "/v1/admin/keys", { admin: "yes" }, 400, "E_BAD_REQUEST", "admin"],
      ["POST", "/v1/admin/keys", { role: "root" }, 400, "E_BAD_REQUEST", "role"],
      ["POST", "/v1/admin/keys", [1], 400, "E_BAD_REQUEST", "body"],
      ["POST", "/v1/admin/tenants/plain/credit", {}, 400, "E_BAD_REQUEST", "usd"],
      ["POST", "/v1/admin/tenants/plain/credit", { usd: -1 }, 400, "E_BAD_REQUEST", "usd"],
      ["POST", "/v1/admin/tenants/plain/credit", { usd: "5" }, 400, "E_BAD_REQUEST", "usd"],
      ["POST", "/v1/admin/tenants/plain/credit", { usd: 1e7 }, 400, "E_BAD_REQUEST", "usd"],
      ["POST", "/v1/admin/tenants/plain/credit", { usd: 1, note: "x" }, 400, "E_BAD_REQUEST", "note"],
      ["POST", "/v1/admin/tenants/nobody/credit", { usd: 1 }, 404, "E_NOT_FOUND", "tenant"],
      ["DELETE", "/v1/admin/keys/key_000000000000", undefined, 404, "E_NOT_FOUND", "keyId"],
    ];
    for (const [method, path, body, status, code, field] of cases) {
      const r = await call(srv.url, admin, method, path, body);
      expect({ path, body, status: r.status, error: r.body?.error }).toMatchObject({ status, error: { code, field } });
    }
    // the admin cannot lock itself out with the key it is using
    const mine = (await call(srv.url, admin, "GET", "/v1/admin/tenants")).body.tenants.find((t: { tenant: string }) => t.tenant === "admin")
      .keys[0].id as string;
    const self = await call(srv.url, admin, "DELETE", `/v1/admin/keys/${mine}`);
    expect(self.status).toBe(409);
    expect(self.body.error).toMatchObject({ code: "E_CONFLICT", field: "keyId" });
    for (const [method, path, body] of [
      ["GET", "/v1/admin/tenants", undefined],
      ["POST", "/v1/admin/keys", {}],
      ["DELETE", `/v1/admin/keys/${mine}`, undefined],
      ["POST", "/v1/admin/tenants/plain/credit", { usd: 1 }],
    ] as const) {
      expect((await call(srv.url, tenantKey, method, path, body)).status, `${method} ${path}`).toBe(403);
      expect((await call(srv.url, null, method, path, body)).status, `${method} ${path}`).toBe(401);
    }
  });

  it("lists a tenant's record namespaces, graphs and causal models, and its usage series by operation", async () => {
    const key = (await call(srv.url, admin, "POST", "/v1/admin/keys", { tenant: "lists" })).body.key as string;
    const other = (await call(srv.url, admin, "POST", "/v1/admin/keys", { tenant: "other" })).body.key as string;
    expect((await call(srv.url, key, "GET", "/v1/records")).body).toEqual({ namespaces: [] });
    expect((await call(srv.url, key, "GET", "/v1/hd/kg")).body).toEqual({ graphs: [] });
    expect((await call(srv.url, key, "GET", "/v1/hd/causal")).body).toEqual({ models: [] });

    expect(
      (
        await call(srv.url, key, "POST", "/v1/records/notes", {
          items: [
            { kind: "note", text: "a" },
            { kind: "note", text: "b" },
          ],
        })
      ).status,
    ).toBe(200);
    expect((await call(srv.url, key, "POST", "/v1/records/logs", { items: [{ kind: "log", text: "c" }] })).status).toBe(200);
    expect((await call(srv.url, key, "POST", "/v1/records/gone", { items: [{ kind: "log", text: "d" }] })).status).toBe(200);
    expect((await call(srv.url, key, "POST", "/v1/records/gone/forget", { kind: ["log"] })).body).toEqual({ forgottenCount: 1 });
    expect(
      (await call(srv.url, key, "POST", "/v1/hd/kg/family/facts", { facts: [{ subject: "ann", relation: "parent", object: "bo" }] }))
        .status,
    ).toBe(200);
    expect(
      (
        await call(srv.url, key, "POST", "/v1/hd/causal/weather/worlds", {
          n_vars: 2,
          vocab_per_var: [2, 3],
          worlds: [
            [0, 1],
            [1, 2],
            [1, 0],
          ],
        })
      ).status,
    ).toBe(200);

    const ns = await until(
      "the records to be visible",
      () => call(srv.url, key, "GET", "/v1/records"),
      (r) => r.body.namespaces?.length === 2,
    );
    expect(ns.body).toEqual({
      namespaces: [
        { namespace: "logs", count: 1 },
        { namespace: "notes", count: 2 },
      ],
    });
    expect((await call(srv.url, key, "GET", "/v1/hd/kg")).body).toEqual({ graphs: ["family"] });
    expect((await call(srv.url, key, "GET", "/v1/hd/causal")).body).toEqual({
      models: [{ name: "weather", n_vars: 2, vocab_per_var: [2, 3], rows_total: 3, has_graph: false }],
    });
    // another tenant sees none of it
    expect((await call(srv.url, other, "GET", "/v1/records")).body).toEqual({ namespaces: [] });
    expect((await call(srv.url, other, "GET", "/v1/hd/kg")).body).toEqual({ graphs: [] });
    expect((await call(srv.url, other, "GET", "/v1/hd/causal")).body).toEqual({ models: [] });

    // the usage series holds every metered call above, by operation; it agrees with the wallet
    const usage = await call(srv.url, key, "GET", "/v1/wallet/usage?grain=hour&buckets=3");
    expect(usage.status).toBe(200);
    expect(usage.body.grain).toBe("hour");
    expect(usage.body.buckets).toHaveLength(3);
    const calls: Record<string, number> = {};
    let nano = 0;
    for (const b of usage.body.buckets)
      for (const [op, v] of Object.entries(b.ops as Record<string, { calls: number; costUsd: number }>)) {
        calls[op] = (calls[op] ?? 0) + v.calls;
        nano += Math.round(v.costUsd * 1e9);
      }
    expect(calls).toMatchObject({
      records_namespaces: 2,
      hd_kg_list: 2,
      hd_causal_list: 2,
      records_ingest: 3,
      records_forget: 1,
      hd_kg_add: 1,
      hd_causal_worlds: 1,
    });
    expect(usage.body.ops).toEqual(expect.arrayContaining(Object.keys(calls)));
    const wallet = await call(srv.url, key, "GET", "/v1/wallet");
    expect(nano).toBe(Math.round(wallet.body.spentUsd * 1e9));
    expect((await call(srv.url, key, "GET", "/v1/wallet/usage")).body.buckets).toHaveLength(48); // default: hour x 48
    expect((await call(srv.url, key, "GET", "/v1/wallet/usage?grain=minute")).body.buckets).toHaveLength(60);
    for (const [q, field] of [
      ["grain=week", "grain"],
      ["grain=minute&buckets=0", "buckets"],
      ["grain=day&buckets=93", "buckets"],
      ["buckets=1.5", "buckets"],
    ]) {
      const r = await call(srv.url, key, "GET", `/v1/wallet/usage?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error, q).toMatchObject({ code: "E_BAD_REQUEST", field });
    }
  });

  it("serves the dashboard's files with their content types and security headers, and nothing else", async () => {
    expect(existsSync(join(DASHBOARD_DIR, "index.html")), "run npm run build:dashboard").toBe(true);
    for (const path of ["/dashboard", "/dashboard/index.html"]) {
      const r = await call(srv.url, null, "GET", path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(r.raw.toString()).toBe(readFileSync(join(DASHBOARD_DIR, "index.html"), "utf8"));
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(r.headers.get("content-security-policy")).toContain("connect-src 'self'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    }
    const html = readFileSync(join(DASHBOARD_DIR, "index.html"), "utf8");
    // no CDN: every script and style sheet comes from /dashboard
    for (const m of html.matchAll(/(?:src|href)="([^"]+)"/g)) expect(m[1]).toMatch(/^(\/dashboard\/|data:)/);
    const js = await call(srv.url, null, "GET", "/dashboard/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.raw.equals(readFileSync(join(DASHBOARD_DIR, "app.js")))).toBe(true);
    expect((await call(srv.url, null, "GET", "/dashboard/style.css")).headers.get("content-type")).toBe("text/css; charset=utf-8");
    // traversal, hidden and unknown names: the dashboard's own 404 (field "file"), never a file from elsewhere
    for (const path of [
      "/dashboard/..%2Fpackage.json",
      "/dashboard/..%2F..%2Fpackage.json",
      "/dashboard/..%2F..%2Fsrc%2Fhttp%2Fapp.ts",
      "/dashboard/.env",
      "/dashboard/nope.js",
      "/dashboard/%00",
      "/dashboard/app.js%00.css",
      "/dashboard/%2e%2e%2fpackage.json",
    ]) {
      const r = await call(srv.url, null, "GET", path);
      expect(r.status, path).toBe(404);
      expect(r.body.error, path).toMatchObject({ code: "E_NOT_FOUND", field: "file" });
    }
    // paths with more segments never reach the dashboard's handler
    const deep = await fetch(`${srv.url}/dashboard/a/../../package.json`);
    expect(deep.status).toBe(404);
    expect(await deep.text()).not.toContain('"name": "svc"');
  });
});
