#!/usr/bin/env node
/**
 * @module check-install — CI's production-install check: a temp copy of the clone (tracked and
 * unignored files only, as a fresh clone has), `npm ci --omit=dev`, then `npm start` twice on empty
 * data dirs; the second start must answer 200 on /v1/ready within READY_LIMIT_S. Dev-only packages
 * (test clients, browsers, benchmark peers) must be absent. Prints one line per step; exits 1 on a failure.
 */
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const root = join(import.meta.dirname, "..");
const INSTALL_LIMIT_S = 20 * 60; // npm ci + native builds + asc/tsc/esbuild on a loaded 2-core machine
const READY_LIMIT_S = 10; // the bound for a start on an empty data dir (build already done)
const DEV_ONLY = ["vitest", "playwright-core", "better-sqlite3", "@langchain/core", "autocannon", "fast-check", "usearch"];

const tmp = mkdtempSync(join(tmpdir(), "svc-prod-install-"));
let failed = false;
const fail = (msg) => {
  console.log(`check-install: FAIL ${msg}`);
  failed = true;
};

try {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" }).split("\0").filter((f) => f && existsSync(join(root, f)));
  for (const f of files) {
    mkdirSync(dirname(join(tmp, f)), { recursive: true });
    cpSync(join(root, f), join(tmp, f));
  }
  console.log(`check-install: ${files.length} files copied to ${tmp}`);

  let t0 = performance.now();
  execFileSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund"], { cwd: tmp, stdio: ["ignore", "ignore", "inherit"], timeout: INSTALL_LIMIT_S * 1000 });
  console.log(`check-install: npm ci --omit=dev took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const present = DEV_ONLY.filter((p) => existsSync(join(tmp, "node_modules", p)));
  if (present.length > 0) fail(`dev-only packages installed: ${present.join(", ")}`);
  if (!existsSync(join(tmp, "dist", ".build-stamp"))) fail("npm ci --omit=dev left no build (dist/.build-stamp missing)");

  for (const run of ["first", "second"]) {
    t0 = performance.now();
    const s = await readyAfterStart(join(tmp, `data-${run}`), 180);
    if (s === null) fail(`${run} npm start: /v1/ready not 200 within 180 s`);
    else {
      console.log(`check-install: ${run} npm start -> /v1/ready 200 in ${s.toFixed(1)} s`);
      if (run === "second" && s > READY_LIMIT_S) fail(`second start took ${s.toFixed(1)} s (limit ${READY_LIMIT_S} s)`);
    }
  }
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failed ? "check-install: FAILED" : "check-install: ok");
process.exit(failed ? 1 : 0);

/** `npm start` on an empty data dir; seconds until /v1/ready answered 200, or null past limitS. Always stops the server. */
async function readyAfterStart(dataDir, limitS) {
  const t0 = performance.now();
  const child = spawn("npm", ["start", "--", "--port", "0", "--data", dataDir, "--log-level", "warn"], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  child.stderr.on("data", (b) => (out += b));
  try {
    while (performance.now() - t0 < limitS * 1000) {
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${out}`);
      const url = /svc serving (https?:\/\/\S+)/.exec(out)?.[1];
      if (url) {
        const r = await fetch(`${url}/v1/ready`).catch(() => null);
        if (r?.status === 200) return (performance.now() - t0) / 1000;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(out);
    return null;
  } finally {
    try {
      process.kill(-child.pid, "SIGTERM"); // npm and the server it started
    } catch {
      /* already gone */
    }
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  }
}
