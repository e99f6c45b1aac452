/** @module tools/rest-api — the REST operations over HTTP (the stdio tool server): operation shapes come from the server's own /v1/openapi.json. */
import { checkServiceUrl } from "../service-url.js";
import { toHttp } from "./operation.js";
import { isFailure, replyError, ToolError } from "./tool.js";
/** `key` goes only to `baseUrl`, in the Api-Key header; plain http to a non-loopback host is refused (E_INSECURE_URL) unless SVC_ALLOW_INSECURE=1. */
export function restApi(baseUrl, key) {
    checkServiceUrl(baseUrl);
    const base = baseUrl.replace(/\/+$/, "");
    const headers = (extra) => ({ ...(key ? { "api-key": key } : {}), ...extra });
    const request = async (url, init) => {
        try {
            return await fetch(url, { ...init, redirect: "error" }); // a redirect could carry the key elsewhere
        }
        catch (err) {
            throw new ToolError("E_UNREACHABLE", `cannot reach the svc server at ${base} (${err.message}); start it with 'svc serve' or set SVC_URL`);
        }
    };
    let ops = null;
    const operations = () => (ops ??= (async () => {
        const res = await request(`${base}/v1/openapi.json`, { headers: headers({ accept: "application/json" }) });
        if (!res.ok)
            throw new ToolError("E_UNREACHABLE", `${base}/v1/openapi.json answered ${res.status}; is SVC_URL an svc server?`);
        const doc = (await res.json());
        const map = new Map();
        for (const [path, methods] of Object.entries(doc.paths)) {
            for (const [method, o] of Object.entries(methods)) {
                const arrayQuery = new Set((o.parameters ?? []).filter((p) => p.in === "query" && p.schema?.type === "array").map((p) => p.name));
                map.set(o.operationId, { operationId: o.operationId, method: method, path, arrayQuery });
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
            if (!op)
                throw new ToolError("E_UNREACHABLE", `the server at ${base} has no operation ${operationId} (an older version?)`);
            const http = toHttp(op, req);
            const qs = http.query.toString();
            const body = http.body === undefined ? undefined : Buffer.isBuffer(http.body) ? new Uint8Array(http.body) : JSON.stringify(http.body);
            const res = await request(`${base}${http.path}${qs ? `?${qs}` : ""}`, {
                method: op.method.toUpperCase(),
                headers: headers({ accept: "application/json", ...(http.contentType ? { "content-type": http.contentType } : {}) }),
                body,
            });
            return httpReply(res.status, res.headers.get("content-type") ?? "", Object.fromEntries(res.headers.entries()), Buffer.from(await res.arrayBuffer()), `${op.method.toUpperCase()} ${http.path}`);
        },
    };
}
/** An HTTP answer as an `ApiReply` (JSON decoded, anything else raw); a non-2xx answer throws its ToolError. `what` names the request in messages. */
export function httpReply(status, contentType, headers, data, what) {
    const isJson = /^application\/json\b/i.test(contentType);
    if (isFailure(status)) {
        let body;
        try {
            body = isJson && data.length > 0 ? JSON.parse(data.toString("utf8")) : undefined;
        }
        catch {
            body = undefined;
        }
        throw replyError(status, body, `${what} answered ${status}`);
    }
    const out = { status, headers };
    if (isJson)
        out.body = data.length > 0 ? JSON.parse(data.toString("utf8")) : undefined;
    else
        out.raw = { contentType, data };
    return out;
}
//# sourceMappingURL=rest-api.js.map