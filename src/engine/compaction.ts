/** @module compaction — copying a partition's live rows into a fresh generation while it keeps serving. */
import type { Rotation } from "../kernels/rotation.js";
import { tick } from "./ivf.js";
import type { Metadata } from "./filter/metadata.js";
import type { Partition } from "./partition.js";

/** Rows copied per step; between steps queries and the applier run (and may append to `old`). */
const CHUNK = 4096;

/**
 * Copy the live rows of `old` into `fresh` in order, bits as they are (no re-encoding),
 * values and records (metadata, payloads) re-appended, until `fresh` has caught up with every row appended to
 * `old` meanwhile. Returns old row -> fresh row (-1: dropped as dead). The caller pins `old`.
 * Between steps `stop()` abandons the copy with E_CLOSED (a closing collection does not wait for it).
 */
export async function copyLiveRows(
  old: Partition,
  fresh: Partition,
  rotation: Rotation | null,
  stop: () => boolean = () => false,
): Promise<Int32Array> {
  let map = new Int32Array(Math.max(1, old.rows));
  let copied = 0;
  for (;;) {
    const end = Math.min(old.rows, copied + CHUNK);
    if (end > map.length) {
      const grown = new Int32Array(Math.max(end, map.length * 2));
      grown.set(map);
      map = grown;
    }
    if (end > copied) {
      const { vectors, bits } = old.copyRows(copied, end - copied);
      const ids: string[] = [];
      const metas: (Metadata | null)[] = [];
      const payloads: (Uint8Array | null)[] = [];
      const keep: number[] = [];
      for (let r = copied; r < end; r++) {
        map[r] = -1;
        if (old.tombstones.has(r)) continue;
        map[r] = fresh.rows + keep.length;
        keep.push(r - copied);
        ids.push(old.idOf(r));
        const meta = old.metadata(r);
        metas.push(Object.keys(meta).length === 0 ? null : meta);
        payloads.push(old.payload(r));
      }
      const pick = (src: Uint8Array, width: number) => {
        const out = new Uint8Array(keep.length * width);
        keep.forEach((k, i) => out.set(src.subarray(k * width, (k + 1) * width), i * width));
        return out;
      };
      const vectorBytes = vectors.byteLength / (end - copied);
      fresh.append(rotation, ids, pick(vectors, vectorBytes), metas, rotation ? pick(bits, old.arena.rowBytes) : undefined, payloads);
      copied = end;
    }
    if (copied === old.rows) return map;
    await tick(stop);
  }
}

/**
 * Rows of `old` that died after they were copied (deleted, or replaced by a later upsert)
 * die in `fresh` too. Runs synchronously at the swap, so nothing changes in between.
 */
export function carryTombstones(old: Partition, fresh: Partition, map: Int32Array): void {
  const dead: number[] = [];
  for (const r of old.tombstones.toUint32Array()) {
    const n = map[r]!;
    if (n >= 0 && !fresh.tombstones.has(n)) dead.push(n);
  }
  fresh.removeRows(dead);
}
