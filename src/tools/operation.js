/** @module tools/operation — one REST operation's shape (from the route table in-process, from /v1/openapi.json over HTTP) and how tool arguments become its request. */
import { ToolError } from "./tool.js";
/** Path parameters by name; then GET/DELETE send the rest as the query, other methods as the JSON body. */
export function toHttp(op, req = {}) {
    const rest = { ...req.args };
    const params = {};
    const path = op.path.replace(/\{(\w+)\}/g, (_, name) => {
        const v = rest[name];
        if (typeof v !== "string" && typeof v !== "number")
            throw new ToolError("E_BAD_REQUEST", `${name} is required`, name);
        delete rest[name];
        params[name] = String(v);
        return encodeURIComponent(String(v));
    });
    const query = new URLSearchParams();
    const inQuery = op.method === "get" || op.method === "delete" || req.raw !== undefined;
    if (inQuery) {
        for (const [k, v] of Object.entries(rest)) {
            if (v === undefined)
                continue;
            if (Array.isArray(v)) {
                if (op.arrayQuery.has(k))
                    for (const x of v)
                        query.append(k, String(x));
                else
                    query.set(k, v.join(","));
            }
            else
                query.set(k, typeof v === "object" ? JSON.stringify(v) : String(v));
        }
    }
    if (req.raw)
        return { params, path, query, body: req.raw.data, contentType: req.raw.contentType };
    return { params, path, query, body: inQuery ? undefined : rest, contentType: inQuery ? "" : "application/json" };
}
//# sourceMappingURL=operation.js.map