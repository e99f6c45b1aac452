/**
 * @module records-ivf-probe — why the records namespace's index calibrates no probe (issue 32 item 3): per PROBE_LADDER step,
 * held-in recall as calibration measures it and the scan fraction, then Cranfield queries' recall@10 against today's answers.
 * Run: `npx tsx bench/records-ivf-probe.ts <dir built by records-scale-bench.ts> [queries=225]`.
 */
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import type { LocalRecordStore } from "../src/memory/record-store.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { PROBE_LADDER, type IvfIndex } from "../src/engine/ivf.js";
import type { Partition } from "../src/engine/partition.js";
import { loadCranfield } from "./cranfield.js";

const dir = process.argv[2]!;
const nQ = Number(process.argv[3] ?? 225); // 0: held-in rows only (at 1M the reopened dir's delta is scanned exactly by every probe)
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const encoder = TextEncoder1024.load();
const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
try {
  const s = await (svc as unknown as { local: { get(t: string): Promise<LocalRecordStore> } }).local.get("t");
  await s.settled();
  const c = s.collection;
  // the index is built in the background after a load: wait for it (bounded)
  // (WAIT_INDEX=1: also until the delta is merged, i.e. under a tenth of the indexed rows; at most 10 minutes)
  const waiting = () => {
    const st = c.indexStats("big");
    return st === null || (process.env.WAIT_INDEX === "1" && st.deltaRows > st.indexedRows / 10);
  };
  for (let i = 0; i < 600 && waiting(); i++) await new Promise((r) => setTimeout(r, 1000));
  console.log(JSON.stringify(c.indexStats("big")));
  const p = (c as unknown as { s: { partitions: Map<string, Partition> } }).s.partitions.get("big")!;
  const ivf = p.ivf as IvfIndex;
  const sizes = Array.from({ length: ivf.lists }, (_, l) => ivf.offsets[l + 1]! - ivf.offsets[l]!).sort((a, b) => a - b);
  const q = (a: ArrayLike<number>, f: number) => a[Math.min(a.length - 1, Math.floor(f * a.length))];
  console.log(
    `list sizes p0 ${sizes[0]} p10 ${q(sizes, 0.1)} p50 ${q(sizes, 0.5)} p90 ${q(sizes, 0.9)} p99 ${q(sizes, 0.99)} max ${sizes.at(-1)}`,
  );
  const radii = Array.from(ivf.radii).sort((a, b) => a - b);
  console.log(`radii p10 ${q(radii, 0.1)} p50 ${q(radii, 0.5)} p90 ${q(radii, 0.9)}`);
  const { rows: all, unpin } = p.arena.pin();
  try {
    const n = ivf.indexedRows;
    // the indexed rows only: a delta (rows written since the build) would be scanned exactly by every probe
    const rows = { ...all, count: n };
    const rowBytes = rows.words * 8;
    const next = mulberry32(7);
    const sample = Array.from({ length: 100 }, () => next() % n);
    const kth: number[] = [];
    const d10: number[] = [];
    // distances between random pairs of rows (what a list's radius compares with)
    const pairs: number[] = [];
    for (let i = 0; i < 1000; i++)
      pairs.push(kernels.hamming(rows.base + (next() % n) * rowBytes, rows.base + (next() % n) * rowBytes, rows.words));
    pairs.sort((a, b) => a - b);
    for (const r of sample) {
      const t = kernels.topK(rows, 0, rows.count, rows.base + r * rowBytes, 101);
      const ds = Array.from(t.dists).filter((_, i) => t.rows[i] !== r);
      kth.push(ds[9]!);
      d10.push(ds[99]!);
    }
    console.log(
      `held-in: 10th nearest bits p50 ${q(
        kth.slice().sort((a, b) => a - b),
        0.5,
      )}, 100th ${q(
        d10.slice().sort((a, b) => a - b),
        0.5,
      )} (of ${rows.words * 64}); random pairs p1 ${q(pairs, 0.01)} p50 ${q(pairs, 0.5)}`,
    );
    for (const params of PROBE_LADDER) {
      let hits = 0;
      let lists = 0;
      const c0 = process.cpuUsage();
      for (const [i, r] of sample.entries()) {
        const res = kernels.ivfProbe(rows, ivf.ref(), rows.base + r * rowBytes, 101, {
          minProbe: params.minProbe,
          cap: Math.min(ivf.lists, params.maxProbe * 10),
          slack: params.slack,
        });
        lists += res.probed;
        hits += Math.min(10, Array.from(res.top.dists).filter((d, j) => res.top.rows[j] !== r && d <= kth[i]!).length);
      }
      const fraction = (ivf.lists + (lists / sample.length) * (n / ivf.lists) + (rows.count - n)) / rows.count;
      console.log(
        `  held-in ${JSON.stringify(params)}: recall ${(hits / (10 * sample.length)).toFixed(4)} lists ${(lists / sample.length).toFixed(1)} fraction ${fraction.toFixed(3)} CPU ${((u) => (u.user + u.system) / 1000)(process.cpuUsage(c0)).toFixed(0)} ms`,
      );
    }
  } finally {
    unpin();
  }
  if (nQ > 0) {
    const { queries } = loadCranfield();
    const qs = queries.slice(0, nQ).map((x) => encoder.encode(x.text));
    const today: string[][] = [];
    const exact: string[][] = [];
    for (const v of qs) {
      today.push((await c.query("big", { vector: v, topK: 10 })).matches.map((m) => m.id));
      exact.push((await c.query("big", { vector: v, topK: 10, exact: true })).matches.map((m) => m.id));
    }
    const overlap = (a: string[][], b: string[][]) =>
      a.reduce((s, x, i) => s + x.filter((id) => b[i]!.includes(id)).length, 0) / (10 * a.length);
    console.log(`queries: today's (no probe) vs exact float: ${overlap(today, exact).toFixed(4)}`);
    for (const params of PROBE_LADDER) {
      const got: string[][] = [];
      let lists = 0;
      for (const v of qs) {
        const r = await c.query("big", { vector: v, topK: 10, probe: params });
        lists += r.probed ?? 0;
        got.push(r.matches.map((m) => m.id));
      }
      console.log(
        `  queries ${JSON.stringify(params)}: recall@10 vs today ${overlap(got, today).toFixed(4)} vs exact ${overlap(got, exact).toFixed(4)} lists ${(lists / qs.length).toFixed(1)}`,
      );
    }
  }
} finally {
  await svc.close();
  await pool.close();
}
