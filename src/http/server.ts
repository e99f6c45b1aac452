/** @module server — the uWebSockets.js app: routing, bodies read (capped) and answers written (backpressured), shutdown; each request is served by the request path (request.ts). */
import { accessSync, constants } from "node:fs";
import { STATUS_CODES } from "node:http";
import { createServer, isIP } from "node:net";
import pino, { type Logger } from "pino";
import "./uws-limits.js"; // before the addon: it reads its head limit once, when it loads
import uWS from "uWebSockets.js";
import type { KeyBook } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import { SvcError } from "../errors.js";
import { isLoopback } from "../service-url.js";
import { tracer } from "../probes.js";
import { newBodyBuffer, takeBodyBuffer } from "./body-buffers.js";
import { CONTENT_TYPE } from "./codecs.js";
import { HostGuard } from "./host-guard.js";
import { HttpMetrics } from "./metrics.js";
import { FORWARDED_FOR_HEADER, FORWARD_TOKEN_HEADER, type Forwarder } from "./forward.js";
import { RequestPath, type Answer, type InProcessAnswer, type InProcessRequest, type RequestHeaders, type RouteEntry } from "./request.js";
import type { Route } from "./route.js";

/** Default request body cap: 64 MiB (a 10k x 1024-d upsert in JSON is ~25 MB). */
export const DEFAULT_BODY_LIMIT = 64 << 20;
/** On close, wait at most this long for requests in flight. */
const DRAIN_MS = 10_000;
/**
 * After the drain, close() keeps answering (503 E_CLOSED with `connection: close`, which makes a client drop that
 * connection) until no request came for CLOSE_QUIET_MS, at most CLOSE_GRACE_MS: keep-alive connections stay open
 * until the process exits, and a request sent on one that the server has not read by then is answered by the kernel
 * with a reset, whose outcome the client cannot know (the rolling-restart test saw 1-2 such resets per run).
 */
const CLOSE_QUIET_MS = 200;
const CLOSE_GRACE_MS = 1500;
const EMPTY = Buffer.alloc(0);

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
  /** Register its paths on the app, behind the server's Host/Origin guard; `scheme` is https when the server serves TLS; `path` serves the route table in-process. */
  mount(app: uWS.TemplatedApp, guard: HostGuard, scheme: "http" | "https", path: RequestPath): void;
  close(): Promise<void>;
}

export interface HttpServer {
  url: string;
  port: number;
  /** Stop accepting, wait for requests in flight (bounded), then return. */
  close(): Promise<void>;
  /** Serve one request without a socket, as it would be served over HTTP (admission, codecs, metering, log line, metrics): tests, as Hono's `app.request`. */
  request(req: InProcessRequest): Promise<InProcessAnswer>;
}

/** Methods counted by name for unmatched requests (lower case, as the fallback sees them); any other counts as OTHER. */
const STANDARD_METHODS = new Set(["get", "head", "post", "put", "patch", "delete", "options", "trace", "connect"]);

const statusLines = new Map<number, string>();

/** uWS wants "200 OK" (made once per status). */
export function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = `${status} ${STATUS_CODES[status] ?? ""}`));
  return line;
}

export interface Flight {
  aborted: boolean;
  /** A HEAD request: the reply's status and headers go out, its body does not (its length is reported). */
  head?: boolean;
  /** Set while the body is being read: ends that wait when the client goes away. */
  onAbort?: () => void;
}

