/** @module scan-bench — exact top-k over N x 1024-bit rows: svc against its peers on the same data, one run. */
import { Kernels, type TopK as SvcTopK } from "../src/kernels/abi.js";
import { RowArena } from "../src/kernels/row-arena.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { makeQueries, makeRows } from "./data.js";
import { NaiveJsEngine } from "./peers/naive-js.js";
import type { PeerEngine } from "./peers/peer.js";
import { SqliteVecEngine } from "./peers/sqlite-vec.js";
import { UsearchEngine } from "./peers/usearch.js";
import { summarize, timeCalls } from "./stats.js";

export interface ScanResult {
  engine: string;
  n: number;
  threads: number;
  /** queries per call: 1 for single-query rows, the batch size for blocked rows */
  batch: number;
  calls: number;
  p50Ms: number;
  p99Ms: number;
  /** rows x queries scanned per second at p50 */
  mvecPerSec: number;
  /** queries answered per second (sequential calls, from the mean) */
  qps: number;
  /** every answer's distances equal svc's exact answer */
  agrees: boolean;
}

/** A pure streaming read of the same rows (readProbe): what a scan could reach on this machine. */
export interface ProbeResult {
  n: number;
  p50Ms: number;
  mrowsPerSec: number;
  gbPerSec: number;
}

export interface CrossoverResult {
  n: number;
  inThreadP50Ms: number;
  pooledP50Ms: number;
}

export interface ScanBenchOptions {
  sizes: number[];
  dimBits: number;
  k: number;
  batch: number;
  seed: number;
  /** timed single queries for fast engines, and for engines slower than ~20 ms */
  calls: number;
  slowCalls: number;
  log: (line: string) => void;
}

const BATCH_CALLS = 8;

/** One timed configuration: `run(i)` answers call i and says whether it matched svc's exact answer. */
interface Lane {
  name: string;
  threads: number;
  batch: number;
  run: (i: number) => boolean | Promise<boolean>;
}

/** Consecutive calls a lane makes per round: the first may find idle worker threads asleep. */
const BURST = 5;

/**
 * Interleaves the lanes in bursts of BURST calls (every lane's burst r before any lane's
 * burst r + 1), so that a noisy neighbour slows every engine alike instead of whichever ran
 * at that moment, while most calls still find the engine's threads awake. Lanes slower than
 * 20 ms per call stop after slowCalls; batch lanes after BATCH_CALLS.
 */
async function runRoundRobin(lanes: Lane[], o: ScanBenchOptions): Promise<Array<{ lane: Lane; ms: number[]; agrees: boolean }>> {
  const state = lanes.map((lane) => ({ lane, ms: [] as number[], agrees: true, calls: lane.batch > 1 ? BATCH_CALLS : o.calls }));
  for (const st of state) {
    for (let w = 0; w < 3; w++) st.agrees &&= await st.lane.run(w); // warm-up (JIT tier-up, worker start)
    const t0 = performance.now();
    await st.lane.run(3);
    if (performance.now() - t0 > 20) st.calls = Math.min(st.calls, st.lane.batch > 1 ? BATCH_CALLS : o.slowCalls);
  }
  const rounds = Math.max(...state.map((st) => st.calls));
  for (let i = 0; i < rounds; i += BURST) {
    for (const st of state) {
      for (let c = i; c < Math.min(i + BURST, st.calls); c++) {
        const t0 = process.hrtime.bigint();
        const ok = await st.lane.run(c);
        st.ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        st.agrees &&= ok;
      }
    }
  }
  return state;
}

