/** @module routes/embed — POST /v1/embed: texts to the server's own 1024-d static-encoder vectors (what records use), for clients that write to the vector-index layer. */
import type { TextEncoder1024 } from "../../encoder/encoder.js";
import { SvcError } from "../../errors.js";
import type { Route } from "../route.js";

export const MAX_EMBED_TEXTS = 256;

export function embedRoutes(encoder: TextEncoder1024): Route[] {
  return [
    {
      method: "post", path: "/v1/embed", operationId: "embed", summary: "Embed texts with the server's 1024-d static encoder (the records encoder)", tags: ["embed"], auth: "tenant", meter: "embed", readOnly: true,
      requestBody: { type: "object", required: ["texts"], properties: { texts: { type: "array", minItems: 1, maxItems: MAX_EMBED_TEXTS, items: { type: "string" } } } },
      response: { status: 200, schema: { type: "object", properties: { vectors: { type: "array", items: { type: "array", items: { type: "number" } } }, dimension: { type: "integer" }, encoder: { type: "string" } } }, description: "One unit vector per text, in order" },
      handle(ctx) {
        const b = ctx.body;
        if (typeof b !== "object" || b === null || Array.isArray(b) || b instanceof Uint8Array) throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
        const texts = (b as Record<string, unknown>).texts;
        if (!Array.isArray(texts) || texts.length === 0) throw new SvcError("E_BAD_REQUEST", "texts must be a non-empty array of strings", { field: "texts" });
        if (texts.length > MAX_EMBED_TEXTS) throw new SvcError("E_BAD_REQUEST", `at most ${MAX_EMBED_TEXTS} texts per call, got ${texts.length}`, { field: "texts" });
        const flat = encoder.encodeBatch(texts as string[]);
        const d = encoder.dimension;
        const vectors: number[][] = [];
        for (let i = 0; i < texts.length; i++) vectors.push(Array.from(flat.subarray(i * d, (i + 1) * d)));
        return { body: { vectors, dimension: d, encoder: encoder.id } };
      },
    },
  ];
}
