/**
 * @module background-failures.test — a failure nobody awaits reaches the Reporter the service was
 * given (store/reporter.ts): the records' expiry sweeper, run by its own timer, over a store whose
 * delete fails (an injected I/O error). Before the Reporter the sweeper dropped such errors.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it, vi } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import type { Collection } from "../../src/engine/collection.js";
import { Kernels } from "../../src/kernels/abi.js";
import { DAY_MS, RecordService, SWEEP_MS } from "../../src/memory/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { KeptReports } from "../../src/store/reporter.js";

const root = mkdtempSync(join(tmpdir(), "svc-background-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const encoder = TextEncoder1024.load();

afterAll(async () => {
  vi.useRealTimers();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

it("the records' sweeper tells the injected reporter when its store throws", async () => {
  const told: Array<{ task: string; message: string }> = [];
  const damage: unknown[] = [];
  const reporter = new KeptReports({
    damage: (r) => damage.push(r),
    background: (err, task) => told.push({ task, message: (err as Error).message }),
  });
  const T0 = 1_700_000_000_000;
  let now = T0;
  // only the interval timers are fake: the sweeper's tick is driven below, everything else runs on real time
  vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
  const svc = new RecordService(join(root, "d"), { kernels, pool, encoder, durability: "none", now: () => now, reporter });
  try {
    await svc.ingest("t", "n", [{ kind: "note", text: "a short lived memory", ttlDays: 1, ts: T0 }]);
    const c = await (svc as unknown as { collection(t: string): Promise<Collection> }).collection("t");
    await c.settled(); // the row is applied: the sweep finds it
    // the fault: the store's deletes fail as a disk that went away would (reads still work, so the sweep finds the expired row)
    c.delete = () => Promise.reject(Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" }));
    now = T0 + 2 * DAY_MS; // the record is expired: the sweep has something to delete
    vi.advanceTimersByTime(SWEEP_MS);
    for (let i = 0; i < 400 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(told).toEqual([{ task: "expiry sweep of the records", message: "EIO: i/o error, write" }]);
    expect(damage).toEqual([]); // a background failure is not storage damage
    expect(reporter.reports()).toEqual([]);
  } finally {
    await svc.close();
    vi.useRealTimers();
  }
});
