/** @module worker — a Piscina scan worker: instantiates the kernels on the pool's shared memory. */
import { getHeapStatistics } from "node:v8";
import { parentPort, threadId } from "node:worker_threads";
import { workerData } from "piscina";
import { heapSlots, Kernels } from "../kernels/abi.js";
import { SharedHeap } from "../kernels/shared-heap.js";
import { SvcError } from "../errors.js";
import type { ScanReply, ScanTask, WorkerHeapMessage } from "./scan-task.js";

const { module, memory } = workerData as { module: WebAssembly.Module; memory: WebAssembly.Memory };
const kernels = Kernels.create(new SharedHeap(memory), module);

/** At most one heap report a second: a worker idles in Atomics.wait between tasks, so it reports after a task, not on a timer. */
const REPORT_MS = 1000;
let reported = 0;

/** Posts this isolate's V8 heap statistics to the pool (ScanPool.workerHeaps), throttled. */
function reportHeap(): void {
  const now = Date.now();
  if (now - reported < REPORT_MS) return;
  reported = now;
  const h = getHeapStatistics();
  const message: WorkerHeapMessage = {
    workerHeap: {
      threadId,
      used: h.used_heap_size,
      total: h.total_heap_size,
      physical: h.total_physical_size,
      external: h.external_memory,
      malloced: h.malloced_memory,
    },
  };
  parentPort?.postMessage(message);
}
reportHeap();

/** Runs one task; replies with the number of keys written per heap, or the SvcError raised. */
export default function run(task: ScanTask): ScanReply {
  try {
    return runTask(task);
  } catch (err) {
    if (err instanceof SvcError) return { error: err.toJSON().error };
    throw err;
  } finally {
    reportHeap();
  }
}

function runTask(task: ScanTask): number {
  if (task.kind === "encode") {
    kernels.encode(task.src, task.n, task.dim, task, task.out);
    return 0;
  }
  if (task.kind === "keep") {
    kernels.dotF32KeepRows(task);
    return task.n;
  }
  if (task.kind === "nearest") {
    kernels.nearestCentroids(task.rows, task.start, task.end, task.centroids, task.nc, task.out, task.dists);
    return task.end - task.start;
  }
  if (task.kind === "probe") {
    const slots = heapSlots(task.k, task.rows.count);
    const counts = kernels.heap.u32(task.counts, task.nq);
    for (let j = 0; j < task.nq; j++) {
      const out = task.out + j * task.block;
      const q = task.queries + j * task.rows.words * 8;
      counts[j] = kernels.ivfProbeRaw(task.rows, task.ivf, q, task.k, task, 0, out, out + slots * 8, out + slots * 8 + task.cap * 8);
    }
    return task.nq;
  }
  if (task.kind === "list") return kernels.topKListRaw(task.rows, task.list, task.n, task.query, task.k, task.out);
  if (task.kind === "multi")
    return kernels.topKMultiRaw(task.rows, task.start, task.end, task.queries, task.nq, task.k, task.out, task.table);
  if (task.mask !== 0) return kernels.topKMaskedRaw(task.rows, task.start, task.end, task.query, task.k, task.mask, task.out);
  return kernels.topKRaw(task.rows, task.start, task.end, task.query, task.k, task.out);
}
