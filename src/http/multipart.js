/** @module multipart — the one part of a multipart/form-data body that an upload route reads (RFC 7578). */
import { SvcError } from "../errors.js";
/** The bytes of the part named `name` in a multipart/form-data body; E_BAD_REQUEST when the body or part is missing. */
export function formPart(contentType, body, name) {
    const m = /^multipart\/form-data\s*;.*?boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
    if (m === null)
        throw new SvcError("E_MEDIA_TYPE", "send multipart/form-data with a boundary", { field: "content-type" });
    const delimiter = Buffer.from(`--${m[1] ?? m[2]}`);
    let at = body.indexOf(delimiter);
    while (at !== -1) {
        const start = at + delimiter.length;
        if (body[start] === 0x2d && body[start + 1] === 0x2d)
            break; // closing "--boundary--"
        const headersEnd = body.indexOf("\r\n\r\n", start);
        if (headersEnd === -1)
            break;
        const headers = body.subarray(start, headersEnd).toString("latin1");
        const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delimiter]), headersEnd + 4);
        if (next === -1)
            break;
        const disposition = /content-disposition:\s*form-data\s*;([^\r\n]*)/i.exec(headers)?.[1] ?? "";
        if (new RegExp(`(^|;)\\s*name="${name}"`, "i").test(disposition))
            return body.subarray(headersEnd + 4, next);
        at = next + 2;
    }
    throw new SvcError("E_BAD_REQUEST", `the multipart body has no complete part named '${name}'`, { field: name });
}
//# sourceMappingURL=multipart.js.map