/** `svc serve` refuses a taken port (exit 3, E_ADDRESS_IN_USE) and a data dir another live server holds (exit 4, E_DATA_LOCKED); a dead owner's LOCK is taken over. Real processes. */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess } from "../e2e/server-process.js";
const started = [];
/** Run `svc serve` expecting it to refuse: resolves with its exit code and stderr (killed after 30 s, or at the end of the file, if it starts instead). */
function serveRefused(args) {
    return new Promise((resolve) => {
        const child = spawn(process.execPath, [MAIN, "serve", "--log-level", "warn", ...args], { stdio: ["ignore", "pipe", "pipe"] });
        started.push(child);
        let stderr = "";
        let stdout = "";
        child.stderr.on("data", (b) => (stderr += b.toString()));
        child.stdout.on("data", (b) => (stdout += b.toString()));
        const timer = setTimeout(() => child.kill("SIGTERM"), 30_000);
        child.once("exit", (code) => {
            clearTimeout(timer);
            resolve({ code, stderr, stdout });
        });
    });
}
describe("svc serve: one server per port and per data dir", () => {
    let a;
    const dirs = [];
    const tmp = () => {
        const d = mkdtempSync(join(tmpdir(), "svc-excl-"));
        dirs.push(d);
        return d;
    };
    beforeAll(async () => {
        a = await startServerProcess({ args: ["--no-auth"] });
    }, 60_000);
    afterAll(async () => {
        await a?.dispose();
        for (const c of started)
            if (c.exitCode === null && c.signalCode === null)
                c.kill("SIGTERM");
        for (const d of dirs)
            rmSync(d, { recursive: true, force: true });
    });
    it("a second server on a taken port exits 3 with E_ADDRESS_IN_USE; the first keeps serving alone", async () => {
        const port = new URL(a.url).port;
        const r = await serveRefused(["--port", port, "--data", tmp(), "--no-auth"]);
        expect(r.code).toBe(3);
        expect(r.stderr).toContain("E_ADDRESS_IN_USE");
        expect(r.stderr).toContain(`127.0.0.1:${port}`);
        expect(r.stdout).not.toContain("svc serving");
        // Every request reaches the first server (no second listener shares the port).
        for (let i = 0; i < 20; i++)
            expect((await fetch(`${a.url}/v1/health`)).status).toBe(200);
    }, 60_000);
    it("a second server on the same data dir exits 4 with E_DATA_LOCKED, whatever the port", async () => {
        expect(readFileSync(join(a.dataDir, "LOCK"), "utf8")).toBe(String(a.child.pid));
        const r = await serveRefused(["--port", "0", "--data", a.dataDir, "--no-auth"]);
        expect(r.code).toBe(4);
        expect(r.stderr).toContain("E_DATA_LOCKED");
        expect(r.stderr).toContain(String(a.child.pid));
        expect(readFileSync(join(a.dataDir, "LOCK"), "utf8")).toBe(String(a.child.pid));
        expect((await fetch(`${a.url}/v1/health`)).status).toBe(200);
    }, 60_000);
    it("a LOCK left by a dead process is taken over, and removed at a clean stop", async () => {
        const dir = tmp();
        const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
        writeFileSync(join(dir, "LOCK"), dead.stdout);
        const b = await startServerProcess({ dataDir: dir, args: ["--no-auth"] });
        expect(readFileSync(join(dir, "LOCK"), "utf8")).toBe(String(b.child.pid));
        expect(await b.stop()).toBe(0);
        expect(existsSync(join(dir, "LOCK"))).toBe(false);
    }, 60_000);
});
//# sourceMappingURL=serve-exclusive.test.js.map