/**
 * @module records-prefix-bench — would a prefix-code first stage serve the records' unfiltered vector scan at 1M (issue 32
 * item 3)? On a data dir of records-scale-bench.ts: the first `bits` of every row's 1-bit code copied into a compact block,
 * its Hamming top-C as candidates, their full-code distances for the top `want` (100: a top-10 cosine query's candidates),
 * then today's asymmetric estimate (best 40) and float rescoring (best 10). Against today's plan (the exact 1-bit scan of
 * every row): recall@10 and @100 by distance (ties count), the final top-10's overlap with today's, Cranfield nDCG@10 of
 * both among the N records, and CPU per query of each stage (main thread, no workers). Two query sets: the 225 Cranfield
 * queries (text, as RecordService encodes them) and 200 seeded held-in rows (their own row left out), which is what a
 * calibration in the engine's style (ivf.ts, depth.ts) would measure.
 * Run: `CRANFIELD_DIR=... npx tsx bench/records-prefix-bench.ts <dir> [bits=128,256,512] [C=1000,4000,16000]`.
 */
import type { RowsRef } from "../src/kernels/abi.js";
import { cpu, load, openRecordsDir, WANT } from "./records-dir.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: records-prefix-bench.ts <dir> [bits,...] [C,...]");
const bitsList = (process.argv[3] ?? "128,256,512").split(",").map(Number);
const cList = (process.argv[4] ?? "1000,4000,16000").split(",").map(Number);
const Z_CERT = 3;
const { kernels, heap, c, rows, n, sets, without, finish, ndcg, judge, close } = await openRecordsDir(dir);

try {
  console.log(`rows ${n} (index ${JSON.stringify(c.indexStats("big"))}); load ${load()}`);
  // the prefix blocks: the first `bits` of each row, rows of bits / 64 lanes (a copy: 16 B per row per 128 bits)
  const prefixes = new Map<number, RowsRef>();
  for (const bits of bitsList) {
    let t = cpu();
    const w = bits / 64;
    const base = heap.alloc(n * w * 8);
    const src = heap.u32(rows.base, n * rows.words * 2);
    const dst = heap.u32(base, n * w * 2);
    for (let r = 0, per = w * 2, stride = rows.words * 2; r < n; r++) dst.set(src.subarray(r * stride, r * stride + per), r * per);
    prefixes.set(bits, { base, words: w, count: n });
    const copied = cpu() - t;
    t = cpu();
    for (let i = 0; i < 10; i++) kernels.readProbe(prefixes.get(bits)!);
    console.log(
      `prefix block ${bits} bits: ${((n * w * 8) / 2 ** 20).toFixed(1)} MiB, copied in ${copied.toFixed(0)} ms CPU; stream read (the memory floor of a scan) ${((cpu() - t) / 10).toFixed(2)} ms CPU`,
    );
  }
  let t0 = cpu();
  for (let i = 0; i < 10; i++) kernels.readProbe(rows);
  console.log(`full codes: stream read ${((cpu() - t0) / 10).toFixed(2)} ms CPU`);
  for (const [name, qs] of sets) {
    const extra = qs[0]!.self >= 0 ? 1 : 0;
    let t = cpu();
    const exact = qs.map((q) => kernels.topK(rows, 0, n, q.bits, WANT + extra));
    const scanCpu = (cpu() - t) / qs.length;
    const today = qs.map((q, i) => finish(q, exact[i]!.rows));
    const d = (f: number, at: number) =>
      exact.map((e, i) => e.dists[without(e, qs[i]!.self)[at]!]!).sort((a, b) => a - b)[Math.floor(f * qs.length)];
    console.log(
      `\n${name} (${qs.length}): exact 1-bit scan ${scanCpu.toFixed(2)} ms CPU/query (one thread); distance of the 10th p50 ${d(0.5, 9)}, 100th p50 ${d(0.5, 99)} (of ${rows.words * 64}); nDCG@10 today ${(today.reduce((a, top, i) => a + ndcg(qs[i]!, top), 0) / qs.length).toFixed(4)} (load ${load()})`,
    );
    console.log(
      "| prefix bits | C | recall@10 vs exact 1-bit | queries missing any | recall@100 | final top-10 = today's | nDCG@10 | CPU prefix scan ms | CPU C full distances ms | certified (recall@100 of those) |",
    );
    console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const bits of bitsList) {
      const pr = prefixes.get(bits)!;
      const qp = heap.alloc(pr.words * 8);
      for (const C of cList) {
        let h10 = 0;
        let h100 = 0;
        let missing = 0;
        let same = 0;
        let nd = 0;
        let tScan = 0;
        let tList = 0;
        let certified = 0;
        let certHits = 0;
        for (const [i, q] of qs.entries()) {
          heap.bytes().copyWithin(qp, q.bits, q.bits + pr.words * 8);
          t = cpu();
          const cand = kernels.topK(pr, 0, n, qp, C);
          tScan += cpu() - t;
          const { listCpu, got, hits10, hits100, same: sameRows, ndcg: ndcgQ } = judge(q, exact[i]!, today[i]!, cand.rows);
          tList += listCpu;
          h10 += hits10;
          if (hits10 < 10) missing++;
          h100 += hits100;
          // A per-query certificate: a row outside the C candidates has a prefix distance >= b; a row at the found
          // want-th full distance D has a hypergeometric prefix distance (bits of the N drawn without replacement),
          // mean bits D / N; certified when b is Z_CERT of its standard deviations above that mean.
          const N = rows.words * 64;
          const D = got[WANT - 1] ?? N;
          const f = D / N;
          const sd = Math.sqrt((bits * f * (1 - f) * (N - bits)) / (N - 1));
          if (cand.dists[cand.dists.length - 1]! - (bits * D) / N >= Z_CERT * sd) {
            certified++;
            certHits += hits100;
          }
          same += sameRows;
          nd += ndcgQ;
        }
        const m = qs.length;
        console.log(
          `| ${bits} | ${C} | ${(h10 / (10 * m)).toFixed(4)} | ${missing} | ${(h100 / (WANT * m)).toFixed(4)} | ${(same / (10 * m)).toFixed(4)} | ${name.startsWith("Cran") ? (nd / m).toFixed(4) : "-"} | ${(tScan / m).toFixed(2)} | ${(tList / m).toFixed(2)} | ${certified} (${certified ? (certHits / (WANT * certified)).toFixed(4) : "-"}) |`,
        );
      }
      heap.release(qp);
    }
  }
} finally {
  await close();
}
