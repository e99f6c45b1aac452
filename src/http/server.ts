/** @module server — the uWebSockets.js app: routing, bodies (capped), auth, metering, codecs, backpressured replies, logs, metrics, shutdown. */
import { randomBytes } from "node:crypto";
import { accessSync, constants } from "node:fs";
import { STATUS_CODES } from "node:http";
import { createServer, isIP } from "node:net";
import pino, { type Logger } from "pino";
import "./uws-limits.js"; // before the addon: it reads its head limit once, when it loads
import uWS from "uWebSockets.js";
import type { KeyBook, Principal } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import { publicError, SvcError } from "../errors.js";
import { isLoopback } from "../service-url.js";
import { tracer } from "../probes.js";
import { giveBackBody, newBodyBuffer, takeBodyBuffer } from "./body-buffers.js";
import { CONTENT_TYPE, decodeBody, encodeBody, requestCodec, responseCodec } from "./codecs.js";
import { HostGuard } from "./host-guard.js";
import { HttpMetrics } from "./metrics.js";
import { FORWARDED_FOR_HEADER, FORWARD_TOKEN_HEADER, forwardRequest, isForwardToken, type Forwarder } from "./forward.js";
import { authenticate, execute, presentedKey } from "./invoke.js";
import type { RequestContext, Route } from "./route.js";

/** Default request body cap: 64 MiB (a 10k x 1024-d upsert in JSON is ~25 MB). */
export const DEFAULT_BODY_LIMIT = 64 << 20;
/** On close, wait at most this long for requests in flight. */
const DRAIN_MS = 10_000;

export interface HttpOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** false: no keys needed, every request acts as the admin of tenant "local". Only on loopback. */
  auth: boolean;
  bodyLimit?: number;
  logger?: Logger;
  /** Host header values allowed besides the loopback names on the listening port (serve --mcp-allowed-hosts): /mcp always, every route when auth is off. */
  allowedHosts?: string[];
  /** Serve HTTPS (HTTP/1.1 over TLS) with these PEM files: uWS SSLApp. */
  tls?: TlsFiles;
}

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface HttpDeps {
  keys: KeyBook;
  wallets: WalletBook;
  metrics: HttpMetrics;
  /** Mounted beside the route table (MCP over streamable HTTP at /mcp, src/mcp/). */
  mcp?: MountedEndpoint;
  /** Cluster mode: routes served by another node (the home node) are forwarded to it. */
  forward?: Forwarder;
}

/** Paths served beside the route table by their own handlers. */
export interface MountedEndpoint {
  /** Register its paths on the app, behind the server's Host/Origin guard; `scheme` is https when the server serves TLS. */
  mount(app: uWS.TemplatedApp, guard: HostGuard, scheme: "http" | "https"): void;
  close(): Promise<void>;
}

export interface HttpServer {
  url: string;
  port: number;
  /** Stop accepting, wait for requests in flight (bounded), then return. */
  close(): Promise<void>;
}

const REQUEST_ID_RE = /^[\w.:-]{1,64}$/;
/** Methods counted by name for unmatched requests (lower case, as the fallback sees them); any other counts as OTHER. */
const STANDARD_METHODS = new Set(["get", "head", "post", "put", "patch", "delete", "options", "trace", "connect"]);


