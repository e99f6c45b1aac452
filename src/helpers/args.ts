/** @module args — validates a helper's argument object with zod before anything is written. */
import type { z } from "zod";
import { SvcError } from "../errors.js";

/**
 * Parse `args` with `schema`; the first issue becomes an E_BAD_REQUEST naming the offending
 * field as a dotted path (`text_fields.2.name`), so callers see what was wrong and where.
 */
export function parseArgs<T extends z.ZodTypeAny>(helper: string, schema: T, args: unknown): z.output<T> {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join(".");
  throw new SvcError("E_BAD_REQUEST", `${helper}: ${field === "" ? "arguments" : field}: ${issue.message}`, {
    field: field === "" ? undefined : field,
  });
}
