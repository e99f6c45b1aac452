/**
 * @module forward — requests served by another node (cluster mode's leader of the home stores): which routes go where
 * (`Forwarder`, given by the composition root) and the one HTTP hop that carries a request there and
 * its answer back. REST (server.ts) and in-process MCP calls (mcp/local-api.ts) both go through it.
 */
import { timingSafeEqual } from "node:crypto";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { SvcError } from "../errors.js";
import type { Route } from "./route.js";

/** Header carrying the cluster's forwarding secret: a request holding it came from a node, not a client. */
export const FORWARD_TOKEN_HEADER = "svc-forward-token";
/** Header carrying the client's address on a forwarded request (trusted only with the token). */
export const FORWARDED_FOR_HEADER = "svc-forwarded-for";
/** How long a forwarded request waits for the whole answer before it is E_HOME_UNAVAILABLE. */
export const FORWARD_TIMEOUT_MS = 60_000;
/** Retry-After (seconds) on E_HOME_UNAVAILABLE: about a node registration's time to live. */
export const HOME_RETRY_AFTER_S = 5;

export interface Forwarder {
  /** null: serve `route` on this node; else the base URL (`http://host:port`) of the node serving it. Throws E_HOME_UNAVAILABLE when that node is not live. */
  target(route: Route): string | null;
  /** The cluster's forwarding secret, sent on every forwarded request. */
  readonly token: string;
  /**
   * Aborted when the node `route` was sent to stops being the one serving it (the leader lease moved):
   * the forward then answers at once instead of waiting for a frozen node (see `forwardRequest`).
   */
  watch?(route: Route): AbortSignal | undefined;
}

/** The request as it goes to the other node: `path` holds the raw path and query string. */
export interface ForwardRequest {
  method: string;
  path: string;
  /** Client headers passed on (content-type, accept, api-key, authorization, host, x-request-id); empty values are left out. */
  headers: Record<string, string>;
  body?: Buffer;
  /** The client's address (the receiver's per-address limits count it, not this node's). */
  remoteAddress?: string;
  /** `Forwarder.watch`: once aborted, the request is given up (reads E_HOME_UNAVAILABLE, writes E_OUTCOME_UNKNOWN, Retry-After 1). */
  signal?: AbortSignal;
}

export interface ForwardReply {
  status: number;
  contentType: string;
  /** Response headers to pass back (hop-by-hop, framing and server-set ones removed). */
  headers: Record<string, string>;
  body: Buffer;
}

/** Headers the answering server sets itself, or that describe the hop rather than the answer. */
const NOT_PASSED_BACK = new Set([
  "content-type",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "date",
  "uwebsockets",
  "x-request-id",
]);

/** Whether `sent` (the svc-forward-token header, "" when absent) is the cluster's secret (compared in constant time). */
export function isForwardToken(sent: string, forward: Forwarder | undefined): boolean {
  const token = forward?.token ?? "";
  if (sent === "" || token === "" || sent.length !== token.length) return false;
  return timingSafeEqual(Buffer.from(sent), Buffer.from(token));
}

export function homeUnavailable(message: string, cause?: unknown): SvcError {
  return new SvcError("E_HOME_UNAVAILABLE", message, { field: "home", details: { retryAfterSeconds: HOME_RETRY_AFTER_S }, cause });
}

/**
 * Send `req` to `base` with the forwarding token; any failure to get a whole answer is E_HOME_UNAVAILABLE.
 * Aborted by `req.signal` (the target lost the lease it served the route under): a GET/HEAD is
 * E_HOME_UNAVAILABLE and any other method E_OUTCOME_UNKNOWN (the deposed target may have applied it
 * before the next leader's fence, never after a later acknowledged write), both with Retry-After 1.
 */
export function forwardRequest(base: string, token: string, req: ForwardRequest, timeoutMs = FORWARD_TIMEOUT_MS): Promise<ForwardReply> {
  const url = new URL(req.path, base);
  const headers: Record<string, string> = { [FORWARD_TOKEN_HEADER]: token, "content-length": String(req.body?.length ?? 0) };
  for (const [k, v] of Object.entries(req.headers)) if (v !== "") headers[k.toLowerCase()] = v;
  if (req.remoteAddress) headers[FORWARDED_FOR_HEADER] = req.remoteAddress;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const signal = req.signal;
    const onAbort = () => r.destroy(new LeaseMoved(`${base} no longer serves this route (the leader lease moved)`));
    const fail = (err: Error) => {
      signal?.removeEventListener("abort", onAbort);
      if (!(err instanceof LeaseMoved))
        return reject(homeUnavailable(`the leader at ${base} did not answer (${err.message}); retry in ${HOME_RETRY_AFTER_S} s`, err));
      const read = req.method.toUpperCase() === "GET" || req.method.toUpperCase() === "HEAD";
      reject(
        read
          ? new SvcError("E_HOME_UNAVAILABLE", `${err.message}; retry`, { field: "home", details: { retryAfterSeconds: 1 }, cause: err })
          : new SvcError(
              "E_OUTCOME_UNKNOWN",
              `${err.message} before it answered the write: it may have taken effect, but never after a later acknowledged write; retry`,
              { field: "home", details: { retryAfterSeconds: 1 }, cause: err },
            ),
      );
    };
    const r = send(url, { method: req.method.toUpperCase(), headers, timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => {
        if (!res.complete) return fail(new Error("the answer was cut short"));
        signal?.removeEventListener("abort", onAbort);
        resolve({
          status: res.statusCode ?? 502,
          contentType: String(res.headers["content-type"] ?? "application/octet-stream"),
          headers: passBack(res.headers),
          body: Buffer.concat(chunks),
        });
      });
    });
    r.on("timeout", () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on("error", fail);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    r.end(req.body);
  });
}

/** The reason a forward was given up by its `signal`. */
class LeaseMoved extends Error {}

function passBack(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !NOT_PASSED_BACK.has(k)) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}
