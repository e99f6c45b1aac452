/** @module mcp/server — an MCP server (official SDK, low-level Server) over the catalog; both transports build theirs here. */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Resource,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { checkValue } from "../safe-values.js";
import { VERSION } from "../version.js";
import { CATALOG, GROUPS, RENAMED, selectTools } from "../tools/catalog.js";
import { ToolError, type Api, type Tool } from "../tools/tool.js";

const byName = new Map<string, Tool>(CATALOG.map((t) => [t.name, t]));
/** JSON Schemas of the catalog, converted once. */
const described = new Map<string, McpTool>(CATALOG.map((t) => [t.name, describe(t)]));

/**
 * One tool as tools/list shows it. The JSON Schemas lose only what says nothing: `$schema`, the
 * `additionalProperties: {}` zod writes on every open object (JSON Schema's default) and the safe-integer
 * bounds it writes on every integer; a shape an output repeats is written once (`$defs`). The title is the
 * tool's own (annotations.title, its older place, would repeat it).
 */
function describe(t: Tool): McpTool {
  const schema = (s: z.ZodType, io: "input" | "output") => {
    const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: "any", reused: io === "output" ? "ref" : "inline" }) as Record<
      string,
      unknown
    >;
    return withoutNoise(rest) as McpTool["inputSchema"];
  };
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: schema(t.input, "input"),
    outputSchema: schema(t.output, "output"),
    annotations: t.annotations,
  };
}

/**
 * A copy of a JSON Schema without `additionalProperties: {}` (an open object is the default), without integer bounds
 * at ±(2^53 - 1) and without the error code svc reads (`x-svc-code`); a nullable field zod writes as
 * `anyOf: [{type: T, ...}, {type: "null"}]` is written `{type: [T, "null"], ...}` (the same values, half the bytes).
 */
function withoutNoise(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNoise);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  const nullable = orNull(v as Record<string, unknown>);
  for (const [k, x] of Object.entries(nullable ?? v)) {
    if (k === "x-svc-code") continue;
    if (k === "additionalProperties" && typeof x === "object" && x !== null && !Array.isArray(x) && Object.keys(x).length === 0) continue;
    if ((k === "minimum" && x === Number.MIN_SAFE_INTEGER) || (k === "maximum" && x === Number.MAX_SAFE_INTEGER)) continue;
    out[k] = withoutNoise(x);
  }
  return out;
}

/** `{anyOf: [{type: T, ...}, {type: "null"}], ...}` as `{type: [T, "null"], ..., ...}` when T is one type name; else null. */
function orNull(v: Record<string, unknown>): Record<string, unknown> | null {
  const any = v.anyOf;
  if (!Array.isArray(any) || any.length !== 2) return null;
  const [a, b] = any as Record<string, unknown>[];
  if (b?.type !== "null" || Object.keys(b).length !== 1 || typeof a?.type !== "string" || a.type === "null") return null;
  const { anyOf: _, ...rest } = v;
  return { ...rest, ...a, type: [a.type, "null"] };
}

export interface McpServerOptions {
  /** false: list only the public tools (tenant tools still answer, with E_AUTH). */
  keyed: boolean;
  /** The tools this server serves (selectTools: a subset by group or name); default the default groups. */
  tools?: readonly Tool[];
  /** Called after each tool call (metrics, logs). */
  onCall?: (tool: string, ok: boolean, ms: number) => void;
  /** Unexpected (non-ToolError) failures. */
  onError?: (tool: string, err: unknown) => void;
}

export function mcpServer(api: Api, opts: McpServerOptions): Server {
  const server = new Server(
    { name: "svc", title: "svc memory substrate", version: VERSION },
    { capabilities: { tools: { listChanged: false }, resources: {} } },
  );
  const served = new Set(opts.tools ?? selectTools(undefined));
  serveResources(server, api, { records: GROUPS.records!.some((t) => served.has(t)), indexes: GROUPS.indexes!.some((t) => served.has(t)) });
  const listed = CATALOG.filter((t) => served.has(t) && (opts.keyed || t.access === "public")).map((t) => described.get(t.name)!);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const name = req.params.name;
    const tool = byName.get(name);
    if (!tool || !served.has(tool)) {
      const hint = tool
        ? "it is not in this session's tool set (--tools / ?tools=)"
        : Object.hasOwn(RENAMED, name)
          ? `it is now ${RENAMED[name]}`
          : "tools/list names them";
      throw new McpError(ErrorCode.InvalidParams, `unknown tool '${name}'; ${hint}`);
    }
    const t0 = performance.now();
    const result = await callTool(tool, req.params.arguments ?? {}, api, opts);
    opts.onCall?.(tool.name, !result.isError, performance.now() - t0);
    return result;
  });
  return server;
}

