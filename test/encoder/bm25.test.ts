import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Bm25Index } from "../../src/encoder/bm25.js";
import { terms } from "../../src/encoder/terms.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { SvcError } from "../../src/errors.js";

const DOCS: [string, string][] = [
  ["a", "The quick brown fox jumps over the lazy dog."],
  ["b", "Boundary layer transition on a flat plate at supersonic speeds."],
  ["c", "Heat transfer in the laminar boundary layer of a cone."],
  ["d", "The dog sleeps all day; the fox hunts at night."],
  ["e", "Flutter of thin wings at transonic speed."],
];

function index(): Bm25Index {
  const ix = new Bm25Index();
  for (const [id, text] of DOCS) ix.add(id, text);
  return ix;
}

describe("Bm25Index", () => {
  it("uses k1 = 1.2 and b = 0.75 by default", () => {
    const ix = new Bm25Index();
    expect([ix.k1, ix.b]).toEqual([1.2, 0.75]);
  });

  it("ranks the document holding the exact phrase first", () => {
    const ix = index();
    expect(ix.search("laminar boundary layer of a cone", 3)[0]!.id).toBe("c");
    expect(ix.search("flutter of thin wings", 3)[0]!.id).toBe("e");
    const hits = ix.search("boundary layer", 5);
    expect(hits.map((h) => h.id).sort()).toEqual(["b", "c"]);
    expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
  });

  it("matches through stemming and ignores case and punctuation", () => {
    expect(index().search("FOXES jumping!", 1)[0]!.id).toBe("a");
  });

  it("removes documents and keeps statistics consistent", () => {
    const ix = index();
    expect(ix.remove("c")).toBe(true);
    expect(ix.remove("c")).toBe(false);
    expect(ix.size).toBe(4);
    expect(ix.search("laminar cone", 5)).toEqual([]);
    expect(ix.search("boundary layer", 5).map((h) => h.id)).toEqual(["b"]);
    // removing and re-adding restores the same scores as a fresh index
    ix.add("c", DOCS[2]![1]);
    const fresh = index();
    const byId = (hits: { id: string; score: number }[]) => Object.fromEntries(hits.map((h) => [h.id, h.score]));
    expect(byId(ix.search("boundary layer heat", 5))).toEqual(byId(fresh.search("boundary layer heat", 5)));
  });

  it("replaces a document added again under the same id", () => {
    const ix = index();
    ix.add("a", "nothing about animals here");
    expect(ix.size).toBe(DOCS.length);
    expect(ix.search("quick brown fox", 5).map((h) => h.id)).toEqual(["d"]);
  });

  it("answers [] on an empty index or a query without known terms, and validates topK", () => {
    expect(new Bm25Index().search("anything", 10)).toEqual([]);
    expect(index().search("zzzz qqqq", 10)).toEqual([]);
    expect(index().search("", 10)).toEqual([]);
    expect(() => index().search("fox", 0)).toThrow(SvcError);
    expect(() => index().search("fox", 1.5)).toThrow(SvcError);
  });

  it("breaks score ties by insertion order", () => {
    const ix = new Bm25Index();
    ix.add("x", "same text");
    ix.add("y", "same text");
    expect(ix.search("same", 2).map((h) => h.id)).toEqual(["x", "y"]);
  });
});

/** An index of `texts` (ids d0, d1, ...) and the live documents the oracle reads. */
function indexOfTexts(texts: readonly string[]): { ix: Bm25Index; live: Map<string, { text: string; seq: number }> } {
  const ix = new Bm25Index();
  const live = new Map<string, { text: string; seq: number }>();
  texts.forEach((t, i) => {
    ix.add(`d${i}`, t);
    live.set(`d${i}`, { text: t, seq: i });
  });
  return { ix, live };
}

/** `search` is the oracle's top K, and with `accept` the oracle over all live documents, then the accepted ones (statistics stay the whole index's). */
function expectExact(
  ix: Bm25Index,
  live: Map<string, { text: string; seq: number }>,
  q: string,
  topK: number,
  accept: (id: string) => boolean,
): void {
  expect(ix.search(q, topK)).toEqual(oracle(live, q, topK));
  expect(ix.search(q, topK, accept)).toEqual(
    oracle(live, q, live.size)
      .filter((h) => accept(h.id))
      .slice(0, topK),
  );
}