export async function startHttp(routes: Route[], deps: HttpDeps, opts: HttpOptions): Promise<HttpServer> {
  if (!opts.auth && !isLoopback(opts.host))
    throw new SvcError("E_BAD_REQUEST", `auth can be turned off only on a loopback address, not ${opts.host}`, { field: "auth" });
  const log = opts.logger ?? pino({ level: "silent" });
  const app = opts.tls ? sslApp(opts.tls) : uWS.App();
  const scheme = opts.tls ? "https" : "http";
  const guard = new HostGuard(opts.host, () => port, opts.allowedHosts);
  let inFlight = 0;
  /** When the last request came in (ms): close() waits for a quiet spell. */
  let lastRequestAt = 0;
  let drained: (() => void) | null = null;
  let closing = false;
  const path = new RequestPath(routes, deps, {
    auth: opts.auth,
    host: opts.host,
    scheme,
    port: () => port,
    guard,
    bodyLimit: opts.bodyLimit ?? DEFAULT_BODY_LIMIT,
    closing: () => closing,
    log,
  });

  /** Write `a` to the socket (backpressured); returns the body's length (0 when the client is gone). */
  const send = (res: uWS.HttpResponse, flight: Flight, a: Answer, reqId: string): number => {
    if (flight.aborted) return 0;
    const buf = typeof a.body === "string" ? Buffer.from(a.body) : a.body;
    const headers = a.headers;
    res.cork(() => {
      res.writeStatus(statusLine(a.status)).writeHeader("content-type", a.contentType).writeHeader("x-request-id", reqId);
      if (headers !== undefined) for (const k in headers) res.writeHeader(k, headers[k]!);
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

  const clustered = deps.forward !== undefined;
  /** uWS's part of a request: header values and body bytes in, the answer's bytes out. Everything else is the request path's. */
  const register = (entry: RouteEntry) => {
    const { route, names, bodyCap } = entry;
    const pattern = route.path.replace(/\{(\w+)\}/g, ":$1");
    const method = route.method === "delete" ? "del" : route.method;
    const bodyless = route.method === "get" || route.method === "delete";
    /** `head`: a HEAD request on a GET route, answered as the GET without the body. */
    const handle = (res: uWS.HttpResponse, req: uWS.HttpRequest, head: boolean) => {
      // Only the headers this server can act on (each getHeader is a call into uWS and a new string): the cluster's
      // forwarding headers in cluster mode, Origin when the Host/Origin guard runs (auth off), traceparent when tracing.
      const h: RequestHeaders = {
        contentType: req.getHeader("content-type"),
        contentLength: req.getHeader("content-length"),
        accept: req.getHeader("accept"),
        host: req.getHeader("host"),
        origin: opts.auth ? "" : req.getHeader("origin"),
        apiKey: req.getHeader("api-key"),
        authorization: req.getHeader("authorization"),
        requestId: req.getHeader("x-request-id"),
        forwardToken: clustered ? req.getHeader(FORWARD_TOKEN_HEADER) : "",
        forwardedFor: clustered ? req.getHeader(FORWARDED_FOR_HEADER) : "",
        after: req.getHeader("x-svc-after"),
        traceparent: tracer === null ? "" : req.getHeader("traceparent"),
      };
      const raw = names.map((_, i) => req.getParameter(i) ?? "");
      const flight: Flight = { aborted: false, head };
      // The socket's address (a getpeername and two copies) only when the request path asks, and never once the
      // response is gone (uWS throws then): an aborted request's address is "" (its answer goes nowhere).
      const peer = () => (flight.aborted ? "" : Buffer.from(res.getRemoteAddressAsText()).toString("latin1"));
      const ex = path.begin(entry, head, h, raw, req.getUrl(), req.getQuery() ?? "", peer);
      res.onAborted(() => {
        flight.aborted = true;
        flight.onAbort?.();
      });
      inFlight++;
      lastRequestAt = Date.now();
      const respond = (a: Answer) => {
        ex.done(a.status, send(res, flight, a, ex.id), flight.aborted);
        finish();
      };
      const fail = (err: unknown, extra?: Record<string, string>) => respond(ex.failure(err, extra));
      const run = (body: Buffer) => ex.run(body).then(respond);
      /** 413 once the body passed the cap while arriving (after a bounded drain): answer and close the connection, so the client stops sending. */
      const tooLarge = (e: SvcError) => {
        if (!flight.aborted)
          res.cork(() =>
            res
              .writeStatus(statusLine(413))
              .writeHeader("content-type", CONTENT_TYPE.json)
              .writeHeader("x-request-id", ex.id)
              .end(JSON.stringify(e.toJSON()), true),
          );
        deps.metrics.observe(ex.verb, route.path, 413, (performance.now() - ex.t0) / 1000, 0, 0);
        finish();
      };
      try {
        ex.admit();
      } catch (err) {
        // Refused on the headers: the answer goes out now, `connection: close` asks the client to stop. The
        // connection is not closed under a body still arriving (the kernel would answer its bytes with a
        // reset, which destroys the unread answer at a client that sends first and reads after): uWS reads
        // the rest of the declared body and drops it, nothing is kept. A declared body more than
        // REFUSED_DRAIN_BYTES over the cap is not waited for: the connection closes after the answer.
        if (ex.declared > bodyCap + REFUSED_DRAIN_BYTES) return tooLarge(err as SvcError); // admit's first check
        const bodyFollows = ex.declared > 0 || (ex.declared < 0 && !bodyless);
        return fail(err, bodyFollows ? { connection: "close" } : undefined);
      }
      if (bodyless) {
        run(EMPTY).catch(fail);
        return;
      }
      readBody(res, ex.declared, bodyCap, flight)
        .then(run, (err: unknown) => {
          if (err instanceof SvcError && err.code === "E_TOO_LARGE") return tooLarge(err);
          if (!flight.aborted) fail(err);
          else finish();
        })
        .catch(fail);
    };
    app[method](pattern, (res, req) => handle(res, req, false));
    if (route.method === "get") app.head(pattern, (res, req) => handle(res, req, true));
  };
  for (const e of path.entries) register(e);
  deps.mcp?.mount(app, guard, scheme, path);

  // Everything else: 405 when the path exists with another method, else 404.
  app.any("/*", (res, req) => {
    const url = req.getUrl();
    const method = req.getCaseSensitiveMethod().toLowerCase();
    const reqId = path.requestId(req.getHeader("x-request-id"));
    const { error: e, allow } = path.unmatched(method, url);
    res.cork(() => {
      res.writeStatus(statusLine(e.status)).writeHeader("content-type", CONTENT_TYPE.json).writeHeader("x-request-id", reqId);
      if (allow.length > 0) res.writeHeader("allow", allow.join(", "));
      res.end(JSON.stringify(e.toJSON()));
    });
    // A client picks the method: only the standard ones become label values (a bounded set of series; uWS 20.30 closes
    // the connection on other methods before this, a parser that lets them through must not grow the series).
    deps.metrics.observe(STANDARD_METHODS.has(method) ? method.toUpperCase() : "OTHER", "unmatched", e.status, 0, 0, 0);
  });

  if (opts.port !== 0) await assertPortFree(opts.host, opts.port);
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(opts.host, opts.port, (s) =>
      s ? resolve(s) : reject(new SvcError("E_IO", `cannot listen on ${opts.host}:${opts.port} (address in use or not available)`)),
    );
  });
  const port = uWS.us_socket_local_port(socket);
  const hostForUrl = opts.host.includes(":") && !opts.host.startsWith("[") ? `[${opts.host}]` : opts.host;
  return {
    url: `${scheme}://${hostForUrl}:${port}`,
    port,
    request: (req) => path.request(req),
    async close() {
      if (closing) return;
      closing = true;
      uWS.us_listen_socket_close(socket);
      await deps.mcp?.close();
      if (inFlight > 0) {
        await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, DRAIN_MS).unref())]);
      }
      for (const end = Date.now() + CLOSE_GRACE_MS; Date.now() < end && (inFlight > 0 || Date.now() - lastRequestAt < CLOSE_QUIET_MS);)
        await new Promise((r) => setTimeout(r, 25));
    },
  };
}