/** uWS wants "200 OK". */
export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ""}`;
}

export interface Flight {
  aborted: boolean;
  /** A HEAD request: the reply's status and headers go out, its body does not (its length is reported). */
  head?: boolean;
  /** Set while the body is being read: ends that wait when the client goes away. */
  onAbort?: () => void;
}

export async function startHttp(routes: Route[], deps: HttpDeps, opts: HttpOptions): Promise<HttpServer> {
  if (!opts.auth && !isLoopback(opts.host)) throw new SvcError("E_BAD_REQUEST", `auth can be turned off only on a loopback address, not ${opts.host}`, { field: "auth" });
  const log = opts.logger ?? pino({ level: "silent" });
  const limit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = opts.tls ? sslApp(opts.tls) : uWS.App();
  const scheme = opts.tls ? "https" : "http";
  const guard = new HostGuard(opts.host, () => port, opts.allowedHosts);
  const idPrefix = randomBytes(3).toString("hex");
  let seq = 0;
  let inFlight = 0;
  let drained: (() => void) | null = null;
  let closing = false;

  const send = (res: uWS.HttpResponse, flight: Flight, status: number, contentType: string, data: Buffer | string, reqId: string, headers?: Record<string, string>): number => {
    if (flight.aborted) return 0;
    const buf = typeof data === "string" ? Buffer.from(data) : data;
    res.cork(() => {
      res.writeStatus(statusLine(status)).writeHeader("content-type", contentType).writeHeader("x-request-id", reqId);
      for (const [k, v] of Object.entries(headers ?? {})) res.writeHeader(k, v);
      if (closing && headers?.connection === undefined) res.writeHeader("connection", "close");
      if (flight.head) {
        res.endWithoutBody(buf.length);
        return;
      }
      // Backpressure: tryEnd sends what the socket takes; onWritable continues from the offset it reached.
      const start = res.getWriteOffset();
      const [ok, done] = res.tryEnd(buf, buf.length);
      if (!ok && !done) res.onWritable((offset) => res.tryEnd(buf.subarray(offset - start), buf.length)[0]);
    });
    return buf.length;
  };

  const finish = () => {
    inFlight--;
    if (inFlight === 0 && drained) drained();
  };

  const register = (route: Route) => {
    const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const pattern = route.path.replace(/\{(\w+)\}/g, ":$1");
    const method = route.method === "delete" ? "del" : route.method;
    const label = `${route.method.toUpperCase()} ${route.path}`;
    /** A route may cap its body below the server's limit (the public commons writes do). */
    const bodyCap = Math.min(limit, route.bodyLimit ?? limit);
    /** `head`: a HEAD request on a GET route, answered as the GET without the body. */
    const handle = (res: uWS.HttpResponse, req: uWS.HttpRequest, head: boolean) => {
      const t0 = performance.now();
      const verb = head ? "HEAD" : route.method.toUpperCase();
      const h = {
        contentType: req.getHeader("content-type"),
        contentLength: req.getHeader("content-length"),
        accept: req.getHeader("accept"),
        host: req.getHeader("host"),
        origin: req.getHeader("origin"),
        apiKey: req.getHeader("api-key"),
        authorization: req.getHeader("authorization"),
        requestId: req.getHeader("x-request-id"),
        forwardToken: req.getHeader(FORWARD_TOKEN_HEADER),
        forwardedFor: req.getHeader(FORWARDED_FOR_HEADER),
        after: req.getHeader("x-svc-after"),
        traceparent: tracer === null ? "" : req.getHeader("traceparent"),
      };
      const raw = names.map((_, i) => req.getParameter(i) ?? "");
      const query = req.getQuery() ?? "";
      const path = req.getUrl();
      // A request another node of the cluster forwarded: its client's address is the one it names, and it is served here (never forwarded again).
      const forwarded = isForwardToken(h.forwardToken, deps.forward);
      const remoteAddress = forwarded && h.forwardedFor !== "" ? h.forwardedFor : Buffer.from(res.getRemoteAddressAsText()).toString("latin1");
      const reqId = REQUEST_ID_RE.test(h.requestId) ? h.requestId : `${idPrefix}-${(++seq).toString(36)}`;
      const flight: Flight = { aborted: false, head };
      res.onAborted(() => {
        flight.aborted = true;
        flight.onAbort?.();
      });
      inFlight++;
      let bytesIn = 0;
      let principal: Principal | null = null;
      /** The error code of a failed request, for its request line. */
      let code: string | undefined;
      const respond = (status: number, contentType: string, data: Buffer | string, headers?: Record<string, string>) => {
        const bytesOut = send(res, flight, status, contentType, data, reqId, headers);
        const ms = performance.now() - t0;
        deps.metrics.observe(verb, route.path, status, ms / 1000, bytesIn, bytesOut);
        log.info({ reqId, method: verb, route: route.path, status, code, ms: Math.round(ms * 100) / 100, tenant: route.auth === "none" ? undefined : principal?.tenant, bytesIn, bytesOut, aborted: flight.aborted || undefined }, "request");
        finish();
      };
      const fail = (err: unknown, extra?: Record<string, string>) => {
        const e = publicError(err);
        code = e.code;
        // A fault is an error with its stack; "not ready yet" during start is an expected answer: its request line (info) says it.
        if (e.status >= 500 && e.code !== "E_NOT_READY") log.error({ reqId, err }, "request failed");
        const retryAfter = e.details?.retryAfterSeconds;
        respond(e.status, CONTENT_TYPE.json, JSON.stringify(e.toJSON()), typeof retryAfter === "number" || extra ? { ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {}), ...extra } : undefined);
      };
      const declared = h.contentLength === "" ? -1 : Number(h.contentLength);
      let home: string | null = null;
      /**
       * What the headers alone decide, before a byte of the body is read (a keyless client must not
       * make the server buffer its body): shutdown, the Host/Origin guard, the declared length, the
       * key, the media type of a declared body. Throws the refusal.
       */
      const admit = () => {
        if (declared > bodyCap) throw new SvcError("E_TOO_LARGE", `the body has ${declared} bytes; the limit is ${bodyCap}`, { field: "body" });
        if (closing) throw new SvcError("E_CLOSED", "the server is shutting down");
        // Without keys any page the browser shows could call us (CSRF, DNS rebinding): only our own host and origin may (a forwarding node checked its own).
        if (!opts.auth && !forwarded) guard.check(h.host, h.origin);
        home = forwarded ? null : (deps.forward?.target(route) ?? null);
        // A forwarded request is authenticated by the node serving it; a missing key is refused here already.
        if (home === null || (opts.auth && route.auth !== "none" && presentedKey(h) === null)) principal = authenticate(route.auth, h, deps.keys, opts.auth);
        if (home === null && declared > 0) checkMediaType(declared);
      };
      const checkMediaType = (length: number) => {
        const inCodec = requestCodec(h.contentType);
        if (!route.rawBody && length > 0 && (inCodec === null || (inCodec !== "json" && route.proto?.request === undefined))) {
          const send = `application/json${route.proto?.request ? ", application/msgpack or application/x-protobuf" : ""}`;
          throw new SvcError("E_MEDIA_TYPE", h.contentType === "" ? `a request body needs a Content-Type: send ${send}` : `Content-Type '${h.contentType}' is not accepted here; send ${send}`, { field: "content-type" });
        }
      };
      const run = async (body: Buffer) => {
        bytesIn = body.length;
        if (closing) throw new SvcError("E_CLOSED", "the server is shutting down");
        if (home !== null) {
          const headers = { "content-type": h.contentType, accept: h.accept, host: h.host, "api-key": h.apiKey, authorization: h.authorization, "x-request-id": reqId };
          const r = await forwardRequest(home, deps.forward!.token, { method: route.method, path: query ? `${path}?${query}` : path, headers, body, remoteAddress, signal: deps.forward!.watch?.(route) });
          return respond(r.status, r.contentType, r.body, r.headers);
        }
        checkMediaType(body.length); // a chunked body's length is known only now
        const inCodec = requestCodec(h.contentType);
        const decoded = route.rawBody ? body : decodeBody(inCodec ?? "json", body, route.proto, route.upsertBody);
        // A decoded JSON body shares no memory with the bytes (msgpack bins would): its buffer can take the next large body.
        if (!route.rawBody && (inCodec ?? "json") === "json") giveBackBody(body);
        const ctx: RequestContext = {
          id: reqId,
          params: decodeParams(names, raw),
          query: new URLSearchParams(query),
          body: decoded,
          principal: principal!,
          baseUrl: `${scheme}://${h.host || `${opts.host}:${port}`}`,
          usage: {},
          contentType: h.contentType,
          ...(h.after === "" ? {} : { headers: { "x-svc-after": h.after } }),
          remoteAddress,
        };
        const reply = tracer === null ? await execute(route, ctx, deps) : await tracer.span(head ? `HEAD ${route.path}` : label, { "http.request.method": verb, "http.route": route.path, "svc.request_id": reqId }, async (span) => {
          const r = await execute(route, ctx, deps);
          span.setAttribute("http.response.status_code", r.status ?? route.response.status);
          return r;
        }, h.traceparent);
        // An upsert's msgpack bins were views into the body until the route copied them into the batch's rows (metadata holds no binaries): dead now.
        if (route.upsertBody && inCodec === "msgpack") giveBackBody(body);
        const status = reply.status ?? route.response.status;
        if (reply.raw) return respond(status, reply.raw.contentType, reply.raw.data, reply.headers);
        const outCodec = responseCodec(h.accept, route.proto !== undefined);
        respond(status, CONTENT_TYPE[outCodec], reply.body === undefined ? "" : encodeBody(outCodec, reply.body, route.proto), reply.headers);
      };
      /** 413 once the body passed the cap while arriving (after a bounded drain): answer and close the connection, so the client stops sending. */
      const tooLarge = (e: SvcError) => {
        if (!flight.aborted) res.cork(() => res.writeStatus(statusLine(413)).writeHeader("content-type", CONTENT_TYPE.json).writeHeader("x-request-id", reqId).end(JSON.stringify(e.toJSON()), true));
        deps.metrics.observe(verb, route.path, 413, (performance.now() - t0) / 1000, 0, 0);
        finish();
      };
      try {
        admit();
      } catch (err) {
        // Refused on the headers: the answer goes out now, `connection: close` asks the client to stop. The
        // connection is not closed under a body still arriving (the kernel would answer its bytes with a
        // reset, which destroys the unread answer at a client that sends first and reads after): uWS reads
        // the rest of the declared body and drops it, nothing is kept. A declared body more than
        // REFUSED_DRAIN_BYTES over the cap is not waited for: the connection closes after the answer.
        if (declared > bodyCap + REFUSED_DRAIN_BYTES) return tooLarge(err as SvcError); // admit's first check
        const bodyFollows = declared > 0 || (declared < 0 && route.method !== "get" && route.method !== "delete");
        return fail(err, bodyFollows ? { connection: "close" } : undefined);
      }
      if (route.method === "get" || route.method === "delete") {
        run(Buffer.alloc(0)).catch(fail);
        return;
      }
      readBody(res, declared, bodyCap, flight).then(run, (err: unknown) => {
        if (err instanceof SvcError && err.code === "E_TOO_LARGE") return tooLarge(err);
        if (!flight.aborted) fail(err);
        else finish();
      }).catch(fail);
    };
    app[method](pattern, (res, req) => handle(res, req, false));
    if (route.method === "get") app.head(pattern, (res, req) => handle(res, req, true));
  };
  for (const r of routes) register(r);
  deps.mcp?.mount(app, guard, scheme);

  // Everything else: 405 when the path exists with another method, else 404.
  const literal = (part: string) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const known = routes.map((r) => ({ re: new RegExp(`^${r.path.split(/\{\w+\}/).map(literal).join("[^/]+")}$`), method: r.method }));
  app.any("/*", (res, req) => {
    const url = req.getUrl();
    const method = req.getCaseSensitiveMethod().toLowerCase();
    const sentId = req.getHeader("x-request-id");
    const reqId = REQUEST_ID_RE.test(sentId) ? sentId : `${idPrefix}-${(++seq).toString(36)}`;
    const allowed = known.filter((k) => k.re.test(url)).flatMap((k) => (k.method === "get" ? ["GET", "HEAD"] : [k.method.toUpperCase()]));
    const e = allowed.length > 0
      ? new SvcError("E_METHOD", `${method.toUpperCase()} is not allowed on ${url}; use ${allowed.join(", ")}`, { field: "method" })
      : new SvcError("E_NOT_FOUND", `no route ${method.toUpperCase()} ${url}`, { field: "path" });
    res.cork(() => {
      res.writeStatus(statusLine(e.status)).writeHeader("content-type", CONTENT_TYPE.json).writeHeader("x-request-id", reqId);
      if (allowed.length > 0) res.writeHeader("allow", allowed.join(", "));
      res.end(JSON.stringify(e.toJSON()));
    });
    // A client picks the method: only the standard ones become label values (a bounded set of series; uWS 20.30 closes
    // the connection on other methods before this, a parser that lets them through must not grow the series).
    deps.metrics.observe(STANDARD_METHODS.has(method) ? method.toUpperCase() : "OTHER", "unmatched", e.status, 0, 0, 0);
  });

  if (opts.port !== 0) await assertPortFree(opts.host, opts.port);
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(opts.host, opts.port, (s) => (s ? resolve(s) : reject(new SvcError("E_IO", `cannot listen on ${opts.host}:${opts.port} (address in use or not available)`))));
  });
  const port = uWS.us_socket_local_port(socket);
  const hostForUrl = opts.host.includes(":") && !opts.host.startsWith("[") ? `[${opts.host}]` : opts.host;
  return {
    url: `${scheme}://${hostForUrl}:${port}`,
    port,
    async close() {
      if (closing) return;
      closing = true;
      uWS.us_listen_socket_close(socket);
      await deps.mcp?.close();
      if (inFlight > 0) {
        await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, DRAIN_MS).unref())]);
      }
    },
  };
}

