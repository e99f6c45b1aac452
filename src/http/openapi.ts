/** @module openapi — the OpenAPI 3.1 document, generated from the route table (so it cannot drift from the router). */
import { ERRORS } from "../errors.js";
import { MAX_DEPTH, RESERVED_KEYS } from "../safe-values.js";
import { MSGPACK_TYPE, PROTOBUF_TYPE } from "./codecs.js";
import { queryParamsOf, requestBodyOf } from "./input.js";
import type { Route, Schema } from "./route.js";
import { errorBody } from "./routes/schemas.js";

/** The version of the interface this document describes (the seed's interface description); the software's own version rides in `x-svc-software-version`. */
export const INTERFACE_VERSION = "1.0.0";

export function openApiDocument(routes: readonly Route[], softwareVersion: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    const query = queryParamsOf(r).map((q) => ({
      name: q.name,
      in: "query",
      required: q.required ?? false,
      description: q.description,
      schema: q.schema,
    }));
    const media = (schema: Schema | undefined, binary: boolean) => ({
      "application/json": schema === undefined ? {} : { schema },
      ...(binary
        ? {
            [MSGPACK_TYPE]: schema === undefined ? {} : { schema },
            [PROTOBUF_TYPE]: { schema: { type: "string", contentEncoding: "binary" } },
          }
        : {}),
    });
    const requestBody = requestBodyOf(r);
    const op: Record<string, unknown> = {
      operationId: r.operationId,
      summary: r.summary,
      tags: r.tags,
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(r.rawBody
        ? {
            requestBody: {
              required: true,
              content: { [r.rawBody]: { schema: requestBody ?? { type: "string", contentEncoding: "binary" } } },
            },
          }
        : requestBody
          ? { requestBody: { required: r.method !== "get", content: media(closed(requestBody), r.proto?.request !== undefined) } }
          : {}),
      responses: {
        [String(r.response.status)]: {
          description: r.response.description,
          ...(r.response.schema ? { content: media(r.response.schema, r.proto !== undefined) } : {}),
        },
        default: { description: "Error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
      },
      ...(r.auth === "none" ? { security: [] } : {}),
      ...(r.meter ? { "x-svc-metered": r.meter } : {}),
      ...(r.auth === "admin" ? { "x-svc-admin": true } : {}),
    };
    (paths[r.path] ??= {})[r.method] = op;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "svc",
      version: INTERFACE_VERSION,
      "x-svc-software-version": softwareVersion,
      description:
        `Self-hosted memory substrate for AI agents. Every request body (and MCP tool arguments) nests objects and arrays at most ${MAX_DEPTH} levels deep, the body being level 1 (deeper: 400 E_TOO_DEEP), and carries none of the keys ${[...RESERVED_KEYS].join(", ")} at any depth (400 E_METADATA); the error's field is the path, e.g. items[0].meta.__proto__. ` +
        'Errors are {"error":{"code","message","field"}} with a stable code: ' +
        Object.entries(ERRORS)
          .map(([code, e]) => `${code} (${e.status})`)
          .join(", "),
    },
    servers: [{ url: "/" }],
    security: [{ ApiKey: [] }, { Bearer: [] }],
    paths,
    components: {
      securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "Api-Key" }, Bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: errorBody },
    },
  };
}

/** The route table as a Markdown table (docs/API.md's "Every route", written by scripts/docs-routes.ts). */
export function routesMarkdown(routes: readonly Route[]): string {
  const auth = { none: "public", tenant: "key", admin: "admin key" } as const;
  const rows = [...routes]
    .sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path.localeCompare(b.path)))
    .map(
      (r) =>
        `| ${r.method.toUpperCase()} | \`${r.path}\` | ${auth[r.auth]} | \`${r.operationId}\` | ${r.summary.replace(/\|/g, "\\|").replace(/\n/g, " ")} |`,
    );
  return ["| Method | Path | Auth | Operation | What |", "|---|---|---|---|---|", ...rows].join("\n");
}

/** `doc` with the text between its routes markers replaced by `table`. */
export function withRoutesTable(doc: string, table: string): string {
  return doc.replace(/(<!-- routes:begin[^>]*-->\n)[\s\S]*?(<!-- routes:end -->)/, `$1${table}\n$2`);
}

/** Unknown top-level fields are refused (invoke.ts `refuseUnknownFields`): the document says so with additionalProperties: false. */
function closed(schema: Schema): Schema {
  return schema.properties !== undefined && schema.additionalProperties === undefined ? { ...schema, additionalProperties: false } : schema;
}
