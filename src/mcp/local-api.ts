/** @module mcp/local-api — the REST operations called in-process (the /mcp endpoint): each tool call is a request on the server's one request path (http/request.ts), so it is forwarded, authenticated, decoded, metered and answered as REST. */
import { ToolError, type Api } from "../tools/tool.js";
import type { RequestPath } from "../http/request.js";
import { queryParamsOf } from "../http/input.js";
import type { Route } from "../http/route.js";
import { toHttp, type Operation } from "../tools/operation.js";
import { httpReply } from "../tools/rest-api.js";
import type { Credentials } from "../http/invoke.js";

export class LocalApi {
  private readonly ops = new Map<string, Operation>();
  private seq = 0;

  /** `path()`: the server's request path (known once the server has mounted the /mcp endpoint). */
  constructor(
    routes: readonly Route[],
    private readonly path: () => RequestPath,
  ) {
    for (const route of routes) {
      const arrayQuery = new Set(
        queryParamsOf(route)
          .filter((q) => q.schema.type === "array")
          .map((q) => q.name),
      );
      this.ops.set(route.operationId, { operationId: route.operationId, method: route.method, path: route.path, arrayQuery });
    }
  }

  /**
   * The API as the holder of these credentials sees it; `baseUrl` is what links in answers are built on,
   * `remoteAddress` the client's (per-address limits apply to MCP callers as to REST ones).
   */
  as(creds: Credentials, baseUrl: string, remoteAddress?: string): Api {
    return {
      call: async (operationId, req) => {
        const op = this.ops.get(operationId);
        if (!op) throw new ToolError("E_INTERNAL", `no operation ${operationId}`);
        const http = toHttp(op, req);
        const qs = http.query.toString();
        const url = `${http.path}${qs ? `?${qs}` : ""}`;
        // Upload routes parse their own bytes; other arguments go as a JSON body, as a REST client sends them.
        const body = http.body === undefined ? undefined : Buffer.isBuffer(http.body) ? http.body : Buffer.from(JSON.stringify(http.body));
        const headers = {
          "content-type": http.contentType,
          accept: "application/json",
          host: new URL(baseUrl).host,
          "api-key": creds.apiKey,
          authorization: creds.authorization,
          "x-request-id": `mcp-${(++this.seq).toString(36)}`,
        };
        // Logged and counted as the tool call (mcp/streamable-http.ts), not as an HTTP request.
        const r = await this.path().request({ method: op.method, url, headers, body, remoteAddress }, false);
        return httpReply(
          r.status,
          r.contentType,
          r.headers,
          typeof r.body === "string" ? Buffer.from(r.body) : r.body,
          `${op.method.toUpperCase()} ${url}`,
        );
      },
    };
  }
}
