/** @module scan-pool — splits scans across Piscina workers that share the kernels' memory. */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import { SvcError, type ErrorCode } from "../errors.js";
import { tracer } from "../probes.js";
import {
  checkK,
  decodeKeys,
  heapSlots,
  kernelModule,
  queryTableBytes,
  useQueryTable,
  wordsFor,
  type IvfRef,
  type KeepRows,
  type Kernels,
  type RowsRef,
  type TopK,
} from "../kernels/abi.js";
import type { ScanReply, ScanTask, WorkerHeap, WorkerHeapMessage } from "./scan-task.js";

/**
 * Below this many rows a single query runs in the calling thread: handing a task to a
 * worker costs ~0.1-0.2 ms p50 here (more when the worker has been idle), more than
 * striping saves on a smaller scan. On the 2-core target the two break even between 32k
 * and 128k rows of 1024 bits depending on the run; 2 workers win clearly from 128k
 * (crossover table in bench/RESULTS.md, from `npm run bench`).
 */
export const DEFAULT_INLINE_BELOW = 64_000;
/**
 * Rows under which a single index probe runs in the calling thread (ScanPool.probe). A probe compares every
 * centroid (8 sqrt(n) of them) and a few lists: ~0.03-0.05 ms at 60k rows, less than a hand-off; ~0.1 ms at 1M,
 * main-thread time that a worker can take under load (bench/RESULTS.md, "qps").
 */
export const DEFAULT_PROBE_INLINE_BELOW = 250_000;

/**
 * Candidate lists from this length are split over the workers. A scattered 1024-bit row
 * costs ~60-150 ns here (cache and TLB misses) against ~12 ns in a sequential scan, yet
 * at 10k candidates (1% of 1M) splitting measured 1.4-2.0 ms against 0.7 ms in-thread:
 * waking the workers costs more than it saves (bench notes in bench/ANALYSIS.md).
 */
export const DEFAULT_LIST_INLINE_BELOW = 16_384;

export interface ScanPoolOptions {
  /** Worker threads (default: available cores). */
  threads?: number;
  /** Row count under which single queries run in-thread (default DEFAULT_INLINE_BELOW). */
  inlineBelow?: number;
  /** Row count under which a single index probe runs in-thread (default DEFAULT_PROBE_INLINE_BELOW). */
  probeInlineBelow?: number;
  /** Candidate-list length under which list scans run in-thread (default DEFAULT_LIST_INLINE_BELOW). */
  listInlineBelow?: number;
}

/** Encode batches smaller than this run in the calling thread (8 us per 1024-d vector vs ~0.1-0.2 ms dispatch). */
export const ENCODE_INLINE_BELOW = 128;

/**
 * topKShared runs waiting queries as one blocked scan on one worker from MIN_SHARED_BATCH of
 * them, up to MAX_SHARED_BATCH (one query-table block, whose cost per row is the same for 1
 * to 32 queries). At 100k x 1024 bits a query table of 32 costs ~0.57 ms of worker time per
 * query against ~1 ms for a single scan. Batches run on one worker each, not striped: with
 * every worker on one batch, a closed loop of clients convoys (all queries scan, then all
 * post-process on the main thread while the workers idle); measured over HTTP at 32
 * connections, one-worker batches gave 1,550-1,670 QPS against 1,300-1,460.
 */
export const MIN_SHARED_BATCH = 24;
export const MAX_SHARED_BATCH = 32;

interface Waiter {
  query: number;
  k: number;
  resolve: (top: TopK) => void;
  reject: (err: unknown) => void;
}

/** One view of rows (base, count, words) under topKShared: worker slots in use, and the queries waiting for one. */
interface SharedView {
  busy: number;
  waiting: Waiter[];
}

/** Stripe boundaries are multiples of 64 rows so masked stripes start on a bitset word. */
const STRIPE_ALIGN = 64;

export class ScanPool {
  readonly threads: number;
  readonly inlineBelow: number;
  readonly probeInlineBelow: number;
  readonly listInlineBelow: number;
  private readonly kernels: Kernels;
  private readonly piscina: Piscina<ScanTask, ScanReply>;
  /** Views (base:count:words) with topKShared scans in flight. */
  private readonly shared = new Map<string, SharedView>();
  /** The last heap report of each live worker, by thread id (dropped when Piscina destroys the worker). */
  private readonly heaps = new Map<number, WorkerHeap>();

