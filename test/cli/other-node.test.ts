/**
 * @module other-node.test — the built server starts under the *other* supported Node version and
 * answers 200 on /v1/ready. CI sets SVC_OTHER_NODE (that Node's binary) and SVC_OTHER_ROOT (a checkout
 * whose node_modules is built for it: scripts/node24.sh); without them there is no other Node here and
 * the test is skipped.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const other = process.env.SVC_OTHER_NODE;
const root = process.env.SVC_OTHER_ROOT ?? fileURLToPath(new URL("../../", import.meta.url));
const major = (v: string) => Number(/^v(\d+)\./.exec(v)?.[1]);
const dir = mkdtempSync(join(tmpdir(), "svc-other-node-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!other)("the built server under the other Node version", () => {
  it("starts and answers 200 on /v1/ready", async () => {
    const version = spawnSync(other!, ["--version"], { encoding: "utf8" }).stdout.trim();
    expect(major(version)).toBeGreaterThan(0);
    expect(major(version)).not.toBe(major(process.version));

    const child = spawn(
      other!,
      [join(root, "dist", "cli", "main.js"), "serve", "--port", "0", "--data", join(dir, "data"), "--no-auth", "--log-level", "warn"],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no 'svc serving' line from Node ${version} in 60 s:\n${out}`)), 60_000);
        child.stdout.on("data", () => {
          const m = /svc serving (https?:\/\/\S+)/.exec(out);
          if (m) (clearTimeout(timer), resolve(m[1]!));
        });
        child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`svc serve under Node ${version} exited ${code}:\n${out}`))));
      });
      const ready = await fetch(`${url}/v1/ready`);
      expect(ready.status).toBe(200);
      // a real request through the router, not only the probe
      expect((await fetch(`${url}/v1/no-such-route`)).status).toBe(404);
    } finally {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
    }
    expect(child.exitCode ?? child.signalCode).not.toBeNull();
  }, 90_000);
});
