/** @module routes/hd-analogy — POST /v1/hd/analogy: A:B::C:? over factored binary items (stateless). */
import type { AnalogyService } from "../../hd/analogy/service.js";
import { HD_OPS } from "../../tools/hd-ops.js";
import type { Route } from "../route.js";
import { bodyOf } from "../input.js";

export function hdAnalogyRoutes(analogy: AnalogyService): Route[] {
  return [
    {
      method: "post",
      path: "/v1/hd/analogy",
      operationId: "hd_analogy",
      summary: "Parallelogram completion A:B::C:? over 2^n_feat factored binary items, D = C xor (A xor B), cleaned up by a full scan",
      tags: ["hd"],
      auth: "tenant",
      meter: "hd_analogy",
      readOnly: true,
      input: HD_OPS.hd_analogy,
      response: {
        status: 200,
        schema: {
          type: "object",
          properties: {
            candidate: { type: "integer", description: "nearest item to D" },
            candidate_bits: {
              type: "array",
              items: { type: "integer", enum: [0, 1] },
              description: "the candidate's features, feature 0 first",
            },
            cosine: { type: "number", description: "1 - 2 * hamming(D, candidate) / D_bits" },
            runner_up: { type: "integer", description: "second-nearest item" },
            ambiguity: { type: "number", description: "max(0, runner-up cosine) / cosine, in [0, 1]" },
            confidence: { type: "number", description: "cosine - runner-up cosine, clamped to [0, 1]" },
          },
        },
        description: "The completed analogy (docs/internals/hd.md, Analogy)",
      },
      handle: async (ctx) => ({ body: await analogy.analogy(bodyOf(HD_OPS.hd_analogy.body, ctx.body)) }),
    },
  ];
}
