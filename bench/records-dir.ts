/**
 * @module records-dir — a data dir of records-scale-bench.ts opened in-process for the first-stage benches at 1M
 * (records-prefix-bench.ts, records-graph-bench.ts): namespace `big`'s partition and pinned 1-bit rows, the two query
 * sets encoded as RecordService encodes them (the 225 Cranfield texts; seeded held-in rows, own row to be left out),
 * today's last two stages (asymmetric estimate, float rescoring) and Cranfield nDCG@10 among the records.
 */
import { loadavg } from "node:os";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { bestEstimated } from "../src/engine/estimate.js";
import type { Partition } from "../src/engine/partition.js";
import { Kernels, type TopK } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import type { Rotation } from "../src/kernels/rotation.js";
import type { LocalRecordStore } from "../src/memory/record-store.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { loadCranfield } from "./cranfield.js";
import { ndcgAt } from "./encoder-metrics.js";

export const WANT = 100; // candidatesFor(10): the rows a top-10 cosine query keeps from the 1-bit stage
export const ESTIMATE = 40; // rescoreFor(10)

/** ms of CPU of the whole process (all threads, native ones included). */
export const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
export const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

export interface Query {
  /** heap pointer of the query's 1-bit code (rows.words * 8 bytes) */
  bits: number;
  unit: Float32Array;
  rotated: Float32Array;
  /** the query's own row (held-in), else -1 */
  self: number;
  /** Cranfield query ordinal, else -1 */
  ordinal: number;
}

/** Opens `dir` (it must hold a merged `big` namespace); `heldIn` seeded rows (mulberry32(5)) among the first `n` rows. */
export async function openRecordsDir(dir: string, heldIn = 200, n?: number) {
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const encoder = TextEncoder1024.load();
  const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
  const heap = kernels.heap;
  const s = await (svc as unknown as { local: { get(t: string): Promise<LocalRecordStore> } }).local.get("t");
  await s.settled();
  const c = s.collection;
  const st = (c as unknown as { s: { partitions: Map<string, Partition>; rotation: Rotation } }).s;
  const p = st.partitions.get("big")!;
  const { rows, unpin } = p.arena.pin();
  const rowBytes = rows.words * 8;
  const count = Math.min(n ?? rows.count, rows.count);
  const encodeQuery = (v: Float32Array, self: number, ordinal: number): Query => {
    const bits = heap.alloc(rowBytes);
    const unitPtr = heap.alloc(v.length * 4);
    st.rotation.encode(v, bits, unitPtr);
    const q = { bits, unit: heap.f32(unitPtr, v.length).slice(), rotated: st.rotation.lastRotated(), self, ordinal };
    heap.release(unitPtr);
    return q;
  };
  const { queries, qrels } = loadCranfield();
  const idOf = (JSON.parse(readFileSync(join(dir, "cranfield-ids.json"), "utf8")) as Record<string, Record<string, number>>).big!;
  const next = mulberry32(5);
  const sets: [string, Query[]][] = [
    ["Cranfield queries", queries.map((q) => encodeQuery(encoder.encode(q.text), -1, q.ordinal))],
    ["held-in rows", Array.from({ length: heldIn }, () => next() % count).map((r) => encodeQuery(p.vector(r) as Float32Array, r, -1))],
  ];
  /** a TopK's positions, the query's own row left out */
  const without = (t: TopK, self: number) => Array.from(t.rows.keys()).filter((i) => t.rows[i] !== self);
  /** Today's last two stages: the best ESTIMATE of `cands` by the asymmetric estimate, rescored with their float values; best 10 rows. */
  const finish = (q: Query, cands: Uint32Array): number[] => {
    const best = bestEstimated(kernels, rows, cands, q.rotated, ESTIMATE + (q.self >= 0 ? 1 : 0));
    const scored = Array.from(best, (row) => {
      const x = p.vector(row) as Float32Array;
      let dot = 0;
      let xx = 0;
      for (let j = 0; j < x.length; j++) {
        dot += q.unit[j]! * x[j]!;
        xx += x[j]! * x[j]!;
      }
      return { row, score: xx > 0 ? dot / Math.sqrt(xx) : 0 };
    });
    return scored
      .filter((h) => h.row !== q.self)
      .sort((a, b) => b.score - a.score || a.row - b.row)
      .slice(0, 10)
      .map((h) => h.row);
  };
  /** Cranfield nDCG@10 of a top-10 of rows (0 for a held-in row) */
  const ndcg = (q: Query, top: number[]) =>
    q.ordinal < 0
      ? 0
      : ndcgAt(
          top.map((r) => idOf[p.idOf(r)] ?? -1),
          qrels.get(q.ordinal) ?? new Map(),
          10,
        );
  /**
   * A first stage's candidates for `q` judged against today's plan (`exact`, the 1-bit scan's TopK, and `today`, its final
   * top-10): the candidates' full-code distances for the best WANT (ms of CPU: listCpu), recall@10 and @100 by distance
   * against `exact` (ties count), then today's last two stages on them: the final top-10's overlap with `today` and its nDCG@10.
   */
  const judge = (q: Query, exact: TopK, today: number[], cands: Uint32Array) => {
    const t = cpu();
    const list = heap.put(cands);
    const top = kernels.topKList(rows, list, cands.length, q.bits, WANT + (q.self >= 0 ? 1 : 0));
    heap.release(list);
    const listCpu = cpu() - t;
    const exd = without(exact, q.self).map((j) => exact.dists[j]!);
    const got = without(top, q.self).map((j) => top.dists[j]!);
    const hits10 = Math.min(10, got.slice(0, 10).filter((x) => x <= exd[9]!).length);
    const hits100 = Math.min(WANT, got.slice(0, WANT).filter((x) => x <= exd[WANT - 1]!).length);
    const fin = finish(q, top.rows);
    return { listCpu, got, hits10, hits100, same: fin.filter((r) => today.includes(r)).length, ndcg: ndcg(q, fin) };
  };
  const close = async () => {
    unpin();
    await svc.close();
    await pool.close();
  };
  return { kernels, heap, c, p, rows, rowBytes, n: count, sets, without, finish, ndcg, judge, close };
}
