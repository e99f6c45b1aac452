/**
 * @module mcp — MCP over streamable HTTP at /mcp on the uWS server: the SDK's web-standard transport, one session
 * (Mcp-Session-Id) per initialize, bound to the key it was opened with; Host/Origin allow-list against DNS rebinding.
 * Tools come from the catalog and run in-process through LocalApi, so they are authenticated and metered as REST.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type uWS from "uWebSockets.js";
import { SvcError } from "../errors.js";
import { LocalApi } from "../tools/local-api.js";
import { mcpServer } from "../tools/mcp-server.js";
import { authenticate, presentedKey, type Credentials, type InvokeDeps } from "./invoke.js";
import type { Route } from "./route.js";
import { readBody, statusLine, type Flight } from "./server.js";

export const MCP_PATH = "/mcp";
/** Sessions idle this long are closed. */
export const SESSION_IDLE_MS = 30 * 60_000;
export const MAX_SESSIONS = 1000;

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** The key id it was opened with (null: no key). Later requests must present the same key. */
  keyId: string | null;
  lastSeen: number;
}

export interface McpOptions {
  /** Host header values allowed besides the loopback names on the listening port (e.g. "svc.example.com"). */
  allowedHosts?: string[];
  bodyLimit: number;
  log: Logger;
}

export interface McpEndpoint {
  /** Register /mcp on the app; `port` is known once the server listens; `scheme` is https when the server serves TLS. */
  mount(app: uWS.TemplatedApp, host: string, port: () => number, scheme?: "http" | "https"): void;
  close(): Promise<void>;
}

