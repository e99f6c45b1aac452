/** @module ivf-build — the clustering compaction: copies a partition's live rows into a fresh generation grouped by nearest centroid, so each list of the index is a contiguous row range. */
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { Rotation } from "../kernels/rotation.js";
import type { Metadata } from "./filter/metadata.js";
import { assignRows, groupBy, IvfIndex, listRadii, listsFor, tick, trainCentroids } from "./ivf.js";
import type { Partition } from "./partition.js";
import { candidatesFor, depthScale } from "./search.js";
import { calibrateRescore } from "./depth.js";

/** Rows copied per step; between steps queries and the applier run (and may append to `old`). */
const CHUNK = 4096;

/**
 * Like copyLiveRows (compaction.ts), but the live rows of `old` present at the start are
 * copied grouped by their nearest centroid (k-modes on a sample), then the rows appended to
 * `old` meanwhile follow in order: they are the new index's delta. Sets `fresh.ivf`.
 * Returns old row -> fresh row (-1: dropped as dead). The caller pins `old`. Every step
 * yields, so queries and writes go on (writes land in `old` and are caught up here); after
 * a step, `stop()` abandons the build with E_CLOSED. `persist` makes the index durable (ivf.bin)
 * before the catch-up, whose last step returns without yielding: the caller swaps at once.
 */
export async function copyClustered(
  kernels: Kernels,
  pool: ScanPool | null,
  old: Partition,
  fresh: Partition,
  rotation: Rotation | null,
  seed: number,
  stop: () => boolean,
  persist: (ivf: IvfIndex) => Promise<void>,
  lists?: number,
): Promise<Int32Array> {
  const n0 = old.rows;
  const live = old.live().toUint32Array();
  const pin = () => old.arena.pin();
  const dimBits = old.shape.dimension;
  const nl = Math.max(1, Math.min(live.length, lists ?? listsFor(live.length)));
  const centroids = await trainCentroids(kernels, pool, pin, live, nl, dimBits, seed, stop);
  try {
    const { nearest, dists } = await assignRows(kernels, pool, pin, n0, centroids, nl, stop);
    const { order, offsets } = groupBy(nearest, nl, live);
    const radii = listRadii(order, offsets, dists);
    let map = new Int32Array(Math.max(1, old.rows)).fill(-1);
    for (let s = 0; s < order.length; s += CHUNK) {
      appendRows(kernels, old, fresh, rotation, order.subarray(s, Math.min(order.length, s + CHUNK)), map);
      await tick(stop);
    }
    const rowBytes = old.arena.rowBytes;
    fresh.ivf = new IvfIndex(
      kernels,
      dimBits,
      old.arena.words,
      kernels.heap.bytes().slice(centroids, centroids + nl * rowBytes),
      offsets,
      radii,
    );
    const { rows: copiedRows, unpin } = fresh.arena.pin();
    try {
      await fresh.ivf.calibrate(copiedRows, seed, stop, fresh.values === null ? 10 : candidatesFor(10, depthScale(fresh.shape.dimension)));
    } finally {
      unpin();
    }
    // float rows: how many candidates the index's default queries keep and rescore (before ivf.bin is written: it holds the scales)
    if (rotation !== null && pool !== null && fresh.values !== null) {
      const scales = await calibrateRescore(kernels, pool, fresh, rotation, seed, stop);
      fresh.ivf.candidateScale = scales.candidates;
      fresh.ivf.rescoreScale = scales.rescore;
    }
    // ivf.bin describes the indexed rows only, so it is written now: an await after the catch-up below would let
    // the applier append rows to `old` that the swap (synchronous after the return) would then lose.
    await persist(fresh.ivf);
    // catch up with rows appended meanwhile (the delta), in order; the last step returns without yielding
    let copied = n0;
    for (;;) {
      const end = Math.min(old.rows, copied + CHUNK);
      if (end > map.length) {
        const grown = new Int32Array(Math.max(end, map.length * 2)).fill(-1);
        grown.set(map);
        map = grown;
      }
      const rows: number[] = [];
      for (let r = copied; r < end; r++) if (!old.tombstones.has(r)) rows.push(r);
      appendRows(kernels, old, fresh, rotation, rows, map);
      copied = end;
      if (copied === old.rows) return map;
      await tick(stop);
    }
  } finally {
    kernels.heap.release(centroids);
  }
}

/** Append rows of `old` (in the given order) to `fresh`: bits as they are, values, ids, metadata, payloads; records old -> fresh in map. */
function appendRows(
  kernels: Kernels,
  old: Partition,
  fresh: Partition,
  rotation: Rotation | null,
  rows: ArrayLike<number>,
  map: Int32Array,
): void {
  const n = rows.length;
  if (n === 0) return;
  const rowBytes = old.arena.rowBytes;
  const bytes = kernels.heap.bytes();
  const bits = new Uint8Array(n * rowBytes);
  const vectorBytes = old.values ? old.shape.dimension * 4 : rowBytes;
  const vectors = old.values ? new Uint8Array(n * vectorBytes) : bits;
  const ids: string[] = [];
  const metas: (Metadata | null)[] = [];
  const payloads: (Uint8Array | null)[] = [];
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const ptr = old.arena.rowPtr(r);
    bits.set(bytes.subarray(ptr, ptr + rowBytes), i * rowBytes);
    if (old.values) old.values.readInto(r, vectors.subarray(i * vectorBytes, (i + 1) * vectorBytes));
    map[r] = fresh.rows + i;
    ids.push(old.idOf(r));
    const meta = old.metadata(r);
    metas.push(Object.keys(meta).length === 0 ? null : meta);
    payloads.push(old.payload(r));
  }
  fresh.append(rotation, ids, vectors, metas, rotation ? bits : undefined, payloads);
}
