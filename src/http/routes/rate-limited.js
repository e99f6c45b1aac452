/** @module routes/rate-limited — the one way a route runs under a per-address limit (commons writes, directory consultation requests); over it, answers 429 `rate_limited` with Retry-After. */
import { SvcError } from "../../errors.js";
/** Counts the request (also one that `run` then refuses) against `limiter`, then runs it; past the limit answers 429 with Retry-After (seconds) and does not run it. */
export async function rateLimited(limiter, ctx, run) {
    try {
        limiter.take(ctx.remoteAddress);
    }
    catch (e) {
        if (!(e instanceof SvcError) || e.code !== "rate_limited")
            throw e;
        return { status: e.status, body: e.toJSON(), headers: { "retry-after": String(e.details?.retryAfterSeconds ?? 60) } };
    }
    return run();
}
//# sourceMappingURL=rate-limited.js.map