/** uWS's SSLApp over the PEM files; a missing, unreadable or mismatched file is E_BAD_REQUEST naming the option. */
function sslApp(tls: TlsFiles): uWS.TemplatedApp {
  for (const [field, file] of [
    ["tls-cert", tls.certFile],
    ["tls-key", tls.keyFile],
  ] as const) {
    try {
      accessSync(file, constants.R_OK);
    } catch {
      throw new SvcError("E_BAD_REQUEST", `--${field} ${file} is not a readable file`, { field });
    }
  }
  try {
    return uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile });
  } catch (err) {
    throw new SvcError(
      "E_BAD_REQUEST",
      `cannot use --tls-cert ${tls.certFile} with --tls-key ${tls.keyFile}: not PEM, or the key does not match the certificate (${(err as Error).message})`,
      { field: "tls-cert", cause: err },
    );
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
      if (err.code === "EADDRINUSE")
        reject(
          new SvcError("E_ADDRESS_IN_USE", `another process already listens on ${host}:${port}; stop it or pick another --port`, {
            field: "port",
          }),
        );
      else reject(new SvcError("E_IO", `cannot listen on ${host}:${port}: ${err.code ?? err.message}`, { field: "host", cause: err }));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
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
    // Grown as bytes arrive, so a declared length alone reserves at most 1 MiB; a kept buffer is taken, else a new one of a size that can be kept (body-buffers.ts).
    let buf =
      (declared >= 0 ? takeBodyBuffer(declared) : null) ??
      (declared >= 0 ? newBodyBuffer(Math.min(declared, 1 << 20)) : Buffer.allocUnsafe(16 << 10));
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