/** Brute-force BM25 over the live documents (the formula of src/encoder/bm25.ts, same order of operations), ties by insertion order. */
function oracle(
  live: Map<string, { text: string; seq: number }>,
  query: string,
  topK: number,
  k1 = 1.2,
  b = 0.75,
): { id: string; score: number }[] {
  const docs = [...live].map(([id, d]) => {
    const tf = new Map<string, number>();
    const list = terms(d.text);
    for (const t of list) tf.set(t, (tf.get(t) ?? 0) + 1);
    return { id, seq: d.seq, length: list.length, tf };
  });
  const n = docs.length;
  if (n === 0) return [];
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / n || 1;
  const qtf = new Map<string, number>();
  for (const t of terms(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
  const dfs = new Map([...qtf.keys()].map((t) => [t, docs.filter((x) => x.tf.has(t)).length]));
  const scored = docs.map((d) => {
    let score = 0;
    for (const [t, mult] of qtf) {
      const df = dfs.get(t)!;
      const tf = d.tf.get(t);
      if (!tf) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const norm = k1 * (1 - b),
        per = (k1 * b) / avgdl,
        w = mult * idf * (k1 + 1);
      score += (w * tf) / (tf + norm + per * d.length);
    }
    return { id: d.id, seq: d.seq, score };
  });
  return scored
    .filter((d) => d.score > 0)
    .sort((x, y) => y.score - x.score || x.seq - y.seq)
    .slice(0, topK)
    .map(({ id, score }) => ({ id, score }));
}

describe("Bm25Index ranking (typed-array postings, slots renumbered on compaction)", () => {
  const WORDS = ["flow", "boundary", "layer", "shock", "wave", "heat", "plate", "cone", "wing", "flutter", "the", "of"];
  const text = fc.array(fc.constantFrom(...WORDS), { minLength: 0, maxLength: 8 }).map((w) => w.join(" "));
  const op = fc.oneof(
    fc.record({ kind: fc.constant("add" as const), id: fc.integer({ min: 0, max: 15 }), text }),
    fc.record({ kind: fc.constant("remove" as const), id: fc.integer({ min: 0, max: 15 }) }),
  );

  it("equals a brute-force BM25 (ids, scores, tie order) after any sequence of adds, replaces and removes", () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 60 }),
        fc.array(text, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 20 }),
        (ops, queries, topK) => {
          const ix = new Bm25Index();
          const live = new Map<string, { text: string; seq: number }>();
          let seq = 0;
          for (const o of ops) {
            const id = `d${o.id}`;
            if (o.kind === "add") {
              ix.add(id, o.text);
              live.delete(id);
              live.set(id, { text: o.text, seq: seq++ });
            } else expect(ix.remove(id)).toBe(live.delete(id));
          }
          expect(ix.size).toBe(live.size);
          for (const q of queries) expect(ix.search(q, topK)).toEqual(oracle(live, q, topK));
        },
      ),
      { seed: 20261126, numRuns: 200 },
    );
  });

  it("keeps the same ranking across compactions (many replaces of a few ids)", () => {
    const ix = new Bm25Index();
    const live = new Map<string, { text: string; seq: number }>();
    const rnd = mulberry32(7);
    for (let i = 0; i < 5000; i++) {
      const id = `d${rnd() % 40}`;
      const t = Array.from({ length: 1 + (rnd() % 6) }, () => WORDS[rnd() % WORDS.length]).join(" ");
      if (rnd() % 5 === 0) {
        ix.remove(id);
        live.delete(id);
      } else {
        ix.add(id, t);
        live.delete(id);
        live.set(id, { text: t, seq: i });
      }
    }
    for (const q of ["boundary layer", "the shock wave of the cone", "heat heat plate", "flutter"])
      expect(ix.search(q, 25)).toEqual(oracle(live, q, 25));
  });

  it("keeps insertion order for ties right after a compaction", () => {
    const ix = new Bm25Index();
    for (let i = 0; i < 40; i++) ix.add(`d${i}`, "boundary layer");
    // 1,100 replaces of d0 leave over 1,024 removed slots: the index compacts (renumbers slots) on the way
    for (let i = 0; i < 1100; i++) ix.add("d0", "boundary layer");
    ix.add("d5", "boundary layer"); // now the newest
    const ids = ix.search("layer", 40).map((h) => h.id);
    expect(ids).toEqual([...Array.from({ length: 39 }, (_, i) => `d${i + 1}`).filter((id) => id !== "d5"), "d0", "d5"]);
  });
});

