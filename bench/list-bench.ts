/**
 * @module list-bench — what a write costs the next `vectors/list` page: one in-process Collection (4-d, durability
 * none) filled with N random ids, then rounds of "upsert a batch of new ids, settle, read the first page and a page
 * from the middle" timed around the list call only. `npx tsx bench/list-bench.ts [n] [rounds] [batch]`
 * (default 1000000 20 10).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { ScanPool } from "../src/pool/scan-pool.js";

const n = Number(process.argv[2] ?? 1_000_000);
const rounds = Number(process.argv[3] ?? 20);
const batch = Number(process.argv[4] ?? 10);
const next = mulberry32(3304);
const id = () => `doc-${next().toString(36)}-${(next() % 1000).toString(36)}`;

const dir = mkdtempSync(join(tmpdir(), "svc-list-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const c = await Collection.open(dir, { kernels, pool, dimension: 4, durability: "none" });
try {
  const t0 = performance.now();
  for (let i = 0; i < n; i += 10_000)
    await c.upsert(
      "",
      Array.from({ length: Math.min(10_000, n - i) }, () => ({ id: id(), values: [1, 2, 3, 4] })),
    );
  await c.settled();
  console.log(`filled ${n} ids in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  let t = performance.now();
  c.list("", { limit: 100 });
  console.log(`first list (cold: sorts every id): ${(performance.now() - t).toFixed(0)} ms`);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await c.upsert(
      "",
      Array.from({ length: batch }, () => ({ id: id(), values: [1, 2, 3, 4] })),
    );
    await c.settled();
    t = performance.now();
    const first = c.list("", { limit: 100 });
    c.list("", { limit: 100, after: "doc-8" });
    times.push(performance.now() - t);
    if (first.ids.length !== 100) throw new Error("short page");
  }
  times.sort((a, b) => a - b);
  const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
  console.log(
    `after a write of ${batch} ids, two list pages: p50 ${p(0.5)} ms, max ${p(1)} ms over ${rounds} rounds (load ${(await import("node:os")).loadavg()[0]!.toFixed(1)})`,
  );
} finally {
  await c.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
}
