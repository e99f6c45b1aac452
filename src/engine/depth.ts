/** @module depth — each float partition's rescoring depth, calibrated on its own rows against exact float cosine as they grow. */
import { keepStride, type KeepRows, type Kernels } from "../kernels/abi.js";
import { mulberry32 } from "../kernels/random.js";
import type { Rotation } from "../kernels/rotation.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { CALIBRATION_RECALL, tick } from "./ivf.js";
import type { Partition } from "./partition.js";
import { BestK, candidatesFor, DEPTH_EXACT, DEPTH_MAX_FLOATS, depthScale, queryDepth, rescoreFor, search } from "./search.js";

/**
 * The depths tried, shallowest first: depth d keeps candidatesFor(k, d) rows of the 1-bit scan and rescores
 * rescoreFor(k, d) of them (d² and d times today's 1024-d depths). Past the last, or once a depth would rescore half
 * the rows, the partition is scored exactly (DEPTH_EXACT).
 */
export const DEPTH_LADDER: readonly number[] = [1, 2, 4, 8, 16, 32, 64];
/**
 * Held-in rows that query during a calibration (their own row left out): 2,000 answers of top-10, so a depth whose
 * recall is 0.99 passes the 0.995 bar by chance about 1% of the time (with 64 rows, 640 answers, 10%: a depth with
 * held-in 0.995 gave held-out 0.9875 on 10,000 x 256-d).
 */
export const DEPTH_SAMPLE = 200;
/** Partitions below this many live rows keep the dimension's default depth (depthScale) and are not calibrated. */
export const DEPTH_MIN_ROWS = 1000;
/** Live rows read per step of the exact answers (yielding between steps). */
const TRUTH_CHUNK = 256;
const K = 10;

/** Is `p` due a calibration: float values, enough rows, not too many, and twice the live rows of its last one. */
export function depthDue(p: Partition): boolean {
  const n = p.liveCount;
  return p.values !== null && n >= DEPTH_MIN_ROWS && n * p.shape.dimension <= DEPTH_MAX_FLOATS && n >= 2 * p.depthRows;
}

/**
 * The shallowest DEPTH_LADDER depth whose default query (search.ts, unfiltered, through the index if the partition has
 * one) finds CALIBRATION_RECALL of the exact float-cosine top-10 of DEPTH_SAMPLE seeded held-in rows, each asking for
 * 11 and its own row left out (a found row counts when its cosine is at least the 10th exact one); DEPTH_EXACT when
 * none does before rescoring half the rows. Yields between steps; `stop()` abandons it (E_CLOSED).
 */
export async function calibrateDepth(
  kernels: Kernels,
  pool: ScanPool,
  p: Partition,
  rotation: Rotation,
  seed: number,
  stop: () => boolean,
): Promise<{ depth: number; recall: number; rows: number }> {
  const live = p.live().toUint32Array();
  const n = live.length;
  const next = mulberry32(seed ^ 0xde9717);
  const sample = Array.from(new Set(Array.from({ length: Math.min(DEPTH_SAMPLE, n) }, () => live[next() % n]!)));
  const s = sample.length;
  return withSampleQueries(kernels, pool, p, rotation, sample, async (units, answer) => {
    // The exact answers: every live row's values read once, scored against every sample query.
    const best = await exactBest(kernels, p, live, units, s, K + 1, stop, pool);
    const kth = best.map(
      (b, j) =>
        b
          .sorted()
          .filter((h) => h.row !== sample[j])
          .slice(0, K)
          .at(-1)?.score ?? -Infinity,
    );
    let recall = 0;
    for (const depth of DEPTH_LADDER) {
      if (2 * rescoreFor(K, depth) >= n) break;
      let hits = 0;
      for (let j = 0; j < s; j++) {
        if (j % 8 === 0) await tick(stop);
        hits += reaching(await answer(j, candidatesFor(K, depth) + 1, rescoreFor(K, depth) + 1), kth[j]!);
      }
      recall = hits / (K * s);
      if (recall >= CALIBRATION_RECALL) return { depth, recall, rows: n };
    }
    return { depth: DEPTH_EXACT, recall, rows: n };
  });
}

