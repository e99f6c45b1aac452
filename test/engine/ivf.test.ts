import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Collection } from "../../src/engine/collection.js";
import { until } from "../e2e/until.js";
import { Kernels } from "../../src/kernels/abi.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { ANN_MAX_SCAN_FRACTION, CALIBRATION_SAMPLE, filteredCap, IvfIndex, PROBE_LADDER } from "../../src/engine/ivf.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { clusteredRows, DIM, hamming, kthDistance } from "./ivf-data.js";

const root = mkdtempSync(join(tmpdir(), "svc-ivf-"));
let kernels: Kernels;
let pool: ScanPool;
let seq = 0;
const N = 6000;
const NQ = 100;
const CLUSTERS = 300;
const rows = clusteredRows(N, 11, 0, CLUSTERS);
const queries = clusteredRows(NQ, 11, N, CLUSTERS); // held-out points of the same clusters

beforeAll(() => {
  kernels = Kernels.create();
  pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
});
afterAll(async () => {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

async function loaded(
  opts: { annMinRows?: number; annIdleMs?: number; dir?: string; onBackgroundError?: (err: unknown, task: string) => void } = {},
): Promise<Collection> {
  const c = await Collection.open(opts.dir ?? join(root, `c${seq++}`), {
    kernels,
    pool,
    dimension: DIM,
    metric: "hamming",
    durability: "none",
    annMinRows: opts.annMinRows ?? Infinity,
    annIdleMs: opts.annIdleMs,
    reporter: { damage: () => {}, cleared: () => {}, background: opts.onBackgroundError ?? (() => {}) },
  });
  for (let s = 0; s < N; s += 1000) {
    await c.upsert(
      "",
      Array.from({ length: 1000 }, (_, i) => ({ id: `r${s + i}`, bits: rows[s + i]!, metadata: { b: (s + i) % 100 } })),
    );
  }
  await c.settled();
  return c;
}

/** Rows by id: r<i> is rows[i]; late<w> (written by ivf-child.ts during its build) is a copy of rows[w % N]. */
const rowOf = (id: string) => (id.startsWith("late") ? rows[Number(id.slice(4)) % N]! : rows[Number(id.slice(1))]!);

/** recall@10 by distance (ties count): answers within the exact 10th distance among the kept rows. */
async function recall(
  c: Collection,
  opts: { filter?: unknown; keep?: (i: number) => boolean; exact?: boolean } = {},
): Promise<{ recall: number; plans: Set<string> }> {
  let hits = 0;
  const plans = new Set<string>();
  for (const q of queries) {
    const res = await c.query("", { bits: q, topK: 10, filter: opts.filter, exact: opts.exact });
    plans.add(res.plan);
    const kth = kthDistance(rows, q, 10, opts.keep);
    for (const m of res.matches) {
      expect(1 - m.score).toBeCloseTo((2 * hamming(q, rowOf(m.id))) / DIM, 9);
      if (opts.keep) expect(opts.keep(Number(m.id.slice(1)))).toBe(true);
      if (hamming(q, rowOf(m.id)) <= kth) hits++;
    }
  }
  return { recall: hits / (10 * queries.length), plans };
}

describe("approximate index (IVF over packed bits)", () => {
  it("keeps recall@10 >= 0.99 against exact search on clustered rows, and `exact: true` scans everything", async () => {
    const c = await loaded();
    expect(c.indexStats("")).toBeNull();
    const res = await c.buildIndex("");
    expect(res).toEqual({ before: N, after: N });
    const stats = c.indexStats("")!;
    expect(stats.indexedRows).toBe(N);
    expect(stats.deltaRows).toBe(0);
    // the index is small next to the rows it indexes
    expect(stats.bytes).toBeLessThan(0.15 * N * (DIM / 8));
    const approx = await recall(c);
    expect(approx.plans).toEqual(new Set(["ivf"]));
    expect(approx.recall).toBeGreaterThanOrEqual(0.99);
    // metering charges what a probe compared (centroids, probed lists, delta), not the whole namespace
    const probe = await c.query("", { bits: queries[0]!, topK: 10 });
    expect(probe.scanned).toBeGreaterThan(stats.lists);
    expect(probe.scanned).toBeLessThan(N);
    expect((await c.query("", { bits: queries[0]!, topK: 10, exact: true })).scanned).toBe(N);
    const exact = await recall(c, { exact: true });
    expect(exact.plans).toEqual(new Set(["full"]));
    expect(exact.recall).toBe(1);
    // every id is still there once, with its bits
    expect(c.count("")).toBe(N);
    const fetched = c.fetch("", ["r0", "r1234", "r5999"]);
    expect(fetched.map((f) => Buffer.from(f.values as Uint8Array).equals(Buffer.from(rowOf(f.id))))).toEqual([true, true, true]);
    await c.close();
  });

  it("serves filtered queries without losing recall: 1% of rows (exact row list) and 50% (index probed with the filter as a mask)", async () => {
    const c = await loaded();
    await c.buildIndex("");
    const one = await recall(c, { filter: { b: 7 }, keep: (i) => i % 100 === 7 });
    expect(one.plans).toEqual(new Set(["list"]));
    expect(one.recall).toBe(1);
    const half = await recall(c, { filter: { b: { $lt: 50 } }, keep: (i) => i % 100 < 50 });
    expect(half.plans).toEqual(new Set(["ivf-masked"]));
    expect(half.recall).toBeGreaterThanOrEqual(0.99);
    await c.close();
  });

  it("a filter probes the lists nearest the query, more as it keeps fewer rows, when calibration found that safe; else, or when those lists hold too few of its rows, the exact row list", async () => {
    // 30 clusters of ~200 rows: a 14% filter keeps ~28 rows of each, so the lists nearest a query hold its filtered neighbours
    // (at 14% the capped probe reads 2x less than the list; 15% and less took the exact list before)
    const big = clusteredRows(N, 11, 0, 30);
    const bigQueries = clusteredRows(20, 11, N, 30);
    const c = await Collection.open(join(root, `c${seq++}`), {
      kernels,
      pool,
      dimension: DIM,
      metric: "hamming",
      durability: "none",
      annMinRows: Infinity,
    });
    const q0 = bigQueries[0]!;
    const d0 = big.map((r) => hamming(q0, r));
    const sorted = [...d0].sort((a, b) => a - b);
    const median = sorted[N >> 1]!;
    // the 14% of the rows farthest from q0 (by rank: distances tie)
    const farthestRows = new Set([...d0.keys()].sort((a, b) => d0[b]! - d0[a]! || a - b).slice(0, (14 * N) / 100));
    await c.upsert(
      "",
      big.map((r, i) => ({ id: `r${i}`, bits: r, metadata: { b: i % 100, far: d0[i]! > median, farthest: farthestRows.has(i) } })),
    );
    await c.settled();
    await c.buildIndex("");
    const { probe, lists, filterFactor } = c.indexStats("")!;
    expect(filterFactor).toBeGreaterThanOrEqual(1);
    let hits = 0;
    for (const q of bigQueries) {
      const r = await c.query("", { bits: q, topK: 10, filter: { b: { $lt: 14 } } });
      expect(r.plan).toBe("ivf-masked");
      expect(r.probed).toBeLessThanOrEqual(filteredCap(probe!, 10, 0.14, lists, filterFactor));
      expect(r.probed).toBeLessThan(lists);
      const kth = kthDistance(big, q, 10, (i) => i % 100 < 14);
      for (const m of r.matches) {
        const i = Number(m.id.slice(1));
        expect(i % 100).toBeLessThan(14);
        if (hamming(q, big[i]!) <= kth) hits++;
      }
    }
    expect(hits / (10 * bigQueries.length)).toBeGreaterThanOrEqual(0.99);
    // The 14% of the rows farthest from q0: the lists nearest q0 hold too few of them, so the answer comes from the filter's row list, exact.
    const farthest = await c.query("", { bits: q0, topK: 10, filter: { farthest: true } });
    expect(farthest.plan).toBe("list");
    expect(farthest.matches).toHaveLength(10);
    const kth = kthDistance(big, q0, 10, (i) => farthestRows.has(i));
    for (const m of farthest.matches) expect(hamming(q0, big[Number(m.id.slice(1))]!)).toBeLessThanOrEqual(kth);
    // The farthest half (a broad filter): every list the stop rule takes, as without a calibrated probe.
    const far = await c.query("", { bits: q0, topK: 10, filter: { far: true } });
    expect(far.plan).toBe("ivf-masked");
    expect(far.probed).toBeGreaterThan(filteredCap(probe!, 10, 0.5, lists, filterFactor));
    const kthHalf = kthDistance(big, q0, 10, (i) => d0[i]! > median);
    for (const m of far.matches) expect(hamming(q0, big[Number(m.id.slice(1))]!)).toBeLessThanOrEqual(kthHalf);
    await c.close();
    // 300 clusters of 20 rows (a 10% filter keeps 2 of each): no factor reaches the recall, filters keep the exact row list
    const tight = await loaded();
    await tight.buildIndex("");
    expect(tight.indexStats("")!.filterFactor).toBe(0);
    const ten = await recall(tight, { filter: { b: { $lt: 10 } }, keep: (i) => i % 100 < 10 });
    expect(ten.plans).toEqual(new Set(["list"]));
    expect(ten.recall).toBe(1);
    await tight.close();
  });

  it("stores the filter calibration in ivf.bin (version 4); a version 2 file loads with none (filters keep the exact row list), a version 3 file rescores every candidate", async () => {
    const dir = join(root, `c${seq++}`);
    const c = await Collection.open(dir, { kernels, pool, dimension: DIM, metric: "hamming", durability: "none", annMinRows: Infinity });
    await c.upsert(
      "",
      clusteredRows(3000, 5, 0, 10).map((r, i) => ({ id: `r${i}`, bits: r })),
    );
    await c.settled();
    await c.buildIndex("");
    const stats = c.indexStats("")!;
    await c.close();
    const file = readdirSync(join(dir, "parts"), { recursive: true, encoding: "utf8" }).find((f) => f.endsWith("ivf.bin"))!;
    const path = join(dir, "parts", file);
    const v4 = IvfIndex.load(kernels, path, DIM, DIM / 64);
    expect([v4.filterFactor, v4.calibrated, v4.rescoreScale, v4.candidateScale]).toEqual([stats.filterFactor, stats.probe, 1, 1]);
    expect(v4.filterFactor).toBeGreaterThanOrEqual(1);
    v4.dispose();
    const bytes = readFileSync(path);
    // version 3: the same header without the rescore and candidate scales
    const v3 = Buffer.concat([bytes.subarray(0, 40), bytes.subarray(48)]);
    v3.writeUInt32LE(3, 4);
    writeFileSync(path, v3);
    const three = IvfIndex.load(kernels, path, DIM, DIM / 64);
    expect([three.filterFactor, three.calibrated, three.rescoreScale, three.candidateScale, three.lists]).toEqual([
      stats.filterFactor,
      stats.probe,
      1,
      1,
      stats.lists,
    ]);
    three.dispose();
    // version 2: the same header without filterFactor
    const v2 = Buffer.concat([bytes.subarray(0, 36), bytes.subarray(48)]);
    v2.writeUInt32LE(2, 4);
    writeFileSync(path, v2);
    const old = IvfIndex.load(kernels, path, DIM, DIM / 64);
    expect([old.filterFactor, old.calibrated, old.lists]).toEqual([0, stats.probe, stats.lists]);
    old.dispose();
  });

  it("queryBatch probes on the workers and answers as single queries do (and as the exact batch scan without the index)", async () => {
    const c = await loaded();
    const bits = queries.slice(0, 40);
    const exactBatch = await c.queryBatch("", { bits, topK: 10 });
    expect(exactBatch.plan).toBe("full");
    await c.buildIndex("");
    await c.delete("", { ids: ["r1", "r2"] });
    await c.settled();
    const batch = await c.queryBatch("", { bits, topK: 10 });
    expect(batch.plan).toBe("ivf");
    for (let j = 0; j < bits.length; j++) {
      const one = await c.query("", { bits: bits[j]!, topK: 10 });
      expect(batch.matches[j]).toEqual(one.matches);
      const exact = await c.query("", { bits: bits[j]!, topK: 10, exact: true });
      expect(exactBatch.matches[j]!.map((m) => m.score)).toEqual(exact.matches.map((m) => m.score));
    }
    await expect(c.queryBatch("", { bits: [new Uint8Array(3)], topK: 10 })).rejects.toMatchObject({
      code: "E_DIMENSION",
      field: "bits[0]",
    });
    await c.close();
  });

  it("merges a delta too small for a rebuild into the index once upserts stop", async () => {
    const c = await loaded({ annMinRows: N, annIdleMs: 50 });
    await c.buildIndex("");
    // 5% more rows: under ANN_DELTA_FRACTION (no rebuild on write), over ANN_IDLE_DELTA_FRACTION
    await c.upsert(
      "",
      Array.from({ length: N / 20 }, (_, i) => ({ id: `late${i}`, bits: rows[i]!, metadata: { b: i % 100 } })),
    );
    await c.settled();
    await until(
      "the idle merge",
      async () => c.indexStats("")!,
      (s) => s.deltaRows === 0,
      30_000,
    );
    expect(c.indexStats("")!.indexedRows).toBe(N + N / 20);
    const res = await c.query("", { bits: rows[7]!, topK: 2 });
    expect(res.plan).toBe("ivf");
    expect(res.matches.map((m) => m.id).sort()).toEqual(["late7", "r7"]);
    await c.close();
  });

  it("makes writes visible at once: new rows (the delta), deletes and replacements after the build", async () => {
    const c = await loaded();
    await c.buildIndex("");
    const q = queries[0]!;
    await c.upsert("", [{ id: "new", bits: q }]);
    await c.settled(); // acknowledged (durable) -> applied: visible to the next query
    let res = await c.query("", { bits: q, topK: 3 });
    expect(res.plan).toBe("ivf");
    expect(res.matches[0]).toEqual({ id: "new", score: 1 });
    expect(c.indexStats("")!.deltaRows).toBe(1);
    // delete the true nearest indexed row: it is gone from the next answer
    const nearest = (await c.query("", { bits: queries[1]!, topK: 1, exact: true })).matches[0]!.id;
    await c.delete("", { ids: [nearest] });
    await c.settled();
    res = await c.query("", { bits: queries[1]!, topK: 10 });
    expect(res.matches.map((m) => m.id)).not.toContain(nearest);
    // replace an indexed row's bits: it is found at its new place (the delta), not the old one
    await c.upsert("", [{ id: "r42", bits: queries[2]! }]);
    await c.settled();
    res = await c.query("", { bits: queries[2]!, topK: 1 });
    expect(res.matches[0]).toEqual({ id: "r42", score: 1 });
    res = await c.query("", { bits: rows[42]!, topK: 10 });
    expect(res.matches.every((m) => m.id !== "r42" || m.score < 1)).toBe(true);
    // a rebuild merges the delta into the lists
    await c.buildIndex("");
    expect(c.indexStats("")!.deltaRows).toBe(0);
    expect((await c.query("", { bits: q, topK: 1 })).matches[0]).toEqual({ id: "new", score: 1 });
    await c.close();
  });

  it("is rebuilt in the background past annMinRows, keeps serving during the build, and is reloaded on open", async () => {
    const dir = join(root, `c${seq++}`);
    const c = await loaded({ annMinRows: 5000, dir });
    // queries and writes while the build that the applier started runs
    const during = await c.query("", { bits: queries[3]!, topK: 10 });
    expect(during.matches).toHaveLength(10);
    await c.upsert("", [{ id: "during", bits: queries[4]! }]);
    await c.settled();
    expect((await c.query("", { bits: queries[4]!, topK: 1 })).matches[0]!.id).toBe("during");
    await c.compact(""); // waits for the running build (same slot)
    expect(c.indexStats("")).not.toBeNull();
    expect((await c.query("", { bits: queries[4]!, topK: 1 })).matches[0]!.id).toBe("during");
    const before = (await c.query("", { bits: queries[5]!, topK: 10 })).matches;
    await c.close();
    const again = await Collection.open(dir, { kernels, pool, annMinRows: 5000 });
    expect(again.indexStats("")).not.toBeNull();
    const after = await again.query("", { bits: queries[5]!, topK: 10 });
    expect(after.plan).toBe("ivf");
    expect(after.matches).toEqual(before);
    expect(again.count("")).toBe(N + 1);
    await again.close();
  });

  it("keeps every row written during a build, up to its swap (rows applied while ivf.bin was being written were lost)", async () => {
    const c = await loaded();
    let done = false;
    let written = 0;
    const writer = async (w: number) => {
      for (let i = 0; !done; i++) {
        await c.upsert("", [{ id: `late${w * 100_000 + i}`, bits: rows[(w * 100_000 + i) % N]! }]);
        written++;
        await new Promise((r) => setTimeout(r, 1)); // a steady trickle, which the build's catch-up outruns
      }
    };
    const build = c.buildIndex("").finally(() => (done = true));
    await Promise.all([build, writer(1), writer(2), writer(3)]);
    await c.settled();
    expect(written).toBeGreaterThan(0);
    expect(c.count("")).toBe(N + written);
    expect(c.indexStats("")).not.toBeNull();
    await c.close();
  });

  it("a checkpoint during a build leaves the build's partition alone (it deleted it as unreferenced: every build spanning a checkpoint failed)", async () => {
    const c = await loaded();
    let done = false;
    let checkpoints = 0;
    const build = c.buildIndex("").finally(() => (done = true));
    while (!done) {
      await c.checkpoint();
      checkpoints++;
      await new Promise((r) => setTimeout(r, 1));
    }
    await build;
    expect(checkpoints).toBeGreaterThan(1);
    expect(c.indexStats("")).toMatchObject({ indexedRows: N, deltaRows: 0 });
    expect((await recall(c)).plans).toEqual(new Set(["ivf"]));
    await c.close();
  });

  it("tells the reporter when a background build fails (such failures were swallowed), and a later write builds again", async () => {
    const dir = join(root, `c${seq++}`);
    const failures: string[] = [];
    let broke = false;
    const breakBuild = async () => {
      // the build's new partition directory, removed under it: writing its ivf.bin fails (ENOENT)
      for (let i = 0; i < 100_000 && !broke; i++) {
        const fresh = readdirSync(join(dir, "parts")).filter((d) => d !== "p0");
        if (fresh.length > 0) {
          rmSync(join(dir, "parts", fresh[0]!), { recursive: true, force: true });
          broke = true;
        } else await new Promise((r) => setImmediate(r));
      }
    };
    const [c] = await Promise.all([
      loaded({ dir, annMinRows: N, onBackgroundError: (err, task) => failures.push(`${task}: ${(err as Error).message}`) }),
      breakBuild(),
    ]);
    expect(broke).toBe(true);
    await until(
      "the failure to be told",
      async () => failures,
      (f) => f.length > 0,
    );
    expect(failures[0]).toMatch(/^index build of namespace '' in collection:.*: ENOENT/);
    expect(c.indexStats("")).toBeNull();
    expect(c.count("")).toBe(N);
    await c.upsert("", [{ id: "again", bits: rows[0]! }]); // the next write starts a build, which now completes
    await until(
      "the index",
      async () => c.indexStats(""),
      (s) => s !== null,
    );
    expect(failures).toHaveLength(1);
    await c.close();
  });

  it("probes on a worker past the pool's probeInlineBelow rows and answers exactly as the in-thread probe", async () => {
    const dir = join(root, `c${seq++}`);
    const c = await loaded({ dir });
    await c.buildIndex("");
    const here = await Promise.all(queries.slice(0, 30).map((q) => c.query("", { bits: q, topK: 10 })));
    await c.close();
    const workers = new ScanPool(kernels, { threads: 2, probeInlineBelow: 0 });
    try {
      const again = await Collection.open(dir, { kernels, pool: workers });
      const tasks = () => (workers as unknown as { piscina: { completed: number } }).piscina.completed;
      const before = tasks();
      const there = await Promise.all(queries.slice(0, 30).map((q) => again.query("", { bits: q, topK: 10 })));
      expect(tasks() - before).toBeGreaterThanOrEqual(30); // one probe task per query
      for (const [i, r] of there.entries()) {
        expect(r.plan).toBe("ivf");
        expect(r.matches).toEqual(here[i]!.matches);
        expect(r.scanned).toBe(here[i]!.scanned);
      }
      await again.close();
    } finally {
      await workers.close();
    }
  });

  it("close() during a build abandons it: the collection reopens with every row and no index", async () => {
    const dir = join(root, `c${seq++}`);
    const c = await loaded({ dir });
    const building = c.buildIndex("");
    await new Promise((r) => setImmediate(r));
    await c.close();
    await expect(building).rejects.toMatchObject({ code: "E_CLOSED" });
    const again = await Collection.open(dir, { kernels, pool, annMinRows: Infinity });
    expect(again.indexStats("")).toBeNull();
    expect(again.count("")).toBe(N);
    expect((await recall(again)).recall).toBe(1);
    await again.close();
  });

  it("a crash mid-build (SIGKILL) leaves a consistent collection: every acknowledged row, exact answers, and a later build works", async () => {
    const dir = join(root, `crash${seq++}`);
    const child = spawn(
      process.execPath,
      ["--import", "tsx", fileURLToPath(new URL("./ivf-child.ts", import.meta.url)), dir, String(N), String(CLUSTERS)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const acked: string[] = [];
    let out = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        for (const m of out.matchAll(/acked (\S+)/g)) if (!acked.includes(m[1]!)) acked.push(m[1]!);
        // kill once the build is under way and some writes made during it were acknowledged
        if (out.includes("building") && acked.length >= 3 && child.exitCode === null) child.kill("SIGKILL");
      });
      child.on("exit", () => resolve());
      child.on("error", reject);
    });
    expect(out).toContain("building");
    expect(out).not.toContain("built"); // killed mid-build
    const c = await Collection.open(dir, { kernels, pool, annMinRows: Infinity });
    expect(c.indexStats("")).toBeNull();
    expect(c.fetch("", acked).map((f) => f.id)).toEqual(acked);
    expect(c.fetch("", ["r0", `r${N - 1}`])).toHaveLength(2);
    const exact = await recall(c);
    expect(exact.recall).toBe(1);
    await c.buildIndex("");
    expect(c.indexStats("")!.indexedRows).toBe(c.count(""));
    expect((await recall(c)).recall).toBeGreaterThanOrEqual(0.99);
    await c.close();
  }, 120_000);

  it("calibrates its probe at build: on overlapping clusters default queries still reach recall@10 >= 0.99", async () => {
    const spreadRows = clusteredRows(N, 12, 0, CLUSTERS, DIM, 3);
    const spreadQueries = clusteredRows(NQ, 12, N, CLUSTERS, DIM, 3);
    const c = await Collection.open(join(root, `spread${seq++}`), {
      kernels,
      pool,
      dimension: DIM,
      metric: "hamming",
      durability: "none",
      annMinRows: Infinity,
    });
    for (let s = 0; s < N; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `s${s + i}`, bits: spreadRows[s + i]! })),
      );
    await c.settled();
    await c.buildIndex("");
    const calibrated = c.indexStats("")!.probe;
    let hits = 0;
    let uncalibrated = 0;
    for (const q of spreadQueries) {
      const kth = kthDistance(spreadRows, q, 10);
      const res = await c.query("", { bits: q, topK: 10 });
      expect(res.plan).toBe(calibrated === null ? "full" : "ivf");
      hits += res.matches.filter((m) => hamming(q, spreadRows[Number(m.id.slice(1))]!) <= kth).length;
      const fixed = await c.query("", { bits: q, topK: 10, probe: { minProbe: 1, maxProbe: 4, slack: 0 } });
      uncalibrated += fixed.matches.filter((m) => hamming(q, spreadRows[Number(m.id.slice(1))]!) <= kth).length;
    }
    expect(hits / (10 * NQ)).toBeGreaterThanOrEqual(0.99);
    // the cheapest setting, which tight clusters get, is not enough here: the calibration had to look further
    expect(uncalibrated / (10 * NQ)).toBeLessThan(0.99);
    // and the choice survives a reopen (it is in the index file)
    await c.close();
    const again = await Collection.open(c.dir, {
      kernels,
      pool,
      dimension: DIM,
      metric: "hamming",
      durability: "none",
      annMinRows: Infinity,
    });
    expect(again.indexStats("")!.probe).toEqual(calibrated);
    await again.close();
  });

  it("stops calibrating at the first probe setting past the scan cap: rows without list structure get no probe, and the ladder's costlier steps are not run", async () => {
    // uniformly random 1024-bit rows: no list structure (as the text encoder's vectors of short texts, issue 32 item 3)
    const next = mulberry32(20261127);
    const random = Array.from({ length: N }, () => Uint8Array.from({ length: DIM / 8 }, () => next() & 255));
    const c = await Collection.open(join(root, `c${seq++}`), {
      kernels,
      pool,
      dimension: DIM,
      metric: "hamming",
      durability: "none",
      annMinRows: Infinity,
    });
    for (let s = 0; s < N; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `r${s + i}`, bits: random[s + i]! })),
      );
    await c.settled();
    const ivfProbe = kernels.ivfProbe.bind(kernels);
    const caps: number[] = [];
    kernels.ivfProbe = (rows, ivf, q, k, limits, mask) => {
      caps.push(limits.cap);
      return ivfProbe(rows, ivf, q, k, limits, mask);
    };
    try {
      await c.buildIndex("");
    } finally {
      kernels.ivfProbe = ivfProbe;
    }
    const stats = c.indexStats("")!;
    expect(stats.probe).toBeNull();
    // calibration ran the ladder's first `steps` settings, CALIBRATION_SAMPLE probes each, with that setting's list cap (k = 10)
    const steps = caps.length / CALIBRATION_SAMPLE;
    expect(Number.isInteger(steps)).toBe(true);
    expect(steps).toBeLessThan(PROBE_LADDER.length);
    const capOf = (i: number) => Math.min(stats.lists, PROBE_LADDER[i]!.maxProbe);
    expect(caps).toEqual(Array.from({ length: caps.length }, (_, j) => capOf(Math.floor(j / CALIBRATION_SAMPLE))));
    // the settings before the last compared at most ANN_MAX_SCAN_FRACTION of the rows (every probed list at most its cap);
    // the last more (here every list up to its cap is probed: random rows leave the radius rule nothing to skip)
    const fraction = (cap: number) => (stats.lists + (cap * N) / stats.lists) / N;
    for (let i = 0; i < steps - 1; i++) expect(fraction(capOf(i))).toBeLessThanOrEqual(ANN_MAX_SCAN_FRACTION);
    expect(fraction(capOf(steps - 1))).toBeGreaterThan(ANN_MAX_SCAN_FRACTION);
    // and exact answers
    const res = await c.query("", { bits: random[7]!, topK: 10 });
    expect(res.plan).toBe("full");
    expect(res.matches[0]!.id).toBe("r7");
    await c.close();
  });

  it("calibrates a cosine index below 4 lists per 10 candidates where that keeps recall@10 >= 0.99 (fewer lists probed)", async () => {
    // 1024-d floats near the tight clusters' sign patterns: a query's 100 rescoring candidates lie in a few lists
    const dim = DIM;
    const c = await Collection.open(join(root, `cosfew${seq++}`), {
      kernels,
      pool,
      dimension: dim,
      durability: "none",
      annMinRows: Infinity,
    });
    const vec = (r: Uint8Array, i: number) => {
      const noise = mulberry32(i + 1);
      return Array.from({ length: dim }, (_, j) => ((r[j >> 3]! >> (j & 7)) & 1 ? 1 : -1) + 0.3 * (noise() / 2 ** 32 - 0.5));
    };
    for (let s = 0; s < N; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `v${s + i}`, values: vec(rows[s + i]!, s + i) })),
      );
    await c.settled();
    await c.buildIndex("");
    const probe = c.indexStats("")!.probe!;
    // the old ladder's cheapest step probed up to 4 lists per 10 candidates
    expect(probe.maxProbe).toBeLessThan(4);
    let same = 0;
    let lists = 0;
    let fourLists = 0;
    for (let j = 0; j < NQ; j++) {
      const q = vec(queries[j]!, N + j);
      const a = await c.query("", { vector: q, topK: 10 });
      const e = await c.query("", { vector: q, topK: 10, exact: true });
      expect(a.plan).toBe("ivf");
      lists += a.probed!;
      fourLists += (await c.query("", { vector: q, topK: 10, probe: { minProbe: 1, maxProbe: 4, slack: 0 } })).probed!;
      const kth = e.matches[9]!.score;
      same += a.matches.filter((m) => m.score >= kth - 1e-9).length;
    }
    expect(same / (10 * NQ)).toBeGreaterThanOrEqual(0.99);
    expect(lists).toBeLessThan(fourLists);
    await c.close();
  });

  it("calibrates how many candidates a cosine index's default queries keep and rescore: half of each on tight clusters, answers checked against brute force (fast-check, fixed seed)", async () => {
    const dim = DIM;
    const dir = join(root, `cosrescore${seq++}`);
    const c = await Collection.open(dir, { kernels, pool, dimension: dim, durability: "none", annMinRows: Infinity });
    const vec = (r: Uint8Array, i: number, amp: number) => {
      const noise = mulberry32(i + 1);
      return Float32Array.from({ length: dim }, (_, j) => ((r[j >> 3]! >> (j & 7)) & 1 ? 1 : -1) + amp * (noise() / 2 ** 32 - 0.5));
    };
    const stored = Array.from({ length: N }, (_, i) => vec(rows[i]!, i, 0.3));
    for (let s = 0; s < N; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `v${s + i}`, values: Array.from(stored[s + i]!) })),
      );
    await c.settled();
    await c.buildIndex("");
    const stats = c.indexStats("")!;
    expect(stats.probe).not.toBeNull();
    // the estimate's best 20 of 50 candidates hold the 100-candidate pool's top-10 here (before: every query kept 100 and rescored 40)
    expect([stats.candidateScale, stats.rescoreScale]).toEqual([0.5, 0.5]);
    const cosine = (a: Float32Array, b: Float32Array) => {
      let ab = 0,
        aa = 0,
        bb = 0;
      for (let j = 0; j < dim; j++) {
        ab += a[j]! * b[j]!;
        aa += a[j]! * a[j]!;
        bb += b[j]! * b[j]!;
      }
      return ab / Math.sqrt(aa * bb);
    };
    let found = 0;
    let asked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          near: fc.integer({ min: 0, max: N - 1 }),
          amp: fc.constantFrom(0.1, 0.3, 0.6, 1.2),
          seed: fc.integer({ min: 0, max: 1e9 }),
        }),
        async ({ near, amp, seed }) => {
          // a held-out query near a stored row's cluster pattern, at several noise levels
          const q = vec(rows[near]!, N + 1 + seed, amp);
          const truth = stored.map((x, i) => ({ i, s: cosine(q, x) })).sort((a, b) => b.s - a.s || a.i - b.i);
          const res = await c.query("", { vector: q, topK: 10 });
          expect(res.plan).toBe("ivf");
          expect(res.matches).toHaveLength(10);
          for (const [rank, m] of res.matches.entries()) {
            // a rescored score is the row's exact cosine, and no rank beats the brute-force one
            expect(m.score).toBeCloseTo(cosine(q, stored[Number(m.id.slice(1))]!), 5);
            expect(m.score).toBeLessThanOrEqual(truth[rank]!.s + 1e-5);
          }
          const kth = truth[9]!.s;
          found += res.matches.filter((m) => m.score >= kth - 1e-5).length;
          asked += 10;
        },
      ),
      { seed: 3203, numRuns: 80 },
    );
    expect(found / asked).toBeGreaterThanOrEqual(0.99);
    await c.close();
    // the scale is in ivf.bin (version 4) and comes back on open
    const again = await Collection.open(dir, { kernels, pool, dimension: dim, durability: "none", annMinRows: Infinity });
    expect([again.indexStats("")!.candidateScale, again.indexStats("")!.rescoreScale]).toEqual([0.5, 0.5]);
    await again.close();
  });

  it("answers a cosine index's default query with at most two malloc'd typed arrays (V8 keeps only those of <= 64 bytes on its heap), the same answers as exact where it found them", async () => {
    const dim = DIM;
    const c = await Collection.open(join(root, `cosalloc${seq++}`), {
      kernels,
      pool,
      dimension: dim,
      durability: "none",
      annMinRows: Infinity,
    });
    const vec = (r: Uint8Array, i: number, amp: number) => {
      const noise = mulberry32(i + 1);
      return Float32Array.from({ length: dim }, (_, j) => ((r[j >> 3]! >> (j & 7)) & 1 ? 1 : -1) + amp * (noise() / 2 ** 32 - 0.5));
    };
    for (let s = 0; s < N; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `v${s + i}`, values: Array.from(vec(rows[s + i]!, s + i, 0.3)) })),
      );
    await c.settled();
    await c.buildIndex("");
    const qs = Array.from({ length: 20 }, (_, j) => vec(queries[j]!, N + 1 + j, 0.3));
    for (const q of qs) await c.query("", { vector: q, topK: 10 }); // warm: lazily made state is not per query
    // Count typed arrays made with their own backing store (not views of a buffer) past 64 bytes, while the queries run.
    const names = ["Uint8Array", "Uint32Array", "Int32Array", "Float32Array", "Float64Array"] as const;
    const g = globalThis as unknown as Record<string, unknown>;
    const saved = names.map((name) => g[name]);
    const made: string[] = [];
    const own = (a: ArrayBufferView, name: string) => {
      if (a.byteLength > 64) made.push(`${name} ${new Error().stack!.split("\n")[3]!.trim()}`);
      return a;
    };
    for (const [i, name] of names.entries()) {
      const T = saved[i] as unknown as { new (...args: unknown[]): ArrayBufferView; from(...args: unknown[]): ArrayBufferView };
      g[name] = new Proxy(T, {
        construct: (t, args, nt) => {
          const a = Reflect.construct(t, args, nt) as ArrayBufferView;
          const view = args[0] instanceof ArrayBuffer || args[0] instanceof SharedArrayBuffer;
          return view ? a : own(a, name);
        },
        get: (t, p, r) => (p === "from" ? (...args: unknown[]) => own(t.from(...args), name) : Reflect.get(t, p, r)),
      });
    }
    const answers = [];
    try {
      for (const q of qs) answers.push(await c.query("", { vector: q, topK: 10 }));
    } finally {
      for (const [i, name] of names.entries()) g[name] = saved[i];
    }
    // Before: six a query (the probe's rows and dists, the rescoring's sorted copy, its heap's scores, the estimate's
    // quickselect copy and its kept rows). Now the probe's one buffer for rows and dists and the kept rows.
    expect(answers.every((a) => a.plan === "ivf")).toBe(true);
    expect(made.length, made.join("\n")).toBeLessThanOrEqual(2 * qs.length);
    for (const [j, q] of qs.entries()) {
      const exact = await c.query("", { vector: q, topK: 10, exact: true });
      const scoreOf = new Map(exact.matches.map((m) => [m.id, m.score]));
      // a rescored hit the exact scan also found has the exact scan's score, bit for bit
      for (const m of answers[j]!.matches) if (scoreOf.has(m.id)) expect(m.score).toBe(scoreOf.get(m.id));
    }
    await c.close();
  });

  it("ranks cosine collections through the index too (Hamming candidates, then exact rescoring)", async () => {
    const dim = 64;
    const c = await Collection.open(join(root, `cos${seq++}`), { kernels, pool, dimension: dim, durability: "none", annMinRows: Infinity });
    const vec = (i: number) => {
      const r = rows[i]!;
      return Array.from({ length: dim }, (_, j) => ((r[j >> 3]! >> (j & 7)) & 1 ? 1 : -1) + 0.3 * Math.sin(i * 7.1 + j));
    };
    for (let s = 0; s < 3000; s += 1000)
      await c.upsert(
        "",
        Array.from({ length: 1000 }, (_, i) => ({ id: `v${s + i}`, values: vec(s + i) })),
      );
    await c.settled();
    await c.buildIndex("");
    // 64-bit codes of 3,000 rows: the calibration finds the exact scan as good (the centroids alone are 15% of the rows) ...
    expect(c.indexStats("")!.probe).toBeNull();
    expect((await c.query("", { vector: vec(5), topK: 10 })).plan).toBe("full");
    // ... so this probes explicitly, to check ranking through the index
    const probe = { minProbe: 16, maxProbe: 256, slack: 8 };
    let same = 0;
    for (let j = 0; j < 30; j++) {
      const q = vec(j * 97).map((x, i) => x + 0.2 * Math.cos(i + j));
      const a = await c.query("", { vector: q, topK: 10, probe });
      const e = await c.query("", { vector: q, topK: 10, exact: true });
      expect(a.plan).toBe("ivf");
      const truth = new Set(e.matches.map((m) => m.id));
      same += a.matches.filter((m) => truth.has(m.id)).length;
    }
    expect(same / 300).toBeGreaterThanOrEqual(0.99);
    await c.close();
  });
});