  constructor(kernels: Kernels, opts: ScanPoolOptions = {}) {
    this.kernels = kernels;
    this.threads = Math.max(1, opts.threads ?? availableParallelism());
    this.inlineBelow = opts.inlineBelow ?? DEFAULT_INLINE_BELOW;
    this.probeInlineBelow = opts.probeInlineBelow ?? DEFAULT_PROBE_INLINE_BELOW;
    this.listInlineBelow = opts.listInlineBelow ?? DEFAULT_LIST_INLINE_BELOW;
    const { filename, execArgv } = workerEntry();
    this.piscina = new Piscina({
      filename,
      execArgv,
      minThreads: this.threads,
      maxThreads: this.threads,
      idleTimeout: 60_000,
      workerData: { module: kernelModule(), memory: kernels.heap.memory },
    });
    this.piscina.on("message", (m: Partial<WorkerHeapMessage>) => {
      if (m?.workerHeap !== undefined) this.heaps.set(m.workerHeap.threadId, m.workerHeap);
    });
    this.piscina.on("workerDestroy", (w: { id: number }) => this.heaps.delete(w.id));
  }

  /** Each live worker's V8 heap as it last reported it (after a task, at most once a second). */
  workerHeaps(): WorkerHeap[] {
    return [...this.heaps.values()];
  }

  /** The live worker threads (for health checks and tests that kill one). */
  get workers(): readonly import("node:worker_threads").Worker[] {
    return this.piscina.threads;
  }

  /**
   * Exact top-k of one query (a packed row: a pointer into shared memory, or bytes that are
   * copied in), optionally restricted to rows set in the bitset at `mask`. Past inlineBelow
   * rows, [0, count) is split into one stripe per worker.
   */
  async topK(rows: RowsRef, query: number | Uint8Array, k: number, opts: { mask?: number; stripes?: number } = {}): Promise<TopK> {
    checkK(k);
    const heap = this.kernels.heap;
    const owned = typeof query === "number" ? undefined : this.kernels.putQuery(rows, query);
    const q = owned ?? (query as number);
    const mask = opts.mask ?? 0;
    const stripes = opts.stripes ?? (rows.count < this.inlineBelow ? 0 : this.threads);
    let out = 0;
    try {
      if (stripes === 0) {
        return mask === 0 ? this.kernels.topK(rows, 0, rows.count, q, k) : this.kernels.topKMasked(rows, 0, rows.count, q, k, mask);
      }
      const bounds = stripeBounds(rows.count, stripes);
      const slots = heapSlots(k, rows.count);
      out = heap.alloc(bounds.length * slots * 8);
      const counts = await settleAll(
        bounds.map(([start, end], i) =>
          this.run({ kind: "topK", rows: { ...rows }, start, end, query: q, k, out: out + i * slots * 8, mask }),
        ),
      );
      return mergeTopK(
        counts.map((count, i) => decodeKeys(heap, out + i * slots * 8, count)),
        k,
      );
    } finally {
      if (out !== 0) heap.release(out);
      if (owned !== undefined) heap.release(owned);
    }
  }

  /**
   * topK (unmasked) for concurrent callers, with the workers as slots. A query that finds
   * the view idle is striped over every worker (lowest latency); one that finds a slot free
   * runs whole on that worker (one task, no merge); one that finds every slot busy waits.
   * A freed slot takes the next waiter, or the next MAX_SHARED_BATCH of them as one blocked
   * scan once MIN_SHARED_BATCH wait. `query` must stay valid until the promise settles.
   */
  async topKShared(rows: RowsRef, query: number, k: number): Promise<TopK> {
    checkK(k);
    if (rows.count < this.inlineBelow) return this.topK(rows, query, k);
    const key = `${rows.base}:${rows.count}:${rows.words}`;
    let view = this.shared.get(key);
    if (view === undefined) this.shared.set(key, (view = { busy: 0, waiting: [] }));
    if (view.busy >= this.threads) return new Promise((resolve, reject) => view.waiting.push({ query, k, resolve, reject }));
    const stripes = view.busy === 0 ? this.threads : 1;
    view.busy += stripes;
    try {
      return await this.topK(rows, query, k, { stripes });
    } finally {
      view.busy -= stripes;
      this.nextShared(key, view, rows);
    }
  }