/**
 * The shares of candidatesFor(k, depth) and rescoreFor(k, depth) an index may have its unfiltered default queries keep
 * from the probe and rescore (IvfIndex.candidateScale, rescoreScale), cheapest first; both 1 when none passes. Half of
 * each at the least: at 100k x 1024-d clustered (bench/RESULTS.md, issue 32 item 2) rescoring 20 of the 100 candidates
 * kept held-out recall@10 0.9997, 15 0.999 and 10 0.93, and 50 candidates with 20 rescored 0.9997: the floor keeps a
 * margin that a held-in sample cannot promise below it. Fewer candidates also probe fewer lists (the cap is per 10 kept).
 */
export const RESCORE_SCALE_LADDER: readonly { candidates: number; rescore: number }[] = [
  { candidates: 0.5, rescore: 0.5 },
  { candidates: 1, rescore: 0.5 },
  { candidates: 1, rescore: 0.75 },
];

/**
 * Calibrate `p.ivf.candidateScale` and `rescoreScale` after an index build (ivf-build.ts): DEPTH_SAMPLE seeded indexed
 * rows query through the index at the partition's query depth (the dimension's default: the scales are used only
 * there), each asking for 11 with its own row left out, and the first RESCORE_SCALE_LADDER step whose top-10 finds
 * CALIBRATION_RECALL of the reference's top-10 (a found row counts when its cosine is at least the reference's 10th)
 * becomes the scales. A step's query keeps and rescores exactly the rows a query of its scales does, its own row one of
 * them (one fewer for the others than a held-out query has: the safe side); the reference keeps one more than the
 * default pool (the own row's) and rescores every candidate. The reference is that pool's best, not the exact float
 * top-10 (that reads every value per sample query: past DEPTH_MAX_FLOATS too costly at each build); rescoring a subset
 * of that pool can only lose rows it finds, so this measures what the cut costs a query. Costs (1 + ladder steps) x
 * DEPTH_SAMPLE queries (~0.1-0.3 s at 100k x 1024-d). Returns the scales and the measured share found; leaves a
 * partition without float values, without a probe or at a calibrated depth other than the default at 1.
 */
export async function calibrateRescore(
  kernels: Kernels,
  pool: ScanPool,
  p: Partition,
  rotation: Rotation,
  seed: number,
  stop: () => boolean,
): Promise<{ candidates: number; rescore: number; agreement: number }> {
  const none = { candidates: 1, rescore: 1, agreement: 1 };
  const ivf = p.ivf;
  const dim = p.shape.dimension;
  const depth = queryDepth(p);
  if (p.values === null || ivf === null || ivf.calibrated === null || depth !== depthScale(dim)) return none;
  const n = ivf.indexedRows;
  const next = mulberry32(seed ^ 0x5ca1e5);
  const sample = Array.from(new Set(Array.from({ length: Math.min(DEPTH_SAMPLE, n) }, () => next() % n))).filter(
    (r) => !p.tombstones.has(r),
  );
  const s = sample.length;
  const pool0 = candidatesFor(K, depth);
  // the whole pool rescored must be more than any step rescores, else there is nothing to cut
  if (s === 0 || rescoreFor(K, depth) >= pool0) return none;
  return withSampleQueries(kernels, pool, p, rotation, sample, async (_, answer) => {
    const kth: number[] = [];
    for (let j = 0; j < s; j++) {
      if (j % 8 === 0) await tick(stop);
      kth.push((await answer(j, pool0 + 1, pool0 + 1)).at(-1)?.score ?? -Infinity);
    }
    let agreement = 1;
    for (const step of RESCORE_SCALE_LADDER) {
      const rescore = rescoreFor(K, depth, step.rescore);
      const candidates = Math.max(rescore, candidatesFor(K, depth, step.candidates));
      let hits = 0;
      for (let j = 0; j < s; j++) {
        if (j % 8 === 0) await tick(stop);
        hits += reaching(await answer(j, candidates, rescore), kth[j]!);
      }
      agreement = hits / (K * s);
      if (agreement >= CALIBRATION_RECALL) return { candidates: step.candidates, rescore: step.rescore, agreement };
    }
    return { ...none, agreement };
  });
}