export async function runScanBench(
  o: ScanBenchOptions,
): Promise<{ scans: ScanResult[]; probes: ProbeResult[]; crossover: CrossoverResult[] }> {
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const rowBytes = (Math.ceil(o.dimBits / 128) * 128) / 8;
  const scans: ScanResult[] = [];
  const probes: ProbeResult[] = [];
  try {
    for (const n of o.sizes) {
      o.log(`\n# N = ${n.toLocaleString("en-US")} x ${o.dimBits} bits, top-${o.k}`);
      const rows = makeRows(n, rowBytes, o.seed);
      const nq = Math.max(o.calls, o.batch * BATCH_CALLS);
      const queries = makeQueries(rows, n, rowBytes, nq, o.seed + 1);
      const arena = new RowArena(kernels.heap, o.dimBits, n);
      arena.append(rows);
      const qBase = kernels.heap.put(queries);
      const qPtr = (j: number) => qBase + (j % nq) * rowBytes;
      const truth: SvcTopK[] = [];
      for (let j = 0; j < nq; j++) truth.push(kernels.topK(arena, 0, n, qPtr(j), o.k));
      const sameAsTruth = (j: number, dists: ArrayLike<number>) => truth[j % nq]!.dists.every((d, i) => d === dists[i]);

      const probe = summarize(await timeCalls(o.calls, 5, () => kernels.readProbe(arena))).p50;
      probes.push({ n, p50Ms: probe, mrowsPerSec: n / probe / 1000, gbPerSec: (n * rowBytes) / probe / 1e6 });
      o.log(
        `${"memory read probe (no compute)".padEnd(34)} thr=1           p50 ${probe.toFixed(3).padStart(9)} ms  ${(n / probe / 1000).toFixed(1).padStart(7)} Mrows/s  ${((n * rowBytes) / probe / 1e6).toFixed(1)} GB/s`,
      );

      const qBytes = (j: number) => queries.subarray((j % nq) * rowBytes, ((j % nq) + 1) * rowBytes);
      const batchBytes = (c: number) => {
        const f = (c * o.batch) % nq;
        return queries.slice(f * rowBytes, (f + o.batch) * rowBytes);
      };
      const batched = (c: number, res: Array<{ dists: ArrayLike<number> }>) =>
        res.every((r, i) => sameAsTruth(((c * o.batch) % nq) + i, r.dists));
      const lanes: Lane[] = [
        { name: "svc (in-thread)", threads: 1, batch: 1, run: (j) => sameAsTruth(j, kernels.topK(arena, 0, n, qPtr(j), o.k).dists) },
        {
          name: "svc (2 workers)",
          threads: 2,
          batch: 1,
          run: async (j) => sameAsTruth(j, (await pool.topK(arena, qPtr(j), o.k, { stripes: 2 })).dists),
        },
        {
          name: "svc blocked (in-thread)",
          threads: 1,
          batch: o.batch,
          run: (c) => batched(c, kernels.topKMulti(arena, 0, n, qPtr((c * o.batch) % nq), o.batch, o.k)),
        },
        {
          name: "svc blocked (2 workers)",
          threads: 2,
          batch: o.batch,
          run: async (c) => batched(c, await pool.topKBatch(arena, qPtr((c * o.batch) % nq), o.batch, o.k)),
        },
      ];
      const peers: Array<[PeerEngine, number]> = [
        [new UsearchEngine({ threads: 1 }), 1],
        [new UsearchEngine({ threads: 2 }), 2],
        [new SqliteVecEngine(), 1],
        [new NaiveJsEngine(), 1],
      ];
      for (const [peer, threads] of peers) {
        const t0 = performance.now();
        await peer.build(rows, n, o.dimBits, rowBytes);
        o.log(`  (${peer.name}: build ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
        lanes.push({ name: peer.name, threads, batch: 1, run: (j) => sameAsTruth(j, peer.search(qBytes(j), o.k).dists) });
        if (peer.searchBatch)
          lanes.push({
            name: `${peer.name} batch`,
            threads,
            batch: o.batch,
            run: (c) => batched(c, peer.searchBatch!(batchBytes(c), o.batch, o.k)),
          });
      }
      for (const r of await runRoundRobin(lanes, o)) {
        const base = { engine: r.lane.name, n, threads: r.lane.threads, batch: r.lane.batch };
        const s = summarize(r.ms);
        const res: ScanResult = {
          ...base,
          calls: r.ms.length,
          p50Ms: s.p50,
          p99Ms: s.p99,
          mvecPerSec: (n * r.lane.batch) / (s.p50 / 1000) / 1e6,
          qps: (1000 * r.lane.batch) / s.mean,
          agrees: r.agrees,
        };
        scans.push(res);
        o.log(
          `${res.engine.padEnd(34)} thr=${res.threads} batch=${String(res.batch).padEnd(3)} p50 ${s.p50.toFixed(3).padStart(9)} ms  p99 ${s.p99.toFixed(3).padStart(9)} ms  ${res.mvecPerSec.toFixed(1).padStart(7)} Mvec/s  ${res.qps.toFixed(0).padStart(6)} q/s  ${res.agrees ? "exact" : "MISMATCH"}`,
        );
      }
      for (const [peer] of peers) peer.close();
      kernels.heap.release(qBase);
      arena.dispose();
    }
    return { scans, probes, crossover: await measureCrossover(kernels, pool, o) };
  } finally {
    await pool.close();
  }
}

/** In-thread vs 2-worker single query by N: where striping starts to pay for its dispatch. */
async function measureCrossover(kernels: Kernels, pool: ScanPool, o: ScanBenchOptions): Promise<CrossoverResult[]> {
  o.log("\n# crossover: in-thread vs 2 workers, single query");
  const out: CrossoverResult[] = [];
  for (const n of [2_000, 8_000, 16_000, 32_000, 48_000, 64_000, 128_000, 256_000]) {
    const rows = makeRows(n, 128, o.seed + n);
    const arena = new RowArena(kernels.heap, 1024, n);
    arena.append(rows);
    const q = kernels.heap.put(makeQueries(rows, n, 128, 1, o.seed));
    const inThread = summarize(await timeCalls(200, 50, () => kernels.topK(arena, 0, n, q, o.k))).p50;
    const pooled = summarize(await timeCalls(200, 50, () => pool.topK(arena, q, o.k, { stripes: 2 }))).p50;
    out.push({ n, inThreadP50Ms: inThread, pooledP50Ms: pooled });
    o.log(`N=${String(n).padStart(7)}  in-thread ${inThread.toFixed(3)} ms  2 workers ${pooled.toFixed(3)} ms`);
    kernels.heap.release(q);
    arena.dispose();
  }
  return out;
}
