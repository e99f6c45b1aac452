/**
 * @module request — the one request path, socket-free: a request as bytes and header values in, an answer as bytes
 * out. Forwarding (cluster mode), the Host/Origin guard, auth, codecs, body-buffer reuse, the handler with its
 * metering, and the request log line and metrics all happen here; the uWS server (server.ts) only reads bytes from
 * the socket and writes the answer back, MCP tool calls (mcp/local-api.ts) and tests call `request()` directly.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { KeyBook, Principal } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import { publicError, SvcError } from "../errors.js";
import { tracer } from "../probes.js";
import { giveBackBody } from "./body-buffers.js";
import { CONTENT_TYPE, decodeBody, encodeBody, requestCodec, responseCodec, type Codec } from "./codecs.js";
import { FORWARDED_FOR_HEADER, FORWARD_TOKEN_HEADER, forwardRequest, isForwardToken, type Forwarder } from "./forward.js";
import type { HostGuard } from "./host-guard.js";
import { authenticate, execute, presentedKey } from "./invoke.js";
import type { HttpMetrics } from "./metrics.js";
import type { RequestContext, Route } from "./route.js";

/** The request header values the path reads, "" when absent (uWS's `getHeader` convention). */
/** A request arriving while the server shuts down: 503 with Retry-After (a client retries, on another node in cluster mode), never run. */
const shuttingDown = () =>
  new SvcError("E_CLOSED", "the server is shutting down; retry (on another node in cluster mode)", { details: { retryAfterSeconds: 1 } });

export interface RequestHeaders {
  contentType: string;
  contentLength: string;
  accept: string;
  host: string;
  origin: string;
  apiKey: string;
  authorization: string;
  requestId: string;
  forwardToken: string;
  forwardedFor: string;
  after: string;
  traceparent: string;
}

/** Lowercase header name of each field of RequestHeaders. */
export const HEADER_NAMES: Readonly<Record<keyof RequestHeaders, string>> = {
  contentType: "content-type",
  contentLength: "content-length",
  accept: "accept",
  host: "host",
  origin: "origin",
  apiKey: "api-key",
  authorization: "authorization",
  requestId: "x-request-id",
  forwardToken: FORWARD_TOKEN_HEADER,
  forwardedFor: FORWARDED_FOR_HEADER,
  after: "x-svc-after",
  traceparent: "traceparent",
};

/** An answer: status, media type, body bytes (or text) and extra headers. */
export interface Answer {
  status: number;
  contentType: string;
  body: Buffer | string;
  headers?: Record<string, string>;
}

export interface RequestDeps {
  keys: KeyBook;
  wallets: WalletBook;
  metrics: HttpMetrics;
  /** Cluster mode: routes served by another node (the home node) are forwarded to it. */
  forward?: Forwarder;
}

export interface RequestPathOptions {
  /** false: no keys needed, every request acts as the admin of tenant "local" (loopback only). */
  auth: boolean;
  /** The listen address, for links when a request names no Host. */
  host: string;
  scheme: "http" | "https";
  /** The listening port (known once listening). */
  port: () => number;
  guard: HostGuard;
  /** The server's body cap in bytes (a route may cap lower). */
  bodyLimit: number;
  /** True once the server is shutting down: new requests are refused with E_CLOSED. */
  closing: () => boolean;
  log: Logger;
}

/** A request for `request()`: no socket. Header names are case-insensitive; the body is bytes or text. */
export interface InProcessRequest {
  method: string;
  /** Path and query as sent on the request line, e.g. /v1/indexes/a%20b/query?x=1. */
  url: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** The client's address (default 127.0.0.1). */
  remoteAddress?: string;
}

/** The answer to an in-process request: its headers include x-request-id; a HEAD's body is empty. */
export type InProcessAnswer = Answer & { headers: Record<string, string> };

