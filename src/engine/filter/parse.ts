/** @module parse — Pinecone-style metadata filter objects parsed and checked into a small AST (Filter). */
import { SvcError } from "../../errors.js";

/** A value a filter compares against: string, finite number or boolean (never a list). */
export type Scalar = string | number | boolean;

/**
 * The parsed filter. Every field-level operator reduces to one of three leaves:
 * - `in`: $eq (one value), $in (several); with `negate`, $ne and $nin. `values` are distinct.
 * - `range`: $gt/$gte/$lt/$lte on one field object, merged into one interval; numbers only.
 * - `exists`: $exists.
 * `and`/`or` have at least two children (a single child is returned bare), and an `and`
 * never holds an `and` (nor an `or` an `or`): same-kind nesting is flattened.
 */
export type Filter =
  | { readonly kind: "and"; readonly children: readonly Filter[] }
  | { readonly kind: "or"; readonly children: readonly Filter[] }
  | { readonly kind: "in"; readonly field: string; readonly values: readonly Scalar[]; readonly negate: boolean }
  | {
      readonly kind: "range";
      readonly field: string;
      /** Lower bound (-Infinity when none); rows need value > min, or >= min when minInclusive. */
      readonly min: number;
      readonly minInclusive: boolean;
      /** Upper bound (+Infinity when none); rows need value < max, or <= max when maxInclusive. */
      readonly max: number;
      readonly maxInclusive: boolean;
    }
  | { readonly kind: "exists"; readonly field: string; readonly exists: boolean };

/**
 * Most filter objects nested in one another: the top-level object is depth 1 and each
 * $and/$or element is one deeper. A deeper object fails with E_FILTER at its path, e.g.
 * "filter.$and[0].$or[0].$and[0]...". Bounds recursion and work on hostile input.
 */
export const MAX_FILTER_DEPTH = 8;
/** Most values in one $in/$nin list (Pinecone's limit). */
export const MAX_IN_VALUES = 10_000;

const FIELD_OPS = ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"] as const;
type FieldOp = (typeof FIELD_OPS)[number];
const FIELD_OP_SET: ReadonlySet<string> = new Set(FIELD_OPS);

/**
 * Parse a Pinecone filter object. `{}`, `undefined` or `null` -> null (no filter).
 * Grammar: an object whose keys are ANDed; a key is "$and"/"$or" (a non-empty array of
 * non-empty filter objects) or a field name whose value is a bare string/number/boolean
 * (meaning $eq) or an object of operators (ANDed). Throws E_FILTER with `field` = the exact
 * path of the offending part, e.g. "filter.$and[1].year.$gt".
 */
export function parseFilter(filter: unknown, field = "filter"): Filter | null {
  if (filter === undefined || filter === null) return null;
  if (!isObject(filter)) throw new SvcError("E_FILTER", `a filter must be an object, got ${describe(filter)}`, { field });
  if (Object.keys(filter).length === 0) return null;
  return parseObject(filter, field, 1);
}

function parseObject(obj: Record<string, unknown>, path: string, depth: number): Filter {
  const keys = Object.keys(obj);
  if (keys.length === 0)
    throw new SvcError("E_FILTER", "a filter object inside $and/$or must hold at least one condition", { field: path });
  const parts: Filter[] = [];
  for (const key of keys) {
    const value = obj[key];
    const at = `${path}.${key}`;
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(value) || value.length === 0)
        throw new SvcError("E_FILTER", `${key} takes a non-empty array of filter objects`, { field: at });
      const children: Filter[] = [];
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const itemPath = `${at}[${i}]`;
        if (depth + 1 > MAX_FILTER_DEPTH)
          throw new SvcError("E_FILTER", `filters may nest at most ${MAX_FILTER_DEPTH} objects deep`, { field: itemPath });
        if (!isObject(item))
          throw new SvcError("E_FILTER", `${key} elements must be filter objects, got ${describe(item)}`, { field: itemPath });
        children.push(parseObject(item, itemPath, depth + 1));
      }
      parts.push(combine(key === "$and" ? "and" : "or", children));
    } else if (key.charCodeAt(0) === 36 /* $ */) {
      const hint = FIELD_OP_SET.has(key)
        ? `${key} applies to a field, e.g. {"genre": {"${key}": ...}}`
        : `unknown operator ${key}; expected $and, $or or a field name`;
      throw new SvcError("E_FILTER", hint, { field: at });
    } else if (key.length === 0) {
      throw new SvcError("E_FILTER", "field names must be non-empty", { field: at });
    } else {
      parts.push(parseField(key, value, at));
    }
  }
  return combine("and", parts);
}

