/** @module filter-bench — micro-benchmark of the metadata index on 1M rows: add, evaluate, estimate, serialize, deserialize (`npx tsx bench/filter-bench.ts [rows]`). */
import { MetadataIndex } from "../src/engine/filter/metadata-index.js";
import { validateMetadata, type Metadata } from "../src/engine/filter/metadata.js";
import { parseFilter } from "../src/engine/filter/parse.js";
import { RoaringBitmap32 } from "../src/engine/roaring.js";
import { mulberry32 } from "../src/kernels/random.js";

const N = Number(process.argv[2] ?? 1_000_000);
const SEED = 42;
const CATEGORIES = 100;
const TAGS = 50;

function makeRows(n: number): Metadata[] {
  const next = mulberry32(SEED);
  const rows: Metadata[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const t = 1 + (next() % 3);
    const tags: string[] = [];
    for (let j = 0; j < t; j++) tags.push(`tag${next() % TAGS}`);
    rows[i] = { category: `cat${next() % CATEGORIES}`, year: 1925 + (next() % 100), published: (next() & 1) === 1, tags };
  }
  return rows;
}

function ms(t0: number): number {
  return performance.now() - t0;
}

function stats(samples: number[]): { p50: number; p99: number; mean: number } {
  const s = samples.slice().sort((a, b) => a - b);
  const q = (p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50: q(0.5), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

function fmt(x: number): string {
  return x < 1 ? x.toFixed(3) : x < 100 ? x.toFixed(2) : x.toFixed(0);
}

function line(name: string, value: string): void {
  console.log(`${name.padEnd(58)} ${value}`);
}

/** p50/p99 of `calls` evaluations (after warm-up) on one universe; checks the answer never changes. */
function sample(
  index: MetadataIndex,
  name: string,
  raw: unknown,
  universe: RoaringBitmap32,
  calls: number,
): { p50: number; p99: number; size: number } {
  const filter = parseFilter(raw)!;
  let size = -1;
  for (let i = 0; i < 20; i++) size = index.evaluate(filter, universe).size;
  const samples: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const out = index.evaluate(filter, universe);
    samples.push(ms(t0));
    if (out.size !== size) throw new Error(`${name}: answer changed`);
  }
  return { ...stats(samples), size };
}

/** Evaluations over two universes: every row live, and ~1% deleted (every 97th row). */
function timeEvaluate(index: MetadataIndex, name: string, raw: unknown, universes: [RoaringBitmap32, RoaringBitmap32], calls = 300): void {
  const all = sample(index, name, raw, universes[0], calls);
  const holey = sample(index, name, raw, universes[1], calls);
  const pct = ((100 * all.size) / universes[0].size).toFixed(1);
  line(
    `evaluate ${name} (${pct}%)`,
    `p50 ${fmt(all.p50)} / ${fmt(holey.p50)} ms  p99 ${fmt(all.p99)} / ${fmt(holey.p99)} ms  est ${index.estimate(parseFilter(raw)!)} (exact ${all.size})`,
  );
}

function main(): void {
  console.log(`metadata index bench: ${N} rows, node ${process.version}, seed ${SEED}`);
  const rows: Metadata[] = makeRows(N);

  // add: 1M rows x 4 fields (string category of 100 values, integer year, boolean, 1-3 tags of 50)
  const roar0 = RoaringBitmap32.getRoaringUsedMemory();
  let t0 = performance.now();
  let validated = 0;
  for (let i = 0; i < N; i++) validated += Object.keys(validateMetadata(rows[i], "metadata")).length;
  line("validateMetadata (4 fields per row)", `${fmt((ms(t0) * 1000) / N)} us/row (${validated} values)`);

  let index = new MetadataIndex();
  t0 = performance.now();
  for (let i = 0; i < N; i++) index.add(i, rows[i]!);
  const addMs = ms(t0);
  line("add (4 fields per row)", `${fmt(addMs)} ms total, ${fmt((addMs * 1000) / N)} us/row`);

  const live = new RoaringBitmap32();
  live.addRange(0, N);
  const holey = live.clone();
  for (let i = 0; i < N; i += 97) holey.remove(i); // ~1% deleted, spread out: the costliest live set (many runs)
  const universe: [RoaringBitmap32, RoaringBitmap32] = [live, holey];
  console.log("evaluate times: all rows live / 1% deleted");

  t0 = performance.now();
  index.evaluate(parseFilter({ year: { $gte: 2000, $lt: 2010 } })!, live);
  line("first range query (sorts the 1M-row tail: radix + merge)", `${fmt(ms(t0))} ms`);
  t0 = performance.now();
  index.evaluate(parseFilter({ category: "cat7", tags: "tag3", published: true })!, live);
  line("first string/bool query (flushes buffered postings)", `${fmt(ms(t0))} ms`);
  line(
    "roaring native memory of the index",
    `${fmt((RoaringBitmap32.getRoaringUsedMemory() - roar0) / 2 ** 20)} MB (+ ~12 MB typed arrays: year f64 by row + sorted u32 order)`,
  );

  timeEvaluate(index, "$eq string 1%", { category: "cat7" }, universe);
  timeEvaluate(index, "$eq list element ~4%", { tags: "tag3" }, universe);
  timeEvaluate(index, "$eq boolean 50%", { published: true }, universe);
  timeEvaluate(index, "$in 3 strings 3%", { category: { $in: ["cat1", "cat2", "cat3"] } }, universe);
  timeEvaluate(index, "$ne string 99%", { category: { $ne: "cat7" } }, universe);
  timeEvaluate(index, "$eq number (year) 1%", { year: 2001 }, universe);
  timeEvaluate(index, "range 1% (year in [2000, 2001))", { year: { $gte: 2000, $lt: 2001 } }, universe);
  timeEvaluate(index, "range 10% (year in [2000, 2010))", { year: { $gte: 2000, $lt: 2010 } }, universe);
  timeEvaluate(index, "range 50% (year >= 1975)", { year: { $gte: 1975 } }, universe, 100);
  timeEvaluate(index, "$exists true 100%", { tags: { $exists: true } }, universe, 100);
  timeEvaluate(index, "$and string 1% + range 10%", { category: "cat7", year: { $gte: 2000, $lt: 2010 } }, universe);
  timeEvaluate(index, "$or string 1% | range 1%", { $or: [{ category: "cat7" }, { year: 1950 }] }, universe);
  timeEvaluate(index, "$and 3-way (string, list, boolean)", { category: "cat7", tags: "tag3", published: true }, universe);

  const est = parseFilter({ $and: [{ category: "cat7" }, { year: { $gte: 2000, $lt: 2010 } }] })!;
  t0 = performance.now();
  for (let i = 0; i < 10_000; i++) index.estimate(est);
  line("estimate $and(string, range)", `${fmt((ms(t0) * 1000) / 10_000)} us`);

  // A continuous field: a range's rows come in random row order (the RowSetBuilder path).
  const next = mulberry32(SEED + 1);
  const scores = new MetadataIndex();
  for (let i = 0; i < N; i++) scores.add(i, { score: next() / 2 ** 32 });
  scores.evaluate(parseFilter({ score: { $lt: 0.5 } })!, live);
  timeEvaluate(scores, "float range 1% (score in [0.3, 0.31))", { score: { $gte: 0.3, $lt: 0.31 } }, universe);
  timeEvaluate(scores, "float range 10% (score in [0.3, 0.4))", { score: { $gte: 0.3, $lt: 0.4 } }, universe);
  timeEvaluate(scores, "float range 0.1% (score in [0.3, 0.301))", { score: { $gte: 0.3, $lt: 0.301 } }, universe);

  // checkpoints of the 4-field index (the 1M source objects are dropped first: with them the
  // heap holds ~300 MB, and a full GC landing inside a timed call would be measured too)
  rows.length = 0;
  global.gc?.();
  t0 = performance.now();
  const bytes = index.serialize();
  const serMs = ms(t0);
  line("serialize", `${fmt(serMs)} ms, ${fmt(bytes.length / 2 ** 20)} MB (${fmt(bytes.length / N)} bytes/row)`);
  const deser: number[] = [];
  for (let i = 0; i < 5; i++) {
    t0 = performance.now();
    index = MetadataIndex.deserialize(bytes);
    deser.push(ms(t0));
  }
  line("deserialize (5 runs)", deser.map((d) => `${fmt(d)}`).join(", ") + " ms");
  timeEvaluate(index, "after deserialize: range 10%", { year: { $gte: 2000, $lt: 2010 } }, universe);
  const more = makeRows(100_000);
  t0 = performance.now();
  for (let i = 0; i < more.length; i++) index.add(N + i, more[i]!);
  line("add 100k rows after deserialize", `${fmt(ms(t0))} ms`);
}

main();