describe("Bm25Index postings of 16-bit tf and length (larger ones kept aside)", () => {
  it("scores a tf and a document length of 65,535 and more exactly, walked, probed and removed", () => {
    // "flow" 70,000 times (tf and length past 16 bits), "wave" exactly 65,535 times (the 16-bit marker value itself)
    const texts = [
      `${"flow ".repeat(70_000)}layer`,
      `${"wave ".repeat(65_535)}shock`,
      "flow layer",
      "flow flow wave",
      "layer shock wave",
      ...Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? "the of flow" : "the of layer")),
    ];
    const { ix, live } = indexOfTexts(texts);
    for (const q of ["flow", "wave", "flow layer", "shock wave layer flow", "the of flow wave"])
      expectExact(ix, live, q, 5, (id) => id !== "d3");
    ix.remove("d2");
    live.delete("d2");
    for (const q of ["flow layer", "wave shock", "the flow"]) expectExact(ix, live, q, 3, () => true);
  });
});

describe("Bm25Index MaxScore search (stop-word lists probed, not walked)", () => {
  // A skewed vocabulary: "the" and "of" in most documents (the lists MaxScore skips), a long tail of rare words.
  const RARE = Array.from({ length: 40 }, (_, i) => `w${i}x`);
  const word = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("the", "of", "a") },
    { weight: 3, arbitrary: fc.constantFrom("flow", "layer", "wave") },
    { weight: 2, arbitrary: fc.constantFrom(...RARE) },
  );
  const text = fc.array(word, { minLength: 1, maxLength: 12 }).map((w) => w.join(" "));

  it("returns exactly the brute-force top K (ids, scores, tie order), with and without an accept filter, after removes", () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 60, maxLength: 300 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.array(
          fc.array(word, { minLength: 1, maxLength: 8 }).map((w) => w.join(" ")),
          { minLength: 1, maxLength: 4 },
        ),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 4 }),
        (texts, removes, queries, topK, every) => {
          const { ix, live } = indexOfTexts(texts);
          for (const r of removes) {
            const id = `d${r % texts.length}`;
            ix.remove(id);
            live.delete(id);
          }
          const accept = (id: string) => Number(id.slice(1)) % every === 0;
          for (const q of queries) expectExact(ix, live, q, topK, accept);
        },
      ),
      { seed: 20261127, numRuns: 150 },
    );
  });
});

describe("Bm25Index threshold pruning (non-essential lists: a sampled threshold, bounds at the list boundary)", () => {
  // Graded document frequencies (word gN is about twice as common as g(N+1)), repeated words (tf up to 4) and
  // lengths 1-16: the lists' bounds differ, so the boundary between lists a search walks and lists it only probes
  // falls between lists whose documents alone still reach the top K: a bound off by one list there changes answers.
  const GRADED = Array.from({ length: 8 }, (_, i) => `g${i}x`);
  const word = fc.integer({ min: 0, max: 255 }).map((r) => GRADED[Math.min(7, Math.clz32(r + 1) - 24)]!);
  const run = fc.tuple(word, fc.integer({ min: 1, max: 4 })).map(([w, tf]) => Array(tf).fill(w).join(" "));
  const text = fc.array(run, { minLength: 1, maxLength: 6 }).map((r) => r.join(" "));

  it("returns exactly the brute-force top K for queries mixing rare and common words, with and without accept", () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 40, maxLength: 400 }),
        fc.array(
          fc.array(fc.constantFrom(...GRADED), { minLength: 2, maxLength: 6 }).map((w) => w.join(" ")),
          { minLength: 1, maxLength: 3 },
        ),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 3 }),
        (texts, queries, topK, every) => {
          const { ix, live } = indexOfTexts(texts);
          const accept = (id: string) => Number(id.slice(1)) % every === 0;
          for (const q of queries) expectExact(ix, live, q, topK, accept);
        },
      ),
      { seed: 20261128, numRuns: 150 },
    );
  });
});

describe("Bm25Index threshold from a sampled guess (over 16,384 documents seen)", () => {
  // 60,000 documents of graded words: a query's first lists touch well over 16 x 1,024 documents, so the threshold's
  // selection first keeps only the documents above a guess from a strided sample (and falls back to all when too few).
  const GRADED = Array.from({ length: 10 }, (_, i) => `h${i}x`);
  const rnd = mulberry32(20261128);
  const texts = Array.from({ length: 60_000 }, () =>
    Array.from({ length: 1 + (rnd() % 12) }, () => GRADED[Math.max(0, Math.min(9, Math.clz32((rnd() % 1024) + 1) - 22))]).join(" "),
  );
  const { ix, live } = indexOfTexts(texts);

  it("returns exactly the brute-force top K, with and without accept", () => {
    for (const q of ["h0x h1x h2x h3x", "h2x h5x h9x", "h0x h0x h4x h7x h8x", "h1x h3x h6x"])
      for (const topK of [1, 10, 50, 300]) expectExact(ix, live, q, topK, (id) => Number(id.slice(1)) % 3 === 0);
  });
});
