/**
 * @module tools/record-ops — the request schema of each /v1/records operation (zod), the one source of its rules: the
 * route checks its body or query with it (http/input.ts), the OpenAPI document shows it, and the MCP tool that is that
 * operation takes its fields as its input (tools/records.ts). Cross-field rules (tsGte below tsLt, hybrid needs text,
 * forget needs a criterion, after needs until) and the size of a record's stored payload stay in memory/records.ts.
 */
import { z } from "zod";
import {
  DEFAULT_RECORD_TOP_K,
  DEFAULT_TIMELINE,
  MAX_FORGET_IDS,
  MAX_RECORD_FILTER_VALUES,
  MAX_RECORD_ITEMS,
  MAX_RECORD_KIND_CHARS,
  MAX_RECORD_TAGS,
  MAX_RECORD_TEXT_BYTES,
  MAX_RECORD_TOP_K,
  MAX_RECORD_WORD_CHARS,
  MAX_TIMELINE,
  MAX_TTL_DAYS,
  RECORD_NAMESPACE_RE,
} from "../input-rules.js";

/** The namespace a records operation runs on (a path parameter; the MCP tools' `namespace`). */
export const recordNamespace = z
  .string()
  .regex(
    RECORD_NAMESPACE_RE,
    "namespace must be 1-128 characters of letters, digits, '_', '.', ':' and '-', starting with a letter or digit",
  )
  .describe("records namespace, e.g. a project or agent name");

const word = z.string().min(1).max(MAX_RECORD_WORD_CHARS);
const words = (max: number) => z.array(word).max(max);
/** Epoch ms (a safe integer). */
const epochMs = z.number().int();

/** Typed predicates shared by query and forget (the timeline's are its query parameters). */
const predicate = {
  kind: words(MAX_RECORD_FILTER_VALUES).optional().describe("any of these kinds (decision, mistake, handoff, note, tool_call, ...)"),
  tagsAny: words(MAX_RECORD_FILTER_VALUES).optional().describe("records holding at least one of these tags"),
  tagsAll: words(MAX_RECORD_FILTER_VALUES).optional().describe("records holding every one of these tags"),
  tsGte: epochMs.optional().describe("ts >= this (epoch ms)"),
  tsLt: epochMs.optional().describe("ts < this (epoch ms)"),
};

const nonBlank = (s: string) => s.trim() !== "";
const fitsText = (s: string) => Buffer.byteLength(s) <= MAX_RECORD_TEXT_BYTES;

/** One record to ingest. */
export const recordItem = z.object({
  kind: z.string().min(1).max(MAX_RECORD_KIND_CHARS).describe("what the record is: decision, mistake, handoff, note, ..."),
  text: z
    .string()
    .refine(nonBlank, "must be a non-empty string")
    .refine(fitsText, `is over ${MAX_RECORD_TEXT_BYTES} bytes`)
    .describe("the content; embedded by the server"),
  tags: words(MAX_RECORD_TAGS).optional(),
  ts: epochMs.min(0).optional().describe("epoch ms; default now"),
  meta: z.record(z.string(), z.unknown()).optional().describe("free-form JSON"),
  ttlDays: z.number().int().min(1).max(MAX_TTL_DAYS).optional().describe("expires this many days after ingest"),
});

/**
 * A list query parameter: repeated (?kind=a&kind=b, as the MCP tools send a list) and/or comma-separated (?kind=a,b);
 * each value sent lists at least one word after trimming. Absent is [] (http/input.ts reads an array parameter whole).
 */
const queryList = (description: string) =>
  z
    .array(z.string())
    .superRefine((sent, ctx) => {
      const all = sent.map(splitList);
      if (all.some((x) => x.length === 0)) ctx.addIssue({ code: "custom", message: "must list at least one value" });
      else if (all.flat().length > MAX_RECORD_FILTER_VALUES)
        ctx.addIssue({ code: "custom", message: `at most ${MAX_RECORD_FILTER_VALUES} values` });
      else if (all.flat().some((x) => x.length > MAX_RECORD_WORD_CHARS))
        ctx.addIssue({ code: "custom", message: `each value at most ${MAX_RECORD_WORD_CHARS} characters` });
    })
    .describe(`${description}; repeat the parameter or separate values by commas`);

/** A comma-separated list's values, trimmed, empty ones left out. */
export const splitList = (s: string): string[] =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");

export const RECORD_OPS = {
  records_ingest: {
    body: z.object({ items: z.array(recordItem).min(1).max(MAX_RECORD_ITEMS) }),
  },
  records_query: {
    body: z.object({
      text: z
        .string()
        .refine(nonBlank, "must be a non-empty string (omit it to list by time)")
        .optional()
        .describe("what to look for; omit for newest-first"),
      topK: z
        .number()
        .int()
        .min(1)
        .max(MAX_RECORD_TOP_K)
        .meta({ description: `default ${DEFAULT_RECORD_TOP_K}`, "x-svc-code": "E_TOP_K" })
        .optional(),
      ...predicate,
      includeText: z.boolean().optional(),
      includeMeta: z.boolean().optional(),
      mode: z
        .enum(["vector", "hybrid"])
        .optional()
        .describe(
          "with text: vector (the default) ranks by cosine similarity and score is the cosine; hybrid is reciprocal rank fusion (k = 60) of the cosine and BM25 rankings and score is the fused score, the sum over the two rankings of 1/(60 + rank), rank from 1 (at most 2/61 ≈ 0.0328)",
        ),
    }),
  },
  records_timeline: {
    query: z.object({
      since: epochMs.optional().describe("ts >= since (epoch ms)"),
      until: epochMs.optional().describe("ts < until (epoch ms): the previous page's nextCursor, to page back"),
      after: word
        .optional()
        .describe(
          "with until: the previous page's nextAfter (given only when one group of records sharing a ts is larger than limit); the page goes on inside the group at ts until, right after that record",
        ),
      kind: queryList("any of these kinds").optional(),
      tagsAny: queryList("at least one of these tags").optional(),
      tagsAll: queryList("all of these tags").optional(),
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_TIMELINE)
        .optional()
        .describe(
          `page size (default ${DEFAULT_TIMELINE}), a hard cap; a page ends between two ts values (records sharing the ts at the cut move to the next page together), unless one ts group alone is larger than limit`,
        ),
    }),
  },
  records_forget: {
    body: z
      .object({ ...predicate, ids: words(MAX_FORGET_IDS).optional() })
      .describe("Every given criterion must hold (kinds, tags, time window, ids); at least one is required"),
  },
  records_export: {
    query: z.object({
      schema: z
        .number({ error: "must be 1 or 2" })
        .int({ error: "must be 1 or 2" })
        .min(1, { error: "must be 1 or 2" })
        .max(2, { error: "must be 1 or 2" })
        .optional()
        .describe(
          "container schema version, default 1; 2 also carries all of the tenant's knowledge graphs and causal models (tenant-scoped, not per namespace)",
        ),
    }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;

export type RecordQuery = z.infer<typeof RECORD_OPS.records_query.body>;
export type RecordForget = z.infer<typeof RECORD_OPS.records_forget.body>;
export type RecordItem = z.infer<typeof recordItem>;
