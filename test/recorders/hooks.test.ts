import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOOK_EVENTS, hookRecord, isSvcHookCommand, mergeHooks, removeHooks } from "../../src/recorders/hooks.js";
import { call, cli } from "../e2e/client.js";
import { MAIN, startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

const USER_SETTINGS = `{
    "permissions": {
        "allow": ["Bash(npm test)"]
    },
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "echo mine"
                    }
                ]
            }
        ]
    },
    "model": "opus"
}
`;

describe("hook merge logic", () => {
  it("merges 10 hooks, keeps the user's, is idempotent and removes exactly its own", () => {
    const s = JSON.parse(USER_SETTINGS);
    const cmd = (k: string) => `node /x/dist/cli/main.js hook ${k}`;
    const a = mergeHooks(s, cmd as never);
    expect(a.changes).toHaveLength(10);
    expect(Object.keys(a.settings.hooks as object).sort()).toEqual(HOOK_EVENTS.map(([e]) => e).sort());
    expect((a.settings.hooks as any).PreToolUse[0].hooks[0].command).toBe("echo mine");
    expect(mergeHooks(a.settings, cmd as never).changes).toEqual([]);
    expect(removeHooks(a.settings).settings).toEqual(s);
    expect(isSvcHookCommand('"/usr/bin/node" "/a b/dist/cli/main.js" hook tool_call --namespace x')).toBe(true);
    expect(isSvcHookCommand("svc hook user_prompt")).toBe(true);
    expect(isSvcHookCommand("echo hook tool_call")).toBe(false);
  });

  it("installs every entry async (Claude Code never waits for it) and upgrades a synchronous entry of an older install", () => {
    const cmd = (k: string) => `node /x/dist/cli/main.js hook ${k}`;
    const a = mergeHooks({}, cmd as never);
    const entries = Object.values(a.settings.hooks as Record<string, any[]>).flatMap((gs) => gs.flatMap((g) => g.hooks));
    expect(entries).toHaveLength(10);
    for (const e of entries) expect(e).toEqual({ type: "command", command: expect.stringContaining(" hook "), async: true });
    const old = { hooks: { Stop: [{ hooks: [{ type: "command", command: cmd("assistant_turn") }] }] } };
    const up = mergeHooks(old, cmd as never);
    expect(up.changes).toContain(`~ hooks.Stop: async ${cmd("assistant_turn")}`);
    expect((up.settings.hooks as any).Stop).toEqual([{ hooks: [{ type: "command", command: cmd("assistant_turn"), async: true }] }]);
    expect(old.hooks.Stop[0]!.hooks[0]).not.toHaveProperty("async"); // the input is not mutated
    expect(mergeHooks(up.settings, cmd as never).changes).toEqual([]);
  });

  it("shapes records from payloads", () => {
    const r = hookRecord(
      "tool_call",
      { session_id: "s1", tool_name: "Bash", tool_input: { command: "ls -la", description: "list" }, cwd: "/w" },
      { ttlDays: 7, now: 5 },
    );
    expect(r).toEqual({
      kind: "tool_call",
      text: "Bash ls -la",
      tags: ["claude-code", "tool_call", "Bash"],
      meta: { session_id: "s1", tool_name: "Bash", cwd: "/w" },
      ts: 5,
      ttlDays: 7,
    });
    expect(hookRecord("assistant_turn", { last_assistant_message: "done" }).text).toBe("done");
    expect(hookRecord("tool_failure", { tool_name: "Read", tool_input: { file_path: "/nope" }, error: "ENOENT" }).text).toBe(
      "Read /nope failed: ENOENT",
    );
  });
});

describe("svc install-hooks (built CLI, temp settings files)", () => {
  let dir: string;
  const env = () => ({ SVC_HOME: join(dir, "svc-home"), SVC_AUTO_RECORD: "" });
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-hooks-"));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("fresh file: installs 10 hooks running node + main.js", async () => {
    const path = join(dir, "fresh", ".claude", "settings.json");
    const r = await cli(["install-hooks", "--settings", path, "--yes", "--no-mcp", "--namespace", "proj", "--ttl", "30"], env());
    expect(r.code).toBe(0);
    const s = JSON.parse(await readFile(path, "utf8"));
    expect(Object.keys(s.hooks)).toHaveLength(10);
    expect(s.hooks.PreToolUse[0]).toEqual({
      matcher: "*",
      hooks: [{ type: "command", command: `${process.execPath} ${MAIN} hook tool_call --namespace proj --ttl 30`, async: true }],
    });
    for (const [event] of HOOK_EVENTS) expect(s.hooks[event][0].hooks[0].async, event).toBe(true);
    expect(s.mcpServers).toBeUndefined();
  });

  it("existing file: user hooks kept, backup written, second install adds nothing, uninstall is byte-identical", async () => {
    const path = join(dir, "settings.json");
    await writeFile(path, USER_SETTINGS);
    const first = await cli(["install-hooks", "--settings", path, "--yes", "--no-mcp"], env());
    expect(first.code).toBe(0);
    const installed = await readFile(path, "utf8");
    const s = JSON.parse(installed);
    expect(s.hooks.PreToolUse).toHaveLength(2);
    expect(s.hooks.PreToolUse[0].hooks[0].command).toBe("echo mine");
    expect(s.permissions).toEqual({ allow: ["Bash(npm test)"] });
    expect(installed).toContain('\n    "permissions"'); // indentation kept
    const backups = (await readdir(dir)).filter((n) => n.startsWith("settings.json.svc-backup-"));
    expect(backups).toHaveLength(1);
    expect(await readFile(join(dir, backups[0]!), "utf8")).toBe(USER_SETTINGS);

    const second = await cli(["install-hooks", "--settings", path, "--yes", "--no-mcp"], env());
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("nothing to change");
    expect(await readFile(path, "utf8")).toBe(installed);
    expect((await readdir(dir)).filter((n) => n.startsWith("settings.json.svc-backup-"))).toHaveLength(1);

    const un = await cli(["install-hooks", "--settings", path, "--yes", "--uninstall"], env());
    expect(un.code).toBe(0);
    expect(await readFile(path, "utf8")).toBe(USER_SETTINGS);
    expect((await readdir(dir)).filter((n) => n.startsWith("settings.json.svc-backup-"))).toHaveLength(2);
  });

  it("registers `svc mcp` in .mcp.json beside .claude/, keeps the user's servers, once; uninstall gives both files back", async () => {
    const project = join(dir, "proj-mcp");
    const path = join(project, ".claude", "settings.json");
    const mcpPath = join(project, ".mcp.json");
    const userMcp = '{\n  "mcpServers": {\n    "other": { "command": "other-server" }\n  }\n}\n';
    await mkdir(join(project, ".claude"), { recursive: true });
    await writeFile(mcpPath, userMcp);
    const first = await cli(["install-hooks", "--settings", path, "--yes", "--url", "http://127.0.0.1:9999"], env());
    expect(first.code).toBe(0);
    const m = JSON.parse(await readFile(mcpPath, "utf8"));
    expect(m.mcpServers.other).toEqual({ command: "other-server" });
    expect(m.mcpServers.svc).toEqual({ type: "stdio", command: process.execPath, args: [MAIN, "mcp", "--url", "http://127.0.0.1:9999"] });
    expect(JSON.stringify(m)).not.toMatch(/svc_[A-Za-z0-9]/); // no key in the config
    const again = await cli(["install-hooks", "--settings", path, "--yes", "--url", "http://127.0.0.1:9999"], env());
    expect(again.stdout).toContain("nothing to change");
    const un = await cli(["install-hooks", "--settings", path, "--yes", "--uninstall"], env());
    expect(un.code).toBe(0);
    expect(await readFile(mcpPath, "utf8")).toBe(userMcp);
    expect(existsSync(path)).toBe(false); // svc created it, so it is gone again
  });

  it("leaves a user's own server named svc alone", async () => {
    const project = join(dir, "proj-own-svc");
    const mcpPath = join(project, ".mcp.json");
    await mkdir(project, { recursive: true });
    const own = '{"mcpServers":{"svc":{"command":"my-svc-thing"}}}';
    await writeFile(mcpPath, own);
    const r = await cli(["install-hooks", "--settings", join(project, ".claude", "settings.json"), "--yes"], env());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("not svc's");
    expect(await readFile(mcpPath, "utf8")).toBe(own);
  });

  it("refuses without --yes when not on a terminal", async () => {
    const path = join(dir, "refuse.json");
    await writeFile(path, "{}\n");
    const r = await cli(["install-hooks", "--settings", path], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--yes");
    expect(await readFile(path, "utf8")).toBe("{}\n");
  });
});

