/** `svc serve` cluster options: bad ones exit 2 with E_BAD_REQUEST naming the option, before any NATS connection is tried. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAIN } from "../e2e/server-process.js";

const data = mkdtempSync(join(tmpdir(), "svc-cluster-args-"));
const serve = (...args: string[]) =>
  spawnSync(process.execPath, [MAIN, "serve", "--port", "0", "--data", data, ...args], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, SVC_CLUSTER: "", SVC_NODE_ID: "" },
  });

afterAll(() => rmSync(data, { recursive: true, force: true }));

describe("svc serve --cluster options", () => {
  it("are described by --help", () => {
    const help = spawnSync(process.execPath, [MAIN, "serve", "--help"], { encoding: "utf8" }).stdout;
    for (const o of ["--cluster", "--node-id", "--advertise", "--take-home", "SVC_CLUSTER", "SVC_NODE_ID"]) expect(help).toContain(o);
  });

  it.each([
    [["--node-id", "a"], "node-id"],
    [["--take-home"], "take-home"],
    [["--cluster", "http://127.0.0.1:4222"], "cluster"],
    [["--cluster", "nats://127.0.0.1:1", "--advertise", "ftp://x"], "advertise"],
    [["--cluster", "nats://127.0.0.1:1", "--node-id", "not a name!"], "node-id"],
  ])("%j exits 2 naming %s", (args, field) => {
    const r = serve(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("E_BAD_REQUEST");
    expect(r.stderr).toContain(field);
  });
});