export function mcpEndpoint(routes: readonly Route[], deps: InvokeDeps, opts: McpOptions): McpEndpoint {
  const api = new LocalApi(routes, deps);
  const sessions = new Map<string, Session>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, s] of sessions) if (now - s.lastSeen > SESSION_IDLE_MS) void closeSession(id, s);
  }, 60_000);
  sweep.unref();
  const closeSession = async (id: string, s: Session) => {
    sessions.delete(id);
    await s.server.close().catch(() => undefined);
  };

  const open = async (creds: Credentials, keyId: string | null, baseUrl: string, remoteAddress: string): Promise<WebStandardStreamableHTTPServerTransport> => {
    if (sessions.size >= MAX_SESSIONS) throw new SvcError("E_CLOSED", `too many open MCP sessions (${MAX_SESSIONS}); close idle ones with DELETE /mcp`);
    const server = mcpServer(api.as(creds, baseUrl, remoteAddress), {
      keyed: keyId !== null || !deps.auth,
      onCall: (tool, ok, ms) => {
        deps.metrics.toolCall(tool, ok);
        opts.log.info({ tool, ok, ms: Math.round(ms * 100) / 100, keyId: keyId ?? undefined }, "mcp tool call");
      },
      onError: (tool, err) => opts.log.error({ tool, err }, "mcp tool failed"),
    });
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server, keyId, lastSeen: Date.now() }),
      onsessionclosed: (id) => void sessions.delete(id),
      maxRequestBodySize: opts.bodyLimit,
    });
    await server.connect(transport);
    return transport;
  };

  return {
    mount(app, host, port, scheme = "http") {
      // Built at the first request: the port is known once the server listens.
      let allowList: Set<string> | null = null;
      const allowed = () => {
        if (allowList) return allowList;
        const names = ["localhost", "127.0.0.1", "[::1]", ...(host === "0.0.0.0" || host === "::" ? [] : [host.includes(":") && !host.startsWith("[") ? `[${host}]` : host])];
        return (allowList = new Set([...names.map((n) => `${n}:${port()}`), ...(opts.allowedHosts ?? [])].map((h) => h.toLowerCase())));
      };
      app.any(MCP_PATH, (res, req) => {
        const method = req.getCaseSensitiveMethod().toUpperCase();
        const headers = new Headers();
        req.forEach((k, v) => headers.append(k, v));
        const query = req.getQuery();
        const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString("latin1");
        const flight: Flight = { aborted: false };
        res.onAborted(() => {
          flight.aborted = true;
          flight.onAbort?.();
        });
        const handle = async () => {
          const hostHeader = (headers.get("host") ?? "").toLowerCase();
          const hosts = allowed();
          if (!hosts.has(hostHeader)) return reject(res, flight, 403, `Host '${hostHeader}' is not allowed (DNS-rebinding protection); allowed: ${[...hosts].join(", ")} (serve --mcp-allowed-hosts adds more)`);
          const origin = headers.get("origin");
          if (origin !== null && !hosts.has(origin.replace(/^https?:\/\//i, "").toLowerCase())) return reject(res, flight, 403, `Origin '${origin}' is not allowed (DNS-rebinding protection)`);
          const creds: Credentials = { apiKey: headers.get("api-key") ?? "", authorization: headers.get("authorization") ?? "" };
          let keyId: string | null = null;
          if (deps.auth && presentedKey(creds) !== null) keyId = authenticate("tenant", creds, deps.keys, true).keyId ?? "admin";
          const body = method === "POST" ? await readBody(res, Number(headers.get("content-length") ?? -1), opts.bodyLimit, flight) : undefined;
          const sid = headers.get("mcp-session-id");
          let transport: WebStandardStreamableHTTPServerTransport;
          if (sid !== null) {
            const s = sessions.get(sid);
            if (!s) return reject(res, flight, 404, "unknown or expired MCP session; initialize a new one");
            if (s.keyId !== keyId) return reject(res, flight, 403, "this MCP session was opened with another key");
            s.lastSeen = Date.now();
            transport = s.transport;
          } else {
            let parsed: unknown;
            try {
              parsed = body === undefined ? undefined : JSON.parse(body.toString("utf8"));
            } catch {
              return reject(res, flight, 400, "the body is not valid JSON", -32700);
            }
            if (method !== "POST" || !(Array.isArray(parsed) ? parsed.some(isInitializeRequest) : isInitializeRequest(parsed))) {
              return reject(res, flight, 400, "no Mcp-Session-Id: send an initialize request first");
            }
            transport = await open(creds, keyId, `${scheme}://${headers.get("host")}`, remoteAddress);
          }
          const request = new Request(`${scheme}://${headers.get("host")}${MCP_PATH}${query ? `?${query}` : ""}`, { method, headers, body: body === undefined ? undefined : new Uint8Array(body) });
          await pipe(res, flight, await transport.handleRequest(request));
        };
        handle().catch((err: unknown) => {
          if (err instanceof SvcError) return reject(res, flight, err.status, err.message);
          opts.log.error({ err }, "mcp request failed");
          reject(res, flight, 500, "internal error; see the server log");
        });
      });
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions].map(([id, s]) => closeSession(id, s)));
    },
  };
}

/** A JSON-RPC error answer (no id: it is about the HTTP request, not a message). */
function reject(res: uWS.HttpResponse, flight: Flight, status: number, message: string, code = -32000): void {
  if (flight.aborted) return;
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader("content-type", "application/json").end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
  });
}

/** Send a web Response through uWS: status, headers, then the body as it streams (SSE stays open until either side ends it). */
async function pipe(res: uWS.HttpResponse, flight: Flight, response: Response): Promise<void> {
  if (flight.aborted) {
    await response.body?.cancel();
    return;
  }
  const head = () => {
    res.writeStatus(statusLine(response.status));
    response.headers.forEach((v, k) => void res.writeHeader(k, v));
  };
  if (response.body === null) {
    res.cork(() => {
      head();
      res.end();
    });
    return;
  }
  const reader = response.body.getReader();
  flight.onAbort = () => void reader.cancel().catch(() => undefined);
  res.cork(() => {
    head();
    // uWS sends the head with the first bytes, and an SSE stream may stay silent for a while: an SSE comment goes first.
    if (/^text\/event-stream/i.test(response.headers.get("content-type") ?? "")) res.write(": open\n\n");
  });
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (flight.aborted) return;
    if (done) {
      res.cork(() => res.end());
      return;
    }
    let ok = true;
    res.cork(() => (ok = res.write(value)));
    if (!ok) await new Promise<void>((resolve) => res.onWritable(() => (resolve(), true)));
  }
}