/** One route as the path sees it: names of its parameters and whether a request carries a body. */
export interface RouteEntry {
  route: Route;
  names: string[];
  /** Path regex capturing each parameter's raw (percent-encoded) text, for socket-free matching. */
  re: RegExp;
  /** Per path segment, 0 for literal and 1 for a parameter: a literal segment wins over a parameter, as in uWS. */
  rank: number[];
  /** A route may cap its body below the server's limit (the public commons writes do). */
  bodyCap: number;
}

/** A route's method as the log line and metrics name it (upper case), made once, not per request. */
const VERBS: Readonly<Record<Route["method"], string>> = { get: "GET", post: "POST", patch: "PATCH", delete: "DELETE" };

const REQUEST_ID_RE = /^[\w.:-]{1,64}$/;
const literal = (part: string) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export class RequestPath {
  readonly entries: RouteEntry[];
  private readonly idPrefix = randomBytes(3).toString("hex");
  private seq = 0;

  constructor(
    routes: readonly Route[],
    readonly deps: RequestDeps,
    readonly opts: RequestPathOptions,
  ) {
    this.entries = routes.map((route) => {
      const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const re = new RegExp(
        `^${route.path
          .split(/\{\w+\}/)
          .map(literal)
          .join("([^/]+)")}$`,
      );
      const rank = route.path.split("/").map((s) => (s.startsWith("{") ? 1 : 0));
      return { route, names, re, rank, bodyCap: Math.min(opts.bodyLimit, route.bodyLimit ?? opts.bodyLimit) };
    });
  }

  /** The client's `x-request-id` when it is sane, else a new one. */
  requestId(sent: string): string {
    return REQUEST_ID_RE.test(sent) ? sent : `${this.idPrefix}-${(++this.seq).toString(36)}`;
  }

  /**
   * Begin serving `entry`: `head` for a HEAD on a GET route, `raw` the path parameters as sent, `peer` the socket's
   * address, or a function reading it when first asked (the server's: a getpeername and two copies most routes never use).
   */
  begin(
    entry: RouteEntry,
    head: boolean,
    h: RequestHeaders,
    raw: string[],
    path: string,
    query: string,
    peer: string | (() => string),
  ): Exchange {
    return new Exchange(this, entry, head, h, raw, path, query, peer);
  }

  /** No route for `method url`: 405 with the methods the path has (Allow), else 404. */
  unmatched(method: string, url: string): { error: SvcError; allow: string[] } {
    const allow = this.entries
      .filter((e) => e.re.test(url))
      .flatMap((e) => (e.route.method === "get" ? ["GET", "HEAD"] : [e.route.method.toUpperCase()]));
    const M = method.toUpperCase();
    const error =
      allow.length > 0
        ? new SvcError("E_METHOD", `${M} is not allowed on ${url}; use ${allow.join(", ")}`, { field: "method" })
        : new SvcError("E_NOT_FOUND", `no route ${M} ${url}`, { field: "path" });
    return { error, allow };
  }

  /**
   * Serve one request without a socket, as the server would over HTTP (the same admission, codecs, handler,
   * metering, request log line and metrics). `observe: false` leaves the request out of the log and the
   * HTTP metrics (in-process MCP tool calls, which are logged and counted as tool calls).
   */
  async request(req: InProcessRequest, observe = true): Promise<InProcessAnswer> {
    const q = req.url.indexOf("?");
    const path = q < 0 ? req.url : req.url.slice(0, q);
    const query = q < 0 ? "" : req.url.slice(q + 1);
    const lower: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers ?? {})) lower[k.toLowerCase()] = v;
    const body = req.body === undefined ? Buffer.alloc(0) : typeof req.body === "string" ? Buffer.from(req.body) : req.body;
    if (lower["content-length"] === undefined) lower["content-length"] = String(body.length);
    const h = {} as RequestHeaders;
    for (const [field, name] of Object.entries(HEADER_NAMES) as Array<[keyof RequestHeaders, string]>) h[field] = lower[name] ?? "";
    const method = req.method.toLowerCase();
    const head = method === "head";
    const want = head ? "get" : method;
    let best: { entry: RouteEntry; raw: string[] } | null = null;
    for (const entry of this.entries) {
      if (entry.route.method !== want) continue;
      const m = entry.re.exec(path);
      if (m && (best === null || before(entry.rank, best.entry.rank))) best = { entry, raw: m.slice(1) };
    }
    if (best === null) {
      const { error, allow } = this.unmatched(method, path);
      if (observe) this.deps.metrics.observe(method.toUpperCase(), "unmatched", error.status, 0, 0, 0);
      return {
        status: error.status,
        contentType: CONTENT_TYPE.json,
        body: JSON.stringify(error.toJSON()),
        headers: { "x-request-id": this.requestId(h.requestId), ...(allow.length > 0 ? { allow: allow.join(", ") } : {}) },
      };
    }
    const ex = this.begin(best.entry, head, h, best.raw, path, query, req.remoteAddress ?? "127.0.0.1");
    let answer: Answer;
    try {
      ex.admit();
      if (body.length > best.entry.bodyCap)
        throw new SvcError("E_TOO_LARGE", `the body exceeds the limit of ${best.entry.bodyCap} bytes`, { field: "body" });
      answer = await ex.run(best.entry.route.method === "get" || best.entry.route.method === "delete" ? Buffer.alloc(0) : body);
    } catch (err) {
      answer = ex.failure(err);
    }
    const out = head ? "" : answer.body;
    if (observe) ex.done(answer.status, typeof answer.body === "string" ? Buffer.byteLength(answer.body) : answer.body.length, false);
    return { ...answer, body: out, headers: { ...answer.headers, "x-request-id": ex.id } };
  }
}

