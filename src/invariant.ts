/**
 * @module invariant — assertions of what the code relies on (TigerBeetle's habit): a broken one is a bug in svc,
 * never bad input, so it throws E_INTERNAL naming the invariant rather than going on with corrupt state.
 * Keep the checks O(1) on hot paths.
 */
import { SvcError } from "./errors.js";

/** Throw E_INTERNAL (`invariant broken: <what>`) unless `ok`. */
export function invariant(ok: boolean, what: string): asserts ok {
  if (!ok) throw new SvcError("E_INTERNAL", `invariant broken: ${what}`);
}
