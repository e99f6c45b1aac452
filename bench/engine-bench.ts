/** @module engine-bench — durable ingest, ack -> visible, checkpoint, restart, filtered top-10, recall and RSS of a collection. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { summarize, type Latency } from "./stats.js";
import { ClusteredVectors } from "./engine/vectors.js";
import { sqliteVecDurableIngest } from "./peers/sqlite-vec-ingest.js";

export interface EngineResult {
  n: number;
  dim: number;
  batch: number;
  inFlight: number;
  ingest: { ackedPerSec: number; visiblePerSec: number; walMBPerSec: number; fsyncs: number; seconds: number };
  visibleUnderLoad: Latency;
  visibleSteady: Latency & { rate: number };
  checkpointSeconds: number;
  restart: { openMs: number; rssAfterOpenMB: number; peakRssMB: number; count: number };
  /** stages: mean ms per query in filter compile, 1-bit scan, asymmetric estimate, exact rescoring (values read from disk / page cache). */
  queries: Array<{
    name: string;
    plan: string;
    latency: Latency;
    stages: Record<"filter" | "scan" | "estimate" | "rescore", number>;
    recallAt10: number;
    recallQueries: number;
  }>;
  /** The same vectors and metadata into sqlite-vec (vec0 float[D] + integer column, WAL, synchronous=FULL, one transaction per batch). */
  peerIngest: { engine: string; n: number; perSec: number };
}

const SEED = 20261122;

