import { describe, expect, it } from "vitest";
import { Bm25Index } from "../../src/encoder/bm25.js";
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
