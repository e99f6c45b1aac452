import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

// Everything here runs against the built server (dist/) as a real `svc serve` process; keys are
// managed with the real `svc keys` CLI next to it, as an operator would.

interface Reply {
  status: number;
  body: any;
}

function cli(dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [MAIN, ...args, "--data", dataDir], { encoding: "utf8", timeout: 30_000 });
}

function createKey(dataDir: string, tenant: string, admin = false): { key: string; id: string; tenant: string } {
  const r = cli(dataDir, "keys", "create", "--tenant", tenant, "--json", ...(admin ? ["--admin"] : []));
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { key: string; id: string; tenant: string };
}

async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.key === undefined ? {} : { "api-key": opts.key }), ...opts.headers };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

function expectAuthError(r: Reply) {
  expect(r.status).toBe(401);
  expect(r.body.error.code).toBe("E_AUTH");
  expect(r.body.error.field).toBe("api-key");
}

describe("API keys and tenants (svc serve process)", () => {
  let srv: ServerProcess;
  let admin: string;
  let a: { key: string; id: string };
  let b: { key: string; id: string };

  beforeAll(async () => {
    srv = await startServerProcess();
    expect(srv.adminKey).toMatch(/^svc_/);
    admin = srv.adminKey!;
    // keys issued by the CLI while the server runs
    a = createKey(srv.dataDir, "alpha");
    b = createKey(srv.dataDir, "bravo");
    await until(
      "the server to accept the new keys",
      () => call(srv.url, "GET", "/v1/indexes", { key: b.key }),
      (r) => r.status === 200,
    );
    expect((await call(srv.url, "GET", "/v1/indexes", { key: a.key })).status).toBe(200);
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("401 E_AUTH without a key, with an unknown key, and with a malformed Authorization header", async () => {
    expectAuthError(await call(srv.url, "GET", "/v1/indexes"));
    expectAuthError(await call(srv.url, "GET", "/v1/indexes", { key: "svc_notakey" }));
    expectAuthError(await call(srv.url, "GET", "/v1/indexes", { key: `${a.key}x` }));
    expectAuthError(await call(srv.url, "GET", "/v1/indexes", { headers: { authorization: `Basic ${a.key}` } }));
    expectAuthError(await call(srv.url, "GET", "/v1/indexes", { headers: { authorization: "Bearer svc_wrong" } }));
    expectAuthError(await call(srv.url, "POST", "/v1/indexes", { body: { name: "x", dimension: 2 } }));
    expectAuthError(await call(srv.url, "GET", "/v1/wallet"));
    // nothing was created by the refused request
    expect((await call(srv.url, "GET", "/v1/indexes", { key: a.key })).body.indexes).toEqual([]);
    // public routes need no key
    expect((await call(srv.url, "GET", "/v1/health")).status).toBe(200);
  });

  it("accepts the key as Api-Key and as Authorization: Bearer (any case of 'bearer')", async () => {
    const viaHeader = await call(srv.url, "GET", "/v1/wallet", { key: a.key });
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.body.tenant).toBe("alpha");
    for (const scheme of ["Bearer", "bearer", "BEARER"]) {
      const viaBearer = await call(srv.url, "GET", "/v1/wallet", { headers: { authorization: `${scheme} ${a.key}` } });
      expect(viaBearer.status).toBe(200);
      expect(viaBearer.body.tenant).toBe("alpha");
    }
    const adminWallet = await call(srv.url, "GET", "/v1/wallet", { headers: { authorization: `Bearer ${admin}` } });
    expect(adminWallet.body).toMatchObject({ tenant: "admin", unmetered: true });
  });

  it("a key revoked with `svc keys revoke` while the server runs is refused shortly after; other keys keep working", async () => {
    const c = createKey(srv.dataDir, "alpha");
    await until(
      "the new key to work",
      () => call(srv.url, "GET", "/v1/indexes", { key: c.key }),
      (r) => r.status === 200,
    );
    const list = cli(srv.dataDir, "keys", "list", "--json");
    expect(list.status).toBe(0);
    const listed = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    expect(listed.find((k) => k.id === c.id)).toMatchObject({ tenant: "alpha", revokedAt: null });
    expect(list.stdout).not.toContain(c.key); // keys are never shown again

    const r = cli(srv.dataDir, "keys", "revoke", c.id);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`revoked ${c.id}`);
    const refused = await until(
      "the revocation to reach the server",
      () => call(srv.url, "GET", "/v1/indexes", { key: c.key }),
      (x) => x.status !== 200,
    );
    expectAuthError(refused);
    expectAuthError(await call(srv.url, "GET", "/v1/indexes", { headers: { authorization: `Bearer ${c.key}` } }));
    expectAuthError(await call(srv.url, "POST", "/v1/indexes", { key: c.key, body: { name: "after-revoke", dimension: 2 } }));
    // the tenant's other key is unaffected
    expect((await call(srv.url, "GET", "/v1/indexes", { key: a.key })).status).toBe(200);
    expect((await call(srv.url, "GET", "/v1/indexes", { key: a.key })).body.indexes.map((i: { name: string }) => i.name)).not.toContain(
      "after-revoke",
    );
    // revoking an unknown id is an error of the CLI (exit 2)
    const bad = cli(srv.dataDir, "keys", "revoke", "key_000000000000");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("E_NOT_FOUND");
  });

  it("tenant B cannot see or touch tenant A's index: 404 on describe, configure, query, upsert, fetch, stats, delete; list shows only its own", async () => {
    expect((await call(srv.url, "POST", "/v1/indexes", { key: a.key, body: { name: "secret", dimension: 3 } })).status).toBe(201);
    expect(
      (
        await call(srv.url, "POST", "/v1/indexes/secret/vectors/upsert", {
          key: a.key,
          body: { vectors: [{ id: "s1", values: [1, 2, 3], metadata: { k: "v" } }] },
        })
      ).body,
    ).toEqual({ upsertedCount: 1 });
    await until(
      "A's vector to be visible",
      () => call(srv.url, "GET", "/v1/indexes/secret/vectors/fetch?ids=s1", { key: a.key }),
      (r) => r.body?.vectors?.s1 !== undefined,
    );

    const asB: Array<[string, string, unknown?]> = [
      ["GET", "/v1/indexes/secret"],
      ["PATCH", "/v1/indexes/secret", { deletion_protection: "enabled" }],
      ["POST", "/v1/indexes/secret/query", { vector: [1, 2, 3], topK: 1 }],
      ["POST", "/v1/indexes/secret/query", { id: "s1", topK: 1 }],
      ["POST", "/v1/indexes/secret/vectors/upsert", { vectors: [{ id: "evil", values: [3, 2, 1] }] }],
      ["GET", "/v1/indexes/secret/vectors/fetch?ids=s1"],
      ["POST", "/v1/indexes/secret/vectors/update", { id: "s1", values: [0, 0, 1] }],
      ["POST", "/v1/indexes/secret/vectors/delete", { ids: ["s1"] }],
      ["GET", "/v1/indexes/secret/describe_index_stats"],
      ["GET", "/v1/indexes/secret/namespaces"],
      ["DELETE", "/v1/indexes/secret"],
    ];
    for (const [method, path, body] of asB) {
      const r = await call(srv.url, method, path, { key: b.key, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toMatchObject({ code: "E_NOT_FOUND", field: "name" });
    }
    // the admin of another tenant is no exception: tenants are separate even for admin keys
    expect((await call(srv.url, "GET", "/v1/indexes/secret", { key: admin })).status).toBe(404);

    expect((await call(srv.url, "GET", "/v1/indexes", { key: b.key })).body.indexes).toEqual([]);
    const listA = await call(srv.url, "GET", "/v1/indexes", { key: a.key });
    expect(listA.body.indexes.map((i: { name: string }) => i.name)).toEqual(["secret"]);

    // A's index is untouched by all of B's attempts
    const fetched = await call(srv.url, "GET", "/v1/indexes/secret/vectors/fetch?ids=s1&ids=evil", { key: a.key });
    expect(fetched.body.vectors).toEqual({ s1: { id: "s1", values: [1, 2, 3], metadata: { k: "v" } } });
    const described = await call(srv.url, "GET", "/v1/indexes/secret", { key: a.key });
    expect(described.body).toMatchObject({ name: "secret", dimension: 3, deletion_protection: "disabled" });
    const stats = await call(srv.url, "GET", "/v1/indexes/secret/describe_index_stats", { key: a.key });
    expect(stats.body.totalVectorCount).toBe(1);
  });

  it("the same index name in two tenants names two independent indexes", async () => {
    expect((await call(srv.url, "POST", "/v1/indexes", { key: a.key, body: { name: "same", dimension: 2 } })).status).toBe(201);
    expect((await call(srv.url, "POST", "/v1/indexes", { key: b.key, body: { name: "same", dimension: 4 } })).status).toBe(201);
    // creating it again within a tenant conflicts
    expect((await call(srv.url, "POST", "/v1/indexes", { key: b.key, body: { name: "same", dimension: 4 } })).body.error.code).toBe(
      "E_CONFLICT",
    );
    expect((await call(srv.url, "GET", "/v1/indexes/same", { key: a.key })).body.dimension).toBe(2);
    expect((await call(srv.url, "GET", "/v1/indexes/same", { key: b.key })).body.dimension).toBe(4);

    await call(srv.url, "POST", "/v1/indexes/same/vectors/upsert", { key: a.key, body: { vectors: [{ id: "x", values: [1, 0] }] } });
    await call(srv.url, "POST", "/v1/indexes/same/vectors/upsert", {
      key: b.key,
      body: {
        vectors: [
          { id: "x", values: [0, 0, 0, 1] },
          { id: "y", values: [0, 0, 1, 0] },
        ],
      },
    });
    await until(
      "both upserts to be visible",
      async () => [
        await call(srv.url, "GET", "/v1/indexes/same/describe_index_stats", { key: a.key }),
        await call(srv.url, "GET", "/v1/indexes/same/describe_index_stats", { key: b.key }),
      ],
      ([sa, sb]) => sa!.body.totalVectorCount === 1 && sb!.body.totalVectorCount === 2,
    );
    expect((await call(srv.url, "GET", "/v1/indexes/same/vectors/fetch?ids=x&ids=y", { key: a.key })).body.vectors).toEqual({
      x: { id: "x", values: [1, 0] },
    });
    expect((await call(srv.url, "GET", "/v1/indexes/same/vectors/fetch?ids=x&ids=y", { key: b.key })).body.vectors).toEqual({
      x: { id: "x", values: [0, 0, 0, 1] },
      y: { id: "y", values: [0, 0, 1, 0] },
    });
    // a dimension-2 query fits A's index only
    expect(
      (await call(srv.url, "POST", "/v1/indexes/same/query", { key: a.key, body: { vector: [1, 0], topK: 5 } })).body.matches.map(
        (m: { id: string }) => m.id,
      ),
    ).toEqual(["x"]);
    expect((await call(srv.url, "POST", "/v1/indexes/same/query", { key: b.key, body: { vector: [1, 0], topK: 5 } })).body.error.code).toBe(
      "E_DIMENSION",
    );

    // deleting B's leaves A's
    expect((await call(srv.url, "DELETE", "/v1/indexes/same", { key: b.key })).status).toBe(202);
    expect((await call(srv.url, "GET", "/v1/indexes/same", { key: b.key })).status).toBe(404);
    expect((await call(srv.url, "GET", "/v1/indexes/same", { key: a.key })).body.dimension).toBe(2);
    expect((await call(srv.url, "GET", "/v1/indexes/same/vectors/fetch?ids=x", { key: a.key })).body.vectors.x.values).toEqual([1, 0]);
  });
});

describe("svc serve --no-auth", () => {
  it("refuses to start on a non-loopback address: exit code 2 and a message", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-noauth-"));
    try {
      for (const host of ["0.0.0.0", "::"]) {
        const r = spawnSync(process.execPath, [MAIN, "serve", "--no-auth", "--host", host, "--port", "0", "--data", dir], {
          encoding: "utf8",
          timeout: 30_000,
        });
        expect(r.status, r.stderr).toBe(2);
        expect(r.stderr).toContain("E_BAD_REQUEST");
        expect(r.stderr).toContain("loopback");
        expect(r.stdout).not.toContain("svc serving");
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("on loopback serves without keys; every request is the local admin and no key file is created", async () => {
    const srv = await startServerProcess({ args: ["--no-auth"] });
    try {
      expect(srv.adminKey).toBeNull();
      expect((await call(srv.url, "POST", "/v1/indexes", { body: { name: "open", dimension: 2 } })).status).toBe(201);
      expect((await call(srv.url, "GET", "/v1/indexes")).body.indexes.map((i: { name: string }) => i.name)).toEqual(["open"]);
      expect(
        (await call(srv.url, "POST", "/v1/indexes/open/vectors/upsert", { body: { vectors: [{ id: "a", values: [1, 1] }] } })).body,
      ).toEqual({ upsertedCount: 1 });
      // an arbitrary key is ignored rather than refused
      expect((await call(srv.url, "GET", "/v1/indexes", { key: "svc_whatever" })).status).toBe(200);
      const wallet = await call(srv.url, "GET", "/v1/wallet");
      expect(wallet.body).toMatchObject({ tenant: "local", unmetered: true });
      expect(existsSync(join(srv.dataDir, "keys.json"))).toBe(false);
      expect(existsSync(join(srv.dataDir, "tenants", "local", "indexes", "open", "index.json"))).toBe(true);
    } finally {
      await srv.dispose();
    }
  });
});
