/**
 * @module routes/rate-limited — the one way a route runs under a per-address limit (commons writes, directory consultation
 * requests): the limit is the route's `gate`, taken before its input is judged, so a request then refused counts too;
 * over it, 429 `rate_limited` with Retry-After (details.retryAfterSeconds, as request.ts answers every error carrying it).
 */
import type { RateLimiter } from "../../net/rate-limit.js";
import type { RequestContext } from "../route.js";

/** A route gate counting the request against `limiter` (throws 429 past the limit, and the handler does not run). */
export const limitedBy =
  (limiter: RateLimiter) =>
  (ctx: RequestContext): void =>
    limiter.take(ctx.remoteAddress);
