/**
 * @module http/input — a route's request schema (zod, `Route.input`) as the route's parser and as the OpenAPI
 * document's JSON Schema: one source for both (and for the MCP tools that are that operation, tools/index-ops.ts).
 */
import { z } from "zod";
import { SvcError, type ErrorCode } from "../errors.js";
import { codeOf, judgedAs } from "../tools/fields.js";
import type { RequestContext, Route, Schema } from "./route.js";

type QueryParam = NonNullable<Route["queryParams"]>[number];

const jsonSchemas = new WeakMap<z.ZodType, Schema>();
const queryParams = new WeakMap<z.ZodObject, QueryParam[]>();

/** The JSON Schema (2020-12, input side) of a zod schema, converted once; `$schema` left out (OpenAPI embeds it). */
export function jsonSchemaOf(s: z.ZodType): Schema {
  let out = jsonSchemas.get(s);
  if (out === undefined) {
    const { $schema: _, ...rest } = z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Schema;
    out = rest;
    jsonSchemas.set(s, out);
  }
  return out;
}

/** The route's request body schema: made from `input.body` when it has one, else the hand-written `requestBody`. */
export function requestBodyOf(route: Route): Schema | undefined {
  return route.input?.body ? jsonSchemaOf(route.input.body) : route.requestBody;
}

/** The route's query parameters: made from `input.query` when it has one (descriptions from the schema), else `queryParams`. */
export function queryParamsOf(route: Route): QueryParam[] {
  const q = route.input?.query;
  return q ? paramsOf(q) : (route.queryParams ?? []);
}

/** The query parameters a zod query schema describes, made once. */
function paramsOf(q: z.ZodObject): QueryParam[] {
  let params = queryParams.get(q);
  if (params === undefined) {
    const doc = jsonSchemaOf(q) as { properties?: Record<string, Schema>; required?: string[] };
    params = Object.entries(doc.properties ?? {}).map(([name, schema]) => {
      const { description, ...rest } = schema;
      return { name, schema: rest, description: String(description ?? ""), required: doc.required?.includes(name) ?? false };
    });
    queryParams.set(q, params);
  }
  return params;
}

/**
 * Checks a request against its route's `input` schema (before the handler runs): a refusal is 400 with the
 * code the field's schema carries (fields.ts `x-svc-code`, else E_BAD_REQUEST) naming the first offending field
 * as handlers name it (`vectors[3].id`). An absent body is left to the handler (some routes take none).
 * Only checks: the handler reads the body as sent (binary values stay as they are).
 */
export function checkInput(route: Route, ctx: Pick<RequestContext, "body" | "query">): void {
  const input = route.input;
  if (input?.body && ctx.body !== undefined) refuse(input.body, input.body.safeParse(ctx.body), "body");
  if (input?.query) parseQuery(input.query, ctx.query);
}

/**
 * A handler's body, typed by its route's body schema: `checkInput` checked a body that was sent; an absent one is
 * checked here as `{}`, so a required field is named (a body-less request to an operation that needs one).
 */
export function bodyOf<S extends z.ZodObject>(schema: S, body: unknown): z.infer<S> {
  if (body !== undefined) return body as z.infer<S>;
  refuse(schema, schema.safeParse({}), "body");
  return {} as z.infer<S>;
}

/** A request's query as its route's schema parsed it (in `checkInput`), so the handler's `parseQuery` does not parse it again. */
const parsedQueries = new WeakMap<URLSearchParams, { schema: z.ZodObject; data: unknown }>();

/** The query checked against a route's query schema (refused as `checkInput` refuses) and its values, typed; for handlers that read them. */
export function parseQuery<S extends z.ZodObject>(schema: S, query: URLSearchParams): z.infer<S> {
  const seen = parsedQueries.get(query);
  if (seen?.schema === schema) return seen.data as z.infer<S>;
  const r = schema.safeParse(queryValues(paramsOf(schema), query));
  refuse(schema, r, "query");
  parsedQueries.set(query, { schema, data: r.data });
  return r.data as z.infer<S>;
}

/**
 * The query as the typed values its schema describes (OpenAPI's form style): an array parameter is every value
 * sent (?ids=a&ids=b), a number one its decimal text as a number, an integer one its plain decimal digits (no
 * 0x10, 1e3 or spaces) as a number (anything else stays text and is refused as not a number), the rest the text as sent.
 */
function queryValues(params: readonly QueryParam[], query: URLSearchParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params) {
    const type = p.schema.type;
    if (type === "array") out[p.name] = query.getAll(p.name);
    else if (query.has(p.name)) {
      const text = query.get(p.name)!;
      const numeric =
        type === "integer" ? /^-?\d{1,16}$/.test(text) : type === "number" && text.trim() !== "" && Number.isFinite(Number(text));
      out[p.name] = numeric ? Number(text) : text;
    }
  }
  return out;
}

function refuse(schema: z.ZodType, r: z.ZodSafeParseResult<unknown>, whole: string): void {
  if (r.success) return;
  const issue = deepest(r.error.issues[0]!);
  const field = fieldName(issue.path) || whole;
  throw new SvcError((codeOf(schemaAt(schema, issue.path)) ?? "E_BAD_REQUEST") as ErrorCode, `${field}: ${issue.message}`, { field });
}

/** An issue of a union no branch took, as the branch's issue that went deepest (`tags[1]` rather than `tags`); any other as it is. */
function deepest(issue: z.core.$ZodIssue, base: readonly PropertyKey[] = []): { path: PropertyKey[]; message: string } {
  const path = [...base, ...issue.path];
  // a closed object's unknown key is named as REST names an unknown field (parameters.pooling)
  if (issue.code === "unrecognized_keys") return { path: [...path, issue.keys[0]!], message: "unknown field" };
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return { path, message: issue.message };
  let best = { path, message: issue.message };
  for (const branch of issue.errors)
    for (const inner of branch) {
      const d = deepest(inner, path);
      if (d.path.length > best.path.length) best = d;
    }
  return best;
}

/** `["vectors", 3, "id"]` -> `vectors[3].id`. */
export function fieldName(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
  return out;
}

/** The innermost schema along `path` that carries an error code (optional/nullable/default wrappers looked through). */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType {
  let s: z.ZodType | undefined = schema;
  let coded = schema;
  for (let i = 0; ; i++) {
    s = unwrap(s);
    if (s === undefined || i === path.length) return s !== undefined && codeOf(s) !== undefined ? s : coded;
    if (codeOf(s) !== undefined) coded = s;
    const key = path[i]!;
    if (s instanceof z.ZodObject) s = s.shape[key as string] as z.ZodType | undefined;
    else if (s instanceof z.ZodArray) s = s.element as z.ZodType;
    else return coded;
  }
}

function unwrap(s: z.ZodType | undefined): z.ZodType | undefined {
  while (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault) s = s.unwrap() as z.ZodType;
  return s === undefined ? s : (judgedAs.get(s) ?? s);
}
