// The request log of `svc serve` (real process, real stdout pipe): every request still gets its line, info lines are
// written in batches (one write per line cost a thread-pool hand-off on every request), and nothing is lost at exit.
// (Error lines are written at once: the storage-damage tests read them right after the damage shows in /v1/health.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

const REQUESTS = 200;

describe("svc serve request log", () => {
  let srv: ServerProcess;
  /** stdout chunks received after the server started (each read of the pipe is one). */
  let chunks = 0;

  beforeAll(async () => {
    srv = await startServerProcess({ args: ["--log-level", "info"] });
    srv.child.stdout!.on("data", () => chunks++);
  });
  afterAll(() => srv.dispose());

  it("logs one line per request, in batches rather than one write per line", async () => {
    chunks = 0;
    const before = srv.output().length;
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(`${srv.url}/v1/health`, { headers: { "x-request-id": `log-${i}` } });
      expect(res.status).toBe(200);
      await res.text();
    }
    const logged = () =>
      [
        ...srv
          .output()
          .slice(before)
          .matchAll(/"reqId":"log-(\d+)"/g),
      ].map((m) => Number(m[1]));
    await until(
      "every request's line in the log",
      async () => logged(),
      (ids) => ids.length === REQUESTS,
    );
    expect(logged()).toEqual(Array.from({ length: REQUESTS }, (_, i) => i));
    // one write per line would arrive as about one chunk per request (the requests are sequential, a pipe read apart)
    expect(chunks).toBeLessThan(REQUESTS / 4);
  });

  it("writes what is still buffered at shutdown before it says it stopped", async () => {
    const before = srv.output().length;
    await (await fetch(`${srv.url}/v1/health`, { headers: { "x-request-id": "last-one" } })).text();
    expect(await srv.stop()).toBe(0);
    const out = srv.output().slice(before);
    expect(out).toContain('"reqId":"last-one"');
    expect(out.indexOf("shutting down")).toBeGreaterThan(out.indexOf('"reqId":"last-one"'));
    expect(out.indexOf("svc stopped")).toBeGreaterThan(out.indexOf("shutting down"));
  });
});
