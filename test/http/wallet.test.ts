import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

// Metering end to end against the built `svc serve` process, with a price table from <data>/config.json.
// Every price is a whole number of nano-USD, so balances can be compared exactly.
const CONFIG = {
  prices: {
    signupCredit: 0.01,
    requests: { create_index: 0.001, upsert: 0.0001, query: 0.0002, fetch: 0.00005 },
    defaultRequest: 0.00001,
    per1kWritten: 0.01,
    per1kScanned: 0.002,
  },
};
/** The same table in nano-USD, written out independently of the server's arithmetic. */
const NANO = {
  signup: 10_000_000,
  create_index: 1_000_000,
  upsert: 100_000,
  query: 200_000,
  fetch: 50_000,
  other: 10_000,
  perWritten: 10_000,
  perScanned: 2_000,
};
const cost = (op: keyof typeof NANO, usage: { written?: number; scanned?: number } = {}) =>
  NANO[op] + (usage.written ?? 0) * NANO.perWritten + (usage.scanned ?? 0) * NANO.perScanned;
const nano = (usd: number) => Math.round(usd * 1e9);

interface Reply {
  status: number;
  body: any;
}
interface Wallet {
  tenant: string;
  balanceUsd: number;
  creditedUsd: number;
  spentUsd: number;
  unmetered: boolean;
  recent: Array<{ ts: number; op: string; costUsd: number; written: number; scanned: number }>;
}

