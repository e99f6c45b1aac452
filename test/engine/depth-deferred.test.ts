/**
 * A due depth calibration (engine/depth.ts) waits until its namespace's upserts pause (maintenance.ts
 * calibrateQuietMs): run inside a stream of upserts it took the ingest's main-thread CPU (issue 32 item 4).
 * depthCalibrated() starts a waiting one at once.
 */
import { describe, expect, it } from "vitest";
import { ClusteredVectors } from "../../bench/engine/vectors.js";
import { Collection } from "../../src/engine/collection.js";
import { engineFixture } from "./engine-fixture.js";

const fx = engineFixture("svc-depth-deferred-");
const DIM = 64;

async function open(calibrateQuietMs: number, n = 1200) {
  const data = new ClusteredVectors(DIM, 32, 1, true, n / 20);
  const c = await Collection.open(fx.newDir(), {
    kernels: fx.kernels,
    pool: fx.pool,
    dimension: DIM,
    metric: "cosine",
    durability: "none",
    annMinRows: Infinity,
    calibrateQuietMs,
  });
  for (let i = 0; i < n; i += 400)
    await c.upsert(
      "",
      Array.from({ length: Math.min(400, n - i) }, (_, j) => ({ id: String(i + j), values: data.get(i + j) })),
    );
  await c.settled();
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("depth calibration waits for the upserts to pause", () => {
  it("does not start while the namespace has not been quiet for calibrateQuietMs", async () => {
    const c = await open(600_000);
    try {
      // Before the deferral the calibration started with the upsert that made it due and was done well within this.
      await sleep(1500);
      expect(c.depthOf("")).toBeNull();
      // depthCalibrated() starts the waiting calibration without waiting for quiet.
      await c.depthCalibrated();
      expect(c.depthOf("")).not.toBeNull();
    } finally {
      await c.close();
    }
  });

  it("starts on its own once the namespace has been quiet", async () => {
    const c = await open(50);
    try {
      for (let i = 0; i < 400 && c.depthOf("") === null; i++) await sleep(50);
      expect(c.depthOf("")).not.toBeNull();
    } finally {
      await c.close();
    }
  });

  it("a collection closed with a calibration waiting closes without starting it", async () => {
    const c = await open(600_000);
    await c.close();
    expect(c.depthOf("")).toBeNull();
  });
});