export async function runEngineBench(o: {
  n: number;
  dim: number;
  recallQueries: number;
  log: (line: string) => void;
}): Promise<EngineResult> {
  const { n, dim, log } = o;
  const dir = mkdtempSync(join(tmpdir(), "svc-engine-bench-"));
  const BATCH = 1000;
  const IN_FLIGHT = 4;
  try {
    const kernels = Kernels.create();
    const pool = new ScanPool(kernels, { threads: 2 });
    const c = await Collection.open(join(dir, "c"), { kernels, pool, dimension: dim });
    const data = new ClusteredVectors(dim, SEED);
    c.trackVisibility = true;

    // The vectors are generated before the clock starts (this process's RSS is not measured).
    const tg = performance.now();
    const batches: Float32Array[] = [];
    for (let start = 0; start < n; start += BATCH) {
      const count = Math.min(BATCH, n - start);
      const values = new Float32Array(count * dim);
      for (let j = 0; j < count; j++) data.write(start + j, values, j * dim);
      batches.push(values);
    }
    log(
      `generated ${n.toLocaleString("en-US")} x ${dim} clustered vectors in ${((performance.now() - tg) / 1000).toFixed(1)} s (not timed below)`,
    );

    // Peer first, on the first batches (up to 100k vectors), same disk.
    const peerBatches = batches.slice(0, Math.ceil(Math.min(n, 100_000) / BATCH));
    const peer = sqliteVecDurableIngest(join(dir, "peer.sqlite"), dim, peerBatches);
    rmSync(join(dir, "peer.sqlite"), { force: true });
    log(
      `sqlite-vec durable ingest: ${Math.round(peer.perSec).toLocaleString("en-US")} vectors/s (${peer.n.toLocaleString("en-US")} vectors)`,
    );

    // Durable ingest: batches of 1000 with metadata, 4 in flight (group commit shares fsyncs).
    const t0 = performance.now();
    let next = 0;
    let lastReport = t0;
    const one = async (start: number) => {
      const values = batches[start / BATCH]!;
      const count = values.length / dim;
      await c.upsert(
        "",
        Array.from({ length: count }, (_, j) => ({
          id: String(start + j),
          values: values.subarray(j * dim, (j + 1) * dim),
          metadata: { bucket: (start + j) % 100 },
        })),
      );
      batches[start / BATCH] = new Float32Array(0);
    };
    const worker = async () => {
      while (next < n) {
        const start = next;
        next += BATCH;
        await one(start);
        const now = performance.now();
        if (now - lastReport > 2000) {
          lastReport = now;
          log(`  ingest: ${start.toLocaleString("en-US")} / ${n.toLocaleString("en-US")} acknowledged`);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const tAck = performance.now();
    await c.settled();
    const tVisible = performance.now();
    const walStats = c.walStats;
    const ingest = {
      seconds: (tAck - t0) / 1000,
      ackedPerSec: n / ((tAck - t0) / 1000),
      visiblePerSec: n / ((tVisible - t0) / 1000),
      walMBPerSec: walStats.bytes / 2 ** 20 / ((tAck - t0) / 1000),
      fsyncs: walStats.syncs,
    };
    log(
      `durable ingest: ${Math.round(ingest.ackedPerSec).toLocaleString("en-US")} vectors/s acknowledged, ${Math.round(ingest.visiblePerSec).toLocaleString("en-US")} vectors/s visible (${ingest.walMBPerSec.toFixed(0)} MB/s WAL, ${ingest.fsyncs} fsyncs)`,
    );
    const visibleUnderLoad = summarize(c.visibleDelays.splice(0));
    log(`ack -> visible at full ingest: p50 ${visibleUnderLoad.p50.toFixed(2)} ms, p99 ${visibleUnderLoad.p99.toFixed(2)} ms`);

    // Steady load: 10-vector upserts every 2 ms (~5k vectors/s). A checkpoint first flushes
    // the GBs of dirty pages the bulk load left (values.f32): their writeback would otherwise
    // stall the applier's page-cache writes for seconds (that is the under-load figure above).
    const tF = performance.now();
    await c.checkpoint();
    log(`checkpoint after the bulk load (flushes its dirty pages): ${((performance.now() - tF) / 1000).toFixed(2)} s`);
    const steadyN = 1000;
    const tS = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < steadyN; i++) {
      const start = n + i * 10;
      const values = new Float32Array(10 * dim);
      for (let j = 0; j < 10; j++) data.write(start + j, values, j * dim);
      pending.push(
        c.upsert(
          "steady",
          Array.from({ length: 10 }, (_, j) => ({ id: String(start + j), values: values.subarray(j * dim, (j + 1) * dim) })),
        ),
      );
      const due = tS + (i + 1) * 2;
      while (performance.now() < due) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(pending);
    await c.settled();
    const visibleSteady = { ...summarize(c.visibleDelays.splice(0)), rate: (steadyN * 10) / ((performance.now() - tS) / 1000) };
    log(
      `ack -> visible at ${Math.round(visibleSteady.rate)} vectors/s: p50 ${visibleSteady.p50.toFixed(2)} ms, p99 ${visibleSteady.p99.toFixed(2)} ms`,
    );
    await c.delete("steady", { deleteAll: true });

    const tC = performance.now();
    await c.close();
    const checkpointSeconds = (performance.now() - tC) / 1000;
    log(`close (checkpoint of ${n.toLocaleString("en-US")} rows): ${checkpointSeconds.toFixed(2)} s`);
    await pool.close();

    // Restart in a fresh process: open time and RSS as a user sees them, then queries.
    const child = fileURLToPath(new URL("./engine/open-child.ts", import.meta.url));
    const r = spawnSync(process.execPath, ["--import", "tsx", child, join(dir, "c"), String(n), String(SEED), String(o.recallQueries)], {
      encoding: "utf8",
      maxBuffer: 1 << 24,
    });
    if (r.status !== 0) throw new Error(`open-child failed: ${r.stderr}`);
    const res = JSON.parse(r.stdout.trim().split("\n").pop()!);
    log(
      `restart: open ${res.openMs.toFixed(0)} ms for ${res.count.toLocaleString("en-US")} vectors, RSS ${res.rssAfterOpenMB} MB after open, peak ${res.peakRssMB} MB`,
    );
    for (const q of res.queries) {
      const st = q.stages;
      log(
        `  top-10 ${q.name}: ${q.plan}, p50 ${q.latency.p50.toFixed(2)} ms, p99 ${q.latency.p99.toFixed(2)} ms (mean filter ${st.filter.toFixed(2)} / scan ${st.scan.toFixed(2)} / estimate ${st.estimate.toFixed(2)} / rescore ${st.rescore.toFixed(2)} ms), recall@10 ${q.recallAt10.toFixed(3)} (${q.recallQueries} queries)`,
      );
    }
    return {
      n,
      dim,
      batch: BATCH,
      inFlight: IN_FLIGHT,
      ingest,
      visibleUnderLoad,
      visibleSteady,
      checkpointSeconds,
      restart: { openMs: res.openMs, rssAfterOpenMB: res.rssAfterOpenMB, peakRssMB: res.peakRssMB, count: res.count },
      queries: res.queries,
      peerIngest: { engine: "sqlite-vec 0.1.9 (better-sqlite3)", n: peer.n, perSec: peer.perSec },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
