/**
 * Recall at every dimension (issue 32 item 1) and every scoring (issue 33 item 2): on the 1000-centre clustered generator
 * (bench/engine/vectors.ts, a low-rank part per cluster), recall@10 of the default query >= 0.99 at 32 to 2048 dimensions
 * once the partition's depth is calibrated (engine/depth.ts), and `exact: true` is the exact float top-k (filters
 * respected), against brute force in float64. A quality check: no timings.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bruteTopK, caseVector } from "../../bench/recall-bench.js";
import { ClusteredVectors } from "../../bench/engine/vectors.js";
import { Collection } from "../../src/engine/collection.js";
import { bestScored } from "../../src/engine/estimate.js";
import { EXACT_SCORING_FLOATS, type Scoring } from "../../src/engine/search.js";
import { engineFixture } from "./engine-fixture.js";

const fx = engineFixture("svc-recall-dims-");
const K = 10;
const QUERIES = 40;

/** Score of row v for query q under `metric`, larger first (euclidean: the negated squared distance). */
function score(q: Float32Array, v: Float32Array, metric: Scoring): number {
  let dot = 0,
    qq = 0,
    vv = 0;
  for (let j = 0; j < v.length; j++) {
    dot += q[j]! * v[j]!;
    qq += q[j]! * q[j]!;
    vv += v[j]! * v[j]!;
  }
  return metric === "cosine" ? dot / Math.sqrt(qq * vv) : metric === "dotproduct" ? dot : -(qq - 2 * dot + vv);
}

/**
 * A collection of n clustered vectors (scaled to norms in [0.5, 3] unless cosine), with `parity` metadata, and QUERIES
 * held-out queries. `clusters` defaults to n / 20: 20 rows a cluster, as 20,000 rows of the 1000-centre model have.
 */
async function load(n: number, dim: number, metric: Scoring, clusters = n / 20) {
  const data = new ClusteredVectors(dim, 32, 1, true, clusters);
  const rows = Array.from({ length: n }, (_, i) => caseVector(data, metric, i));
  const queries = Array.from({ length: QUERIES }, (_, i) => caseVector(data, metric, n + i));
  const c = await Collection.open(fx.newDir(), {
    kernels: fx.kernels,
    pool: fx.pool,
    dimension: dim,
    metric: "cosine",
    durability: "none",
    annMinRows: Infinity,
    // No calibration inside the load: one started after a batch that came more than the quiet time after the last
    // (a loaded machine) would set the depth of a partial partition, not recalibrated until the rows double.
    calibrateQuietMs: 600_000,
  });
  for (let i = 0; i < n; i += 1000)
    await c.upsert(
      "",
      rows.slice(i, i + 1000).map((values, j) => ({ id: String(i + j), values, metadata: { parity: (i + j) % 2 } })),
    );
  await c.settled();
  await c.depthCalibrated();
  return { c, rows, queries };
}

/** recall@10 with ties: a match counts when its true score is at least the 10th best true score (less 1e-9 relative). */
function recallOf(
  rows: Float32Array[],
  q: Float32Array,
  metric: Scoring,
  ids: string[],
  keep: (i: number) => boolean = () => true,
): number {
  const truth = bruteTopK(
    rows.filter((_, i) => keep(i)),
    q,
    metric,
    K,
  );
  const kept = rows.map((_, i) => i).filter(keep);
  const kth = score(q, rows[kept[truth[truth.length - 1]!]!]!, metric);
  return ids.filter((id) => keep(Number(id)) && score(q, rows[Number(id)]!, metric) >= kth - 1e-9 * Math.abs(kth)).length / K;
}

describe("recall@10 across dimensions on clustered data", () => {
  // The 1000-centre model at the sizes or half of them: 5,000 x 64-d (0.70 before the deeper defaults: the
  // Hamming ranking of 64 bits), 10,000 x 128 and x 256; 5,000 x 1024-d needs far more than the default depth (0.74 at
  // depth 1: half of a top-10 comes from other clusters, nearly equidistant); 3,000 of 150 centres at 32-d. 2048 and
  // 4096-d: bench/recall-bench.ts (bench/RESULTS.md).
  for (const [n, dim, clusters] of [
    [5000, 32, 1000],
    [3000, 32],
    [5000, 64, 1000],
    [10000, 128, 1000],
    [10000, 256, 1000],
    [5000, 1024, 1000],
  ] as const) {
    it(`${n} x ${dim}-d cosine, ${clusters ?? n / 20} centres: the default >= 0.99, exact: true = the exact float top-k with and without a filter`, async () => {
      const { c, rows, queries } = await load(n, dim, "cosine", clusters);
      // calibrated on its own rows (engine/depth.ts), not the dimension's default
      expect(c.depthOf("")).not.toBeNull();
      let def = 0,
        exact = 0,
        filtered = 0;
      for (const q of queries) {
        def += recallOf(
          rows,
          q,
          "cosine",
          (await c.query("", { vector: q, topK: K })).matches.map((m) => m.id),
        );
        const e = await c.query("", { vector: q, topK: K, exact: true });
        expect(e.plan).toBe("exact");
        exact += recallOf(
          rows,
          q,
          "cosine",
          e.matches.map((m) => m.id),
        );
        const f = await c.query("", { vector: q, topK: K, exact: true, filter: { parity: 1 } });
        expect(f.matches.every((m) => Number(m.id) % 2 === 1)).toBe(true);
        filtered += recallOf(
          rows,
          q,
          "cosine",
          f.matches.map((m) => m.id),
          (i) => i % 2 === 1,
        );
      }
      expect(def / QUERIES).toBeGreaterThanOrEqual(0.99);
      expect(exact / QUERIES).toBe(1);
      expect(filtered / QUERIES).toBe(1);
      await c.close();
      // the depth calibration and the brute-force truth take tens of seconds on a loaded 2-core machine
    }, 300_000);
  }
});

