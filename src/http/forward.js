/**
 * @module forward — requests served by another node (cluster mode's home node): which routes go where
 * (`Forwarder`, given by the composition root) and the one HTTP hop that carries a request there and
 * its answer back. REST (server.ts) and in-process MCP calls (mcp/local-api.ts) both go through it.
 */
import { timingSafeEqual } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { SvcError } from "../errors.js";
/** Header carrying the cluster's forwarding secret: a request holding it came from a node, not a client. */
export const FORWARD_TOKEN_HEADER = "svc-forward-token";
/** Header carrying the client's address on a forwarded request (trusted only with the token). */
export const FORWARDED_FOR_HEADER = "svc-forwarded-for";
/** How long a forwarded request waits for the whole answer before it is E_HOME_UNAVAILABLE. */
export const FORWARD_TIMEOUT_MS = 60_000;
/** Retry-After (seconds) on E_HOME_UNAVAILABLE: about a node registration's time to live. */
export const HOME_RETRY_AFTER_S = 5;
/** Headers the answering server sets itself, or that describe the hop rather than the answer. */
const NOT_PASSED_BACK = new Set(["content-type", "content-length", "connection", "keep-alive", "transfer-encoding", "date", "uwebsockets", "x-request-id"]);
/** Whether `sent` (the svc-forward-token header, "" when absent) is the cluster's secret (compared in constant time). */
export function isForwardToken(sent, forward) {
    const token = forward?.token ?? "";
    if (sent === "" || token === "" || sent.length !== token.length)
        return false;
    return timingSafeEqual(Buffer.from(sent), Buffer.from(token));
}
export function homeUnavailable(message, cause) {
    return new SvcError("E_HOME_UNAVAILABLE", message, { field: "home", details: { retryAfterSeconds: HOME_RETRY_AFTER_S }, cause });
}
/** Send `req` to `base` with the forwarding token; any failure to get a whole answer is E_HOME_UNAVAILABLE. */
export function forwardRequest(base, token, req, timeoutMs = FORWARD_TIMEOUT_MS) {
    const url = new URL(req.path, base);
    const headers = { [FORWARD_TOKEN_HEADER]: token, "content-length": String(req.body?.length ?? 0) };
    for (const [k, v] of Object.entries(req.headers))
        if (v !== "")
            headers[k.toLowerCase()] = v;
    if (req.remoteAddress)
        headers[FORWARDED_FOR_HEADER] = req.remoteAddress;
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
        const fail = (err) => reject(homeUnavailable(`the home node at ${base} did not answer (${err.message}); retry in ${HOME_RETRY_AFTER_S} s`, err));
        const r = send(url, { method: req.method.toUpperCase(), headers, timeout: timeoutMs, agent: false }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("error", fail);
            res.on("end", () => {
                if (!res.complete)
                    return fail(new Error("the answer was cut short"));
                resolve({ status: res.statusCode ?? 502, contentType: String(res.headers["content-type"] ?? "application/octet-stream"), headers: passBack(res.headers), body: Buffer.concat(chunks) });
            });
        });
        r.on("timeout", () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
        r.on("error", fail);
        r.end(req.body);
    });
}
function passBack(h) {
    const out = {};
    for (const [k, v] of Object.entries(h))
        if (v !== undefined && !NOT_PASSED_BACK.has(k))
            out[k] = Array.isArray(v) ? v.join(", ") : v;
    return out;
}
//# sourceMappingURL=forward.js.map