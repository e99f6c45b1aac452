/** @module tools/rest-api — the REST operations over HTTP (the stdio tool server): operation shapes come from the server's own /v1/openapi.json. */
import { checkServiceUrl } from "../service-url.js";
import { toHttp, type Operation } from "./operation.js";
import { isFailure, replyError, ToolError, type Api, type ApiReply } from "./tool.js";

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { operationId: string; parameters?: Array<{ name: string; in: string; schema?: { type?: unknown } }> }>
  >;
}

/** `key` goes only to `baseUrl`, in the Api-Key header; plain http to a non-loopback host is refused (E_INSECURE_URL) unless SVC_ALLOW_INSECURE=1. */
export function restApi(baseUrl: string, key: string | undefined): Api {
  checkServiceUrl(baseUrl);
  const base = baseUrl.replace(/\/+$/, "");
  const headers = (extra: Record<string, string>) => ({ ...(key ? { "api-key": key } : {}), ...extra });
  const request = async (url: string, init: RequestInit): Promise<Response> => {
    try {
      return await fetch(url, { ...init, redirect: "error" }); // a redirect could carry the key elsewhere
    } catch (err) {
      throw new ToolError(
        "E_UNREACHABLE",
        `cannot reach the svc server at ${base} (${(err as Error).message}); start it with 'svc serve' or set SVC_URL`,
      );
    }
  };
  let ops: Promise<Map<string, Operation>> | null = null;
  const operations = () =>
    (ops ??= (async () => {
      const res = await request(`${base}/v1/openapi.json`, { headers: headers({ accept: "application/json" }) });
      if (!res.ok) throw new ToolError("E_UNREACHABLE", `${base}/v1/openapi.json answered ${res.status}; is SVC_URL an svc server?`);
      const doc = (await res.json()) as OpenApiDoc;
      const map = new Map<string, Operation>();
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(methods)) {
          const arrayQuery = new Set((o.parameters ?? []).filter((p) => p.in === "query" && p.schema?.type === "array").map((p) => p.name));
          map.set(o.operationId, { operationId: o.operationId, method: method as Operation["method"], path, arrayQuery });
        }
      }
      return map;
    })().catch((err) => {
      ops = null; // try again on the next call
      throw err;
    }));

  return {
    async call(operationId, req) {
      const op = (await operations()).get(operationId);
      if (!op) throw new ToolError("E_UNREACHABLE", `the server at ${base} has no operation ${operationId} (an older version?)`);
      const http = toHttp(op, req);
      const qs = http.query.toString();
      const body = http.body === undefined ? undefined : Buffer.isBuffer(http.body) ? new Uint8Array(http.body) : JSON.stringify(http.body);
      const res = await request(`${base}${http.path}${qs ? `?${qs}` : ""}`, {
        method: op.method.toUpperCase(),
        headers: headers({ accept: "application/json", ...(http.contentType ? { "content-type": http.contentType } : {}) }),
        body,
      });
      return httpReply(
        res.status,
        res.headers.get("content-type") ?? "",
        Object.fromEntries(res.headers.entries()),
        Buffer.from(await res.arrayBuffer()),
        `${op.method.toUpperCase()} ${http.path}`,
      );
    },
  };
}

/** An HTTP answer as an `ApiReply` (JSON decoded, anything else raw); a non-2xx answer throws its ToolError. `what` names the request in messages. */
export function httpReply(status: number, contentType: string, headers: Record<string, string>, data: Buffer, what: string): ApiReply {
  const isJson = /^application\/json\b/i.test(contentType);
  if (isFailure(status)) {
    let body: unknown;
    try {
      body = isJson && data.length > 0 ? JSON.parse(data.toString("utf8")) : undefined;
    } catch {
      body = undefined;
    }
    throw replyError(status, body, `${what} answered ${status}`);
  }
  const out: ApiReply = { status, headers };
  if (isJson) out.body = data.length > 0 ? JSON.parse(data.toString("utf8")) : undefined;
  else out.raw = { contentType, data };
  return out;
}