/** uWS's SSLApp over the PEM files; a missing, unreadable or mismatched file is E_BAD_REQUEST naming the option. */
function sslApp(tls: TlsFiles): uWS.TemplatedApp {
  for (const [field, file] of [["tls-cert", tls.certFile], ["tls-key", tls.keyFile]] as const) {
    try {
      accessSync(file, constants.R_OK);
    } catch {
      throw new SvcError("E_BAD_REQUEST", `--${field} ${file} is not a readable file`, { field });
    }
  }
  try {
    return uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile });
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `cannot use --tls-cert ${tls.certFile} with --tls-key ${tls.keyFile}: not PEM, or the key does not match the certificate (${(err as Error).message})`, { field: "tls-cert", cause: err });
  }
}

/**
 * uWS listens with SO_REUSEPORT, so a second server on a taken port would start and the kernel
 * would split connections between the two. A plain bind (no reuse) first: EADDRINUSE is
 * E_ADDRESS_IN_USE. (A bind racing in between probe and listen is not covered.)
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") reject(new SvcError("E_ADDRESS_IN_USE", `another process already listens on ${host}:${port}; stop it or pick another --port`, { field: "port" }));
      else reject(new SvcError("E_IO", `cannot listen on ${host}:${port}: ${err.code ?? err.message}`, { field: "host", cause: err }));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
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

/** A refused body is read and dropped up to this many bytes (or this long) before the 413 goes out and the connection closes. */
const REFUSED_DRAIN_BYTES = 64 << 20;
const REFUSED_DRAIN_MS = 10_000;

