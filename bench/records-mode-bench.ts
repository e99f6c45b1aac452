/**
 * @module records-mode-bench — records queries with `text` through RecordService (the server's path):
 * nDCG@10 on Cranfield of the default mode (cosine, `mode: "vector"`, since issue 29; hybrid before) and both modes, and query latency at ~100k
 * records for both modes, including the first hybrid query after a write (no BM25 rebuild: postings are
 * updated on write). Run: `npx tsx bench/records-mode-bench.ts [records=100000] [queries=200]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { Kernels } from "../src/kernels/abi.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { docText, loadCranfield } from "./cranfield.js";
import { ndcgAt } from "./encoder-metrics.js";
import { mulberry32 } from "../src/kernels/random.js";
import { summarize } from "./stats.js";

const records = Number(process.argv[2] ?? 100_000);
const nQueries = Number(process.argv[3] ?? 200);
const dir = mkdtempSync(join(tmpdir(), "svc-mode-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const encoder = TextEncoder1024.load();
const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
try {
  // Cranfield: 1,400 documents, 225 queries, graded gains
  const { docs, queries, qrels } = loadCranfield();
  const idOf = new Map<string, number>();
  for (let i = 0; i < docs.length; i += 1000) {
    const batch = docs.slice(i, i + 1000);
    const { ids } = await svc.ingest(
      "t",
      "cran",
      batch.map((d) => ({ kind: "doc", text: docText(d).trim() || "(empty)" })),
    );
    ids.forEach((id, j) => idOf.set(id, batch[j]!.id));
  }
  const ndcg: Record<string, number> = {};
  for (const mode of ["default", "vector", "hybrid"] as const) {
    let sum = 0;
    for (const q of queries) {
      const res = await svc.query("t", "cran", { text: q.text, topK: 10, ...(mode === "default" ? {} : { mode }) });
      sum += ndcgAt(
        res.records.map((r) => idOf.get(r.id)!),
        qrels.get(q.ordinal) ?? new Map(),
        10,
      );
    }
    ndcg[mode] = sum / queries.length;
  }
  console.log(
    `Cranfield nDCG@10 (graded) through RecordService: default ${ndcg.default!.toFixed(4)}, mode vector ${ndcg.vector!.toFixed(4)}, mode hybrid ${ndcg.hybrid!.toFixed(4)}`,
  );

  // ~100k records: Cranfield sentences recombined (seeded), so texts have a realistic vocabulary
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
  console.log(`ingested ${records} records in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const qs = Array.from({ length: nQueries }, (_, i) => queries[i % queries.length]!.text);
  const b0 = performance.now();
  await svc.query("t", "big", { text: qs[0]!, topK: 10 });
  console.log(`first hybrid query (builds BM25 over ${records} records): ${(performance.now() - b0).toFixed(0)} ms`);
  for (const mode of ["vector", "hybrid"] as const) {
    const ms: number[] = [];
    for (const text of qs) {
      const s = performance.now();
      await svc.query("t", "big", { text, topK: 10, mode });
      ms.push(performance.now() - s);
    }
    const l = summarize(ms);
    console.log(`${mode}: p50 ${l.p50.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms over ${nQueries} queries`);
  }
  const builds = svc.lexicalBuilds;
  for (const mode of ["vector", "hybrid"] as const) {
    const after: number[] = [];
    for (let i = 0; i < 20; i++) {
      await svc.ingest("t", "big", [{ kind: "note", text: `${pick()} ${pick()}` }]);
      const s = performance.now();
      await svc.query("t", "big", { text: qs[i]!, topK: 10, mode });
      after.push(performance.now() - s);
    }
    const la = summarize(after);
    console.log(`first ${mode} query after a write: p50 ${la.p50.toFixed(2)} ms, max ${Math.max(...after).toFixed(2)} ms over 20 writes`);
  }
  console.log(`BM25 builds caused by the 40 writes: ${svc.lexicalBuilds - builds}`);
} finally {
  await svc.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
}
