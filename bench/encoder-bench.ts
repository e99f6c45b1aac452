/** @module encoder-bench — the text encoder on Cranfield: nDCG@10 of BM25, vectors (exact cosine) and their RRF hybrid; texts/s per core; recall@10 of the 1-bit pipeline. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bm25Index } from "../src/encoder/bm25.js";
import { DEFAULT_DESIGN, DIMENSION, TextEncoder1024, type EncoderDesign } from "../src/encoder/encoder.js";
import { Lexicon } from "../src/encoder/lexicon.js";
import { loadWordTable } from "../src/encoder/table.js";
import { Collection } from "../src/engine/collection.js";
import { Kernels } from "../src/kernels/abi.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { docText, loadCranfield, type Cranfield } from "./cranfield.js";
import { ndcgAt, rrf, topKByDot } from "./encoder-metrics.js";

export interface EncoderResult {
  encoderId: string;
  design: EncoderDesign;
  table: { words: number; dims: number; bytes: number; sha256: string; loadMs: number };
  cranfield: { docs: number; queries: number; judgedPairs: number };
  /** mean over the 225 queries; graded: gain 5 - code (4..1), binary: every judged-relevant doc gains 1 */
  ndcg10: Record<"bm25" | "vector" | "hybrid", { graded: number; binary: number }>;
  /** graded vector nDCG@10 of the same design under other hash seeds (the spread of feature-hashing noise) */
  seedSpread: { seed: number; graded: number }[];
  throughput: { name: string; texts: number; meanWords: number; perSec: number }[];
  /** recall@10 of svc's cosine pipeline (Collection.query) against exact float cosine over the same vectors */
  oneBit: { queries: number; defaultPipeline: number; hammingTop10Only: number };
}

const RRF_K = 60;
const TOP = 100;

function meanNdcg(c: Cranfield, runs: number[][], binary: boolean): number {
  let s = 0;
  c.queries.forEach((q, i) => {
    const judged = c.qrels.get(q.ordinal) ?? new Map<number, number>();
    const gains = binary ? new Map([...judged.keys()].map((d) => [d, 1])) : judged;
    s += ndcgAt(runs[i]!, gains, 10);
  });
  return s / c.queries.length;
}

function vectorRuns(enc: TextEncoder1024, c: Cranfield): { docs: Float32Array; queries: Float32Array; runs: number[][] } {
  const docs = enc.encodeBatch(c.docs.map(docText));
  const queries = enc.encodeBatch(c.queries.map((q) => q.text));
  const runs = c.queries.map((_, i) => topKByDot(docs, DIMENSION, queries, i * DIMENSION, TOP).map((r) => c.docs[r]!.id));
  return { docs, queries, runs };
}

/** Texts per second on this thread (one core), timed over at least `minMs` after one warm-up pass. */
function textsPerSec(enc: TextEncoder1024, texts: string[], minMs = 1500): number {
  for (const t of texts) enc.encode(t);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) for (const t of texts) (enc.encode(t), n++);
  return n / ((performance.now() - t0) / 1000);
}