  /** Start waiters on the slots that are free, or forget the view once nothing runs on it. */
  private nextShared(key: string, view: SharedView, rows: RowsRef): void {
    while (view.busy < this.threads && view.waiting.length > 0) {
      const batch = view.waiting.splice(0, view.waiting.length >= MIN_SHARED_BATCH ? MAX_SHARED_BATCH : 1);
      view.busy += 1;
      void this.runShared(rows, batch).finally(() => {
        view.busy -= 1;
        this.nextShared(key, view, rows);
      });
    }
    if (view.busy === 0 && view.waiting.length === 0) this.shared.delete(key);
  }

  private async runShared(rows: RowsRef, batch: Waiter[]): Promise<void> {
    const heap = this.kernels.heap;
    const rowBytes = rows.words * 8;
    const k = Math.max(...batch.map((w) => w.k));
    let block = 0;
    try {
      block = heap.alloc(batch.length * rowBytes);
      const bytes = heap.bytes();
      batch.forEach((w, i) => bytes.copyWithin(block + i * rowBytes, w.query, w.query + rowBytes));
      const tops =
        batch.length === 1 ? [await this.topK(rows, block, k, { stripes: 1 })] : await this.topKBatch(rows, block, batch.length, k, 1);
      batch.forEach((w, i) => {
        const t = tops[i]!;
        w.resolve(w.k >= t.rows.length ? t : { rows: t.rows.slice(0, w.k), dists: t.dists.slice(0, w.k) });
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      if (block !== 0) heap.release(block);
    }
  }

  /**
   * Nearest of `nc` centroids for rows [start, end) (see Kernels.nearestCentroids), cut into
   * one stripe per worker: the index build's assignment step, off the main thread. The caller
   * keeps `rows` valid (pinned) until the promise settles.
   */
  async nearestCentroids(
    rows: RowsRef,
    start: number,
    end: number,
    centroids: number,
    nc: number,
    out: number,
    dists: number,
  ): Promise<void> {
    const size = Math.ceil((end - start) / this.threads);
    const stripes = Array.from(
      { length: this.threads },
      (_, i) => [start + i * size, Math.min(end, start + (i + 1) * size)] as const,
    ).filter(([a, b]) => b > a);
    await settleAll(
      stripes.map(([a, b]) =>
        this.run({
          kind: "nearest",
          rows: { ...rows },
          start: a,
          end: b,
          centroids,
          nc,
          out: out + (a - start) * 4,
          dists: dists === 0 ? 0 : dists + (a - start) * 4,
        }),
      ),
    );
  }

  /**
   * One query's probe of an inverted file (Kernels.ivfProbe, unmasked): in the calling thread below
   * probeInlineBelow rows, else as one task on a worker. Returns the top k keys and the lists probed.
   */
  async probe(
    rows: RowsRef,
    ivf: IvfRef,
    query: number,
    k: number,
    probe: { minProbe: number; cap: number; slack: number },
  ): Promise<{ top: TopK; probed: number }> {
    if (rows.count < this.probeInlineBelow) return this.kernels.ivfProbe(rows, ivf, query, k, probe);
    checkK(k);
    const heap = this.kernels.heap;
    const cap = Math.max(1, Math.min(ivf.lists, Math.floor(probe.cap)));
    const slots = heapSlots(k, rows.count);
    const block = slots * 8 + cap * 8 + 8;
    const out = heap.alloc(block + 8);
    const counts = out + block;
    try {
      await this.run({
        kind: "probe",
        rows: { ...rows },
        ivf: { ...ivf },
        queries: query,
        nq: 1,
        k,
        minProbe: probe.minProbe,
        cap,
        slack: probe.slack,
        out,
        block,
        counts,
      });
      return { top: decodeKeys(heap, out, heap.u32(counts, 1)[0]!), probed: heap.u32(out + slots * 8 + cap * 8, 1)[0]! };
    } finally {
      heap.release(out);
    }
  }

  /**
   * Probe an inverted file (IvfRef over `rows`) for nq queries (rows at `queries`): the
   * queries are cut into one contiguous share per worker, each worker probes its share one
   * query after the other (assembly/ivf.ts `ivfProbe`): the throughput path of the index,
   * where a single probe (~40 us) costs less than a hand-off to a worker.
   */
  async probeBatch(
    rows: RowsRef,
    ivf: IvfRef,
    queries: number,
    nq: number,
    k: number,
    probe: { minProbe: number; cap: number; slack: number },
  ): Promise<TopK[]> {
    checkK(k);
    const heap = this.kernels.heap;
    const cap = Math.max(1, Math.min(ivf.lists, Math.floor(probe.cap)));
    const slots = heapSlots(k, rows.count);
    const block = slots * 8 + cap * 8 + 8;
    const out = heap.alloc(nq * block);
    const counts = heap.alloc(nq * 4);
    const rowBytes = rows.words * 8;
    try {
      const share = Math.ceil(nq / this.threads);
      const shares = Array.from({ length: this.threads }, (_, i) => [i * share, Math.min(nq, (i + 1) * share)] as const).filter(
        ([a, b]) => b > a,
      );
      await settleAll(
        shares.map(([a, b]) =>
          this.run({
            kind: "probe",
            rows: { ...rows },
            ivf: { ...ivf },
            queries: queries + a * rowBytes,
            nq: b - a,
            k,
            minProbe: probe.minProbe,
            cap,
            slack: probe.slack,
            out: out + a * block,
            block,
            counts: counts + a * 4,
          }),
        ),
      );
      const n = heap.u32(counts, nq).slice();
      return Array.from({ length: nq }, (_, j) => decodeKeys(heap, out + j * block, n[j]!));
    } finally {
      heap.release(out);
      heap.release(counts);
    }
  }

  /**
   * Exact top-k of one query among a candidate list (n u32 row ids at `list`, in shared
   * memory). From `listInlineBelow` candidates the list is cut into one contiguous slice
   * per worker.
   */
  async topKList(rows: RowsRef, list: number, n: number, query: number, k: number): Promise<TopK> {
    checkK(k);
    if (n < this.listInlineBelow || this.threads === 1) return this.kernels.topKList(rows, list, n, query, k);
    const heap = this.kernels.heap;
    const size = Math.ceil(n / this.threads);
    const slices = Array.from({ length: this.threads }, (_, i) => [i * size, Math.min(n, (i + 1) * size)] as const).filter(
      ([a, b]) => b > a,
    );
    const slots = heapSlots(k, size);
    const out = heap.alloc(slices.length * slots * 8);
    try {
      const counts = await settleAll(
        slices.map(([a, b], i) =>
          this.run({ kind: "list", rows: { ...rows }, list: list + a * 4, n: b - a, query, k, out: out + i * slots * 8 }),
        ),
      );
      return mergeTopK(
        counts.map((count, i) => decodeKeys(heap, out + i * slots * 8, count)),
        k,
      );
    } finally {
      heap.release(out);
    }
  }

  /**
   * Exact top-k of nq queries (contiguous packed rows at `queries`). The whole batch goes to
   * every worker, each over its own stripe of rows, so each row is read once for all queries
   * (and query tables fill all their lanes); per-query results are merged.
   */
  async topKBatch(rows: RowsRef, queries: number, nq: number, k: number, stripes = this.threads): Promise<TopK[]> {
    checkK(k);
    if (nq === 0) return [];
    const heap = this.kernels.heap;
    const bounds = stripeBounds(rows.count, stripes);
    const slots = heapSlots(k, rows.count);
    const tableBytes = useQueryTable(rows, rows.count / bounds.length, nq) ? queryTableBytes(rows.words) : 0;
    let out = 0;
    let tables = 0;
    try {
      out = heap.alloc(bounds.length * nq * slots * 8);
      if (tableBytes > 0) tables = heap.alloc(bounds.length * tableBytes);
      // stripe i's heaps start at out + i*nq*slots*8; its kernel spaces them by its own slot count
      const at = (stripe: number, j: number) => {
        const [start, end] = bounds[stripe]!;
        return out + (stripe * nq * slots + j * heapSlots(k, end - start)) * 8;
      };
      const counts = await settleAll(
        bounds.map(([start, end], i) =>
          this.run({
            kind: "multi",
            rows: { ...rows },
            start,
            end,
            queries,
            nq,
            k,
            out: at(i, 0),
            table: tables === 0 ? 0 : tables + i * tableBytes,
          }),
        ),
      );
      return Array.from({ length: nq }, (_, j) =>
        mergeTopK(
          counts.map((count, i) => decodeKeys(heap, at(i, j), count)),
          k,
        ),
      );
    } finally {
      if (out !== 0) heap.release(out);
      if (tables !== 0) heap.release(tables);
    }
  }

  /**
   * Encode float vectors (n * dim f32) into packed rows with a rotation's tables, split over
   * the workers (each slice with its own FWHT scratch); returns the rows (n * rowBytes).
   * Below ENCODE_INLINE_BELOW vectors it runs in the calling thread.
   */
  async encode(rotation: { P: number; signs: number }, dim: number, vectors: Float32Array): Promise<Uint8Array> {
    const heap = this.kernels.heap;
    const n = vectors.length / dim;
    const rowBytes = wordsFor(dim) * 8;
    const parts = n < ENCODE_INLINE_BELOW ? 1 : this.threads;
    const src = heap.put(vectors);
    let out = 0;
    let scratch = 0;
    try {
      out = heap.alloc(Math.max(8, n * rowBytes));
      scratch = heap.alloc(parts * rotation.P * 4);
      const size = Math.ceil(n / parts);
      const slices = Array.from({ length: parts }, (_, i) => [i * size, Math.min(n, (i + 1) * size)] as const).filter(([a, b]) => b > a);
      const task = (i: number, a: number, b: number): ScanTask => ({
        kind: "encode",
        src: src + a * dim * 4,
        n: b - a,
        dim,
        P: rotation.P,
        signs: rotation.signs,
        scratch: scratch + i * rotation.P * 4,
        out: out + a * rowBytes,
      });
      if (parts === 1) {
        const t = task(0, 0, n) as Extract<ScanTask, { kind: "encode" }>;
        this.kernels.encode(t.src, t.n, dim, t, t.out);
      } else await settleAll(slices.map(([a, b], i) => this.run(task(i, a, b))));
      return heap.bytes().slice(out, out + n * rowBytes);
    } finally {
      heap.release(src);
      if (out !== 0) heap.release(out);
      if (scratch !== 0) heap.release(scratch);
    }
  }

  /**
   * Kernels.dotF32KeepRows as one task on one worker (the depth calibration's exact pass, a chunk at a time, off the
   * main thread that reads the requests): the caller keeps every pointer valid until the promise settles.
   */
  async dotF32KeepRows(task: KeepRows): Promise<void> {
    await this.run({ kind: "keep", ...task });
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }

  /** One task on a worker; a span per task when tracing is on. */
  private run(task: ScanTask): Promise<number> {
    return tracer === null ? this.runTask(task) : tracer.span("pool.task", { "svc.task": task.kind }, () => this.runTask(task));
  }

  private async runTask(task: ScanTask): Promise<number> {
    let reply: ScanReply;
    try {
      reply = await this.piscina.run(task);
    } catch (err) {
      throw new SvcError("E_WORKER_FAILED", `scan worker failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
    if (typeof reply === "number") return reply;
    throw new SvcError(reply.error.code as ErrorCode, reply.error.message, { field: reply.error.field });
  }
}

/**
 * Like Promise.all, but waits for every task before failing: a sibling still running
 * would otherwise write into an output block the caller has already released.
 */
async function settleAll(tasks: Promise<number>[]): Promise<number[]> {
  const results = await Promise.allSettled(tasks);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<number>).value);
}

/** Split [0, n) into `parts` stripes aligned to STRIPE_ALIGN rows (empty stripes dropped). */
export function stripeBounds(n: number, parts: number): Array<[number, number]> {
  const size = Math.ceil(n / parts / STRIPE_ALIGN) * STRIPE_ALIGN;
  const out: Array<[number, number]> = [];
  for (let start = 0; start < n; start += size) out.push([start, Math.min(n, start + size)]);
  return out.length > 0 ? out : [[0, 0]];
}

/** Merge ascending per-stripe results into the global top-k (distance, then row). */
export function mergeTopK(parts: TopK[], k: number): TopK {
  const total = parts.reduce((s, p) => s + p.rows.length, 0);
  const keys = new Float64Array(total); // dist * 2^32 + row is exact below 2^53
  let n = 0;
  for (const p of parts) for (let i = 0; i < p.rows.length; i++) keys[n++] = p.dists[i]! * 4294967296 + p.rows[i]!;
  keys.sort();
  const m = Math.min(k, total);
  const rows = new Uint32Array(m);
  const dists = new Uint32Array(m);
  for (let i = 0; i < m; i++) {
    dists[i] = Math.floor(keys[i]! / 4294967296);
    rows[i] = keys[i]! % 4294967296;
  }
  return { rows, dists };
}

/** The worker file next to this module; under tsx (tests, benches) the .ts source runs via tsx. */
function workerEntry(): { filename: string; execArgv: string[] } {
  const js = fileURLToPath(new URL("./worker.js", import.meta.url));
  if (existsSync(js)) return { filename: js, execArgv: [] };
  return { filename: fileURLToPath(new URL("./worker.ts", import.meta.url)), execArgv: ["--import", "tsx"] };
}
