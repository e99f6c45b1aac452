/** Operators' conventions of the built CLI, as real processes: --version, --json, the first admin key kept out of the log stream, export of a missing namespace. */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { call } from "../e2e/client.js";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const svc = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", timeout: 60_000, env: { ...process.env, ...env } });

describe("svc --version", () => {
  it("prints the version, one line (JSON with --json)", () => {
    const r = svc(["--version"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`svc ${VERSION}\n`);
    expect(svc(["-V"]).stdout).toBe(`svc ${VERSION}\n`);
    expect(JSON.parse(svc(["--version", "--json"]).stdout)).toEqual({ version: VERSION });
  });
});

describe("--json", () => {
  let dir: string;
  beforeAll(async () => void (dir = await mkdtemp(join(tmpdir(), "svc-cli-json-"))));
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("keys create, list and revoke print one JSON document each", () => {
    const created = JSON.parse(svc(["keys", "create", "--tenant", "t1", "--name", "ci", "--data", dir, "--json"]).stdout);
    expect(created).toMatchObject({ tenant: "t1", admin: false });
    expect(created.key).toMatch(/^svc_/);
    const list = JSON.parse(svc(["keys", "list", "--data", dir, "--json"]).stdout);
    expect(list.map((k: { id: string }) => k.id)).toContain(created.id);
    expect(JSON.stringify(list)).not.toContain(created.key);
    expect(JSON.parse(svc(["keys", "revoke", created.id, "--data", dir, "--json"]).stdout)).toEqual({ revoked: created.id, tenant: "t1" });
  });

  it("demo prints its measurements as JSON", () => {
    const r = svc(["demo", "--n", "2000", "--queries", "3", "--threads", "1", "--json"]);
    expect(r.status).toBe(0);
    const res = JSON.parse(r.stdout);
    expect(res).toMatchObject({ n: 2000, dim: 1024, queries: 3 });
    expect(res.scans.map((s: { label: string }) => s.label)).toEqual(["in-thread", "1 workers (striped)"]);
    for (const s of res.scans) expect(s.p50Ms).toBeGreaterThan(0);
    expect(res.nearest.length).toBe(5);
  });

  it("repair --check prints its findings as JSON", () => {
    const r = svc(["repair", "--check", dir, "--json"]);
    const res = JSON.parse(r.stdout);
    expect(res).toMatchObject({ check: true, changed: 0, refused: 0 });
    expect(res.stores.map((s: { store: string }) => s.store)).toContain("keys");
  });
});

describe("svc serve and export against a real server", () => {
  let srv: ServerProcess;
  let out: string;
  beforeAll(async () => {
    srv = await startServerProcess({ args: ["--log-level", "info"] });
    out = await mkdtemp(join(tmpdir(), "svc-cli-export-"));
  });
  afterAll(async () => {
    await srv?.dispose();
    await rm(out, { recursive: true, force: true });
  });

  it("prints the first admin key on stderr, never into the JSON log stream on stdout, and the key works", async () => {
    expect(srv.adminKey).toMatch(/^svc_/);
    const key = srv.adminKey!;
    expect(srv.errorOutput()).toContain(key);
    // Requests produce log lines; none of stdout (log lines and banner) may hold the key.
    expect((await call(srv.url, key, "POST", "/v1/records/ops", { items: [{ kind: "note", text: "operators read logs" }] })).status).toBe(
      200,
    );
    expect((await call(srv.url, key, "GET", "/v1/wallet")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300)); // the log is flushed every 100 ms
    const stdout = srv.output();
    expect(stdout).not.toContain(key);
    expect(stdout).not.toContain(key.slice(4, 20));
    const lines = stdout.split("\n").filter(Boolean);
    const json = lines.filter((l) => l.startsWith("{"));
    expect(json.length).toBeGreaterThan(0);
    for (const l of json) expect(() => JSON.parse(l)).not.toThrow();
    expect(json.some((l) => JSON.parse(l).msg === "request")).toBe(true);
  });

  it("export of a namespace that does not exist exits 2 with a clear message and writes nothing; an existing one is written (--json)", async () => {
    const env = { SVC_URL: srv.url, SVC_API_KEY: srv.adminKey! };
    const missing = join(out, "nope.svc");
    const r = svc(["export", "no-such-ns", "--out", missing], env);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("E_NOT_FOUND");
    expect(r.stderr).toContain("no records namespace 'no-such-ns'");
    expect(r.stderr).toContain("ops"); // the namespaces that do exist
    expect(existsSync(missing)).toBe(false);

    const file = join(out, "ops.svc");
    const ok = svc(["export", "ops", "--out", file, "--json"], env);
    expect(ok.status).toBe(0);
    const res = JSON.parse(ok.stdout);
    expect(res).toMatchObject({ namespace: "ops", file });
    expect(res.bytes).toBeGreaterThan(100);
    const back = svc(["import", "ops-copy", file, "--json"], env);
    expect(back.status).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({ namespace: "ops-copy", imported: 1 });
  });
});

describe("svc serve --json", () => {
  it("prints the start banner as one JSON line (the key's id only; the key on stderr) and the stop as another", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-cli-serve-json-"));
    const child = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data", dir, "--log-level", "warn", "--json"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (err += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      for (const end = Date.now() + 60_000; !/"serving"/.test(out);) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`no banner:\n${out}\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const banner = JSON.parse(out.split("\n").find((l) => l.includes('"serving"'))!);
      expect(banner.serving).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(banner).toMatchObject({
        data: dir,
        mcp: `${banner.serving}/mcp`,
        openapi: `${banner.serving}/v1/openapi.json`,
        firstAdminKeyOn: "stderr",
      });
      expect(banner.firstAdminKeyId).toMatch(/^key_/);
      for (const end = Date.now() + 10_000; !/^ {2}svc_/m.test(err) && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
      const key = /^ {2}(svc_\S+)/m.exec(err)![1]!;
      expect(out).not.toContain(key);
      expect((await call(banner.serving, key, "GET", "/v1/wallet")).status).toBe(200);
    } finally {
      child.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    }
    const lines = out.trim().split("\n");
    expect(JSON.parse(lines[lines.length - 1]!)).toEqual({ stopped: true });
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow(); // every stdout line is JSON
  });
});