function parseField(name: string, value: unknown, path: string): Filter {
  if (isObject(value)) {
    const ops = Object.keys(value);
    if (ops.length === 0) throw new SvcError("E_FILTER", `field "${name}" has an empty operator object`, { field: path });
    const parts: Filter[] = [];
    let range: { min: number; minInclusive: boolean; max: number; maxInclusive: boolean } | null = null;
    for (const op of ops) {
      const operand = value[op];
      const at = `${path}.${op}`;
      if (!FIELD_OP_SET.has(op)) {
        const msg =
          op.charCodeAt(0) === 36
            ? `unknown operator ${op}; expected one of ${FIELD_OPS.join(", ")}`
            : `expected an operator such as $eq inside field "${name}", got key "${op}"`;
        throw new SvcError("E_FILTER", msg, { field: at });
      }
      switch (op as FieldOp) {
        case "$eq":
        case "$ne":
          parts.push({ kind: "in", field: name, values: [scalar(operand, op, at)], negate: op === "$ne" });
          break;
        case "$in":
        case "$nin":
          parts.push({ kind: "in", field: name, values: scalarList(operand, op, at), negate: op === "$nin" });
          break;
        case "$gt":
        case "$gte":
        case "$lt":
        case "$lte": {
          if (typeof operand !== "number" || !Number.isFinite(operand))
            throw new SvcError("E_FILTER", `${op} takes a finite number, got ${describe(operand)}`, { field: at });
          const v = operand === 0 ? 0 : operand; // -0 -> 0
          range ??= { min: -Infinity, minInclusive: true, max: Infinity, maxInclusive: true };
          // Intersect with the bound already present: the tighter one wins; on a tie, exclusive wins.
          if (op === "$gt" || op === "$gte") {
            const inclusive = op === "$gte";
            if (v > range.min) [range.min, range.minInclusive] = [v, inclusive];
            else if (v === range.min) range.minInclusive &&= inclusive;
          } else {
            const inclusive = op === "$lte";
            if (v < range.max) [range.max, range.maxInclusive] = [v, inclusive];
            else if (v === range.max) range.maxInclusive &&= inclusive;
          }
          break;
        }
        case "$exists":
          if (typeof operand !== "boolean")
            throw new SvcError("E_FILTER", `$exists takes true or false, got ${describe(operand)}`, { field: at });
          parts.push({ kind: "exists", field: name, exists: operand });
          break;
      }
    }
    if (range !== null) parts.unshift({ kind: "range", field: name, ...range });
    return combine("and", parts);
  }
  if (Array.isArray(value))
    throw new SvcError("E_FILTER", `a list is not a filter value; use {"${name}": {"$in": [...]}}`, { field: path });
  if (value === null) throw new SvcError("E_FILTER", `null is not a filter value; use {"${name}": {"$exists": false}}`, { field: path });
  return { kind: "in", field: name, values: [scalar(value, "a bare value", path)], negate: false };
}

function scalar(v: unknown, what: string, path: string): Scalar {
  if (typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number" && Number.isFinite(v)) return v === 0 ? 0 : v;
  throw new SvcError("E_FILTER", `${what} must be a string, finite number or boolean, got ${describe(v)}`, { field: path });
}

function scalarList(v: unknown, op: string, path: string): Scalar[] {
  if (!Array.isArray(v) || v.length === 0)
    throw new SvcError("E_FILTER", `${op} takes a non-empty array of strings, numbers or booleans, got ${describe(v)}`, { field: path });
  if (v.length > MAX_IN_VALUES)
    throw new SvcError("E_FILTER", `${op} takes at most ${MAX_IN_VALUES} values, got ${v.length}`, { field: path });
  // A Set keeps "1", 1 and true apart (SameValueZero), so deduplication never merges types.
  const seen = new Set<Scalar>();
  for (let i = 0; i < v.length; i++) seen.add(scalar(v[i], `${op} elements`, `${path}[${i}]`));
  return [...seen];
}

function combine(kind: "and" | "or", parts: Filter[]): Filter {
  const flat: Filter[] = [];
  for (const p of parts) {
    if (p.kind === kind) flat.push(...p.children);
    else flat.push(p);
  }
  return flat.length === 1 ? flat[0]! : { kind, children: flat };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (v === undefined) return "nothing";
  if (Array.isArray(v)) return v.length === 0 ? "an empty array" : "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}
