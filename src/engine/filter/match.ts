/** @module match — the reference evaluator of a Filter on one metadata object (the oracle the index must agree with). */
import { ownValue, type Metadata, type MetaValue } from "./metadata.js";
import type { Filter, Scalar } from "./parse.js";

/**
 * Whether `meta` matches `filter`. Semantics (Pinecone, with MongoDB handling of missing fields):
 * - $eq/$in: the field is present and equals one of the values. Equality is typed: "1", 1 and
 *   true are three different values; 1 and 1.0 are the same number. A list-valued field
 *   matches when ANY element equals a (string) value.
 * - $ne/$nin: exactly the complement of $eq/$in, so a list matches when NO element equals a
 *   value, and a row WITHOUT the field matches (MongoDB semantics: {a: {$ne: 1}} selects rows
 *   where a is missing too; add {a: {$exists: true}} to exclude them).
 * - $gt/$gte/$lt/$lte: the field holds a number inside the interval; strings, booleans and
 *   lists never match a range, nor do rows without the field.
 * - $exists: true iff the field is present (an empty list counts as present).
 */
export function matches(filter: Filter, meta: Metadata): boolean {
  switch (filter.kind) {
    case "and":
      for (const c of filter.children) if (!matches(c, meta)) return false;
      return true;
    case "or":
      for (const c of filter.children) if (matches(c, meta)) return true;
      return false;
    case "in": {
      const v = ownValue(meta, filter.field);
      let hit = false;
      if (v !== undefined)
        for (const x of filter.values)
          if (equals(v, x)) {
            hit = true;
            break;
          }
      return hit !== filter.negate;
    }
    case "range": {
      const v = ownValue(meta, filter.field);
      if (typeof v !== "number") return false;
      return (filter.minInclusive ? v >= filter.min : v > filter.min) && (filter.maxInclusive ? v <= filter.max : v < filter.max);
    }
    case "exists":
      return (ownValue(meta, filter.field) !== undefined) === filter.exists;
  }
}

function equals(v: MetaValue, x: Scalar): boolean {
  if (Array.isArray(v)) return typeof x === "string" && v.includes(x);
  return v === x; // strict: typed equality; -0 === 0
}
