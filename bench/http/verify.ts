/** @module verify — before any load run, the served index must answer real top-10s: well-formed, exact neighbours found, stored vectors find themselves. */
import type { Api } from "./api.js";
import { queryBody } from "./bodies.js";

export interface Verified {
  queries: number;
  /** Against exact float cosine over the same n rows (brute force in the bench process). */
  recallAt10: number;
  /** The same queries with `exact: true` (the 1-bit scan of every row, then rescoring). */
  exactRecallAt10: number;
  selfQueries: number;
}

const MIN_RECALL = 0.9;

/** `truth[q]`: the exact top-10 rows of queries[q]; `row(i)`: stored vector i (its id is String(i)). */
export async function verifyQueries(
  api: Api,
  index: string,
  row: (i: number) => Float32Array,
  n: number,
  queries: Float32Array[],
  truth: number[][],
): Promise<Verified> {
  const check = (matches: Array<{ id: string; score: number }>, what: string) => {
    if (matches.length !== 10) throw new Error(`${what}: ${matches.length} matches, want 10`);
    if (new Set(matches.map((m) => m.id)).size !== 10) throw new Error(`${what}: duplicate ids`);
    matches.forEach((m, i) => {
      if (!(Math.abs(m.score) <= 1.0001)) throw new Error(`${what}: score ${m.score} is not a cosine`);
      if (i > 0 && m.score > matches[i - 1]!.score) throw new Error(`${what}: scores not in descending order`);
      if (!(Number(m.id) >= 0 && Number(m.id) < n)) throw new Error(`${what}: id ${m.id} was never upserted`);
    });
  };
  const recall = async (exact: boolean) => {
    let hits = 0;
    for (let q = 0; q < queries.length; q++) {
      const matches = await api.query(index, queryBody(queries[q]!, 10, { exact }));
      check(matches, `query ${q}${exact ? " (exact)" : ""}`);
      const got = new Set(matches.map((m) => Number(m.id)));
      hits += truth[q]!.filter((i) => got.has(i)).length;
    }
    return hits / (10 * queries.length);
  };
  const recallAt10 = await recall(false);
  const exactRecallAt10 = await recall(true);
  if (recallAt10 < MIN_RECALL)
    throw new Error(`recall@10 ${recallAt10.toFixed(3)} < ${MIN_RECALL}: the server does not answer these queries`);
  const self = [0, Math.floor(n / 3), Math.floor((2 * n) / 3), n - 1];
  for (const i of self) {
    const matches = await api.query(index, queryBody(row(i)));
    check(matches, `stored vector ${i}`);
    // Itself at cosine 1 (a corpus with duplicate texts may rank an equal twin first).
    if (!matches.some((m) => m.id === String(i) && m.score >= 0.999))
      throw new Error(`stored vector ${i}: not found at cosine 1 (top ${matches[0]!.id}, ${matches[0]!.score})`);
  }
  return { queries: queries.length, recallAt10, exactRecallAt10, selfQueries: self.length };
}
