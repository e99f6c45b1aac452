/** @module scan-task — the message a pool worker receives (a scan stripe, an encode slice or a chunk of the depth calibration's exact pass: pointers into the shared memory only), and the heap report it posts back. */
import type { IvfRef, KeepRows, RowsRef } from "../kernels/abi.js";

/** One stripe or one query group; results go to `out` as ascending u64 keys. */
export type ScanTask =
  | { kind: "topK"; rows: RowsRef; start: number; end: number; query: number; k: number; out: number; mask: number }
  | { kind: "list"; rows: RowsRef; list: number; n: number; query: number; k: number; out: number }
  | { kind: "multi"; rows: RowsRef; start: number; end: number; queries: number; nq: number; k: number; out: number; table: number }
  | { kind: "encode"; src: number; n: number; dim: number; P: number; signs: number; scratch: number; out: number }
  // one chunk of the depth calibration's exact pass (Kernels.dotF32KeepRows)
  | ({ kind: "keep" } & KeepRows)
  // nq queries (rows at `queries`) probed one after the other: query j's keys at out + j * block, its scratch after them, its count at counts + 4j
  | { kind: "nearest"; rows: RowsRef; start: number; end: number; centroids: number; nc: number; out: number; dists: number }
  | {
      kind: "probe";
      rows: RowsRef;
      ivf: IvfRef;
      queries: number;
      nq: number;
      k: number;
      minProbe: number;
      cap: number;
      slack: number;
      out: number;
      block: number;
      counts: number;
    };

/** A worker answers with the key count, or with the SvcError it raised (errors lose their class across threads). */
export type ScanReply = number | { error: { code: string; message: string; field?: string } };

/** One worker isolate's V8 heap (bytes), from v8.getHeapStatistics() in the worker. */
export interface WorkerHeap {
  threadId: number;
  used: number;
  total: number;
  physical: number;
  external: number;
  malloced: number;
}

/** What a worker posts on its parentPort besides Piscina's own messages (the pool's 'message' event). */
export interface WorkerHeapMessage {
  workerHeap: WorkerHeap;
}
