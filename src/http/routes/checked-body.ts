/** @module routes/checked-body — a route's JSON body once http/input.ts has checked it against the route's `input.body` schema, typed as that schema reads it. */
import type { z } from "zod";
import { checkInput } from "../input.js";
import type { RequestContext, Route } from "../route.js";

/**
 * The body `checkInput` passed (it runs before the handler, and checks a body only when one was sent): an absent
 * body is judged as `{}` by the same schema, so the refusal names the first required field as for `{}`.
 */
export function checkedBody<S extends z.ZodObject>(schema: S, ctx: Pick<RequestContext, "body" | "query">): z.input<S> {
  if (ctx.body !== undefined) return ctx.body as z.input<S>;
  checkInput({ input: { body: schema } } as unknown as Route, { body: {}, query: ctx.query });
  return {} as z.input<S>;
}
