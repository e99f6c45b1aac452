/**
 * @module routes/embed — POST /v1/embed: texts to the server's own 1024-d static-encoder vectors (what records use), for
 * clients that write to the vector-index layer. Two request shapes: svc's `{texts}`, and Pinecone's inference
 * `{model, inputs: [{text}], parameters}` (what `pc.inference.embed(...)` sends when the client's controller host is this
 * server), answered in Pinecone's EmbeddingsList shape. The one model is EMBED_MODEL (or the encoder's id).
 */
import type { z } from "zod";
import type { TextEncoder1024 } from "../../encoder/encoder.js";
import { tokenize } from "../../encoder/tokenize.js";
import { SvcError } from "../../errors.js";
import { EMBED_MODEL, EMBED_OPS } from "../../tools/embed-ops.js";
import { bodyOf } from "../input.js";
import type { Route } from "../route.js";

export { EMBED_MODEL } from "../../tools/embed-ops.js";
export { MAX_EMBED_TEXTS } from "../../input-rules.js";
type EmbedBody = z.infer<typeof EMBED_OPS.embed.body>;

export function embedRoutes(encoder: TextEncoder1024): Route[] {
  return [
    {
      method: "post",
      path: "/v1/embed",
      operationId: "embed",
      summary: `Embed texts with the server's 1024-d static encoder (the records encoder): {texts} or Pinecone's {model: "${EMBED_MODEL}", inputs: [{text}], parameters}`,
      tags: ["embed"],
      auth: "tenant",
      meter: "embed",
      readOnly: true,
      input: EMBED_OPS.embed,
      response: {
        status: 200,
        schema: {
          oneOf: [
            {
              type: "object",
              description: "For {texts}",
              properties: {
                vectors: { type: "array", items: { type: "array", items: { type: "number" } } },
                dimension: { type: "integer" },
                encoder: { type: "string" },
              },
            },
            {
              type: "object",
              description: "For {model, inputs} (Pinecone's EmbeddingsList)",
              properties: {
                model: { type: "string" },
                vector_type: { type: "string", enum: ["dense"] },
                data: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: { vector_type: { type: "string", enum: ["dense"] }, values: { type: "array", items: { type: "number" } } },
                  },
                },
                usage: { type: "object", properties: { total_tokens: { type: "integer" } } },
              },
            },
          ],
        },
        description: "One unit vector per text, in order",
      },
      handle(ctx) {
        // the body as `input` checked it (types, 1..MAX_EMBED_TEXTS texts or inputs, parameters); which shape it is, here
        const body = bodyOf(EMBED_OPS.embed.body, ctx.body);
        if (body.model !== undefined || body.inputs !== undefined || body.parameters !== undefined)
          return { body: pineconeEmbed(encoder, body) };
        const texts = body.texts;
        if (texts === undefined)
          throw new SvcError(
            "E_BAD_REQUEST",
            `texts must be a non-empty array of strings (or give Pinecone's {model: "${EMBED_MODEL}", inputs: [{text}]})`,
            { field: "texts" },
          );
        const flat = encoder.encodeBatch(texts);
        const d = encoder.dimension;
        const vectors: number[][] = [];
        for (let i = 0; i < texts.length; i++) vectors.push(Array.from(flat.subarray(i * d, (i + 1) * d)));
        return { body: { vectors, dimension: d, encoder: encoder.id } };
      },
    },
  ];
}

/** Pinecone's inference request (as `input` checked it) -> its EmbeddingsList; every check runs before any text is encoded. */
function pineconeEmbed(encoder: TextEncoder1024, b: EmbedBody): Record<string, unknown> {
  if (b.texts !== undefined)
    throw new SvcError("E_BAD_REQUEST", "give either texts (svc) or model + inputs (Pinecone), not both", { field: "texts" });
  if (b.model === undefined)
    throw new SvcError("E_BAD_REQUEST", `model must be "${EMBED_MODEL}" (the server's built-in encoder)`, { field: "model" });
  if (b.model !== EMBED_MODEL && b.model !== encoder.id)
    throw new SvcError(
      "E_BAD_REQUEST",
      `unknown model '${b.model}': this server embeds only with its built-in encoder, model "${EMBED_MODEL}"`,
      { field: "model" },
    );
  if (b.inputs === undefined) throw new SvcError("E_BAD_REQUEST", "inputs must be a non-empty array of {text}", { field: "inputs" });
  const texts = b.inputs.map((x) => x.text);
  const d = encoder.dimension;
  const out = new Float32Array(d);
  let tokens = 0;
  const data = texts.map((text) => {
    encoder.encodeInto(text, out.fill(0), 0);
    tokens += tokenize(text).length;
    return { vector_type: "dense", values: Array.from(out) };
  });
  return { model: b.model, vector_type: "dense", data, usage: { total_tokens: tokens } };
}
