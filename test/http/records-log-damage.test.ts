/**
 * A records log cut short, against the built `svc serve` as a child process (real HTTP, real files):
 * what /v1/health reports as dropped is what was lost. 100 records ingested in one call are one logged
 * write (frame); after a crash (nothing checkpointed) a cut inside that frame's header loses it and is
 * reported as one lost write, not 0; after a clean stop (the checkpoint holds every record) a cut
 * loses nothing and reports 0.
 */
import { cpSync, statSync, truncateSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The WAL segment header is 32 bytes, a frame header 12 (sync word, length, crc): docs/FORMAT.md. */
const HEADER = 32;
const SEG = "tenants/local/records/wal/000001.seg";

async function dataDirWith100Records(stop: "crash" | "clean"): Promise<string> {
  const data = await mkdtemp(join(tmpdir(), "svc-records-cut-"));
  dirs.push(data);
  const srv = await startServerProcess({ dataDir: data, args: ["--no-auth"] });
  const items = Array.from({ length: 100 }, (_, i) => ({ kind: "note", text: `record number ${i} about the cut log`, ts: 1_000 + i }));
  const r = await call(srv.url, null, "POST", "/v1/records/cut", { items });
  expect(r.status, r.raw.toString()).toBe(200);
  if (stop === "crash") {
    const exited = new Promise((res) => srv.child.once("exit", res));
    srv.child.kill("SIGKILL");
    await exited;
  } else expect(await srv.stop()).toBe(0);
  expect(statSync(join(data, SEG)).size).toBeGreaterThan(HEADER + 1000);
  return data;
}

/** A copy of `data` with its records log cut to `bytes`; restarted: the records' count and the damage entries of the records store. */
async function cutAndRestart(data: string, bytes: number): Promise<{ count: number; damage: Array<Record<string, unknown>> }> {
  const copy = await mkdtemp(join(tmpdir(), "svc-records-cut-copy-"));
  dirs.push(copy);
  cpSync(data, copy, { recursive: true });
  truncateSync(join(copy, SEG), bytes);
  let srv: ServerProcess | undefined;
  try {
    srv = await startServerProcess({ dataDir: copy, args: ["--no-auth"] });
    const stats = await call(srv.url, null, "GET", "/v1/records/cut/stats");
    expect(stats.status, stats.raw.toString()).toBe(200);
    const health = (await call(srv.url, null, "GET", "/v1/health")).body;
    return { count: stats.body.count, damage: (health.damage ?? []).filter((d: { store: string }) => d.store === "records:local") };
  } finally {
    await srv?.dispose();
  }
}

describe("a records log cut short (svc serve process)", () => {
  it("after a crash, a cut inside the one frame's header reports that lost write (dropped 1), not 0", async () => {
    const data = await dataDirWith100Records("crash");
    // cut after the frame's sync word and length, and after its whole 12-byte header
    for (const bytes of [HEADER + 8, HEADER + 12]) {
      const { count, damage } = await cutAndRestart(data, bytes);
      expect(count, `cut to ${bytes}`).toBe(0); // the 100 records were in that frame only
      expect(damage, `cut to ${bytes}`).toEqual([
        expect.objectContaining({
          file: SEG,
          kind: "torn-tail",
          dropped: 1,
          offline: false,
          detail: expect.stringContaining("lost: 1 logged write(s) after the last checkpoint"),
        }),
      ]);
    }
  }, 180_000);

  it("after a clean stop, the checkpoint holds the records: a cut loses nothing and reports dropped 0", async () => {
    const data = await dataDirWith100Records("clean");
    const { count, damage } = await cutAndRestart(data, HEADER + 40);
    expect(count).toBe(100);
    expect(damage).toEqual([
      expect.objectContaining({
        file: SEG,
        kind: "torn-tail",
        dropped: 0,
        detail: expect.stringContaining("no logged write after the last checkpoint"),
      }),
    ]);
  }, 180_000);
});