function createKey(dataDir: string, tenant: string, admin = false): string {
  const r = spawnSync(
    process.execPath,
    [MAIN, "keys", "create", "--tenant", tenant, "--json", "--data", dataDir, ...(admin ? ["--admin"] : [])],
    { encoding: "utf8", timeout: 30_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(base + path, {
    method,
    headers: { "api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function wallet(base: string, key: string): Promise<Wallet> {
  const r = await call(base, key, "GET", "/v1/wallet?limit=100");
  expect(r.status).toBe(200);
  return r.body as Wallet;
}

const DIM = 8;
/** Distinct float32-exact vectors. */
const vec = (i: number) => Array.from({ length: DIM }, (_, d) => Math.fround(Math.sin(i * 12.9898 + d * 78.233)));
const batch = (prefix: string, n: number, group = (i: number) => (i % 5 === 0 ? "a" : "b")) =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, values: vec(i), metadata: { group: group(i) } }));

describe("wallets and metering (svc serve process)", () => {
  let dataDir: string;
  let srv: ServerProcess;
  let tenantKey: string;
  let adminKey: string;
  /** acme's wallet when the last test left it */
  let exhausted: Wallet;

  const visibleCount = async (count: number) =>
    until(
      `${count} vectors to be visible`,
      () => call(srv.url, adminKey, "GET", "/v1/indexes/m/describe_index_stats"),
      (r) => r.body?.totalVectorCount === count,
    );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-wallet-http-"));
    await writeFile(join(dataDir, "config.json"), JSON.stringify(CONFIG));
    tenantKey = createKey(dataDir, "acme");
    // an admin key of the same tenant: sees acme's indexes and wallet, but is never charged
    adminKey = createKey(dataDir, "acme", true);
    srv = await startServerProcess({ dataDir });
  });
  afterAll(async () => {
    await srv?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("a new tenant starts with the configured signup credit (not the 5 USD default)", async () => {
    const w = await wallet(srv.url, tenantKey);
    expect(w).toMatchObject({ tenant: "acme", balanceUsd: 0.01, creditedUsd: 0.01, spentUsd: 0, unmetered: false });
    expect(w.recent).toHaveLength(1);
    expect(w.recent[0]).toMatchObject({ op: "credit:signup", costUsd: -0.01, written: 0, scanned: 0 });
    // looking at the wallet is free
    expect(await wallet(srv.url, tenantKey)).toEqual(w);
  });

  it("each metered request deducts exactly its price: per op + per vector written + per vector scanned", async () => {
    expect((await call(srv.url, tenantKey, "POST", "/v1/indexes", { name: "m", dimension: DIM })).status).toBe(201);
    expect((await call(srv.url, tenantKey, "POST", "/v1/indexes/m/vectors/upsert", { vectors: batch("v", 50) })).body).toEqual({
      upsertedCount: 50,
    });
    await visibleCount(50);
    const q1 = await call(srv.url, tenantKey, "POST", "/v1/indexes/m/query", { vector: vec(3), topK: 3 });
    expect(q1.status).toBe(200);
    expect(q1.body.matches).toHaveLength(3);
    expect(q1.body.matches[0].id).toBe("v3");
    // a filtered query scans (and pays for) only the 10 vectors its filter matches
    const q2 = await call(srv.url, tenantKey, "POST", "/v1/indexes/m/query", { vector: vec(3), topK: 20, filter: { group: { $eq: "a" } } });
    expect(q2.body.matches.map((m: { id: string }) => m.id).sort()).toEqual([
      "v0",
      "v10",
      "v15",
      "v20",
      "v25",
      "v30",
      "v35",
      "v40",
      "v45",
      "v5",
    ]);
    const f = await call(srv.url, tenantKey, "GET", "/v1/indexes/m/vectors/fetch?ids=v1&ids=v2");
    expect(Object.keys(f.body.vectors).sort()).toEqual(["v1", "v2"]);
    // a failed request costs nothing
    expect((await call(srv.url, tenantKey, "POST", "/v1/indexes/m/query", { vector: [1, 2], topK: 3 })).body.error.code).toBe(
      "E_DIMENSION",
    );
    expect((await call(srv.url, tenantKey, "GET", "/v1/indexes/nope/vectors/fetch?ids=x")).status).toBe(404);

    const charges = [
      { op: "fetch", cost: cost("fetch"), written: 0, scanned: 0 },
      { op: "query", cost: cost("query", { scanned: 10 }), written: 0, scanned: 10 },
      { op: "query", cost: cost("query", { scanned: 50 }), written: 0, scanned: 50 },
      { op: "upsert", cost: cost("upsert", { written: 50 }), written: 50, scanned: 0 },
      { op: "create_index", cost: cost("create_index"), written: 0, scanned: 0 },
    ];
    const spent = charges.reduce((s, c) => s + c.cost, 0);
    expect(spent).toBe(50_000 + 220_000 + 300_000 + 600_000 + 1_000_000);
    const w = await wallet(srv.url, tenantKey);
    expect(nano(w.balanceUsd)).toBe(NANO.signup - spent);
    expect(nano(w.spentUsd)).toBe(spent);
    expect(nano(w.creditedUsd)).toBe(NANO.signup);
    expect(w.recent.map((e) => ({ op: e.op, cost: nano(e.costUsd), written: e.written, scanned: e.scanned }))).toEqual([
      ...charges,
      { op: "credit:signup", cost: -NANO.signup, written: 0, scanned: 0 },
    ]);
    for (const e of w.recent) expect(e.ts).toBeGreaterThan(Date.now() - 600_000);
    expect((await call(srv.url, tenantKey, "GET", "/v1/wallet?limit=2")).body.recent.map((e: { op: string }) => e.op)).toEqual([
      "fetch",
      "query",
    ]);
  });

  it("admin keys are unmetered: their upserts and queries leave the balance unchanged", async () => {
    const before = await wallet(srv.url, tenantKey);
    expect((await call(srv.url, adminKey, "POST", "/v1/indexes/m/vectors/upsert", { vectors: batch("adm", 5) })).status).toBe(200);
    await visibleCount(55);
    expect((await call(srv.url, adminKey, "POST", "/v1/indexes/m/query", { vector: vec(1), topK: 5 })).status).toBe(200);
    expect((await call(srv.url, adminKey, "GET", "/v1/indexes/m/vectors/fetch?ids=adm1")).status).toBe(200);
    expect((await call(srv.url, adminKey, "POST", "/v1/indexes", { name: "admin-made", dimension: 2 })).status).toBe(201);
    const adminView = await wallet(srv.url, adminKey);
    expect(adminView.unmetered).toBe(true);
    const { unmetered: _u, ...same } = adminView;
    const { unmetered: _v, ...expected } = before;
    expect(same).toEqual(expected);
    expect(await wallet(srv.url, tenantKey)).toEqual(before);
  });

  it("once the balance is exhausted: 402 E_WALLET_EMPTY, nothing written, nothing charged; admin keys still work", async () => {
    const start = nano((await wallet(srv.url, tenantKey)).balanceUsd);
    const price = cost("upsert", { written: 50 });
    let ok = 0;
    let refused: Reply | null = null;
    for (let round = 0; round < 100 && refused === null; round++) {
      const r = await call(srv.url, tenantKey, "POST", "/v1/indexes/m/vectors/upsert", { vectors: batch(`r${round}-`, 50) });
      if (r.status === 200) ok++;
      else refused = r;
    }
    // every request whose price the balance covered ran; none crossed zero
    expect(ok).toBe(Math.floor(start / price));
    expect(refused!.status).toBe(402);
    expect(refused!.body.error).toMatchObject({ code: "E_WALLET_EMPTY", field: "wallet" });
    const w = await wallet(srv.url, tenantKey);
    expect(nano(w.balanceUsd)).toBe(start - ok * price);
    expect(nano(w.balanceUsd)).toBeGreaterThanOrEqual(0);
    expect(nano(w.balanceUsd)).toBeLessThan(price);

    for (const [method, path, body] of [
      ["POST", "/v1/indexes/m/query", { vector: vec(1), topK: 1 }],
      ["GET", "/v1/indexes/m/vectors/fetch?ids=v1", undefined],
      ["POST", "/v1/indexes", { name: "another", dimension: 2 }],
      ["POST", "/v1/indexes/m/vectors/upsert", { vectors: batch("late", 1) }],
    ] as const) {
      const r = await call(srv.url, tenantKey, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(402);
      expect(r.body.error.code).toBe("E_WALLET_EMPTY");
    }
    // unmetered routes still answer
    expect((await call(srv.url, tenantKey, "GET", "/v1/indexes")).status).toBe(200);
    exhausted = await wallet(srv.url, tenantKey);
    expect(exhausted).toEqual(w);

    // the refused writes never happened; the admin key of the same tenant is not affected by the empty wallet
    await visibleCount(55 + ok * 50);
    const f = await call(srv.url, adminKey, "GET", `/v1/indexes/m/vectors/fetch?ids=${`r${ok}-0`}&ids=late0&ids=v0`);
    expect(f.status).toBe(200);
    expect(Object.keys(f.body.vectors)).toEqual(["v0"]);
    expect((await call(srv.url, adminKey, "GET", "/v1/indexes")).body.indexes.map((i: { name: string }) => i.name)).toEqual([
      "admin-made",
      "m",
    ]);
  });

  it("balances and usage survive a graceful restart (SIGTERM, same data dir)", async () => {
    expect(await srv.stop()).toBe(0);
    srv = await startServerProcess({ dataDir });
    expect(srv.adminKey).toBeNull(); // keys were already there
    expect(await wallet(srv.url, tenantKey)).toEqual(exhausted);
    expect((await call(srv.url, tenantKey, "POST", "/v1/indexes/m/query", { vector: vec(1), topK: 1 })).status).toBe(402);
  });

  it("a deduction is durable before the reply: after SIGKILL right after a response, the restart has it", async () => {
    const key = createKey(dataDir, "bravo");
    await until(
      "the server to accept bravo's key",
      () => call(srv.url, key, "GET", "/v1/wallet"),
      (r) => r.status === 200,
    );
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "k", dimension: 4 })).status).toBe(201);
    expect(
      (
        await call(srv.url, key, "POST", "/v1/indexes/k/vectors/upsert", {
          vectors: [1, 2, 3].map((i) => ({ id: `k${i}`, values: [i, 1, 0, 0] })),
        })
      ).status,
    ).toBe(200);
    const seen = await wallet(srv.url, key);
    expect(nano(seen.balanceUsd)).toBe(NANO.signup - cost("create_index") - cost("upsert", { written: 3 }));

    // the last charged request: its reply is the acknowledgement, then the process dies at once
    expect(
      (await call(srv.url, key, "POST", "/v1/indexes/k/vectors/upsert", { vectors: [{ id: "k4", values: [4, 1, 0, 0] }] })).body,
    ).toEqual({ upsertedCount: 1 });
    const exited = new Promise((r) => srv.child.once("exit", (_code, signal) => r(signal)));
    srv.child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    srv = await startServerProcess({ dataDir });
    const after = await wallet(srv.url, key);
    expect(nano(after.balanceUsd)).toBe(nano(seen.balanceUsd) - cost("upsert", { written: 1 }));
    expect(nano(after.spentUsd)).toBe(nano(seen.spentUsd) + cost("upsert", { written: 1 }));
    expect(after.recent[0]).toMatchObject({ op: "upsert", written: 1, scanned: 0 });
    expect(after.recent.slice(1)).toEqual(seen.recent);
    // the other tenant's wallet came through the kill as well
    expect(await wallet(srv.url, tenantKey)).toEqual(exhausted);
    // and so did the acknowledged vector (the index reopens after the unclean exit)
    const f = await call(srv.url, key, "GET", "/v1/indexes/k/vectors/fetch?ids=k4&ids=k1");
    expect(f.status).toBe(200);
    expect(f.body.vectors).toEqual({ k4: { id: "k4", values: [4, 1, 0, 0] }, k1: { id: "k1", values: [1, 1, 0, 0] } });
  });

  it("a read's charge leaves the balance before its reply and is durable by the next group commit (SIGKILL after it keeps it)", async () => {
    const key = createKey(dataDir, "charlie");
    await until(
      "the server to accept charlie's key",
      () => call(srv.url, key, "GET", "/v1/wallet"),
      (r) => r.status === 200,
    );
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "c", dimension: 4 })).status).toBe(201);
    expect(
      (
        await call(srv.url, key, "POST", "/v1/indexes/c/vectors/upsert", {
          vectors: [1, 2].map((i) => ({ id: `c${i}`, values: [i, 1, 0, 0] })),
        })
      ).status,
    ).toBe(200);
    const seen = await wallet(srv.url, key);
    // reads: a POST query and a GET fetch; the wallet shows both charges at once
    expect((await call(srv.url, key, "POST", "/v1/indexes/c/query", { vector: [1, 1, 0, 0], topK: 1 })).status).toBe(200);
    expect((await call(srv.url, key, "GET", "/v1/indexes/c/vectors/fetch?ids=c1")).status).toBe(200);
    const charged = cost("query", { scanned: 2 }) + cost("fetch");
    expect(nano((await wallet(srv.url, key)).spentUsd)).toBe(nano(seen.spentUsd) + charged);
    // the ledger's group commit follows the reply within one fdatasync: after it, a kill loses nothing
    await new Promise((r) => setTimeout(r, 200));
    const exited = new Promise((r) => srv.child.once("exit", (_code, signal) => r(signal)));
    srv.child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    srv = await startServerProcess({ dataDir });
    const after = await wallet(srv.url, key);
    expect(nano(after.spentUsd)).toBe(nano(seen.spentUsd) + charged);
    expect(
      after.recent
        .slice(0, 2)
        .map((r: { op: string }) => r.op)
        .sort(),
    ).toEqual(["fetch", "query"]);
  });
});