type SampleAnswer = (j: number, candidates: number, rescore: number) => Promise<{ row: number; score: number }[]>;

/**
 * Runs `body` with the sample rows encoded as queries (their unit vectors at heap offset `units`, one f32 row each) and
 * `answer(j, candidates, rescore)`: sample row j's top-10 through the query path with those depths, its own row left
 * out. The partition stays pinned and the heap held until `body` settles.
 */
async function withSampleQueries<T>(
  kernels: Kernels,
  pool: ScanPool,
  p: Partition,
  rotation: Rotation,
  sample: readonly number[],
  body: (units: number, answer: SampleAnswer) => Promise<T>,
): Promise<T> {
  const dim = p.shape.dimension;
  const heap = kernels.heap;
  const rowBytes = dim * 4;
  const bits = heap.alloc(sample.length * p.arena.rowBytes);
  const units = heap.alloc(sample.length * rowBytes);
  p.pins++;
  try {
    const rotated: Float32Array[] = [];
    for (const [i, r] of sample.entries()) {
      rotation.encode(p.vector(r) as Float32Array, bits + i * p.arena.rowBytes, units + i * rowBytes);
      rotated.push(rotation.lastRotated());
    }
    const answer: SampleAnswer = async (j, candidates, rescore) => {
      const { hits } = await search(kernels, pool, p, {
        bits: bits + j * p.arena.rowBytes,
        unit: heap.f32(units + j * rowBytes, dim).slice(),
        rotated: rotated[j]!,
        k: K + 1,
        filter: null,
        candidates,
        rescore,
      });
      return hits.filter((h) => h.row !== sample[j]).slice(0, K);
    };
    return await body(units, answer);
  } finally {
    p.pins--;
    heap.release(bits);
    heap.release(units);
  }
}

/** How many of `hits` score at least `kth` (a reference's 10th best), within a rounding tolerance. */
function reaching(hits: readonly { score: number }[], kth: number): number {
  return hits.filter((h) => h.score >= kth - 1e-9 * Math.abs(kth)).length;
}

/**
 * Per query, the best `k` live rows of `p` by exact float cosine, as the query path's rescoring scores them (dotNorm:
 * f64 dot product over the row's f64 norm; ties by row): `queries` = nq f32 rows of the partition's dimension at that
 * heap offset, `live` = the live rows ascending. Two stages. Every (row, query) pair is scored in f32 (dotF32Keep),
 * within E = (dim/8 + 12) x 2^-23 x |q| of its exact score, twice the kernel's bound (assembly/rescore.ts; it holds
 * while |x| is in [F32_NORM_MIN, F32_NORM_MAX], other rows are scored exactly, kernels/abi.ts dotF32KeepRows); a row is
 * kept for a query while its f32 score is at least the query's floor: its k-th best f32 score before the row's chunk of
 * TRUTH_CHUNK rows, minus 2E. The exact k-th score is at least the final f32 k-th minus E (k rows reach it in f32), so
 * every row of the exact best k is kept, and the kept rows' exact scores give the same best k as scoring every row
 * exactly, at about half the arithmetic (f32 lanes hold four floats, f64 lanes two). The floors only rise, so the rows
 * at or above the final floor (the second stage's) are the same whichever chunk each floor was taken at. With `pool`,
 * the chunks' f32 pass runs on a worker, one chunk a task (at 1024-d, 200 queries x 16k rows were ~0.21 s of the
 * main thread inside an ingest, bench/RESULTS.md); else here. Yields between steps; `stop()` abandons it (E_CLOSED).
 */
