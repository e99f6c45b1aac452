import { describe, expect, it } from "vitest";
import { gainOf, parseDocs, parseQrels, parseQueries } from "../../bench/cranfield.js";
import { ndcgAt, rrf } from "../../bench/encoder-metrics.js";

describe("Cranfield parser", () => {
  it("reads documents with all fields, CRLF line ends and an empty body", () => {
    const docs = parseDocs(
      ".I 1\r\n.T\r\nwing in a slipstream .\r\n.A\r\nbrenckman,m.\r\n.B\r\nj. ae. scs. 25, 1958, 324.\r\n.W\r\nwing in a slipstream .\r\n  an experimental study .\r\n.I 2\n.T\nempty body\n.A\n.B\n.W\n",
    );
    expect(docs).toEqual([
      {
        id: 1,
        title: "wing in a slipstream .",
        author: "brenckman,m.",
        biblio: "j. ae. scs. 25, 1958, 324.",
        body: "wing in a slipstream .\n  an experimental study .",
      },
      { id: 2, title: "empty body", author: "", biblio: "", body: "" },
    ]);
  });

  it("numbers queries by position (the qrels' numbering), keeping the .I label", () => {
    const qs = parseQueries(".I 001\n.W\nwhat similarity laws\nmust be obeyed .\n.I 004\n.W\nheat conduction .\n");
    expect(qs).toEqual([
      { ordinal: 1, label: 1, text: "what similarity laws must be obeyed ." },
      { ordinal: 2, label: 4, text: "heat conduction ." },
    ]);
  });

  it("maps codes 1..4 to gains 4..1 and drops -1", () => {
    expect([1, 2, 3, 4, -1, 5].map(gainOf)).toEqual([4, 3, 2, 1, 0, 0]);
    const q = parseQrels("1 184 2 \r\n1 29 1\n1 486 -1\r\n2 12 4\n");
    expect([...q.get(1)!]).toEqual([
      [184, 3],
      [29, 4],
    ]);
    expect([...q.get(2)!]).toEqual([[12, 1]]);
  });
});

describe("ranking metrics", () => {
  it("nDCG@k is 1 for the ideal order and lower otherwise", () => {
    const gains = new Map([
      [1, 3],
      [2, 1],
    ]);
    expect(ndcgAt([1, 2, 3], gains, 10)).toBe(1);
    expect(ndcgAt([2, 1, 3], gains, 10)).toBeLessThan(1);
    expect(ndcgAt([3, 4], gains, 10)).toBe(0);
  });

  it("RRF favours items ranked high in both lists", () => {
    expect(
      rrf([
        [1, 2, 3],
        [4, 2, 5],
      ])[0],
    ).toBe(2);
    expect(
      rrf(
        [
          [1, 2],
          [1, 3],
        ],
        60,
      ),
    ).toEqual([1, 2, 3]);
  });
});
