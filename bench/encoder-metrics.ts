/** @module encoder-metrics — ranking quality for the encoder bench: nDCG@k with graded gains, exact cosine top-k, reciprocal rank fusion. */

/**
 * nDCG@k with linear gains: DCG = sum over ranks i = 1..k of gain_i / log2(i + 1); the ideal DCG
 * sorts every judged gain of the query. 0 when the query has no positive gain.
 */
export function ndcgAt(ranked: readonly number[], gains: ReadonlyMap<number, number>, k: number): number {
  let dcg = 0;
  for (let i = 0; i < Math.min(k, ranked.length); i++) dcg += (gains.get(ranked[i]!) ?? 0) / Math.log2(i + 2);
  const ideal = [...gains.values()].sort((a, b) => b - a);
  let idcg = 0;
  for (let i = 0; i < Math.min(k, ideal.length); i++) idcg += ideal[i]! / Math.log2(i + 2);
  return idcg > 0 ? dcg / idcg : 0;
}

/** Row indices of the k largest dot products of `query` with the n rows of `rows` (dim each; ties: lower row first). */
export function topKByDot(rows: Float32Array, dim: number, query: Float32Array, qAt: number, k: number): number[] {
  const n = rows.length / dim;
  const best: { row: number; score: number }[] = [];
  for (let r = 0; r < n; r++) {
    let s = 0;
    const o = r * dim;
    for (let d = 0; d < dim; d++) s += rows[o + d]! * query[qAt + d]!;
    if (best.length < k || s > best[best.length - 1]!.score) {
      let i = best.length;
      while (i > 0 && best[i - 1]!.score < s) i--;
      best.splice(i, 0, { row: r, score: s });
      if (best.length > k) best.pop();
    }
  }
  return best.map((b) => b.row);
}

/** Reciprocal rank fusion: score(d) = sum over lists of 1 / (k + rank), rank 1-based; ties keep the first list's order. */
export function rrf(lists: readonly (readonly number[])[], k = 60): number[] {
  const score = new Map<number, number>();
  const first = new Map<number, number>();
  let seen = 0;
  for (const list of lists) {
    list.forEach((id, i) => {
      score.set(id, (score.get(id) ?? 0) + 1 / (k + i + 1));
      if (!first.has(id)) first.set(id, seen++);
    });
  }
  return [...score.keys()].sort((a, b) => score.get(b)! - score.get(a)! || first.get(a)! - first.get(b)!);
}
