/**
 * @module sparse-bench — a sparse index's query (postings + MaxScore, engine/sparse-postings.ts) against a brute-force
 * scan of every record's sparse values: time, postings read, and whether the top-10 agree. N records of 5-40 indices
 * drawn Zipf-like from a 30,000-index vocabulary (weights in (0, 3]), queries of 3-12 indices from the same law.
 * `npx tsx bench/sparse-bench.ts [n] [queries]` (default 100000 100).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Collection } from "../src/engine/collection.js";
import { sparseBytes, sparseDot, type SparseVector } from "../src/engine/sparse.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { CollectionIndex } from "../src/memory/vector-index.js";
import { ScanPool } from "../src/pool/scan-pool.js";

const n = Number(process.argv[2] ?? 100_000);
const nq = Number(process.argv[3] ?? 100);
const next = mulberry32(3309);
const rand = () => next() / 4294967296;
const term = () => Math.floor(30_000 * rand() ** 4);
function sparse(k: number): SparseVector {
  const m = new Map<number, number>();
  while (m.size < k) m.set(term(), Math.fround(0.05 + 3 * rand()));
  const indices = [...m.keys()].sort((a, b) => a - b);
  return { indices: Uint32Array.from(indices), values: Float32Array.from(indices, (i) => m.get(i)!) };
}

const dir = mkdtempSync(join(tmpdir(), "svc-sparse-bench-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1 });
const c = await Collection.open(dir, { kernels, pool, dimension: 1, durability: "none" });
const ix = new CollectionIndex(c, Date.now, "dotproduct", "sparse");
try {
  const rows: SparseVector[] = [];
  for (let i = 0; i < n; i += 5000) {
    const batch = Array.from({ length: Math.min(5000, n - i) }, (_, j) => {
      const s = sparse(5 + Math.floor(35 * rand()));
      rows.push(s);
      return { id: `d${i + j}`, payload: sparseBytes(s) };
    });
    await ix.upsert("", batch);
  }
  await c.settled();
  const postingsTotal = rows.reduce((s, r) => s + r.indices.length, 0);
  let t = performance.now();
  await ix.query("", { sparseVector: { indices: [0], values: [1] }, topK: 1 });
  console.log(`${n} records, ${postingsTotal} postings; first query (builds the postings): ${(performance.now() - t).toFixed(0)} ms`);
  const ours: number[] = [];
  const scan: number[] = [];
  let read = 0;
  let agree = 0;
  for (let q = 0; q < nq; q++) {
    const s = sparse(3 + Math.floor(10 * rand()));
    const query = { indices: Array.from(s.indices), values: Array.from(s.values) };
    t = performance.now();
    const res = await ix.query("", { sparseVector: query, topK: 10 });
    ours.push(performance.now() - t);
    read += res.scanned;
    t = performance.now();
    const truth = rows
      .map((r, i) => ({ id: `d${i}`, score: sparseDot(s, r) }))
      .filter((x) => x.score !== 0)
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
      .slice(0, 10);
    scan.push(performance.now() - t);
    if (JSON.stringify(res.matches.map((m) => m.id)) === JSON.stringify(truth.map((x) => x.id))) agree++;
  }
  const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!.toFixed(2);
  console.log(
    `top-10: postings p50 ${p50(ours)} ms, scan p50 ${p50(scan)} ms; postings read per query ${(read / nq).toFixed(0)} (of ${postingsTotal}); same top-10 as the scan in ${agree}/${nq}; load ${loadavg()[0]!.toFixed(1)}`,
  );
} finally {
  await c.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
}
