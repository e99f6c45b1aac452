/** sparse-postings: the top-k of a sparse-only index from its postings (MaxScore) equals brute force over every accepted row, rows appended between searches included (fast-check, fixed seed). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RoaringBitmap32 } from "../../src/engine/roaring.js";
import { sparseBytes, sparseDot, type SparseVector } from "../../src/engine/sparse.js";
import { SparsePostings, type SparseRows } from "../../src/engine/sparse-postings.js";

/** An append-only list of rows (some without sparse values), as a partition is. */
class Rows implements SparseRows {
  readonly payloads: Array<Uint8Array | null> = [];
  readonly vectors: Array<SparseVector | null> = [];
  get rows(): number {
    return this.payloads.length;
  }
  payload(row: number): Uint8Array | null {
    return this.payloads[row] ?? null;
  }
  idOf(row: number): string {
    return `r${String(row).padStart(5, "0")}`;
  }
  push(s: SparseVector | null): void {
    this.vectors.push(s);
    this.payloads.push(s === null ? null : sparseBytes(s));
  }
}

/** The reference: every accepted row sharing an index with a non-zero query value, by sparseDot desc then id. */
function bruteForce(rows: Rows, q: SparseVector, k: number, accept: RoaringBitmap32): Array<{ row: number; score: number }> {
  const qi = new Set(Array.from(q.indices).filter((_, i) => q.values[i] !== 0));
  const out: Array<{ row: number; score: number; id: string }> = [];
  rows.vectors.forEach((s, row) => {
    if (s === null || !accept.has(row) || !Array.from(s.indices).some((x) => qi.has(x))) return;
    out.push({ row, score: sparseDot(q, s), id: rows.idOf(row) });
  });
  out.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return out.slice(0, k).map(({ row, score }) => ({ row, score }));
}

const toSparse = (entries: Array<[number, number]>): SparseVector => {
  const m = new Map(entries);
  const indices = [...m.keys()].sort((a, b) => a - b);
  return { indices: Uint32Array.from(indices), values: Float32Array.from(indices, (i) => m.get(i)!) };
};
/** Few distinct indices (so lists overlap and pruning engages) and values drawn with ties; `signed`: negative values too. */
const sparseArb = (signed: boolean) =>
  fc
    .array(
      fc.tuple(
        fc.nat(30),
        signed
          ? fc.integer({ min: -8, max: 8 }).map((x) => x / 4)
          : fc.oneof(
              fc.integer({ min: 0, max: 8 }).map((x) => x / 4),
              fc.float({ min: 0, max: 100, noNaN: true }),
            ),
      ),
      { minLength: 1, maxLength: 12 },
    )
    .map(toSparse);

describe("sparse postings", () => {
  for (const signed of [false, true]) {
    it(`top-k equals brute force (${signed ? "signed" : "non-negative"} values), with filters, deletes and rows appended between searches`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.option(sparseArb(signed), { freq: 6 }), { minLength: 1, maxLength: 300 }),
          fc.array(fc.tuple(sparseArb(signed), fc.integer({ min: 1, max: 20 }), fc.nat(3), fc.nat(80)), { minLength: 1, maxLength: 4 }),
          (all, queries) => {
            const rows = new Rows();
            const postings = new SparsePostings();
            let fed = 0;
            for (const [q, k, mod, grow] of queries) {
              for (const s of all.slice(fed, fed + grow + 1)) rows.push(s);
              fed += grow + 1;
              postings.extend(rows);
              // accept: every row, or every row but those ≡ 1 mod (mod + 2) (a filter, or deleted rows)
              const accept = new RoaringBitmap32();
              for (let r = 0; r < rows.rows; r++) if (mod === 0 || r % (mod + 2) !== 1) accept.add(r);
              const got = postings.search(q, k, accept, rows);
              const want = bruteForce(rows, q, k, accept);
              expect(got.hits).toEqual(want);
            }
          },
        ),
        { seed: 3301 + (signed ? 1 : 0), numRuns: 400 },
      );
    });
  }

  it("prunes: a skewed query reads far fewer postings than its lists hold, and still answers the brute-force top-k", () => {
    const rows = new Rows();
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    // index 0 is in every row (a stop word), the rest are rare
    for (let r = 0; r < 20_000; r++)
      rows.push(
        toSparse([
          [0, 0.01 + rnd() * 0.01],
          [1 + Math.floor(rnd() * 5000), 1 + rnd()],
          [1 + Math.floor(rnd() * 5000), 1 + rnd()],
        ]),
      );
    const postings = new SparsePostings();
    postings.extend(rows);
    const all = new RoaringBitmap32();
    all.addRange(0, rows.rows);
    const q = toSparse([
      [0, 1],
      [17, 2],
      [42, 3],
      [4999, 1],
    ]);
    const got = postings.search(q, 10, all, rows);
    expect(got.hits).toEqual(bruteForce(rows, q, 10, all));
    expect(got.hits).toHaveLength(10);
    expect(got.scanned).toBeLessThan(rows.rows / 10); // the 20,000-long list of index 0 is probed, not walked
  });
});
