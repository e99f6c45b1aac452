/**
 * Issue 20.7: a tenant with 0.0002 USD left sends 50 concurrent upserts and 50 concurrent queries to the built
 * `svc serve` over real HTTP. Each operation reserves its price bound first, so the balance never goes below
 * zero, the accepted upserts are exactly what the money paid for, and the ledger sums.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newTenantKey } from "../e2e/client.js";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

// nano-USD: credit 200_000; an upsert of 500 vectors 1_000 + 500 x 100 = 51_000; a query 2_000 + 0.1 per row scanned.
const CONFIG = {
  prices: {
    signupCredit: 0.0002,
    requests: { create_index: 0, upsert: 0.000001, query: 0.000002 },
    per1kWritten: 0.0001,
    per1kScanned: 0.0000001,
  },
};
const CREDIT = 200_000;
const UPSERT = 51_000;
const PER_UPSERT = 500;
const DIM = 8;
const vec = (i: number) => Array.from({ length: DIM }, (_, d) => Math.fround(Math.sin(i * 12.9898 + d * 78.233)));
const nano = (usd: number) => Math.round(usd * 1e9);

let dataDir: string;
let srv: ServerProcess;
let key: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "svc-overspend-"));
  await writeFile(join(dataDir, "config.json"), JSON.stringify(CONFIG));
  srv = await startServerProcess({ dataDir });
  key = (await newTenantKey(srv)).key;
}, 60_000);
afterAll(async () => {
  await srv?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("the wallet under concurrent writes and queries", () => {
  it("never goes below zero; accepted upserts are what the money allowed; credited - spent = balance", async () => {
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "w", dimension: DIM })).status).toBe(201);
    const upserts = Array.from({ length: 50 }, (_, j) =>
      call(srv.url, key, "POST", "/v1/indexes/w/vectors/upsert", {
        vectors: Array.from({ length: PER_UPSERT }, (_, i) => ({ id: `u${j}-${i}`, values: vec(j * PER_UPSERT + i) })),
      }),
    );
    const queries = Array.from({ length: 50 }, (_, j) => call(srv.url, key, "POST", "/v1/indexes/w/query", { vector: vec(j), topK: 3 }));
    const replies = await Promise.all([...upserts, ...queries]);
    for (const r of replies) {
      expect([200, 402]).toContain(r.status);
      if (r.status === 402) expect(r.body.error).toMatchObject({ code: "E_WALLET_EMPTY", field: "wallet" });
    }
    const okUpserts = replies.slice(0, 50).filter((r) => r.status === 200).length;
    const okQueries = replies.slice(50).filter((r) => r.status === 200).length;
    expect(okUpserts).toBeGreaterThan(0);
    expect(okUpserts).toBeLessThanOrEqual(Math.floor(CREDIT / UPSERT));
    expect(replies.some((r) => r.status === 402)).toBe(true);

    const w = (await call(srv.url, key, "GET", "/v1/wallet?limit=100")).body;
    expect(nano(w.balanceUsd)).toBeGreaterThanOrEqual(0);
    expect(nano(w.creditedUsd)).toBe(CREDIT);
    expect(nano(w.creditedUsd) - nano(w.spentUsd)).toBe(nano(w.balanceUsd));
    const charges = (w.recent as Array<{ op: string; costUsd: number; written: number }>).filter((e) => !e.op.startsWith("credit:"));
    expect(charges.filter((e) => e.op === "upsert")).toHaveLength(okUpserts);
    for (const c of charges.filter((e) => e.op === "upsert")) expect(nano(c.costUsd)).toBe(UPSERT);
    expect(charges.filter((e) => e.op === "query")).toHaveLength(okQueries);
    expect(charges.reduce((s, c) => s + nano(c.costUsd), 0)).toBe(nano(w.spentUsd));
    // exactly the accepted vectors are stored
    await until(
      "the accepted vectors to be visible",
      () => call(srv.url, key, "GET", "/v1/indexes/w/describe_index_stats"),
      (r) => r.body?.totalVectorCount === okUpserts * PER_UPSERT,
    );

    // nothing is held once the storm is over: one more upsert goes through exactly when the balance covers it
    const left = nano(w.balanceUsd);
    const one = await call(srv.url, key, "POST", "/v1/indexes/w/vectors/upsert", {
      vectors: Array.from({ length: PER_UPSERT }, (_, i) => ({ id: `last-${i}`, values: vec(i) })),
    });
    expect(one.status).toBe(left >= UPSERT ? 200 : 402);
  }, 60_000);

  it("over both MCP transports, concurrent upserts the wallet cannot pay for are isError E_WALLET_EMPTY and the balance stays >= 0", async () => {
    const before = nano((await call(srv.url, key, "GET", "/v1/wallet")).body.balanceUsd);
    expect(before).toBeLessThan(UPSERT);
    const http = new Client({ name: "svc-e2e", version: "1.0.0" });
    await http.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { "api-key": key } } }));
    const stdio = new Client({ name: "svc-e2e", version: "1.0.0" });
    await stdio.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "mcp"],
        env: { SVC_URL: srv.url, SVC_API_KEY: key, PATH: process.env.PATH ?? "" },
        stderr: "pipe",
      }),
    );
    try {
      const vectors = Array.from({ length: PER_UPSERT }, (_, i) => ({ id: `mcp-${i}`, values: vec(i) }));
      const results = (await Promise.all(
        [http, stdio].flatMap((c) => Array.from({ length: 5 }, () => c.callTool({ name: "upsert", arguments: { index: "w", vectors } }))),
      )) as CallToolResult[];
      for (const r of results) {
        expect(r.isError).toBe(true);
        expect(JSON.parse((r.content[0] as { text: string }).text).error.code).toBe("E_WALLET_EMPTY");
      }
    } finally {
      await http.close();
      await stdio.close();
    }
    const w = (await call(srv.url, key, "GET", "/v1/wallet")).body;
    expect(nano(w.balanceUsd)).toBe(before);
    expect(nano(w.creditedUsd) - nano(w.spentUsd)).toBe(nano(w.balanceUsd));
  }, 60_000);
});
