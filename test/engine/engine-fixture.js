/** What the engine's tests share: one Kernels, a one-thread ScanPool and a temp root per test file, closed and removed after the file (the afterAll is registered here). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
export function engineFixture(prefix) {
    const root = mkdtempSync(join(tmpdir(), prefix));
    const kernels = Kernels.create();
    const pool = new ScanPool(kernels, { threads: 1 });
    let dirs = 0;
    afterAll(async () => {
        await pool.close();
        rmSync(root, { recursive: true, force: true });
    });
    return { root, kernels, pool, newDir: () => join(root, `c${++dirs}`) };
}
//# sourceMappingURL=engine-fixture.js.map