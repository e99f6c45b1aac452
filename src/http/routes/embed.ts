/**
 * @module routes/embed — POST /v1/embed: texts to the server's own 1024-d static-encoder vectors (what records use), for
 * clients that write to the vector-index layer. Two request shapes: svc's `{texts}`, and Pinecone's inference
 * `{model, inputs: [{text}], parameters}` (what `pc.inference.embed(...)` sends when the client's controller host is this
 * server), answered in Pinecone's EmbeddingsList shape. The one model is EMBED_MODEL (or the encoder's id).
 */
import type { TextEncoder1024 } from "../../encoder/encoder.js";
import { tokenize } from "../../encoder/tokenize.js";
import { SvcError } from "../../errors.js";
import type { Route } from "../route.js";

export const MAX_EMBED_TEXTS = 256;
/** The model name Pinecone-shaped requests give for the built-in encoder (its versioned id, `encoder.id`, is accepted too). */
export const EMBED_MODEL = "svc-text1024";
/** Pinecone inference parameters accepted, with the values that mean something here (the encoder is symmetric and has no input limit). */
const PARAMETERS: Record<string, (v: unknown) => boolean> = {
  input_type: (v) => v === "query" || v === "passage",
  truncate: (v) => v === "END" || v === "NONE" || v === "START",
  dimension: (v) => v === 1024,
};

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
      requestBody: {
        type: "object",
        description: `Either texts (svc) or model + inputs (Pinecone inference; model "${EMBED_MODEL}")`,
        properties: {
          texts: { type: "array", minItems: 1, maxItems: MAX_EMBED_TEXTS, items: { type: "string" } },
          model: { type: "string", description: `Pinecone shape: the model; "${EMBED_MODEL}" (or the encoder's versioned id)` },
          inputs: {
            type: "array",
            minItems: 1,
            maxItems: MAX_EMBED_TEXTS,
            items: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
          },
          parameters: {
            type: "object",
            properties: {
              input_type: { type: "string", enum: ["query", "passage"] },
              truncate: { type: "string", enum: ["END", "NONE", "START"] },
              dimension: { type: "integer", enum: [1024] },
            },
            additionalProperties: false,
            description: "Accepted for compatibility; the encoder is symmetric and reads whole texts",
          },
        },
      },
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
        const b = ctx.body;
        if (typeof b !== "object" || b === null || Array.isArray(b) || b instanceof Uint8Array)
          throw new SvcError("E_BAD_REQUEST", "the body must be an object", { field: "body" });
        const body = b as Record<string, unknown>;
        if (body.model !== undefined || body.inputs !== undefined || body.parameters !== undefined)
          return { body: pineconeEmbed(encoder, body) };
        const texts = body.texts;
        if (!Array.isArray(texts) || texts.length === 0)
          throw new SvcError(
            "E_BAD_REQUEST",
            `texts must be a non-empty array of strings (or give Pinecone's {model: "${EMBED_MODEL}", inputs: [{text}]})`,
            { field: "texts" },
          );
        if (texts.length > MAX_EMBED_TEXTS)
          throw new SvcError("E_BAD_REQUEST", `at most ${MAX_EMBED_TEXTS} texts per call, got ${texts.length}`, { field: "texts" });
        const flat = encoder.encodeBatch(texts as string[]);
        const d = encoder.dimension;
        const vectors: number[][] = [];
        for (let i = 0; i < texts.length; i++) vectors.push(Array.from(flat.subarray(i * d, (i + 1) * d)));
        return { body: { vectors, dimension: d, encoder: encoder.id } };
      },
    },
  ];
}

/** Pinecone's inference request -> its EmbeddingsList; every check runs before any text is encoded. */
function pineconeEmbed(encoder: TextEncoder1024, b: Record<string, unknown>): Record<string, unknown> {
  if (b.texts !== undefined)
    throw new SvcError("E_BAD_REQUEST", "give either texts (svc) or model + inputs (Pinecone), not both", { field: "texts" });
  if (typeof b.model !== "string")
    throw new SvcError("E_BAD_REQUEST", `model must be "${EMBED_MODEL}" (the server's built-in encoder)`, { field: "model" });
  if (b.model !== EMBED_MODEL && b.model !== encoder.id)
    throw new SvcError(
      "E_BAD_REQUEST",
      `unknown model '${b.model}': this server embeds only with its built-in encoder, model "${EMBED_MODEL}"`,
      { field: "model" },
    );
  const inputs = b.inputs;
  if (!Array.isArray(inputs) || inputs.length === 0)
    throw new SvcError("E_BAD_REQUEST", "inputs must be a non-empty array of {text}", { field: "inputs" });
  if (inputs.length > MAX_EMBED_TEXTS)
    throw new SvcError("E_BAD_REQUEST", `at most ${MAX_EMBED_TEXTS} inputs per call, got ${inputs.length}`, { field: "inputs" });
  const texts = inputs.map((x: unknown, i) => {
    const text = typeof x === "object" && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>).text : undefined;
    if (typeof text !== "string")
      throw new SvcError("E_BAD_REQUEST", `inputs[${i}] must be {text: string}`, { field: `inputs[${i}].text` });
    return text;
  });
  if (b.parameters !== undefined) {
    if (typeof b.parameters !== "object" || b.parameters === null || Array.isArray(b.parameters))
      throw new SvcError("E_BAD_REQUEST", "parameters must be an object", { field: "parameters" });
    for (const [k, v] of Object.entries(b.parameters)) {
      const ok = Object.hasOwn(PARAMETERS, k) ? PARAMETERS[k]! : null;
      if (ok === null)
        throw new SvcError("E_BAD_REQUEST", `unknown parameter '${k}' (accepted: ${Object.keys(PARAMETERS).join(", ")})`, {
          field: `parameters.${k}`,
        });
      if (!ok(v))
        throw new SvcError(
          "E_BAD_REQUEST",
          `parameters.${k} has a value this model does not take (input_type: query | passage; truncate: END | NONE | START; dimension: 1024)`,
          { field: `parameters.${k}` },
        );
    }
  }
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
