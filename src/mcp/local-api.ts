/** @module mcp/local-api — the REST operations called in-process (the /mcp endpoint): the route table's own handlers, authenticated and metered as REST. */
import { publicError, SvcError } from "../errors.js";
import { forwardRequest, type Forwarder } from "../http/forward.js";
import { authenticate, execute, type Credentials, type InvokeDeps } from "../http/invoke.js";
import type { RequestContext, Route } from "../http/route.js";
import { toHttp, type Operation } from "../tools/operation.js";
import { httpReply } from "../tools/rest-api.js";
import { isFailure, replyError, ToolError, type Api, type ApiReply } from "../tools/tool.js";

export class LocalApi {
  private readonly ops = new Map<string, { route: Route; op: Operation }>();
  private seq = 0;

  /** `deps.forward` (cluster mode): operations served by another node go to it over HTTP, as REST requests do. */
  constructor(routes: readonly Route[], private readonly deps: InvokeDeps & { forward?: Forwarder }) {
    for (const route of routes) {
      const arrayQuery = new Set((route.queryParams ?? []).filter((q) => q.schema.type === "array").map((q) => q.name));
      this.ops.set(route.operationId, { route, op: { operationId: route.operationId, method: route.method, path: route.path, arrayQuery } });
    }
  }

  /**
   * The API as the holder of these credentials sees it; `baseUrl` is what links in answers are built on,
   * `remoteAddress` the client's (per-address limits apply to MCP callers as to REST ones).
   */
  as(creds: Credentials, baseUrl: string, remoteAddress?: string): Api {
    return {
      call: async (operationId, req) => {
        const found = this.ops.get(operationId);
        if (!found) throw new ToolError("E_INTERNAL", `no operation ${operationId}`);
        try {
          const http = toHttp(found.op, req);
          const home = this.deps.forward?.target(found.route) ?? null;
          if (home !== null) {
            const qs = http.query.toString();
            const path = `${http.path}${qs ? `?${qs}` : ""}`;
            const headers = { "content-type": http.contentType, accept: "application/json", host: new URL(baseUrl).host, "api-key": creds.apiKey, authorization: creds.authorization };
            const data = http.body === undefined ? undefined : Buffer.isBuffer(http.body) ? http.body : Buffer.from(JSON.stringify(http.body));
            const r = await forwardRequest(home, this.deps.forward!.token, { method: found.op.method, path, headers, body: data, remoteAddress, signal: this.deps.forward!.watch?.(found.route) });
            return httpReply(r.status, r.contentType, r.headers, r.body, `${found.op.method.toUpperCase()} ${path}`);
          }
          const principal = authenticate(found.route.auth, creds, this.deps.keys, this.deps.auth);
          // Upload routes parse their own bytes: give them what REST would, JSON arguments as a JSON body.
          const body = found.route.rawBody && http.body !== undefined && !Buffer.isBuffer(http.body) ? Buffer.from(JSON.stringify(http.body)) : http.body;
          const ctx: RequestContext = {
            id: `mcp-${(++this.seq).toString(36)}`, params: http.params, query: http.query, body, principal, baseUrl, usage: {}, contentType: http.contentType, remoteAddress,
          };
          const reply = await execute(found.route, ctx, this.deps);
          const status = reply.status ?? found.route.response.status;
          // A handler may answer an error without throwing (429 rate_limited): a failure all the same.
          if (isFailure(status)) throw replyError(status, reply.body, `${found.route.method.toUpperCase()} ${found.route.path} answered ${status}`);
          const out: ApiReply = { status, headers: reply.headers ?? {} };
          if (reply.raw) out.raw = { contentType: reply.raw.contentType, data: Buffer.from(reply.raw.data) };
          // What a REST client would decode from the JSON codec (undefined fields go, dates become strings).
          else if (reply.body !== undefined) out.body = JSON.parse(JSON.stringify(reply.body));
          return out;
        } catch (err) {
          if (!(err instanceof SvcError)) throw err; // E_INTERNAL, logged by the MCP server
          const e = publicError(err);
          throw new ToolError(e.code, e.message, e.field);
        }
      },
    };
  }
}
