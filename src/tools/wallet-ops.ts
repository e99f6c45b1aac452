/**
 * @module tools/wallet-ops — the request schema of each /v1/wallet operation (zod), the one source of its rules: the
 * route checks its query with it (http/input.ts), the OpenAPI document shows it, the MCP tools wallet and
 * wallet_usage take it (tools/commons.ts). The bucket count's bound per grain (a cross-field rule) the route keeps.
 */
import { z } from "zod";
import { USAGE_MAX_BUCKETS } from "../account/wallet-book.js";

/** Recent ledger entries a wallet view shows: default and most. */
export const WALLET_RECENT = { default: 20, max: 100 } as const;
/** Usage buckets ending now when none are asked, per grain. */
export const USAGE_DEFAULT_BUCKETS = { minute: 60, hour: 48, day: 30 } as const;

export const WALLET_OPS = {
  wallet: {
    query: z.object({
      limit: z
        .number()
        .int()
        .min(1)
        .max(WALLET_RECENT.max)
        .optional()
        .describe(`Recent entries to show (default ${WALLET_RECENT.default})`),
    }),
  },
  wallet_usage: {
    query: z.object({
      grain: z.enum(["minute", "hour", "day"]).optional().describe("Bucket size (default hour)"),
      buckets: z
        .number()
        .int()
        .min(1)
        .max(USAGE_MAX_BUCKETS.minute)
        .optional()
        .describe(
          `Buckets ending now (default minute ${USAGE_DEFAULT_BUCKETS.minute}, hour ${USAGE_DEFAULT_BUCKETS.hour}, day ${USAGE_DEFAULT_BUCKETS.day}; at most minute ${USAGE_MAX_BUCKETS.minute}, hour ${USAGE_MAX_BUCKETS.hour}, day ${USAGE_MAX_BUCKETS.day})`,
        ),
    }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
