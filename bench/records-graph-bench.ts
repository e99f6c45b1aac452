/**
 * @module records-graph-bench — would a graph index (HNSW) over the rows' 1-bit codes serve the records' unfiltered
 * vector scan at 1M (issue 32 item 3)? On a data dir of records-scale-bench.ts (namespace `big`, merged index): usearch's
 * HNSW (metric hamming, scalar b1, connectivity M, expansion_add 128) over the first n rows' 1024-bit codes, then for the
 * 225 Cranfield queries (text, as RecordService encodes them) and 200 seeded held-in rows (own row left out), per search
 * expansion ef: the graph's ef best rows as candidates, their full-code distances (our kernel) for the top 100, then
 * today's estimate (best 40) and float rescoring (best 10). Against today's plan (the exact 1-bit scan of the same n rows):
 * recall@10 and @100 by distance (ties count), the final top-10's overlap with today's, Cranfield nDCG@10 among the n
 * rows, CPU per query of the graph search (one thread) and of the candidates' full distances; build CPU and memory.
 * ef is applied as usearch does it, max(expansion_search, k): the index is built with expansion_search 16 and searched
 * with k = ef (the first 100 of the ef found are what an ef-expansion search returns).
 * Run: `CRANFIELD_DIR=... npx tsx bench/records-graph-bench.ts <dir> [n=250000,...] [M=16,32] [ef=100,200,400,800,1600]`.
 */
import { statSync, unlinkSync } from "node:fs";
import { Index, MetricKind, ScalarKind } from "usearch";
import { cpu, load, openRecordsDir, WANT } from "./records-dir.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: records-graph-bench.ts <dir> [n,...] [M,...] [ef,...]");
const nList = (process.argv[3] ?? "250000").split(",").map(Number);
const mList = (process.argv[4] ?? "16,32").split(",").map(Number);
const efList = (process.argv[5] ?? "100,200,400,800,1600").split(",").map(Number);
const EXPANSION_ADD = 128; // usearch's default construction expansion
const BATCH = 16384; // rows expanded to floats per add() call (64 MiB)
const SAVED = "/tmp/recgraph-index.usearch";
const nMax = Math.max(...nList);
const { kernels, heap, c, rows, rowBytes, n: nAll, sets, finish, ndcg, judge, close } = await openRecordsDir(dir, 200, Math.min(...nList));
const DIMS = rowBytes * 8;

/** one packed code (heap bytes at `ptr`) as DIMS floats 0/1 at `out[at...]`: usearch's b1 cast keeps x != 0 as bit 1 */
const unpack = (bytes: Uint8Array, ptr: number, out: Float32Array, at: number) => {
  for (let b = 0; b < rowBytes; b++) {
    const v = bytes[ptr + b]!;
    for (let j = 0; j < 8; j++) out[at + b * 8 + j] = (v >> j) & 1;
  }
};

