/** @module worker — a Piscina scan worker: instantiates the kernels on the pool's shared memory. */
import { workerData } from "piscina";
import { heapSlots, Kernels } from "../kernels/abi.js";
import { SharedHeap } from "../kernels/shared-heap.js";
import { SvcError } from "../errors.js";
import type { ScanReply, ScanTask } from "./scan-task.js";

const { module, memory } = workerData as { module: WebAssembly.Module; memory: WebAssembly.Memory };
const kernels = Kernels.create(new SharedHeap(memory), module);

/** Runs one task; replies with the number of keys written per heap, or the SvcError raised. */
export default function run(task: ScanTask): ScanReply {
  try {
    if (task.kind === "encode") {
      kernels.encode(task.src, task.n, task.dim, task, task.out);
      return 0;
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
    if (task.kind === "multi") return kernels.topKMultiRaw(task.rows, task.start, task.end, task.queries, task.nq, task.k, task.out, task.table);
    if (task.mask !== 0) return kernels.topKMaskedRaw(task.rows, task.start, task.end, task.query, task.k, task.mask, task.out);
    return kernels.topKRaw(task.rows, task.start, task.end, task.query, task.k, task.out);
  } catch (err) {
    if (err instanceof SvcError) return { error: err.toJSON().error };
    throw err;
  }
}
