/**
 * @module tools/hd-ops — the request schema of each /v1/hd operation (zod), the one source of its rules (constants
 * from hd/input-rules.ts): the route checks its body with it (http/input.ts), the OpenAPI document shows it, and
 * the MCP tool that is that operation takes it as its input (tools/hd.ts). Rules that relate fields (a row has
 * n_vars values below vocab_per_var; an item index is below 2^n_feat) or depend on a stored model (a variable of
 * the model) stay in hd/, as do the path names (the services check them: they are directory names).
 */
import { z } from "zod";
import * as R from "../hd/input-rules.js";

const fitsTerm = (s: string) => Buffer.byteLength(s) <= R.MAX_TERM_BYTES;

/**
 * A list of `item`s, min..max long, checked in one loop: zod costs ~1 µs a number (0.9-1.2 s for 100k worlds
 * x 10 variables, 44-60 ms for 10k facts; this way 22 ms and 0.7 ms, measured on the loaded 2-core machine), so
 * `plain` vouches for the common item and any other is judged by `item` itself: the verdict, message and path
 * (worlds[3][1]) are zod's. Documented as z.array(item).
 */
function fastList<T>(item: z.ZodType<T>, plain: (v: unknown) => boolean, min: number, max: number): z.ZodType<T[], T[]> {
  const list = z.array(item).min(min).max(max);
  const { $schema: _, ...doc } = z.toJSONSchema(list, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  const checked = z
    .unknown()
    .superRefine((v, ctx) => {
      const issues = (at: number | undefined, r: z.ZodSafeParseResult<unknown>) => {
        for (const issue of r.error?.issues ?? [])
          ctx.addIssue({ ...issue, path: at === undefined ? issue.path : [at, ...issue.path] } as z.core.$ZodRawIssue);
      };
      if (!Array.isArray(v) || v.length < min || v.length > max) return issues(undefined, list.safeParse(v));
      for (let i = 0; i < v.length; i++) {
        if (plain(v[i])) continue;
        const r = item.safeParse(v[i]);
        if (!r.success) return issues(i, r);
      }
    })
    .meta(doc);
  return checked as unknown as z.ZodType<T[], T[]>; // what it passes is a T[] (z.unknown: representable in JSON Schema, no copy)
}

export const seed = z.number().int().min(0).max(R.MAX_SEED);

/** Path names as the MCP tools take them (the routes' services check the same pattern). */
export const graphName = z.string().regex(R.KG_NAME_RE).describe("knowledge-graph name: 1-128 of A-Z a-z 0-9 . _ -");
export const modelName = z.string().regex(R.CAUSAL_NAME_RE).describe("causal model name: 1-64 of A-Z a-z 0-9 _ . -");

/** A fact's subject, relation or object. */
export const term = z.string().min(1).max(R.MAX_TERM_BYTES).refine(fitsTerm, `at most ${R.MAX_TERM_BYTES} bytes`);
/** A term `term` accepts without asking zod: a string of 1 .. MAX_TERM_BYTES / 3 characters (3 bytes each at most), or longer ones that fit. */
const plainTerm = (v: unknown) =>
  typeof v === "string" && v.length > 0 && v.length <= R.MAX_TERM_BYTES && (v.length <= R.MAX_TERM_BYTES / 3 || fitsTerm(v));
const fact = z.object({ subject: term, relation: term, object: term });
const plainFact = (v: unknown) => {
  if (typeof v !== "object" || v === null) return false;
  const f = v as Record<string, unknown>;
  return plainTerm(f.subject) && plainTerm(f.relation) && plainTerm(f.object);
};
const facts = fastList(fact, plainFact, 1, R.MAX_FACTS_PER_REQUEST);

const category = z.number().int().min(0);
const variable = z.number().int().min(0);
const row = z.array(category);
const plainRow = (v: unknown) => {
  if (!Array.isArray(v)) return false;
  for (let j = 0; j < v.length; j++) if (!Number.isInteger(v[j]) || (v[j] as number) < 0) return false;
  return true;
};

const item = z.number().int().min(0).describe("item index, < 2^n_feat");

const roleName = z.string().min(1).max(R.MAX_ROLE_NAME);
/** {role: filler}: 1..MAX_PAIRS roles; a bad role name is refused naming `pairs` (not the key itself, which may be long). */
const pairs = z
  .record(z.string(), roleName)
  .superRefine((o, ctx) => {
    const roles = Object.keys(o);
    if (roles.length < 1 || roles.length > R.MAX_PAIRS) ctx.addIssue({ code: "custom", message: `1 to ${R.MAX_PAIRS} roles` });
    else if (!roles.every((r) => roleName.safeParse(r).success))
      ctx.addIssue({ code: "custom", message: `role names are 1 to ${R.MAX_ROLE_NAME} characters` });
  })
  .meta({
    description: "role name -> filler name",
    propertyNames: { type: "string", minLength: 1, maxLength: R.MAX_ROLE_NAME },
    minProperties: 1,
    maxProperties: R.MAX_PAIRS,
  });
const RECORD_BYTES = R.ROLES_DIM / 8;
const record = z
  .string()
  .refine((s) => Buffer.from(s, "base64").length === RECORD_BYTES, `must be base64 of ${RECORD_BYTES} bytes (bind_role's vector)`)
  .meta({ contentEncoding: "base64", description: `the bound record: ${R.ROLES_DIM} bits, base64` });

export const HD_OPS = {
  // required: a z.unknown() field is optional to zod's JSON Schema; fastList refuses an absent one
  hd_kg_add: { body: z.object({ facts }).meta({ required: ["facts"] }) },
  hd_kg_delete_fact: { body: z.object({ facts }).meta({ required: ["facts"] }) },
  hd_kg_query: { body: z.object({ subject: term, relation: term }) },
  hd_causal_worlds: {
    body: z
      .object({
        n_vars: z.number().int().min(1).max(R.MAX_VARS),
        vocab_per_var: z
          .array(z.number().int().min(1).max(R.MAX_VOCAB))
          .describe("categories per variable, one per variable; values of variable j are 0..vocab_per_var[j]-1"),
        worlds: fastList(row, plainRow, 1, R.MAX_ROWS).describe(
          "rows of n_vars category indices; appended when the model exists (same n_vars and vocab_per_var)",
        ),
        seed: seed.optional().describe("recorded when the model is created"),
        parents: z
          .array(z.array(variable))
          .nullish()
          .describe(
            "optional causal graph (DAG): the parent indices of each variable; interventions then adjust for the condition variable's parents",
          ),
      })
      .meta({ required: ["n_vars", "vocab_per_var", "worlds"] }),
  },
  hd_causal_query: {
    body: z.object({
      query_type: z.enum(["observation", "intervention"]),
      condition_var: variable,
      condition_value: category,
      query_var: variable,
      query_value: category,
    }),
  },
  hd_analogy: {
    body: z.object({
      n_feat: z
        .number()
        .int()
        .min(1)
        .max(R.MAX_FEATURES)
        .describe("binary features per item; items are 0 .. 2^n_feat - 1 (bit f = feature f)"),
      a: item,
      b: item,
      c: item,
      seed: seed.default(0).describe("codebook seed; the codebook is deterministic in (n_feat, seed)"),
    }),
  },
  hd_roles_bind: {
    body: z.object({ pairs, seed: seed.default(0).describe("atom seed; atoms are deterministic in (seed, name)") }),
  },
  hd_roles_read: {
    body: z.object({
      vector: record,
      roles: z.array(roleName).min(1).max(R.MAX_PAIRS),
      candidates: z.array(roleName).min(1).max(R.MAX_CANDIDATES).describe("the fillers to clean up against"),
      seed: seed.default(0).describe("atom seed; atoms are deterministic in (seed, name)"),
    }),
  },
} satisfies Record<string, { body?: z.ZodObject; query?: z.ZodObject }>;
