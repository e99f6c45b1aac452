/**
 * @module tools/embed-ops — the request schema of POST /v1/embed (zod), the one source of its rules: the route checks
 * its body with it (http/input.ts), the OpenAPI document shows it, the MCP tools embed and inference_embed take its fields
 * (tools/indexes.ts). Which of the two shapes a body is, and whether `model` names this server's encoder, the route decides.
 */
import { z } from "zod";
import { MAX_EMBED_TEXTS } from "../input-rules.js";

/** The model name Pinecone-shaped requests give for the built-in encoder (its versioned id, `encoder.id`, is accepted too). */
export const EMBED_MODEL = "svc-text1024";

export const EMBED_OPS = {
  embed: {
    body: z
      .object({
        texts: z.array(z.string()).min(1).max(MAX_EMBED_TEXTS).optional().describe("svc's shape: the texts to embed"),
        model: z.string().optional().describe(`Pinecone shape: the model; "${EMBED_MODEL}" (or the encoder's versioned id)`),
        inputs: z
          .array(z.object({ text: z.string() }))
          .min(1)
          .max(MAX_EMBED_TEXTS)
          .optional()
          .describe("Pinecone shape: the texts as [{text}]"),
        parameters: z
          .strictObject({
            input_type: z.enum(["query", "passage"]).optional(),
            truncate: z.enum(["END", "NONE", "START"]).optional(),
            dimension: z.literal(1024).optional(),
          })
          .optional()
          .describe("Accepted for compatibility; the encoder is symmetric and reads whole texts"),
      })
      .describe(`Either texts (svc) or model + inputs (Pinecone inference; model "${EMBED_MODEL}")`),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