try {
  console.log(`rows ${nAll} (index ${JSON.stringify(c.indexStats("big"))}); load ${load()}`);
  for (const n of nList.map((x) => Math.min(x, nAll))) {
    const qsets = sets.map(([name, qs]) => {
      const extra = qs[0]!.self >= 0 ? 1 : 0;
      const floats = qs.map((q) => {
        const f = new Float32Array(DIMS);
        unpack(heap.bytes(), q.bits, f, 0);
        return f;
      });
      let t = cpu();
      const exact = qs.map((q) => kernels.topK({ base: rows.base, words: rows.words, count: n }, 0, n, q.bits, WANT + extra));
      const scanCpu = (cpu() - t) / qs.length;
      const today = qs.map((q, i) => finish(q, exact[i]!.rows));
      const todayNdcg = today.reduce((a, top, i) => a + ndcg(qs[i]!, top), 0) / qs.length;
      return { name, qs, extra, floats, exact, scanCpu, today, todayNdcg };
    });
    for (const M of mList) {
      const index = new Index({
        dimensions: DIMS,
        metric: MetricKind.Hamming,
        quantization: ScalarKind.B1,
        connectivity: M,
        expansion_add: EXPANSION_ADD,
        expansion_search: 16,
        multi: false,
      });
      const buf = new Float32Array(BATCH * DIMS);
      const rss0 = process.memoryUsage().rss;
      let addCpu = 0;
      const w0 = performance.now();
      for (let r0 = 0; r0 < n; r0 += BATCH) {
        const m = Math.min(BATCH, n - r0);
        const bytes = heap.bytes();
        for (let i = 0; i < m; i++) unpack(bytes, rows.base + (r0 + i) * rowBytes, buf, i * DIMS);
        const keys = new BigUint64Array(m);
        for (let i = 0; i < m; i++) keys[i] = BigInt(r0 + i);
        const t = cpu();
        index.add(keys, m === BATCH ? buf : buf.subarray(0, m * DIMS), 2);
        addCpu += cpu() - t;
        if ((r0 / BATCH) % 16 === 15) console.log(`  M ${M}: ${r0 + m} rows added, ${(addCpu / 1000).toFixed(1)} s CPU (load ${load()})`);
      }
      const wall = (performance.now() - w0) / 1000;
      const rss = process.memoryUsage().rss - rss0;
      index.save(SAVED);
      const fileBytes = statSync(SAVED).size;
      unlinkSync(SAVED);
      console.log(
        `\nn ${n}, M ${M}: build ${(addCpu / 1000).toFixed(1)} s CPU (${((addCpu * 1000) / n).toFixed(1)} us a row; ${wall.toFixed(1)} s wall, 2 threads); RSS +${(rss / 2 ** 20).toFixed(0)} MiB (${(rss / n).toFixed(0)} B a row), saved index ${(fileBytes / 2 ** 20).toFixed(0)} MiB (${(fileBytes / n).toFixed(0)} B a row, codes ${rowBytes} B of it); load ${load()}`,
      );
      for (const { name, qs, extra, floats, exact, scanCpu, today, todayNdcg } of qsets) {
        console.log(
          `\n${name} (${qs.length}), n ${n}, M ${M}: exact 1-bit scan of the n rows ${scanCpu.toFixed(2)} ms CPU/query; nDCG@10 today ${name.startsWith("Cran") ? todayNdcg.toFixed(4) : "-"} (load ${load()})`,
        );
        console.log(
          "| n | M | ef | recall@10 vs exact 1-bit | queries missing any | recall@100 | final top-10 = today's | nDCG@10 | CPU graph search ms | CPU full distances ms |",
        );
        console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (const ef of efList) {
          let h10 = 0;
          let h100 = 0;
          let missing = 0;
          let same = 0;
          let nd = 0;
          let tSearch = 0;
          let tList = 0;
          for (const [i, q] of qs.entries()) {
            const t = cpu();
            const res = index.search(floats[i]!, Math.max(ef, WANT) + extra, 1);
            tSearch += cpu() - t;
            const cand = Uint32Array.from(Array.from(res.keys.subarray(0, Number(res.keys.length)), Number).filter((r) => r < n));
            const j = judge(q, exact[i]!, today[i]!, cand);
            tList += j.listCpu;
            h10 += j.hits10;
            if (j.hits10 < 10) missing++;
            h100 += j.hits100;
            same += j.same;
            nd += j.ndcg;
          }
          const m = qs.length;
          console.log(
            `| ${n} | ${M} | ${ef} | ${(h10 / (10 * m)).toFixed(4)} | ${missing} | ${(h100 / (WANT * m)).toFixed(4)} | ${(same / (10 * m)).toFixed(4)} | ${name.startsWith("Cran") ? (nd / m).toFixed(4) : "-"} | ${(tSearch / m).toFixed(2)} | ${(tList / m).toFixed(2)} |`,
          );
        }
      }
    }
  }
  if (nMax > nAll) console.log(`(n capped at the ${nAll} rows)`);
} finally {
  await close();
}