/**
 * Read the whole body, copying uWS's transient chunks; rejects with E_TOO_LARGE once it passes
 * `limit` (a declared length over it is refused on the headers, before this). A body that passes
 * the cap while arriving (chunked) is drained before the refusal (at most REFUSED_DRAIN_BYTES /
 * REFUSED_DRAIN_MS): a client still sending when the server closes would see a reset, not the 413.
 */
export function readBody(res: uWS.HttpResponse, declared: number, limit: number, flight: Flight): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Grown as bytes arrive, so a declared length alone reserves at most 1 MiB (or takes a kept buffer: body-buffers.ts).
    let buf = (declared >= 0 ? takeBodyBuffer(declared) : null) ?? Buffer.allocUnsafe(declared >= 0 ? Math.min(declared, 1 << 20) : 16 << 10);
    let len = 0;
    let dropped = 0;
    let timer: NodeJS.Timeout | undefined;
    const refuse = () => {
      clearTimeout(timer);
      reject(new SvcError("E_TOO_LARGE", `the body exceeds the limit of ${limit} bytes`, { field: "body" }));
    };
    const drain = () => (timer = setTimeout(refuse, REFUSED_DRAIN_MS));
    let failed = false;
    flight.onAbort = () => {
      clearTimeout(timer);
      reject(new SvcError("E_BAD_REQUEST", "the client closed the connection before sending the whole body", { field: "body" }));
    };
    res.onData((chunk, isLast) => {
      if (flight.aborted) return;
      const n = chunk.byteLength;
      if (!failed && len + n > limit) {
        failed = true;
        dropped = len;
        buf = Buffer.alloc(0);
        drain();
      }
      if (failed) {
        dropped += n;
        if (isLast || dropped > REFUSED_DRAIN_BYTES) refuse();
        return;
      }
      if (len + n > buf.length) {
        // Once bytes past the first reservation have really arrived, a declared length is trusted:
        // one grow to it instead of doubling (a 4 MB body was allocated and copied at 1, 2 and 4 MiB).
        const want = declared >= len + n ? declared : Math.max(buf.length * 2, len + n);
        const grown = takeBodyBuffer(Math.min(limit, want)) ?? newBodyBuffer(Math.min(limit, want));
        buf.copy(grown, 0, 0, len);
        buf = grown;
      }
      buf.set(new Uint8Array(chunk), len);
      len += n;
      if (isLast) resolve(buf.subarray(0, len));
    });
  });
}
