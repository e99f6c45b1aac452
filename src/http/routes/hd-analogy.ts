/** @module routes/hd-analogy — POST /v1/hd/analogy: A:B::C:? over factored binary items (stateless). */
import type { AnalogyService } from "../../hd/analogy/service.js";
import { MAX_FEATURES } from "../../hd/analogy/service.js";
import type { Route } from "../route.js";

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
      requestBody: {
        type: "object",
        required: ["n_feat", "a", "b", "c"],
        properties: {
          n_feat: {
            type: "integer",
            minimum: 1,
            maximum: MAX_FEATURES,
            description: "binary features per item; items are 0 .. 2^n_feat - 1 (bit f = feature f)",
          },
          a: { type: "integer", minimum: 0, description: "item index, < 2^n_feat" },
          b: { type: "integer", minimum: 0, description: "item index, < 2^n_feat" },
          c: { type: "integer", minimum: 0, description: "item index, < 2^n_feat" },
          seed: {
            type: "integer",
            minimum: 0,
            maximum: 4294967295,
            default: 0,
            description: "codebook seed; the codebook is deterministic in (n_feat, seed)",
          },
        },
      },
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
      handle: async (ctx) => ({ body: await analogy.analogy(ctx.body ?? {}) }),
    },
  ];
}
