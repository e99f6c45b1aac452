/** GET /v1/ready: 503 E_NOT_READY while the stores on disk are opened (WAL replay after a crash), 200 after, and then the data is all there; /v1/health answers meanwhile. Real process, real files. */
import { encode } from "@msgpack/msgpack";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const DIM = 1024;
const N = 8000;

/** The JSON lines the process wrote, once `done` holds for them (info lines are written in batches). */
async function readLog(
  srv: ServerProcess,
  done: (lines: Array<Record<string, unknown>>) => boolean,
): Promise<Array<Record<string, unknown>>> {
  const parse = () =>
    srv
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  for (let i = 0; i < 200 && !done(parse()); i++) await new Promise((r) => setTimeout(r, 50));
  return parse();
}

describe("readiness", () => {
  let srv: ServerProcess;
  afterAll(async () => {
    await srv?.dispose();
  });

  it("answers 503 until every index's log is replayed, then 200 for good, with every acknowledged vector visible", async () => {
    srv = await startServerProcess({ args: ["--no-auth"] });
    const first = srv;
    expect((await fetch(`${srv.url}/v1/ready`)).status).toBe(200); // nothing to open
    expect(
      (
        await fetch(`${srv.url}/v1/indexes`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "big", dimension: DIM }),
        })
      ).status,
    ).toBe(201);
    for (let i = 0; i < N; i += 1000) {
      const vectors = Array.from({ length: 1000 }, (_, j) => ({
        id: `v${i + j}`,
        values: new Uint8Array(Float32Array.from({ length: DIM }, (_, k) => Math.sin(i + j + k * 0.01)).buffer),
      }));
      const r = await fetch(`${srv.url}/v1/indexes/big/vectors/upsert`, {
        method: "POST",
        headers: { "content-type": "application/msgpack" },
        body: encode({ vectors }),
      });
      expect(r.status).toBe(200);
    }
    // a crash: nothing checkpointed, the next start replays the whole log
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    srv = await startServerProcess({ dataDir: first.dataDir, args: ["--no-auth", "--log-level", "info"] });

    const seen: number[] = [];
    let notReady: { error: { code: string } } | null = null;
    let healthWhileReplaying = 0;
    for (;;) {
      const r = await fetch(`${srv.url}/v1/ready`);
      seen.push(r.status);
      if (r.status === 200) break;
      notReady ??= (await r.json()) as { error: { code: string } };
      if (healthWhileReplaying === 0) healthWhileReplaying = (await fetch(`${srv.url}/v1/health`)).status;
    }
    expect(seen[0]).toBe(503);
    expect(notReady?.error.code).toBe("E_NOT_READY");
    expect(healthWhileReplaying).toBe(200);
    const ready = await (await fetch(`${srv.url}/v1/ready`)).json();
    expect(ready).toEqual({ status: "ready", opened: 1, failed: [] });
    const stats = await (await fetch(`${srv.url}/v1/indexes/big/describe_index_stats`)).json();
    expect(stats.totalVectorCount).toBe(N);

    // each 503 while starting is an expected answer, not a fault: its request line at info (with the code), no error line, no stack
    const lines = await readLog(srv, (ls) => ls.filter((l) => l.route === "/v1/ready" && l.status === 503).length >= seen.length - 1);
    const notReadyLines = lines.filter((l) => l.route === "/v1/ready" && l.status === 503);
    expect(notReadyLines).toHaveLength(seen.length - 1);
    for (const l of notReadyLines) expect(l).toMatchObject({ level: 30, msg: "request", code: "E_NOT_READY" });
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(srv.output()).not.toContain("stack");
  }, 120_000);
});
