/**
 * @module build-stamp.test — scripts/build.mjs --if-stale (what prepare/prestart/pretest run) on a
 * scratch project whose three build steps are stand-ins that write the outputs and count their runs:
 * a fresh build is not redone, a changed, added or removed input or a missing output rebuilds, and a
 * failed step exits non-zero and leaves no stamp.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, utimesSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "svc-build-stamp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each stand-in step writes its output(s) and appends its name to runs.log, or fails when FAIL names it. */
const step = (name: string, outputs: string[]) =>
  `node -e "const fs=require('fs');if(process.env.FAIL==='${name}')process.exit(7);for(const o of ${JSON.stringify(outputs).replace(/"/g, "'")}){fs.mkdirSync(require('path').dirname(o),{recursive:true});fs.writeFileSync(o,'x')}fs.appendFileSync('runs.log','${name}\\n')"`;

function setUp() {
  mkdirSync(join(dir, "scripts"), { recursive: true });
  mkdirSync(join(dir, "src"), { recursive: true });
  copyFileSync(join(root, "scripts", "build.mjs"), join(dir, "scripts", "build.mjs"));
  writeFileSync(join(dir, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: "stamp-scratch",
      private: true,
      scripts: {
        "build:wasm": step("wasm", ["build/kernels.wasm"]),
        "build:ts": step("ts", ["dist/cli/main.js", "dist/helpers/code-hashes.json"]),
        "build:dashboard": step("dashboard", ["dist/dashboard/index.html"]),
      },
    }),
  );
}

const build = (env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [join(dir, "scripts", "build.mjs"), "--if-stale"], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
const runs = () => (existsSync(join(dir, "runs.log")) ? readFileSync(join(dir, "runs.log"), "utf8").trim().split("\n").length : 0);

describe("scripts/build.mjs --if-stale", () => {
  it("builds once, then only when an input changed or an output is missing", () => {
    setUp();
    let r = build();
    expect(r.status, r.stderr).toBe(0);
    expect(runs()).toBe(3); // wasm, ts, dashboard
    expect(existsSync(join(dir, "dist", ".build-stamp"))).toBe(true);

    r = build();
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/build: up to date/);
    expect(runs()).toBe(3);

    // an edited input (its mtime moves; same size)
    const a = join(dir, "src", "a.ts");
    writeFileSync(a, "export const a = 2;\n");
    utimesSync(a, new Date(), new Date(Date.now() + 5_000));
    expect(build().status).toBe(0);
    expect(runs()).toBe(6);
    expect(build().stdout).toMatch(/up to date/);

    // an added input, then a removed one
    writeFileSync(join(dir, "src", "b.ts"), "export const b = 1;\n");
    expect(build().status).toBe(0);
    expect(runs()).toBe(9);
    unlinkSync(join(dir, "src", "b.ts"));
    expect(build().status).toBe(0);
    expect(runs()).toBe(12);

    // a missing output, whatever the stamp says
    unlinkSync(join(dir, "dist", "dashboard", "index.html"));
    expect(build().status).toBe(0);
    expect(runs()).toBe(15);
    expect(build().stdout).toMatch(/up to date/);
  }, 300_000);

  it("a failed step exits non-zero and leaves no stamp, so the next start builds again", () => {
    writeFileSync(join(dir, "src", "a.ts"), "export const a = 3; // changed\n");
    const r = build({ FAIL: "ts" });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/build:ts failed/);
    expect(existsSync(join(dir, "dist", ".build-stamp"))).toBe(false);
    const before = runs();
    expect(build().status).toBe(0);
    expect(runs()).toBe(before + 3);
  }, 300_000);
});
