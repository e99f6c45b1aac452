/**
 * Property suite over EVERY route of the route table (read from /v1/openapi.json of a real
 * `svc serve` process): fast-check generates hostile path parameters, query strings, headers,
 * credentials and bodies (schema-shaped then mutated, junk, 40 KB of unknown fields, deep
 * nesting, truncated JSON, random bytes, msgpack, multipart) and every answer must be a 4xx
 * with a code of src/errors.ts (or a 2xx), never a 5xx, a hang or a dropped connection.
 * Afterwards the victim tenant's data (read through the API, and its files) is byte-identical
 * and the process still serves. Fixed seed; longer runs: `npx tsx bench/fuzz.ts --minutes 10`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { buildWorld, FUZZ_CONFIG, hostileRequest, send, targetsFrom, violation, type FuzzWorld, type Target } from "./hostile-requests.js";

const SEED = Number(process.env.FUZZ_SEED ?? 0x2006);
/** Requests per route (94 routes x 250 = 23,500 requests, ~25-40 s on the 2-core VM). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);

describe("hostile requests on every route", () => {
  let server: ServerProcess;
  let targets: Target[];
  let world: FuzzWorld;
  let before: Record<string, string>;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-route-fuzz-"));

  beforeAll(async () => {
    writeFileSync(join(dataDir, "config.json"), JSON.stringify(FUZZ_CONFIG));
    server = await startServerProcess({ dataDir });
    targets = targetsFrom(await (await fetch(`${server.url}/v1/openapi.json`)).json());
    world = await buildWorld(server.url, server.adminKey!, dataDir);
    before = await world.snapshot();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("covers the whole route table", () => {
    expect(targets.length).toBeGreaterThanOrEqual(94);
    expect(new Set(targets.map((t) => `${t.method} ${t.path}`)).size).toBe(targets.length);
  });

  it("answers every hostile request with a 2xx or a 4xx carrying a stable code: no 5xx, hang or dropped connection", async () => {
    const base = new URL(server.url);
    const failures: string[] = [];
    let sent = 0;
    for (const [i, t] of targets.entries()) {
      const r = await fc.check(
        fc.asyncProperty(hostileRequest(t, world), async (req) => {
          sent++;
          const why = violation(await send(base, req));
          if (why !== null) throw new Error(why);
        }),
        { seed: SEED + i, numRuns: RUNS, endOnFailure: false, maxSkipsPerRun: 0 },
      );
      if (r.failed) {
        const req = r.counterexample![0];
        failures.push(
          `${t.method} ${t.path}: ${req.method} ${req.target} ${JSON.stringify(req.headers)} body ${req.body?.toString("utf8", 0, 200) ?? "(none)"} -> ${(r.errorInstance as Error).message}`,
        );
      }
    }
    expect(sent).toBeGreaterThanOrEqual(targets.length * RUNS);
    expect(failures).toEqual([]);
  }, 600_000);

  it("leaves the victim tenant's data byte-identical and the process serving", async () => {
    expect((await fetch(`${server.url}/v1/health`)).status).toBe(200);
    expect(await world.snapshot()).toEqual(before);
  }, 60_000);
});
