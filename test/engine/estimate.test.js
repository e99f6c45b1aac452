import { describe, expect, it } from "vitest";
import { AsymmetricScorer } from "../../src/engine/estimate.js";
import { mulberry32 } from "../../src/kernels/random.js";
describe("AsymmetricScorer", () => {
    it("scores a row as the sum of the query over the row's set bits (dims not a multiple of 8 too)", () => {
        for (const dim of [1024, 100, 13]) {
            const next = mulberry32(dim);
            const q = Float32Array.from({ length: dim }, () => next() / 2 ** 32 - 0.5);
            const row = Uint8Array.from({ length: Math.ceil(dim / 128) * 16 }, () => next() & 0xff);
            let want = 0;
            for (let j = 0; j < dim; j++)
                if ((row[j >> 3] >> (j & 7)) & 1)
                    want += q[j];
            expect(new AsymmetricScorer(q, dim).score(row, 0)).toBeCloseTo(want, 4);
        }
    });
});
//# sourceMappingURL=estimate.test.js.map