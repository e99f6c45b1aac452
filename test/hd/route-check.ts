/** The request checks a route runs before its handler (http/invoke.ts execute: null body, unknown fields, the `input` schema), as a test reads their verdict. */
import { bodyOf, checkInput } from "../../src/http/input.js";
import { refuseNullBody, refuseUnknownFields } from "../../src/http/invoke.js";
import type { Route } from "../../src/http/route.js";

/** The refusal of `body` by `route`'s checks ({code, field, status}), or null when they pass it. */
export function refusal(route: Route, body: unknown): { code: string; field?: string; status: number } | null {
  try {
    refuseNullBody(route, body);
    refuseUnknownFields(route, body);
    const ctx = { body, query: new URLSearchParams() };
    checkInput(route, ctx);
    if (route.input?.body) bodyOf(route.input.body, ctx.body);
    return null;
  } catch (err) {
    const e = err as { code: string; field?: string; status: number };
    return { code: e.code, field: e.field, status: e.status };
  }
}
