/**
 * @module uws-limits — uWebSockets.js reads its request-head limit from the environment once, when the
 * addon loads; since v20.55 the default is 4 KiB (431 past it), which a GET fetching 1000 ids (~12 KiB of
 * query string) exceeds. Imported for its effect, before the addon, by the one module that loads it
 * (http/server.ts). An operator's own UWS_HTTP_MAX_HEADERS_SIZE wins.
 */
/** Bytes of request line + headers accepted before 431. */
export const MAX_REQUEST_HEAD_BYTES = 64 << 10;
process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_REQUEST_HEAD_BYTES);
//# sourceMappingURL=uws-limits.js.map