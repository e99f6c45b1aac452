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

export async function runScanBench(o: ScanBenchOptions): Promise<{ scans: ScanResult[]; probes: ProbeResult[]; crossover: CrossoverResult[] }> {
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

      const record = (engine: string, threads: number, batch: number, ms: number[], agrees: boolean) => {
        const s = summarize(ms);
        const r: ScanResult = {
          engine, n, threads, batch, calls: ms.length, p50Ms: s.p50, p99Ms: s.p99,
          mvecPerSec: (n * batch) / (s.p50 / 1000) / 1e6, qps: (1000 * batch) / s.mean, agrees,
        };
        scans.push(r);
        o.log(`${engine.padEnd(34)} thr=${threads} batch=${String(batch).padEnd(3)} p50 ${s.p50.toFixed(3).padStart(9)} ms  p99 ${s.p99.toFixed(3).padStart(9)} ms  ${r.mvecPerSec.toFixed(1).padStart(7)} Mvec/s  ${r.qps.toFixed(0).padStart(6)} q/s  ${agrees ? "exact" : "MISMATCH"}`);
      };

      const probe = summarize(await timeCalls(o.calls, 5, () => kernels.readProbe(arena))).p50;
      probes.push({ n, p50Ms: probe, mrowsPerSec: n / probe / 1000, gbPerSec: (n * rowBytes) / probe / 1e6 });
      o.log(`${"memory read probe (no compute)".padEnd(34)} thr=1           p50 ${probe.toFixed(3).padStart(9)} ms  ${(n / probe / 1000).toFixed(1).padStart(7)} Mrows/s  ${((n * rowBytes) / probe / 1e6).toFixed(1)} GB/s`);

      // svc, single query
      let ok = true;
      let ms = await timeCalls(o.calls, 20, (j) => { const r = kernels.topK(arena, 0, n, qPtr(j), o.k); ok &&= sameAsTruth(j, r.dists); });
      record("svc (in-thread)", 1, 1, ms, ok);
      ok = true;
      ms = await timeCalls(o.calls, 20, async (j) => { const r = await pool.topK(arena, qPtr(j), o.k, { stripes: 2 }); ok &&= sameAsTruth(j, r.dists); });
      record("svc (2 workers)", 2, 1, ms, ok);

      // svc, blocked multi-query
      const batchOk = (first: number, res: SvcTopK[]) => res.every((r, i) => sameAsTruth(first + i, r.dists));
      ok = true;
      ms = await timeCalls(BATCH_CALLS, 2, (c) => { const f = (c * o.batch) % nq; const r = kernels.topKMulti(arena, 0, n, qPtr(f), o.batch, o.k); ok &&= batchOk(f, r); });
      record(`svc blocked (in-thread)`, 1, o.batch, ms, ok);
      ok = true;
      ms = await timeCalls(BATCH_CALLS, 2, async (c) => { const f = (c * o.batch) % nq; const r = await pool.topKBatch(arena, qPtr(f), o.batch, o.k); ok &&= batchOk(f, r); });
      record(`svc blocked (2 workers)`, 2, o.batch, ms, ok);

      // peers
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
        const probe = summarize(await timeCalls(3, 1, (j) => peer.search(queries.subarray(j * rowBytes, (j + 1) * rowBytes), o.k)));
        const calls = probe.p50 > 20 ? o.slowCalls : o.calls;
        ok = true;
        ms = await timeCalls(calls, 2, (j) => {
          const q = queries.subarray((j % nq) * rowBytes, (j % nq + 1) * rowBytes);
          ok &&= sameAsTruth(j, peer.search(q, o.k).dists);
        });
        record(peer.name, threads, 1, ms, ok);
        if (peer.searchBatch) {
          ok = true;
          ms = await timeCalls(Math.min(BATCH_CALLS, calls), 1, (c) => {
            const f = (c * o.batch) % nq;
            const res = peer.searchBatch!(queries.slice(f * rowBytes, (f + o.batch) * rowBytes), o.batch, o.k);
            ok &&= res.every((r, i) => sameAsTruth(f + i, r.dists));
          });
          record(`${peer.name} batch`, threads, o.batch, ms, ok);
        }
        peer.close();
      }
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