const RECORDS_URI = "svc://records/";
const INDEXES_URI = "svc://indexes/";

/**
 * Resources, for a client's listing of what the key holds: each records namespace (svc://records/<ns>, read: its
 * statistics) and each vector index (svc://indexes/<name>, read: its description and vector counts), when the
 * session serves the records or indexes tools. Read through the same REST operations (metered as they are).
 */
function serveResources(server: Server, api: Api, groups: { records: boolean; indexes: boolean }): void {
  const body = async (op: string, args?: Record<string, unknown>) => (await api.call(op, { args })).body as Record<string, unknown>;
  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const resources: Resource[] = [];
    try {
      if (groups.records) {
        for (const n of (await body("records_namespaces")).namespaces as Array<{ namespace: string; count: number }>) {
          resources.push({
            uri: RECORDS_URI + encodeURIComponent(n.namespace),
            name: `records/${n.namespace}`,
            title: `Records namespace ${n.namespace}`,
            description: `${n.count} records; read: count per kind, oldest and newest ts`,
            mimeType: "application/json",
          });
        }
      }
      if (groups.indexes) {
        for (const i of (await body("list_indexes")).indexes as Array<{ name: string; dimension: number }>) {
          resources.push({
            uri: INDEXES_URI + encodeURIComponent(i.name),
            name: `indexes/${i.name}`,
            title: `Vector index ${i.name}`,
            description: `${i.dimension}-d vector index; read: its description and vector counts per namespace`,
            mimeType: "application/json",
          });
        }
      }
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      return { resources: [] }; // no key (E_AUTH), or nothing readable: nothing to list
    }
    return { resources };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    let text: unknown;
    try {
      if (groups.records && uri.startsWith(RECORDS_URI))
        text = {
          namespace: decodeURIComponent(uri.slice(RECORDS_URI.length)),
          ...(await body("records_stats", { ns: decodeURIComponent(uri.slice(RECORDS_URI.length)) })),
        };
      else if (groups.indexes && uri.startsWith(INDEXES_URI)) {
        const name = decodeURIComponent(uri.slice(INDEXES_URI.length));
        text = { ...(await body("describe_index", { name })), stats: await body("describe_index_stats_get", { name }) };
      } else throw new McpError(ErrorCode.InvalidParams, `unknown resource '${uri}'; resources/list names them`);
    } catch (err) {
      if (err instanceof ToolError) throw new McpError(ErrorCode.InvalidParams, `${uri}: ${err.code}: ${err.message}`);
      throw err;
    }
    return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(text) }] };
  });
}

async function callTool(tool: Tool, args: unknown, api: Api, opts: McpServerOptions): Promise<CallToolResult> {
  try {
    checkValue(args, "arguments");
  } catch (err) {
    if (!(err instanceof SvcError)) throw err;
    return failure(new ToolError(err.code, err.message, err.field));
  }
  const unknown = unknownArgument(tool.input, args);
  if (unknown !== undefined) return failure(unknown);
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "arguments";
    return failure(new ToolError("E_BAD_REQUEST", `${field}: ${issue.message}`, field));
  }
  try {
    const out = await tool.run(parsed.data, api);
    return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
  } catch (err) {
    if (err instanceof ToolError) return failure(err);
    opts.onError?.(tool.name, err);
    return failure(new ToolError("E_INTERNAL", "internal error; see the server log"));
  }
}

/**
 * The one rule for unknown fields, as REST has it (http/invoke.ts `refuseUnknownFields`): a top-level argument the
 * tool's input does not name is refused, naming it, rather than dropped (zod's default object strips it), so a
 * misspelt option never silently does nothing. An input that declares extra keys open (a catchall) takes them.
 */
function unknownArgument(input: z.ZodObject, args: unknown): ToolError | undefined {
  if (input.def.catchall !== undefined || typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  for (const k of Object.keys(args))
    if (!Object.hasOwn(input.shape, k))
      return new ToolError("E_BAD_REQUEST", `unknown field '${k}'; this tool takes ${Object.keys(input.shape).join(", ")}`, k);
  return undefined;
}

/** A handler's error as a tool result: isError, with the REST error body as text. */
function failure(e: ToolError): CallToolResult {
  return {
    isError: true,
    content: [
      { type: "text", text: JSON.stringify({ error: { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) } }) },
    ],
  };
}
