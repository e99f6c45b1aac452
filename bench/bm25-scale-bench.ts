/**
 * @module bm25-scale-bench — `Bm25Index.search` alone over N records of two seeded Cranfield sentences (as records-scale-bench),
 * the 225 Cranfield queries at depth K: p50/p99, and the answers (ids, scores) written to or checked against a file, so a
 * change to the search can be shown to return exactly what the code before it did.
 * Run: `npx tsx bench/bm25-scale-bench.ts [records=100000] [k=50] [answers.json] [passes=3]` (an absent answers file is written, a present one checked).
 * With BM25_BEFORE=<module path> (e.g. a `git show <base>:src/encoder/bm25.ts` copy placed beside src/encoder/bm25.ts) it also
 * builds that module's Bm25Index over the same records and times both query by query, interleaved, and compares their answers.
 * With BM25_ACCEPT=1 every search passes an accept filter that keeps every document through a Map lookup, as the records'
 * hybrid does (its predicate reads the record's metadata by id).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { Bm25Index } from "../src/encoder/bm25.js";
import { mulberry32 } from "../src/kernels/random.js";
import { docText, loadCranfield } from "./cranfield.js";
import { summarize } from "./stats.js";

const records = Number(process.argv[2] ?? 100_000);
const k = Number(process.argv[3] ?? 50);
const answers = process.argv[4];
const passes = Number(process.argv[5] ?? 3);
const { docs, queries } = loadCranfield();
const sentences = docs.flatMap((d) => d.body.split(/(?<=\.)\s+/)).filter((s) => s.length > 20);
const rnd = mulberry32(11);
const pick = () => sentences[rnd() % sentences.length]!;
type Index = Pick<Bm25Index, "add" | "search" | "size">;
const indexes: Array<[string, Index]> = [["this tree", new Bm25Index()]];
if (process.env.BM25_BEFORE !== undefined)
  indexes.unshift(["before", new ((await import(process.env.BM25_BEFORE)) as { Bm25Index: new () => Index }).Bm25Index()]);
const t0 = performance.now();
const texts = [
  ...docs.map((d) => [`cran-${d.id}`, docText(d)]),
  ...Array.from({ length: records }, (_, i) => [`r${i}`, `${pick()} ${pick()}`]),
];
for (const [, bm25] of indexes) for (const [id, text] of texts) bm25.add(id!, text!);
console.log(`built ${indexes.length} x ${indexes[0]![1].size} documents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const known = new Map(texts.map(([id]) => [id!, true]));
const accept = process.env.BM25_ACCEPT === "1" ? (id: string) => known.get(id) === true : undefined;
const got: Array<Array<Array<[string, number]>>> = indexes.map(() => []);
for (let pass = 0; pass < passes; pass++) {
  const ms: number[][] = indexes.map(() => []);
  const cpu: number[] = indexes.map(() => 0);
  for (const q of queries)
    indexes.forEach(([, bm25], x) => {
      const c = process.cpuUsage();
      const s = performance.now();
      const hits = bm25.search(q.text, k, accept);
      ms[x]!.push(performance.now() - s);
      const d = process.cpuUsage(c);
      cpu[x]! += (d.user + d.system) / 1000;
      if (pass === 0) got[x]!.push(hits.map((h) => [h.id, h.score]));
    });
  indexes.forEach(([name], x) => {
    const l = summarize(ms[x]!);
    console.log(
      `pass ${pass} ${name.padEnd(9)} search(q, ${k}) over ${indexes[x]![1].size} documents: p50 ${l.p50.toFixed(2)} ms p99 ${l.p99.toFixed(2)} ms mean ${(ms[x]!.reduce((a, b) => a + b, 0) / queries.length).toFixed(2)} ms, CPU ${(cpu[x]! / queries.length).toFixed(2)} ms/query (load ${loadavg()[0]!.toFixed(1)})`,
    );
  });
}
if (indexes.length === 2) {
  const same = got[0]!.filter((w, i) => JSON.stringify(w) === JSON.stringify(got[1]![i])).length;
  console.log(`answers identical (ids, scores, order) before and after: ${same} of ${queries.length} queries`);
}
if (answers !== undefined) {
  if (!existsSync(answers)) {
    writeFileSync(answers, JSON.stringify(got.at(-1)));
    console.log(`answers written to ${answers}`);
  } else {
    const want = JSON.parse(readFileSync(answers, "utf8")) as Array<Array<[string, number]>>;
    const same = want.filter((w, i) => JSON.stringify(w) === JSON.stringify(got.at(-1)![i])).length;
    console.log(`answers identical (ids, scores, order) to ${answers}: ${same} of ${want.length} queries`);
  }
}
