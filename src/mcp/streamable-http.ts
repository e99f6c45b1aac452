/**
 * @module mcp/streamable-http — MCP over streamable HTTP at /mcp on the uWS server: the SDK's web-standard transport, one session
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
import { selectTools } from "../tools/catalog.js";
import type { Tool } from "../tools/tool.js";
import { LocalApi } from "./local-api.js";
import { mcpServer } from "./server.js";
import type { HostGuard } from "../http/host-guard.js";
import { SessionTable, type SessionLimits } from "./sessions.js";
import type { Forwarder } from "../http/forward.js";
import { authenticate, presentedKey, type Credentials, type InvokeDeps } from "../http/invoke.js";
import type { RequestPath } from "../http/request.js";
import type { Route } from "../http/route.js";
import { readBody, statusLine, type Flight, type MountedEndpoint } from "../http/server.js";

export const MCP_PATH = "/mcp";
/** The request header naming a session's tool subset (as `?tools=`). */
export const MCP_TOOLS_HEADER = "mcp-tools";
/** Sessions idle this long are closed. */
export const SESSION_IDLE_MS = 30 * 60_000;

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** The key id it was opened with (null: no key). Later requests must present the same key. */
  keyId: string | null;
}

export interface McpOptions {
  /** Caps on open sessions (default DEFAULT_SESSION_LIMITS). */
  sessionLimits?: SessionLimits;
  bodyLimit: number;
  log: Logger;
}

export function mcpEndpoint(routes: readonly Route[], deps: InvokeDeps & { forward?: Forwarder }, opts: McpOptions): MountedEndpoint {
  let path: RequestPath | null = null;
  const api = new LocalApi(routes, () => path!);
  const sessions = new SessionTable<Session>(opts.sessionLimits);
  deps.metrics.watchMcpSessions(() => sessions.size);
  const sweep = setInterval(() => {
    for (const [id, s] of sessions.idleSince(Date.now() - SESSION_IDLE_MS)) void closeSession(id, s);
  }, 60_000);
  sweep.unref();
  const closeSession = async (id: string, s: Session) => {
    sessions.delete(id);
    await s.server.close().catch(() => undefined); // the session is already out of the table; a transport already closed has nothing left to close
  };

  /** A new session, admitted into the table at once (so concurrent initializes cannot overfill it); the caller drops it if its initialize fails. */
  const open = async (
    creds: Credentials,
    keyId: string | null,
    baseUrl: string,
    remoteAddress: string,
    tools: readonly Tool[],
  ): Promise<{ id: string; session: Session }> => {
    const id = randomUUID();
    const server = mcpServer(api.as(creds, baseUrl, remoteAddress), {
      keyed: keyId !== null || !deps.auth,
      tools,
      onCall: (tool, ok, ms) => {
        deps.metrics.toolCall(tool, ok);
        opts.log.info({ tool, ok, ms: Math.round(ms * 100) / 100, keyId: keyId ?? undefined }, "mcp tool call");
      },
      onError: (tool, err) => opts.log.error({ tool, err }, "mcp tool failed"),
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessionclosed: (sid) => void sessions.delete(sid),
      maxRequestBodySize: opts.bodyLimit,
    });
    const session: Session = { transport, server, keyId };
    for (const [victim, s] of sessions.open(id, session, keyId, remoteAddress, Date.now())) {
      opts.log.info({ session: victim }, "mcp session closed to make room for a new one");
      void closeSession(victim, s);
    }
    await server.connect(transport);
    return { id, session };
  };

  return {
    mount(app, guard, scheme, requestPath) {
      path = requestPath;
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
          guard.check(headers.get("host") ?? "", headers.get("origin"));
          const creds: Credentials = { apiKey: headers.get("api-key") ?? "", authorization: headers.get("authorization") ?? "" };
          let keyId: string | null = null;
          if (deps.auth && presentedKey(creds) !== null) keyId = authenticate("tenant", creds, deps.keys, true).keyId ?? "admin";
          const body =
            method === "POST" ? await readBody(res, Number(headers.get("content-length") ?? -1), opts.bodyLimit, flight) : undefined;
          const sid = headers.get("mcp-session-id");
          let transport: WebStandardStreamableHTTPServerTransport;
          let opened: { id: string; session: Session } | null = null;
          if (sid !== null) {
            const s = sessions.get(sid);
            if (!s) return reject(res, flight, 404, "unknown or expired MCP session; initialize a new one");
            if (s.keyId !== keyId) return reject(res, flight, 403, "this MCP session was opened with another key");
            sessions.touch(sid, Date.now());
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
            // The session's tool set: ?tools= on the URL, else the Mcp-Tools header (groups or tool names; selectTools).
            const tools = selectTools(new URLSearchParams(query ?? "").get("tools") ?? headers.get(MCP_TOOLS_HEADER));
            opened = await open(creds, keyId, `${scheme}://${headers.get("host")}`, remoteAddress, tools);
            transport = opened.session.transport;
          }
          const request = new Request(`${scheme}://${headers.get("host")}${MCP_PATH}${query ? `?${query}` : ""}`, {
            method,
            headers,
            body: body === undefined ? undefined : new Uint8Array(body),
          });
          const response = await transport.handleRequest(request);
          // An initialize the transport refused leaves no session behind to hold a slot.
          if (opened && transport.sessionId === undefined) void closeSession(opened.id, opened.session);
          await pipe(res, flight, response);
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
      await Promise.all(sessions.all().map(([id, s]) => closeSession(id, s)));
    },
  };
}

/** A JSON-RPC error answer (no id: it is about the HTTP request, not a message). */
function reject(res: uWS.HttpResponse, flight: Flight, status: number, message: string, code = -32000): void {
  if (flight.aborted) return;
  res.cork(() => {
    res
      .writeStatus(statusLine(status))
      .writeHeader("content-type", "application/json")
      .end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
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
  flight.onAbort = () => void reader.cancel().catch(() => undefined); // the client is gone: a stream already ended or errored has nothing to cancel
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
