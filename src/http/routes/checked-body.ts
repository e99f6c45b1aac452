/** @module routes/checked-body — a route's JSON body once its `input.body` schema passed it (http/input.ts); a request sent without one is 400 naming `body`. */
import type { z } from "zod";
import { SvcError } from "../../errors.js";
import type { RequestContext } from "../route.js";

/**
 * The body as `schema` checked it. checkInput leaves an absent body to the handler (some routes take none): these
 * take one, so no body is refused as a body that is not an object would be.
 */
export function checkedBody<S extends z.ZodObject>(_schema: S, ctx: RequestContext): z.infer<S> {
  if (ctx.body === undefined) throw new SvcError("E_BAD_REQUEST", "the body must be a JSON object", { field: "body" });
  return ctx.body as z.infer<S>;
}
