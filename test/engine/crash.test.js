import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCrashCycles } from "../../scripts/crash/harness.js";
const dir = mkdtempSync(join(tmpdir(), "svc-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
describe("crash safety (real child processes, SIGKILL)", () => {
    it("after each of 20 random kills, every acknowledged batch is present with exact values and the state is a prefix of the log", async () => {
        const lines = [];
        const s = await runCrashCycles({ dir, cycles: 20, seed: 20261122, log: (l) => lines.push(l) });
        expect(s.cycles).toBe(20);
        // The writer made progress, so the kills interrupted real writes.
        expect(s.acked).toBeGreaterThan(20);
        expect(s.ids).toBeGreaterThan(100);
        expect(s.prefix).toBeGreaterThan(20);
    }, 600_000);
});
//# sourceMappingURL=crash.test.js.map