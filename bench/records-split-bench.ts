/**
 * @module records-split-bench — where a hybrid records text query's time goes at N records (issue 24 target 6):
 * the vector half (encode, the collection query with its plan and stage timings), the BM25 half, fusion and fetch,
 * then the whole `RecordService.query` (`mode: "hybrid"` and `mode: "vector"`, the default), once the namespace's index is built.
 * Run: `npx tsx bench/records-split-bench.ts [records=100000] [queries=200]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { Kernels } from "../src/kernels/abi.js";
import { RecordService, RRF_K } from "../src/memory/records.js";
import type { Collection } from "../src/engine/collection.js";
import type { Bm25Index } from "../src/encoder/bm25.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { loadCranfield } from "./cranfield.js";
import { mulberry32 } from "../src/kernels/random.js";
import { summarize } from "./stats.js";

const records = Number(process.argv[2] ?? 100_000);
/** BM25 depth of the split (the service reads 1,000 before this change, 50 after). */
const DEPTH = Number(process.env.BM25_DEPTH ?? 50);
const nQueries = Number(process.argv[3] ?? 200);
const dir = mkdtempSync(join(tmpdir(), "svc-split-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const encoder = TextEncoder1024.load();
const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
/** The service's internals the split needs (bench only). */
const inner = svc as unknown as {
  collection(t: string): Promise<Collection>;
  lexicalIndex(t: string, ns: string, c: Collection): Promise<{ bm25: Bm25Index }>;
  readFilter(c: Collection, ns: string, p: object): object | undefined;
  filter(p: object): object;
};
const fmt = (ms: number[]) => {
  const s = summarize(ms);
  return `p50 ${s.p50.toFixed(3)} p99 ${s.p99.toFixed(3)}`;
};
try {
  const { docs, queries } = loadCranfield();
  const sentences = docs.flatMap((d) => d.body.split(/(?<=\.)\s+/)).filter((s) => s.length > 20);
  const rnd = mulberry32(11);
  const pick = () => sentences[rnd() % sentences.length]!;
  const t0 = performance.now();
  for (let i = 0; i < records; i += 1000) {
    await svc.ingest(
      "t",
      "big",
      Array.from({ length: Math.min(1000, records - i) }, () => ({ kind: "note", text: `${pick()} ${pick()}` })),
    );
  }
  console.log(`ingested ${records} records in ${((performance.now() - t0) / 1000).toFixed(1)} s (durability none, in-process)`);
  const c = await inner.collection("t");
  const w0 = performance.now();
  for (let i = 0; i < Number(process.env.INDEX_WAIT_S ?? 60); i++) {
    const st = c.indexStats("big");
    if (st !== null && st.deltaRows === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  console.log(`index: ${JSON.stringify(c.indexStats("big"))} (waited ${((performance.now() - w0) / 1000).toFixed(1)} s)`);
  const b0 = performance.now();
  const lex = await inner.lexicalIndex("t", "big", c);
  console.log(`BM25 build: ${(performance.now() - b0).toFixed(0)} ms`);
  const qs = Array.from({ length: nQueries }, (_, i) => queries[i % queries.length]!.text);
  const split = {
    encode: [] as number[],
    vector: [] as number[],
    filter: [] as number[],
    scan: [] as number[],
    estimate: [] as number[],
    rescore: [] as number[],
    bm25: [] as number[],
    fuse: [] as number[],
    fetch: [] as number[],
  };
  const plans = new Map<string, number>();
  for (let pass = 0; pass < 2; pass++) {
    for (const text of qs) {
      let t = performance.now();
      const lap = (arr: number[]) => {
        const now = performance.now();
        if (pass === 1) arr.push(now - t);
        t = now;
      };
      const vector = encoder.encodeBatch([text]);
      lap(split.encode);
      const res = await c.query("big", { vector, topK: 50, filter: inner.readFilter(c, "big", {}) });
      lap(split.vector);
      if (pass === 1) {
        plans.set(res.plan, (plans.get(res.plan) ?? 0) + 1);
        split.filter.push(res.timings!.filter);
        split.scan.push(res.timings!.scan);
        split.estimate.push(res.timings!.estimate);
        split.rescore.push(res.timings!.rescore);
      }
      const byWords = lex.bm25
        .search(text, DEPTH)
        .slice(0, 50)
        .map((h) => h.id);
      lap(split.bm25);
      const fused = new Map<string, number>();
      for (const ranking of [res.matches.map((m) => m.id), byWords])
        ranking.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
      const best = [...fused].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
      lap(split.fuse);
      c.fetch(
        "big",
        best.map(([id]) => id),
      );
      lap(split.fetch);
    }
  }
  console.log(`plans: ${JSON.stringify(Object.fromEntries(plans))}`);
  // the halves as they were (vector: the 'not expired' clause always, a row list of every record; BM25: top 1,000) and are, interleaved
  const halves = {
    "vector, always filtered (before)": [] as number[],
    "vector, unfiltered (after)": [] as number[],
    "bm25 search(q, 1000) (before)": [] as number[],
    "bm25 search(q, 50) (after)": [] as number[],
  };
  for (let pass = 0; pass < 2; pass++) {
    for (const text of qs) {
      const vector = encoder.encodeBatch([text]);
      let s0 = performance.now();
      await c.query("big", { vector, topK: 50, filter: inner.filter({}) });
      const a = performance.now() - s0;
      s0 = performance.now();
      await c.query("big", { vector, topK: 50, filter: inner.readFilter(c, "big", {}) });
      const b = performance.now() - s0;
      s0 = performance.now();
      lex.bm25.search(text, 1000);
      const d = performance.now() - s0;
      s0 = performance.now();
      lex.bm25.search(text, 50);
      const e = performance.now() - s0;
      if (pass === 1) [a, b, d, e].forEach((v, i) => Object.values(halves)[i]!.push(v));
    }
  }
  for (const [k, v] of Object.entries(halves)) console.log(`  ${k.padEnd(34)} ${fmt(v)} ms`);
  for (const [k, v] of Object.entries(split)) console.log(`  ${k.padEnd(9)} ${fmt(v)} ms`);
  for (const mode of ["hybrid", "vector", "hybrid", "vector"] as const) {
    const ms: number[] = [];
    for (const text of qs) {
      const s = performance.now();
      await svc.query("t", "big", { text, topK: 10, mode });
      ms.push(performance.now() - s);
    }
    console.log(`RecordService.query mode ${mode}: ${fmt(ms)} ms over ${nQueries} queries`);
  }
  console.log(
    `load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
} finally {
  await svc.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
}
