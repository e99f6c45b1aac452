/** @module build.test — `svc build <helper> <args.json>` as a real process under tsx: results, --list, and exit 2 with a stable code. */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "svc-build-cli-"));
const data = join(dir, "data");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI from source (no build needed). */
const svc = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", join(root, "src", "cli", "main.ts"), ...args], {
    encoding: "utf8",
    cwd: root,
    timeout: 60_000,
  });

function argsFile(name: string, value: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof value === "string" ? value : JSON.stringify(value));
  return p;
}

describe("svc build", () => {
  it("runs the line folder by module name and prints {path}", () => {
    const out = join(dir, "out", "folded.txt");
    const r = svc(
      "build",
      "line-folder",
      argsFile("lf.json", { lines: ["SUMMARY:" + "é".repeat(40), "END:X"], output_path: out }),
      "--data",
      data,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ path: out });
    expect(readFileSync(out, "utf8")).toBe(`SUMMARY:${"é".repeat(33)}\r\n ${"é".repeat(7)}\r\nEND:X\r\n`);
    expect(existsSync(join(data, "keys", "signing-key.pem"))).toBe(true);
  });

  it("accepts the display name and prints the task parser's object", () => {
    const r = svc(
      "build",
      "task parser",
      argsFile("tp.json", { task: "cool some apple and put it in fridge", receptacles: ["fridge 1", "countertop 1"] }),
      "--data",
      data,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ entry_point: "pick_cool_then_place_in_recep", object_type: "apple", target_type: "fridge" });
  });

  it("--list prints the ten signed records", () => {
    const r = svc("build", "--list", "--data", data);
    expect(r.status, r.stderr).toBe(0);
    const records = JSON.parse(r.stdout) as { id: string; module: string; signature: string; codeHash: string }[];
    expect(records.map((x) => x.module)).toContain("line-folder");
    expect(records).toHaveLength(10); // all ten helper files exist once the issue is merged
    for (const x of records) {
      expect(x.id).toMatch(/^rec_[0-9a-f]{16}$/);
      expect(x.signature).toBe("signed (ed25519)");
      expect(x.codeHash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  const errorCases: [string, string[], string][] = [
    [
      "a helper argument error",
      ["line-folder", argsFile("bad-lines.json", { lines: ["a\nb"], output_path: join(dir, "never.txt") })],
      "E_BAD_REQUEST",
    ],
    ["an unknown helper", ["no-such-helper", argsFile("empty.json", {})], "E_NOT_FOUND"],
    ["a missing argument file", ["line-folder", join(dir, "missing.json")], "E_BAD_REQUEST"],
    ["an argument file that is not JSON", ["line-folder", argsFile("not-json.json", "{lines:")], "E_BAD_REQUEST"],
    ["no argument file", ["line-folder"], "E_BAD_REQUEST"],
    ["an unwritable output path", ["line-folder", argsFile("io.json", { lines: ["x"], output_path: "/dev/null/inside/x.txt" })], "E_IO"],
  ];
  it.each(errorCases)("exits 2 with the stable code for %s", (_what, args, code) => {
    const r = svc("build", ...args, "--data", data);
    expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(2);
    expect(r.stderr).toContain(`svc build: ${code}:`);
    expect(r.stdout).toBe("");
    if (args[0] === "line-folder" && args[1]?.endsWith("bad-lines.json")) {
      expect(r.stderr).toContain('"field":"lines.0"');
      expect(existsSync(join(dir, "never.txt"))).toBe(false);
    }
  });
});