/** Run the built `svc hook <kind>` with `input` on stdin. */
function runHook(
  args: string[],
  input: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [MAIN, "hook", ...args], {
      env: { ...process.env, SVC_API_KEY: "", SVC_URL: "", SVC_AUTO_RECORD: "", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
    child.stdin.end(input);
  });
}

describe("svc hook start-up", () => {
  it("loads only its own command's modules, never the server, engine or MCP SDK", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-hook-load-"));
    try {
      const trace = join(dir, "modules.txt");
      // A module loader hook (Node's register API) that appends every resolved URL to a file.
      const hooks = `import { appendFileSync } from "node:fs"; export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(trace)}, r.url + "\\n"); return r; }`;
      const preload = `data:text/javascript,${encodeURIComponent(`import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`)}`;
      const r = await new Promise<number | null>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", preload, MAIN, "hook", "tool_call"], {
          env: { ...process.env, SVC_URL: "http://127.0.0.1:1", SVC_API_KEY: "", SVC_AUTO_RECORD: "" },
          stdio: ["pipe", "ignore", "ignore"],
        });
        child.on("error", reject);
        child.on("exit", resolve);
        child.stdin.end(JSON.stringify({ session_id: "s", tool_name: "Bash", tool_input: { command: "ls" } }));
      });
      expect(r).toBe(0);
      const loaded = (await readFile(trace, "utf8")).split("\n").filter((u) => u.startsWith("file:"));
      expect(loaded.some((u) => u.endsWith("/dist/cli/hook.js"))).toBe(true);
      const heavy = loaded.filter((u) =>
        /\/dist\/(http|engine|memory|kernels|pool|tools|store)\/|node_modules|\/dist\/cli\/(serve|mcp|demo|install-hooks)\.js/.test(u),
      );
      expect(heavy).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("svc hook against a running server", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess();
  }, 60_000);
  afterAll(async () => server?.dispose());
  const records = async (ns: string) =>
    (await call(server.url, server.adminKey, "POST", `/v1/records/${ns}/query`, { includeText: true, includeMeta: true, topK: 100 })).body
      .records as any[];

  it("writes the record, exits at once with empty stdout, skips svc's own tools", async () => {
    const env = { SVC_URL: server.url, SVC_API_KEY: server.adminKey!, SVC_AUTO_RECORD: "agent:14" };
    const r = await runHook(
      ["user_prompt"],
      JSON.stringify({ session_id: "s1", hook_event_name: "UserPromptSubmit", prompt: "fix the flaky test", cwd: "/w" }),
      env,
    );
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    console.log(`svc hook returned in ${r.ms} ms (process start included)`);
    const skipped = await runHook(
      ["tool_call", "--namespace", "agent"],
      JSON.stringify({ session_id: "s1", tool_name: "mcp__svc__records_query", tool_input: {} }),
      env,
    );
    expect(skipped).toMatchObject({ code: 0, stdout: "" });
    const tool = await runHook(
      ["tool_call", "--namespace", "agent"],
      JSON.stringify({ session_id: "s1", tool_name: "Bash", tool_input: { command: "npm test" } }),
      env,
    );
    expect(tool).toMatchObject({ code: 0, stdout: "" });
    // Another MCP server whose name merely starts with "svc" is not ours: recorded.
    const other = await runHook(
      ["tool_call", "--namespace", "agent"],
      JSON.stringify({ session_id: "s1", tool_name: "mcp__svcnow__incident_create", tool_input: { title: "db down" } }),
      env,
    );
    expect(other).toMatchObject({ code: 0, stdout: "" });
    expect((await runHook(["user_prompt"], "not json", env)).stdout).toBe("");
    const rs = await until(
      "three records",
      () => records("agent"),
      (x) => x.length >= 3,
    );
    await new Promise((res) => setTimeout(res, 300));
    const all = await records("agent");
    expect(all).toHaveLength(3);
    expect(all.find((x) => x.meta?.tool_name === "mcp__svcnow__incident_create")).toMatchObject({
      kind: "tool_call",
      tags: ["claude-code", "tool_call", "mcp__svcnow__incident_create"],
    });
    const prompt = all.find((x) => x.kind === "user_prompt");
    expect(prompt).toMatchObject({
      text: "fix the flaky test",
      tags: ["claude-code", "user_prompt"],
      ttlDays: 14,
      meta: { session_id: "s1", hook_event_name: "UserPromptSubmit", cwd: "/w" },
    });
    expect(all.find((x) => x.meta?.tool_name === "Bash")).toMatchObject({
      text: "Bash npm test",
      tags: ["claude-code", "tool_call", "Bash"],
    });
    expect(rs.some((x) => x.meta?.tool_name?.startsWith("mcp__svc__"))).toBe(false);
  });
});
