/** POST /v1/hd/analogy over real HTTP against the built `svc serve` child process: answers, determinism (same bytes), 400s with code and field, auth and metering. */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

async function post(base: string, key: string | null, body: unknown): Promise<{ status: number; text: string; body: any }> {
  const headers: Record<string, string> = { "content-type": "application/json", ...(key === null ? {} : { "api-key": key }) };
  const res = await fetch(`${base}/v1/hd/analogy`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, text, body: text === "" ? undefined : JSON.parse(text) };
}

function createKey(dataDir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, "keys", "create", "--data", dataDir, "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve((JSON.parse(out) as { key: string }).key) : reject(new Error(`keys create exited ${code}`)),
    );
  });
}

describe("POST /v1/hd/analogy (real server)", () => {
  let srv: ServerProcess;
  let key: string;

  beforeAll(async () => {
    srv = await startServerProcess();
    key = await createKey(srv.dataDir);
    await until(
      "the server to accept the new key",
      () => fetch(`${srv.url}/v1/wallet`, { headers: { "api-key": key } }),
      (r) => r.status === 200,
    );
  }, 60_000);
  afterAll(async () => {
    await srv?.dispose();
  });

  it("completes A:B::C:? with the contract's fields, the same bytes every time", async () => {
    const r = await post(srv.url, key, { n_feat: 8, a: 3, b: 200, c: 77, seed: 5 });
    expect(r.status).toBe(200);
    const want = 3 ^ 200 ^ 77;
    expect(Object.keys(r.body).sort()).toEqual(["ambiguity", "candidate", "candidate_bits", "confidence", "cosine", "runner_up"]);
    expect(r.body.candidate).toBe(want);
    expect(r.body.candidate_bits).toEqual(Array.from({ length: 8 }, (_, f) => (want >>> f) & 1));
    expect(r.body.cosine).toBe(1);
    expect(Number.isInteger(r.body.runner_up)).toBe(true);
    expect(r.body.runner_up).not.toBe(want);
    for (const f of ["ambiguity", "confidence"]) expect(r.body[f]).toBeGreaterThanOrEqual(0);
    expect((await post(srv.url, key, { n_feat: 8, a: 3, b: 200, c: 77, seed: 5 })).text).toBe(r.text);
  });

  it("answers at n_feat 20", async () => {
    const r = await post(srv.url, key, { n_feat: 20, a: 123456, b: 654321, c: 1000000 });
    expect(r.status).toBe(200);
    expect(r.body.candidate).toBe(123456 ^ 654321 ^ 1000000);
  }, 30_000);

  it.each([
    [{ n_feat: 0, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 21, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 1.5, a: 0, b: 0, c: 0 }, "n_feat"],
    [{ n_feat: 4, a: 16, b: 0, c: 0 }, "a"],
    [{ n_feat: 4, a: 0, b: 0.5, c: 0 }, "b"],
    [{ n_feat: 4, a: 0, b: 0, c: -3 }, "c"],
    [{ n_feat: 4, a: 0, b: 0, c: 0, seed: "x" }, "seed"],
  ])("%j -> 400 E_BAD_REQUEST on %s", async (body, field) => {
    const r = await post(srv.url, key, body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("E_BAD_REQUEST");
    expect(r.body.error.field).toBe(field);
  });

  it("needs a key and is metered as hd_analogy", async () => {
    expect((await post(srv.url, null, { n_feat: 2, a: 0, b: 1, c: 2 })).status).toBe(401);
    expect((await post(srv.url, key, { n_feat: 2, a: 0, b: 1, c: 2 })).status).toBe(200);
    const w = await (await fetch(`${srv.url}/v1/wallet?limit=100`, { headers: { "api-key": key } })).json();
    const ops = (w.recent as Array<{ op: string; costUsd: number }>).filter((e) => e.op === "hd_analogy");
    expect(ops.length).toBeGreaterThan(0);
    for (const e of ops) expect(e.costUsd).toBeGreaterThan(0);
  });
});
