import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
// The built CLI (npm test builds dist/ first), run as a real process.
const main = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const svc = (...args) => spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000 });
describe("svc command", () => {
    it("demo encodes, scans in-thread and across workers, and prints timings", () => {
        const r = svc("demo", "--n", "3000", "--queries", "5", "--threads", "2");
        expect(r.status).toBe(0);
        expect(r.stdout).toContain("3,000 seeded 1024-d float vectors");
        expect(r.stdout).toMatch(/in-thread\s+p50 [\d.]+ ms/);
        expect(r.stdout).toMatch(/2 workers \(striped\)\s+p50 [\d.]+ ms/);
        expect(r.stdout).toMatch(/query 0 nearest rows: \d+ \(d=\d+\)/);
    });
    it("--help prints usage; bad input exits 2 with a stable code", () => {
        expect(svc("--help").stdout).toContain("Usage:");
        const bad = svc("demo", "--n", "-5");
        expect(bad.status).toBe(2);
        expect(bad.stderr).toContain("E_BAD_REQUEST");
        expect(svc("frobnicate").status).toBe(2);
    });
});
//# sourceMappingURL=main.test.js.map