export async function exactBest(
  kernels: Kernels,
  p: Partition,
  live: Uint32Array,
  queries: number,
  nq: number,
  k: number,
  stop: () => boolean,
  pool: ScanPool | null = null,
): Promise<BestK[]> {
  const dim = p.shape.dimension;
  const rowBytes = dim * 4;
  const heap = kernels.heap;
  const n = live.length;
  const qNorm = Array.from({ length: nq }, (_, j) => {
    const q = heap.f32(queries + j * rowBytes, dim);
    let qq = 0;
    for (let i = 0; i < dim; i++) qq += q[i]! * q[i]!;
    return Math.sqrt(qq);
  });
  const qMax = Math.max(0, ...qNorm);
  // twice the kernel's rounding count, in cosine units per unit of |q|; the 1e-20 covers results below f32's normal range
  const slack = (dim / 8 + 12) * 2 ** -23;
  const margin = qNorm.map((q) => 2 * (slack * q + 1e-20));
  const f32Best = Array.from({ length: nq }, () => new BestK(k));
  const keptRows = Array.from({ length: nq }, (): number[] => []);
  const keptScores = Array.from({ length: nq }, (): number[] => []);
  // each query's floor (f64), a chunk's live rows (u32 offsets in it), their kept counts (u32), their results
  // (keepStride each), then the chunk of rows (at a multiple of 16 bytes)
  const stride = keepStride(nq);
  const listAt = 8 * nq;
  const countsAt = listAt + 4 * TRUTH_CHUNK;
  const outAt = Math.ceil((countsAt + 4 * TRUTH_CHUNK) / 8) * 8;
  const bufAt = Math.ceil((outAt + TRUTH_CHUNK * stride) / 16) * 16;
  const block = heap.alloc(bufAt + TRUTH_CHUNK * rowBytes);
  try {
    const buf = block + bufAt;
    for (let i = 0; i < n;) {
      await tick(stop);
      const start = live[i]!;
      const span = Math.min(TRUTH_CHUNK, p.rows - start);
      p.values!.readRange(start, span, heap.bytes().subarray(buf, buf + span * rowBytes));
      const list = heap.u32(block + listAt, TRUTH_CHUNK);
      let m = 0;
      for (; i < n && live[i]! < start + span; i++) list[m++] = live[i]! - start;
      new Float64Array(heap.memory.buffer, block, nq).set(margin.map((d, j) => f32Best[j]!.worst - d));
      const task: KeepRows = {
        queries,
        nq,
        qMax,
        xs: buf,
        list: block + listAt,
        n: m,
        dim,
        floors: block,
        out: block + outAt,
        counts: block + countsAt,
      };
      if (pool === null) kernels.dotF32KeepRows(task);
      else await pool.dotF32KeepRows(task);
      // after an await: shared memory may have grown (a new buffer)
      const rel = heap.u32(block + listAt, m);
      const counts = heap.u32(block + countsAt, m);
      for (let t = 0; t < m; t++) {
        const row = start + rel[t]!;
        const o = block + outAt + t * stride;
        const scores = new Float64Array(heap.memory.buffer, o + 8, counts[t]!);
        const idx = new Uint32Array(heap.memory.buffer, o + 8 * (1 + nq), counts[t]!);
        for (let u = 0; u < counts[t]!; u++) {
          const j = idx[u]!;
          f32Best[j]!.offer(row, scores[u]!);
          keptRows[j]!.push(row);
          keptScores[j]!.push(scores[u]!);
        }
      }
    }
    // The kept rows' exact scores, each row read once.
    const wanted = new Map<number, number[]>();
    for (let j = 0; j < nq; j++) {
      const floor = f32Best[j]!.worst - margin[j]!;
      const rows = keptRows[j]!;
      const scores = keptScores[j]!;
      for (let r = 0; r < rows.length; r++) {
        if (scores[r]! < floor) continue;
        const qs = wanted.get(rows[r]!);
        if (qs === undefined) wanted.set(rows[r]!, [j]);
        else qs.push(j);
      }
    }
    const best = Array.from({ length: nq }, () => new BestK(k));
    let steps = 0;
    for (const row of [...wanted.keys()].sort((a, b) => a - b)) {
      if (++steps % TRUTH_CHUNK === 0) await tick(stop);
      const res = new Float64Array(heap.memory.buffer, block, 2);
      p.values!.readRange(row, 1, heap.bytes().subarray(buf, buf + rowBytes));
      for (const j of wanted.get(row)!) {
        kernels.dotNorm(queries + j * rowBytes, buf, dim, block);
        best[j]!.offer(row, res[1]! > 0 ? res[0]! / Math.sqrt(res[1]!) : 0);
      }
    }
    return best;
  } finally {
    heap.release(block);
  }
}
