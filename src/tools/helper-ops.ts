/**
 * @module tools/helper-ops — the request schema of each /v1/commons (document helpers) operation with a JSON body
 * (zod), the one source of its rules: the route checks its body with it (http/input.ts), the OpenAPI document
 * shows it, and the MCP tool that is that operation takes it (tools/commons.ts). A build's body is the helper's
 * own argument object, checked by the helper (src/helpers/): no schema here.
 */
import { z } from "zod";

export const HELPER_OPS = {
  commons_verify: {
    body: z.object({ id: z.string().min(1).describe("a helper's id (rec_<hex>) from commons_list; an unknown one is 404") }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
