/** Bm25Index over a corpus split in parts (shards): each part searched with the summed statistics of all (Bm25Stats), merged by score, equals one index over the whole corpus (ids and scores). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Bm25Index, type Bm25Stats } from "../../src/encoder/bm25.js";

const WORDS = ["river", "bank", "loan", "fish", "stream", "money", "water", "credit", "boat", "interest", "flow", "rate"];
const doc = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 12 }).map((w) => w.join(" "));

describe("Bm25Index with a corpus's statistics", () => {
  it("parts scored with the summed statistics merge to the one-index ranking", () => {
    fc.assert(
      fc.property(
        fc.array(doc, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        doc,
        fc.integer({ min: 1, max: 20 }),
        (docs, parts, query, topK) => {
          const whole = new Bm25Index();
          const shards = Array.from({ length: parts }, () => new Bm25Index());
          docs.forEach((text, i) => {
            whole.add(`d${i}`, text);
            shards[i % parts]!.add(`d${i}`, text);
          });
          const corpus: Bm25Stats = { n: 0, totalLength: 0, df: Object.create(null) as Record<string, number> };
          for (const s of shards) {
            const st = s.stats(query);
            corpus.n += st.n;
            corpus.totalLength += st.totalLength;
            for (const [t, df] of Object.entries(st.df)) corpus.df[t] = (corpus.df[t] ?? 0) + df;
          }
          const merged = shards
            .flatMap((s) => s.search(query, topK, undefined, corpus))
            .sort((a, b) => b.score - a.score)
            .slice(0, topK);
          const want = whole.search(query, topK);
          // the same scores in order; ties may hold other ids (one index breaks them by insertion order)
          expect(merged.map((h) => h.score.toFixed(9))).toEqual(want.map((h) => h.score.toFixed(9)));
          const byScore = (hs: Array<{ id: string; score: number }>) =>
            hs.filter((h) => hs.filter((o) => o.score.toFixed(9) === h.score.toFixed(9)).length === 1).map((h) => h.id);
          expect(byScore(merged)).toEqual(byScore(want));
        },
      ),
      { seed: 31, numRuns: 300 },
    );
  });
});