describe("dotproduct and euclidean on vectors of norms 0.5-3", () => {
  for (const [n, dim] of [
    [3000, 64],
    [3000, 256],
    [5000, 1024],
  ] as const) {
    for (const metric of ["dotproduct", "euclidean"] as const) {
      // Above EXACT_SCORING_FLOATS euclidean takes the direction-ranked pool, which misses short rows (bench/RESULTS.md): not asserted there.
      if (metric === "euclidean" && n * dim > EXACT_SCORING_FLOATS) continue;
      it(`${n} x ${dim} ${metric}: recall@10 >= 0.99 by default, exact: true exact, scores are the metric's`, async () => {
        const { c, rows, queries } = await load(n, dim, metric);
        let def = 0,
          exact = 0;
        for (const q of queries) {
          const d = await c.query("", { vector: q, topK: K, scoring: metric });
          def += recallOf(
            rows,
            q,
            metric,
            d.matches.map((m) => m.id),
          );
          const e = await c.query("", { vector: q, topK: K, scoring: metric, exact: true });
          exact += recallOf(
            rows,
            q,
            metric,
            e.matches.map((m) => m.id),
          );
          // dotproduct: q·x, larger first; euclidean: |q - x|², smaller first
          for (const m of e.matches)
            expect(m.score).toBeCloseTo(
              metric === "euclidean" ? -score(q, rows[Number(m.id)]!, metric) : score(q, rows[Number(m.id)]!, metric),
              4,
            );
          const s = e.matches.map((m) => m.score);
          expect(s).toEqual([...s].sort((a, b) => (metric === "euclidean" ? a - b : b - a)));
        }
        expect(def / QUERIES).toBeGreaterThanOrEqual(0.99);
        expect(exact / QUERIES).toBe(1);
        await c.close();
      });
    }
  }
});

describe("bestScored", () => {
  it("keeps the `keep` highest scores, ties by the smaller row, as a full sort would (fixed seed)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -20, max: 20 }), { minLength: 2, maxLength: 300 }), fc.nat(), (ints, at) => {
        const n = ints.length;
        const keep = 1 + (at % (n - 1));
        const scores = Float64Array.from(ints, (x) => x / 4);
        const candidates = Uint32Array.from({ length: n }, (_, i) => (i * 7919) % 100_003);
        const want = [...candidates.keys()]
          .sort((a, b) => scores[b]! - scores[a]! || candidates[a]! - candidates[b]!)
          .slice(0, keep)
          .map((i) => candidates[i]!);
        expect([...bestScored(scores, candidates, keep)].sort((a, b) => a - b)).toEqual(want.sort((a, b) => a - b));
      }),
      { seed: 33, numRuns: 300 },
    );
  });

  it("does its quickselect in the caller's work array when given one (scores untouched, same rows kept), and refuses one of another length", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -20, max: 20 }), { minLength: 2, maxLength: 300 }), fc.nat(), (ints, at) => {
        const n = ints.length;
        const keep = 1 + (at % (n - 1));
        const scores = Float64Array.from(ints, (x) => x / 4);
        const before = Float64Array.from(scores);
        const candidates = Uint32Array.from({ length: n }, (_, i) => (i * 7919) % 100_003);
        const work = new Float64Array(n).fill(NaN);
        expect([...bestScored(scores, candidates, keep, work)].sort((a, b) => a - b)).toEqual(
          [...bestScored(scores, candidates, keep)].sort((a, b) => a - b),
        );
        expect(scores).toEqual(before);
        // the work array now holds the scores, reordered by the quickselect
        expect([...work].sort((a, b) => a - b)).toEqual([...scores].sort((a, b) => a - b));
      }),
      { seed: 34, numRuns: 200 },
    );
    expect(() => bestScored(new Float64Array(3), new Uint32Array(3), 1, new Float64Array(2))).toThrow(/work array/);
  });
});
