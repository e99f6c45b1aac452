import { spawnSync } from "node:child_process";
import { openSync, readdirSync, rmSync, statSync, writeSync, closeSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { engineFixture } from "./engine-fixture.js";

const { root, kernels, pool } = engineFixture("svc-corrupt-");
const main = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

const vec = (i: number) => Float32Array.from({ length: 8 }, (_, j) => Math.sin(i * 8 + j + 1));

describe("a collection whose log is damaged", () => {
  it("checksum-mismatch-in-a-middle-frame-opens-without-that-frame, then `svc repair` pads exactly it", async () => {
    const dir = join(root, "c");
    const c = await Collection.open(dir, { kernels, pool, dimension: 8 });
    const seg = join(
      dir,
      "wal",
      readdirSync(join(dir, "wal")).find((f) => f.endsWith(".seg"))!,
    );
    const ends: number[] = [];
    for (let b = 0; b < 3; b++) {
      await c.upsert(
        "",
        Array.from({ length: 5 }, (_, i) => ({ id: `b${b}-${i}`, values: vec(b * 5 + i), metadata: { b } })),
      );
      ends.push(statSync(seg).size);
    }
    // No close(): like a crash, nothing is checkpointed; the log alone holds the three batches.
    const flipAt = ends[0]! + 40; // inside batch 1's frame payload
    const fd = openSync(seg, "r+");
    const byte = readFileSync(seg)[flipAt]!;
    writeSync(fd, Buffer.from([byte ^ 0xff]), 0, 1, flipAt);
    closeSync(fd);

    // The damaged frame is skipped and named; the frames after it replay.
    const salvaged = await Collection.open(dir, { kernels, pool });
    expect(salvaged.recovery.damaged).toEqual([
      { file: seg, offset: ends[0], bytes: ends[1]! - ends[0]!, frames: 1, reason: "frame checksum mismatch", beforeFrom: false },
    ]);
    expect(salvaged.fetch("", ["b0-0", "b1-0", "b2-0"]).map((v) => v.id)).toEqual(["b0-0", "b2-0"]);
    // Dropped without closing, so no checkpoint covers the damage: repair finds it where it was.
    rmSync(join(dir, "LOCK"));

    const r = spawnSync(process.execPath, [main, "repair", dir], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`padded ${ends[1]! - ends[0]!} bytes at offset ${ends[0]}`));

    const again = await Collection.open(dir, { kernels, pool });
    // Batch 0 and batch 2 (after the damage) are back with exact values; batch 1 was destroyed.
    expect(again.fetch("", ["b0-3", "b2-4"]).map((v) => [v.id, Array.from(v.values), v.metadata])).toEqual([
      ["b0-3", Array.from(vec(3)), { b: 0 }],
      ["b2-4", Array.from(vec(14)), { b: 2 }],
    ]);
    expect(again.fetch("", ["b1-0"])).toEqual([]);
    expect(again.stats().totalVectorCount).toBe(10);
    await again.close();
  });
});