/** Whether rank `a` sorts before `b`: the first segment where they differ is literal in `a`. */
function before(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

/**
 * One request on its way through the path: `admit` on the headers alone (before a byte of the body is read),
 * then `run` with the body, then `done` once the answer went out (its request line and metrics).
 */
export class Exchange {
  readonly id: string;
  readonly t0 = performance.now();
  readonly route: Route;
  /** The socket's address, or what reads it (see begin). */
  private peer: string | (() => string);
  /** Declared Content-Length, -1 when none was sent. */
  readonly declared: number;
  bytesIn = 0;
  private principal: Principal | null = null;
  /** The error code of a failed request, for its request line. */
  private code: string | undefined;
  /** A request another node of the cluster forwarded: served here, never forwarded again. */
  private readonly forwarded: boolean;
  /** The node serving this request when it is not this one. */
  private home: string | null = null;
  /** requestCodec of the Content-Type, read once (admit and run both need it); undefined until then. */
  private codec: Codec | null | undefined = undefined;

  constructor(
    private readonly path: RequestPath,
    readonly entry: RouteEntry,
    readonly head: boolean,
    private readonly h: RequestHeaders,
    private readonly raw: string[],
    private readonly url: string,
    private readonly query: string,
    peer: string | (() => string),
  ) {
    this.route = entry.route;
    this.id = path.requestId(h.requestId);
    this.forwarded = isForwardToken(h.forwardToken, path.deps.forward);
    this.peer = this.forwarded && h.forwardedFor !== "" ? h.forwardedFor : peer;
    this.declared = h.contentLength === "" ? -1 : Number(h.contentLength);
  }

  /** The client's address: the socket's, or on a request another node forwarded, the one it names. */
  get remoteAddress(): string {
    if (typeof this.peer === "function") this.peer = this.peer();
    return this.peer;
  }

  /**
   * What the headers alone decide, before a byte of the body is read (a keyless client must not
   * make the server buffer its body): the declared length, shutdown, the Host/Origin guard, the
   * key, the media type of a declared body. Throws the refusal.
   */
  admit(): void {
    const { opts, deps } = this.path;
    const h = this.h;
    if (this.declared > this.entry.bodyCap)
      throw new SvcError("E_TOO_LARGE", `the body has ${this.declared} bytes; the limit is ${this.entry.bodyCap}`, { field: "body" });
    if (opts.closing()) throw shuttingDown();
    // Without keys any page the browser shows could call us (CSRF, DNS rebinding): only our own host and origin may (a forwarding node checked its own).
    if (!opts.auth && !this.forwarded) opts.guard.check(h.host, h.origin);
    this.home = this.forwarded ? null : (deps.forward?.target(this.route) ?? null);
    // A forwarded request is authenticated by the node serving it; a missing key is refused here already.
    if (this.home === null || (opts.auth && this.route.auth !== "none" && presentedKey(h) === null))
      this.principal = authenticate(this.route.auth, h, deps.keys, opts.auth);
    if (this.home === null && this.declared > 0) this.checkMediaType(this.declared);
  }

  private get inCodec(): Codec | null {
    return this.codec === undefined ? (this.codec = requestCodec(this.h.contentType)) : this.codec;
  }

  private checkMediaType(length: number): void {
    const route = this.route;
    const ct = this.h.contentType;
    const inCodec = this.inCodec;
    if (!route.rawBody && length > 0 && (inCodec === null || (inCodec !== "json" && route.proto?.request === undefined))) {
      const send = `application/json${route.proto?.request ? ", application/msgpack or application/x-protobuf" : ""}`;
      throw new SvcError(
        "E_MEDIA_TYPE",
        ct === "" ? `a request body needs a Content-Type: send ${send}` : `Content-Type '${ct}' is not accepted here; send ${send}`,
        { field: "content-type" },
      );
    }
  }

  /** Serve the admitted request with its whole body. Throws what fails (`failure` makes it an answer). */
  async run(body: Buffer): Promise<Answer> {
    const { opts, deps } = this.path;
    const { h, route } = this;
    this.bytesIn = body.length;
    if (opts.closing()) throw shuttingDown();
    if (this.home !== null) {
      const headers = {
        "content-type": h.contentType,
        accept: h.accept,
        host: h.host,
        "api-key": h.apiKey,
        authorization: h.authorization,
        "x-request-id": this.id,
      };
      const r = await forwardRequest(this.home, deps.forward!.token, {
        method: route.method,
        path: this.query ? `${this.url}?${this.query}` : this.url,
        headers,
        body,
        remoteAddress: this.remoteAddress,
        signal: deps.forward!.watch?.(route),
      });
      return { status: r.status, contentType: r.contentType, body: r.body, headers: r.headers };
    }
    this.checkMediaType(body.length); // a chunked body's length is known only now
    const inCodec = this.inCodec;
    const floats = route.upsertBody ? "upsert" : route.queryBody ? "query" : undefined;
    const decoded = route.rawBody ? body : decodeBody(inCodec ?? "json", body, route.proto, floats);
    // A decoded JSON body shares no memory with the bytes (msgpack bins would): its buffer can take the next large body.
    if (!route.rawBody && (inCodec ?? "json") === "json") giveBackBody(body);
    const ctx = new ExchangeContext(this, {
      id: this.id,
      params: decodeParams(this.entry.names, this.raw),
      query: this.query,
      body: decoded,
      principal: this.principal!,
      baseUrl: `${opts.scheme}://${h.host || `${opts.host}:${opts.port()}`}`,
      contentType: h.contentType,
      after: h.after,
    });
    const reply =
      tracer === null
        ? await execute(route, ctx, deps)
        : await tracer.span(
            this.head ? `HEAD ${route.path}` : `${route.method.toUpperCase()} ${route.path}`,
            { "http.request.method": this.verb, "http.route": route.path, "svc.request_id": this.id },
            async (span) => {
              const r = await execute(route, ctx, deps);
              span.setAttribute("http.response.status_code", r.status ?? route.response.status);
              return r;
            },
            h.traceparent,
          );
    // An upsert's msgpack bins were views into the body until the route copied them into the batch's rows (metadata holds
    // no binaries), a query's vector bin until the route copied it into its Float32Array: dead now.
    if ((route.upsertBody || route.queryBody) && inCodec === "msgpack") giveBackBody(body);
    const status = reply.status ?? route.response.status;
    if (reply.raw) return { status, contentType: reply.raw.contentType, body: reply.raw.data, headers: reply.headers };
    const outCodec = responseCodec(h.accept, route.proto !== undefined);
    return {
      status,
      contentType: CONTENT_TYPE[outCodec],
      body: reply.body === undefined ? "" : encodeBody(outCodec, reply.body, route.proto),
      headers: reply.headers,
    };
  }

  /** The answer to a request that failed with `err` (its public error as JSON, Retry-After when it says); a fault is logged with its stack. */
  failure(err: unknown, extra?: Record<string, string>): Answer {
    const e = publicError(err);
    this.code = e.code;
    // A fault is an error with its stack; "not ready yet" during start is an expected answer: its request line (info) says it.
    if (e.status >= 500 && e.code !== "E_NOT_READY") this.path.opts.log.error({ reqId: this.id, err }, "request failed");
    const retryAfter = e.details?.retryAfterSeconds;
    const headers =
      typeof retryAfter === "number" || extra
        ? { ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {}), ...extra }
        : undefined;
    return { status: e.status, contentType: CONTENT_TYPE.json, body: JSON.stringify(e.toJSON()), headers };
  }

  get verb(): string {
    return this.head ? "HEAD" : VERBS[this.route.method];
  }

  /** The answer went out (`bytesOut` bytes, or the client was gone): its metrics and its request line. */
  done(status: number, bytesOut: number, aborted: boolean): void {
    const { deps, opts } = this.path;
    const route = this.route;
    const ms = performance.now() - this.t0;
    deps.metrics.observe(this.verb, route.path, status, ms / 1000, this.bytesIn, bytesOut);
    opts.log.info(
      {
        reqId: this.id,
        method: this.verb,
        route: route.path,
        status,
        code: this.code,
        ms: Math.round(ms * 100) / 100,
        tenant: route.auth === "none" ? undefined : this.principal?.tenant,
        bytesIn: this.bytesIn,
        bytesOut,
        aborted: aborted || undefined,
      },
      "request",
    );
  }
}

