/** A failed operation, as a tool result carries it: the stable code, message and offending field of the REST error. */
export class ToolError extends Error {
    code;
    field;
    constructor(code, message, field) {
        super(message);
        this.code = code;
        this.field = field;
        this.name = "ToolError";
    }
}
/**
 * The one rule for a REST answer that is not a success (any status outside 2xx), over both transports:
 * it becomes a ToolError carrying the body's stable code, message and field (`HTTP_<status>` when the
 * body is not our error shape), so the tool result is `isError` and never validated as output.
 */
export function replyError(status, body, fallback) {
    const e = typeof body === "object" && body !== null ? body.error : undefined;
    const str = (v) => (typeof v === "string" && v !== "" ? v : undefined);
    return new ToolError(str(e?.code) ?? `HTTP_${status}`, str(e?.message) ?? fallback, str(e?.field));
}
/** True for the statuses `replyError` turns into failures. */
export const isFailure = (status) => status < 200 || status > 299;
//# sourceMappingURL=tool.js.map