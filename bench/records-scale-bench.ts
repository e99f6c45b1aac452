/**
 * @module records-scale-bench — records text queries at 100k-1M records on a data dir built once and reused (issue 32 item 3):
 * the split of a query (encode, vector half, BM25 half), `RecordService.query` p50 by mode, and nDCG@10 of Cranfield's 225
 * queries over its 1,400 documents alone and hidden among the N records (graded; other records count as not relevant).
 * Run: `npx tsx bench/records-scale-bench.ts <dir> [records=1000000] [queries=225]`; the first run with a dir ingests
 * (durability none, in-process), later runs reopen it. Records are two seeded Cranfield sentences each, as in records-split-bench.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import type { LocalRecordStore } from "../src/memory/record-store.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { docText, loadCranfield } from "./cranfield.js";
import { ndcgAt } from "./encoder-metrics.js";
import { summarize } from "./stats.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: records-scale-bench.ts <dir> [records] [queries]");
const records = Number(process.argv[3] ?? 1_000_000);
const nQueries = Number(process.argv[4] ?? 225);
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const encoder = TextEncoder1024.load();
const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
// the tenant's local store (behind the API, as tests do); created on first use
const store = (svc as unknown as { local: { get(t: string): Promise<LocalRecordStore> } }).local.get("t");
const fmt = (ms: number[]) => {
  const s = summarize(ms);
  return `p50 ${s.p50.toFixed(2)} p99 ${s.p99.toFixed(2)}`;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
try {
  const { docs, queries, qrels } = loadCranfield();
  const mapFile = join(dir, "cranfield-ids.json");
  if (!existsSync(mapFile)) {
    const t0 = performance.now();
    const idOf: Record<string, Record<string, number>> = { cran: {}, big: {} };
    for (const ns of ["cran", "big"])
      for (let i = 0; i < docs.length; i += 1000) {
        const batch = docs.slice(i, i + 1000);
        const { ids } = await svc.ingest(
          "t",
          ns,
          batch.map((d) => ({ kind: "doc", text: docText(d).trim() || "(empty)" })),
        );
        ids.forEach((id, j) => (idOf[ns]![id] = batch[j]!.id));
      }
    const sentences = docs.flatMap((d) => d.body.split(/(?<=\.)\s+/)).filter((s) => s.length > 20);
    const rnd = mulberry32(11);
    const pick = () => sentences[rnd() % sentences.length]!;
    for (let i = 0; i < records; i += 1000) {
      await svc.ingest(
        "t",
        "big",
        Array.from({ length: Math.min(1000, records - i) }, () => ({ kind: "note", text: `${pick()} ${pick()}` })),
      );
      if (i % 50_000 === 0) process.stderr.write(`\r  ingest ${i} (load ${load()})`);
    }
    await (await store).settled();
    writeFileSync(mapFile, JSON.stringify(idOf));
    console.log(`ingested ${records} + 2 x ${docs.length} records in ${((performance.now() - t0) / 1000).toFixed(1)} s (load ${load()})`);
  }
  const idOf = JSON.parse(readFileSync(mapFile, "utf8")) as Record<string, Record<string, number>>;
  const o0 = performance.now();
  const s = await store;
  await s.settled();
  console.log(`opened in ${((performance.now() - o0) / 1000).toFixed(1)} s; index: ${JSON.stringify(s.collection.indexStats("big"))}`);
  const b0 = performance.now();
  const lex = await s.lexicon.get("big");
  await s.lexicon.get("cran");
  console.log(`BM25 build: ${((performance.now() - b0) / 1000).toFixed(1)} s (${lex.bm25.size} records; load ${load()})`);

  for (const ns of ["cran", "big"])
    for (const mode of ["vector", "hybrid"] as const) {
      let sum = 0;
      for (const q of queries) {
        const res = await svc.query("t", ns, { text: q.text, topK: 10, mode });
        sum += ndcgAt(
          res.records.map((r) => idOf[ns]![r.id] ?? -1),
          qrels.get(q.ordinal) ?? new Map(),
          10,
        );
      }
      console.log(
        `nDCG@10 ${ns} (${ns === "cran" ? docs.length : lex.bm25.size} records) mode ${mode}: ${(sum / queries.length).toFixed(4)}`,
      );
    }

  const qs = Array.from({ length: nQueries }, (_, i) => queries[i % queries.length]!.text);
  const split = {
    encode: [] as number[],
    expired: [] as number[],
    vector10: [] as number[],
    vector50: [] as number[],
    bm25_50: [] as number[],
    fetch10: [] as number[],
  };
  for (let pass = 0; pass < 2; pass++)
    for (const text of qs) {
      let t = performance.now();
      const lap = (arr: number[]) => {
        const now = performance.now();
        if (pass === 1) arr.push(now - t);
        t = now;
      };
      const vector = encoder.encodeBatch([text]);
      lap(split.encode);
      await s.count("big", { exp: { $lte: Date.now() } }); // readFilter's "anything expired?"
      lap(split.expired);
      await s.search("big", { vector, topK: 10, payload: false });
      lap(split.vector10);
      const v50 = await s.search("big", { vector, topK: 50, payload: false });
      lap(split.vector50);
      lex.search(text, 50, {}, Date.now());
      lap(split.bm25_50);
      await s.fetch(
        "big",
        v50.matches.slice(0, 10).map((m) => m.id),
      );
      lap(split.fetch10);
    }
  for (const [k, v] of Object.entries(split)) console.log(`  split ${k.padEnd(9)} ${fmt(v)} ms`);
  for (const mode of ["vector", "hybrid", "vector", "hybrid"] as const) {
    const ms: number[] = [];
    const c0 = process.cpuUsage();
    for (const text of qs) {
      const t = performance.now();
      await svc.query("t", "big", { text, topK: 10, mode });
      ms.push(performance.now() - t);
    }
    const c = process.cpuUsage(c0);
    // CPU: the process's (main thread and scan workers) per query; on a loaded machine wall times wait for cores
    console.log(
      `RecordService.query mode ${mode}: ${fmt(ms)} ms, CPU ${((c.user + c.system) / 1000 / nQueries).toFixed(2)} ms/query over ${nQueries} queries (load ${load()})`,
    );
  }
} finally {
  await svc.close();
  await pool.close();
}
