#!/usr/bin/env node
/**
 * @module build — `npm run build` (asc -> build/, tsc -> dist/, dashboard -> dist/dashboard) and, with
 * `--if-stale`, the cheap check `npm install`/`npm start`/`npm test` run first: it rebuilds only when
 * a build input changed since the last good build, so a restart serves in seconds.
 *
 * Invariant: dist/.build-stamp holds the fingerprint of the inputs as they were when the build that
 * wrote it *started* (an edit made during a build leaves the stamp stale, never a stale build marked
 * fresh). The fingerprint hashes every input file's path, size and mtime (ms); no file is read.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..");
const STAMP = join(root, "dist", ".build-stamp");
/** Directories and files whose change can change build/ or dist/. */
const INPUTS = [
  "assembly",
  "src",
  "dashboard",
  "scripts/build.mjs",
  "scripts/build-dashboard.mjs",
  "scripts/helper-hashes.mjs",
  "asconfig.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "package.json",
  "package-lock.json",
];
/** What a good build leaves; a missing one means rebuild whatever the stamp says. */
const OUTPUTS = ["build/kernels.wasm", "dist/cli/main.js", "dist/helpers/code-hashes.json", "dist/dashboard/index.html"];
const STEPS = ["build:wasm", "build:ts", "build:dashboard"];

/** sha256 over (path, size, mtimeMs) of every input file, in sorted path order. */
function fingerprint() {
  const rows = [];
  const walk = (p) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      return; // an optional input that is absent
    }
    if (st.isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
    else rows.push(`${relative(root, p)}\0${st.size}\0${st.mtimeMs}`);
  };
  for (const i of INPUTS) walk(join(root, i));
  return createHash("sha256").update(rows.join("\n")).digest("hex");
}

function isFresh(print = fingerprint()) {
  if (!OUTPUTS.every((o) => existsSync(join(root, o)))) return false;
  try {
    return JSON.parse(readFileSync(STAMP, "utf8")).inputs === print;
  } catch {
    return false;
  }
}

const t0 = performance.now();
const print = fingerprint();
if (process.argv.includes("--if-stale") && isFresh(print)) {
  console.log(`build: up to date (${Math.round(performance.now() - t0)} ms check)`);
  process.exit(0);
}
rmSync(STAMP, { force: true }); // a build cut short leaves no stamp behind
const npm = process.env.npm_execpath; // set when run by npm: its own CLI, whatever Node runs it
for (const step of STEPS) {
  const r = npm
    ? spawnSync(process.execPath, [npm, "run", "--silent", step], { cwd: root, stdio: "inherit" })
    : spawnSync("npm", ["run", "--silent", step], { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
  if (r.status !== 0) {
    console.error(`build: ${step} failed (exit ${r.status ?? r.signal}); the previous build, if any, stays marked stale`);
    process.exit(1);
  }
}
writeFileSync(STAMP, JSON.stringify({ inputs: print, builtAt: new Date().toISOString() }) + "\n");
console.log(`build: done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