async function oneBitRecall(c: Cranfield, docs: Float32Array, queries: Float32Array, exact: number[][]): Promise<EncoderResult["oneBit"]> {
  const dir = mkdtempSync(join(tmpdir(), "svc-encoder-bench-"));
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 1 });
  try {
    const col = await Collection.open(join(dir, "c"), { kernels, pool, dimension: DIMENSION, durability: "none" });
    await col.upsert(
      "",
      c.docs.map((d, i) => ({ id: String(d.id), values: docs.subarray(i * DIMENSION, (i + 1) * DIMENSION) })),
    );
    await col.settled();
    let full = 0;
    let bitsOnly = 0;
    for (let i = 0; i < c.queries.length; i++) {
      const vector = queries.subarray(i * DIMENSION, (i + 1) * DIMENSION);
      const truth = new Set(exact[i]!.slice(0, 10));
      const a = await col.query("", { vector, topK: 10 });
      const b = await col.query("", { vector, topK: 10, candidates: 10, rescore: 10 });
      full += a.matches.filter((m) => truth.has(Number(m.id))).length / 10;
      bitsOnly += b.matches.filter((m) => truth.has(Number(m.id))).length / 10;
    }
    await col.close();
    return { queries: c.queries.length, defaultPipeline: full / c.queries.length, hammingTop10Only: bitsOnly / c.queries.length };
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runEncoderBench(o: { log: (line: string) => void; seeds?: number }): Promise<EncoderResult> {
  const { log } = o;
  const c = loadCranfield();
  const judgedPairs = [...c.qrels.values()].reduce((s, m) => s + m.size, 0);
  log(`Cranfield: ${c.docs.length} docs, ${c.queries.length} queries, ${judgedPairs} relevant (query, doc) pairs`);

  const t0 = performance.now();
  const table = loadWordTable();
  const lexicon = new Lexicon(table);
  const enc = new TextEncoder1024(lexicon);
  const loadMs = performance.now() - t0;
  log(
    `word table: ${table.count} words x ${table.dims} dims, ${(table.manifest.bytes / 1e6).toFixed(1)} MB, loaded and verified in ${loadMs.toFixed(0)} ms (${enc.id})`,
  );

  const bm25 = new Bm25Index();
  for (const d of c.docs) bm25.add(String(d.id), docText(d));
  const bmRuns = c.queries.map((q) => bm25.search(q.text, TOP).map((h) => Number(h.id)));
  const vec = vectorRuns(enc, c);
  const hybRuns = c.queries.map((_, i) => rrf([bmRuns[i]!, vec.runs[i]!], RRF_K));
  const score = (runs: number[][]) => ({ graded: meanNdcg(c, runs, false), binary: meanNdcg(c, runs, true) });
  const ndcg10 = { bm25: score(bmRuns), vector: score(vec.runs), hybrid: score(hybRuns) };
  for (const [name, s] of Object.entries(ndcg10))
    log(`nDCG@10 ${name.padEnd(6)} graded ${s.graded.toFixed(4)}  binary ${s.binary.toFixed(4)}`);

  const seedSpread: EncoderResult["seedSpread"] = [];
  for (let s = 1; s <= (o.seeds ?? 5); s++) {
    const seed = DEFAULT_DESIGN.seed + s * 0x10000;
    seedSpread.push({ seed, graded: meanNdcg(c, vectorRuns(new TextEncoder1024(lexicon, { ...DEFAULT_DESIGN, seed }), c).runs, false) });
  }
  log(`vector nDCG@10 under ${seedSpread.length} other hash seeds: ${seedSpread.map((x) => x.graded.toFixed(4)).join(", ")}`);
  const all = [ndcg10.vector.graded, ...seedSpread.map((x) => x.graded)];
  log(
    `vector nDCG@10 over ${all.length} seeds (shipped + others): mean ${(all.reduce((a, b) => a + b, 0) / all.length).toFixed(4)}, range ${Math.min(...all).toFixed(4)}-${Math.max(...all).toFixed(4)}`,
  );

  const words = (texts: string[]) => texts.reduce((s, t) => s + t.split(/\s+/).filter(Boolean).length, 0) / texts.length;
  const short = [...c.docs.map((d) => d.title.replace(/\s+/g, " ")), ...c.queries.map((q) => q.text)];
  const long = c.docs.map(docText);
  const throughput = [
    { name: "short texts (Cranfield titles and queries)", texts: short.length, meanWords: words(short), perSec: textsPerSec(enc, short) },
    { name: "Cranfield documents (title + abstract)", texts: long.length, meanWords: words(long), perSec: textsPerSec(enc, long) },
  ];
  for (const t of throughput)
    log(`${t.name}: ${Math.round(t.perSec).toLocaleString("en-US")} texts/s on one core (mean ${t.meanWords.toFixed(1)} words)`);

  const oneBit = await oneBitRecall(c, vec.docs, vec.queries, vec.runs);
  log(
    `recall@10 vs exact cosine: svc pipeline ${oneBit.defaultPipeline.toFixed(3)}, Hamming top-10 alone ${oneBit.hammingTop10Only.toFixed(3)}`,
  );

  return {
    encoderId: enc.id,
    design: { ...DEFAULT_DESIGN },
    table: { words: table.count, dims: table.dims, bytes: table.manifest.bytes, sha256: table.manifest.sha256, loadMs },
    cranfield: { docs: c.docs.length, queries: c.queries.length, judgedPairs },
    ndcg10,
    seedSpread,
    throughput,
    oneBit,
  };
}