/**
 * A request's context as its route sees it. A class, for its `remoteAddress` getter: the socket's address is read only
 * when a route asks (a gate's per-address limit); an accessor in an object literal after a spread cost ~1.5 µs a request.
 */
class ExchangeContext implements RequestContext {
  readonly id: string;
  readonly params: Record<string, string>;
  readonly body: unknown;
  readonly principal: Principal;
  readonly baseUrl: string;
  readonly usage: RequestContext["usage"] = {};
  readonly contentType: string;
  declare headers?: Record<string, string>;
  readonly #ex: Exchange;
  /** The query string as sent, parsed when a route first reads `query` (a query's POST has none). */
  #query: string | URLSearchParams;

  constructor(ex: Exchange, c: Omit<RequestContext, "usage" | "headers" | "remoteAddress" | "query"> & { query: string; after: string }) {
    this.#ex = ex;
    this.id = c.id;
    this.params = c.params;
    this.#query = c.query;
    this.body = c.body;
    this.principal = c.principal;
    this.baseUrl = c.baseUrl;
    this.contentType = c.contentType;
    if (c.after !== "") this.headers = { "x-svc-after": c.after };
  }

  get remoteAddress(): string {
    return this.#ex.remoteAddress;
  }

  get query(): URLSearchParams {
    if (typeof this.#query === "string") this.#query = new URLSearchParams(this.#query);
    return this.#query;
  }
}

function decodeParams(names: string[], raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  names.forEach((n, i) => {
    try {
      out[n] = decodeURIComponent(raw[i]!);
    } catch {
      throw new SvcError("E_BAD_REQUEST", `path parameter ${n} is not valid percent-encoding`, { field: n });
    }
  });
  return out;
}
