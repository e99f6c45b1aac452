/** sparse: the input check accepts exactly the well-formed sparse vectors (a reference predicate, hostile input by fast-check, fixed seed), the payload bytes round-trip, and the dot product is the brute-force one. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { checkSparse, MAX_SPARSE_NNZ, sparseBytes, sparseDot, sparseOf } from "../../src/engine/sparse.js";

/** The rule, written independently: 1..1000 entries, equal lengths, integer indices in [0, 2^32) strictly ascending, finite float32 values. */
function valid(v: unknown): boolean {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const { indices, values } = v as { indices?: unknown; values?: unknown };
  if (!Array.isArray(indices) || !Array.isArray(values)) return false;
  if (indices.length < 1 || indices.length > MAX_SPARSE_NNZ || values.length !== indices.length) return false;
  for (let i = 0; i < indices.length; i++) {
    const x = indices[i];
    if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x >= 2 ** 32) return false;
    if (i > 0 && x <= (indices[i - 1] as number)) return false;
    const y = values[i];
    if (typeof y !== "number" || !Number.isFinite(Math.fround(y))) return false;
  }
  return true;
}

const index = fc.oneof(
  fc.nat(50),
  fc.integer({ min: -3, max: 2 ** 32 + 2 }),
  fc.double(),
  fc.constantFrom(2 ** 32 - 1, 2 ** 32, 1.5, -0, NaN),
  fc.string(),
  fc.constant(null),
);
const value = fc.oneof(fc.double({ noNaN: false }), fc.float(), fc.constantFrom(3.5e38, -3.5e38, 1e-50), fc.string(), fc.boolean());
const sortedUnique = fc.uniqueArray(fc.nat(1000), { minLength: 1, maxLength: 40 }).map((a) => a.sort((x, y) => x - y));
const hostileSparse: fc.Arbitrary<unknown> = fc.oneof(
  // well-formed (mostly), to check acceptance too
  sortedUnique.chain((indices) =>
    fc.record({
      indices: fc.constant(indices),
      values: fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { minLength: indices.length, maxLength: indices.length }),
    }),
  ),
  // near misses: one index moved, a value dropped or added
  sortedUnique.chain((indices) =>
    fc
      .tuple(fc.constant(indices), fc.nat(indices.length - 1), fc.integer({ min: -2, max: 2 }), fc.integer({ min: -1, max: 1 }))
      .map(([ix, at, shift, extra]) => {
        const indices2 = [...ix];
        indices2[at] = indices2[at]! + shift;
        return { indices: indices2, values: Array.from({ length: ix.length + extra }, (_, i) => i / 7) };
      }),
  ),
  fc.record({ indices: fc.array(index, { maxLength: 6 }), values: fc.array(value, { maxLength: 6 }) }),
  fc.record({ indices: fc.anything(), values: fc.anything() }, { requiredKeys: [] }),
  fc.anything(),
);

describe("sparse vectors", () => {
  it("checkSparse accepts exactly the valid ones; a refusal is a 4xx naming a field under the input", () => {
    fc.assert(
      fc.property(hostileSparse, (v) => {
        let ok = true;
        try {
          const s = checkSparse(v, "sv");
          const { indices, values } = v as { indices: number[]; values: number[] };
          expect(Array.from(s.indices)).toEqual(indices);
          expect(Array.from(s.values)).toEqual(values.map((y) => Math.fround(y)));
        } catch (e) {
          ok = false;
          expect(e).toBeInstanceOf(SvcError);
          expect((e as SvcError).status).toBe(400);
          expect((e as SvcError).field).toMatch(/^sv(\.(indices|values)(\[\d+\])?)?$/);
        }
        expect(ok).toBe(valid(v));
      }),
      { seed: 3304, numRuns: 3000 },
    );
  });

  it("names the offending entry: unsorted, repeated, length mismatch, too many", () => {
    const field = (v: unknown) => {
      try {
        checkSparse(v, "s");
        return null;
      } catch (e) {
        return (e as SvcError).field;
      }
    };
    expect(field({ indices: [1, 5, 3], values: [1, 1, 1] })).toBe("s.indices[2]");
    expect(field({ indices: [1, 5, 5], values: [1, 1, 1] })).toBe("s.indices[2]");
    expect(field({ indices: [1, 2], values: [1] })).toBe("s.values");
    expect(field({ indices: Array.from({ length: 1001 }, (_, i) => i), values: Array(1001).fill(1) })).toBe("s.indices");
    expect(field({ indices: [2 ** 32], values: [1] })).toBe("s.indices[0]");
    expect(field({ indices: [0], values: [1e39] })).toBe("s.values[0]");
  });

  it("round-trips through payload bytes and dots like brute force", () => {
    const arb = sortedUnique.chain((indices) =>
      fc.record({
        indices: fc.constant(indices),
        values: fc.array(fc.float({ noNaN: true, noDefaultInfinity: true, min: -100, max: 100 }), {
          minLength: indices.length,
          maxLength: indices.length,
        }),
      }),
    );
    fc.assert(
      fc.property(arb, arb, (a, b) => {
        const sa = checkSparse(a, "a");
        const sb = checkSparse(b, "b");
        const back = sparseOf(sparseBytes(sa))!;
        expect(Array.from(back.indices)).toEqual(Array.from(sa.indices));
        expect(Array.from(back.values)).toEqual(Array.from(sa.values));
        const m = new Map(Array.from(sb.indices, (x, i) => [x, sb.values[i]!]));
        let want = 0;
        sa.indices.forEach((x, i) => (want += sa.values[i]! * (m.get(x) ?? 0)));
        expect(sparseDot(sa, sb)).toBeCloseTo(want, 6);
      }),
      { seed: 3305, numRuns: 500 },
    );
    expect(sparseOf(new Uint8Array([1, 0, 0]))).toBeNull();
    expect(sparseOf(null)).toBeNull();
  });
});
