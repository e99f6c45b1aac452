/** @module commons-server — an in-process svc server for the commons HTTP tests, with <data>/config.json written first (goal, allow-list, limits); restartable on the same data dir. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/app/start-server.js";
/** `commons`: the config.json `commons` object. Limits not given are lifted (1000 per window) so tests are not throttled. */
export async function startCommonsServer(commons) {
    const dir = await mkdtemp(join(tmpdir(), "svc-commons-"));
    const lifted = { count: 1000, windowSeconds: 600 };
    const rateLimits = { trust: lifted, board: lifted, ask: lifted, writes: lifted, ...commons.rateLimits };
    await writeFile(join(dir, "config.json"), JSON.stringify({ commons: { ...commons, rateLimits } }));
    const open = () => startServer({ dataDir: dir, port: 0, threads: 1, durability: "batch" });
    const s = {
        server: await open(),
        get url() {
            return s.server.url;
        },
        dir,
        async restart() {
            await s.server.close();
            s.server = await open();
        },
        async dispose() {
            await s.server?.close();
            await rm(dir, { recursive: true, force: true });
        },
    };
    return s;
}
//# sourceMappingURL=commons-server.js.map