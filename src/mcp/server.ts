/** @module mcp/server — an MCP server (official SDK, low-level Server) over the catalog; both transports build theirs here. */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { checkValue } from "../safe-values.js";
import { VERSION } from "../version.js";
import { CATALOG } from "../tools/catalog.js";
import { ToolError, type Api, type Tool } from "../tools/tool.js";

const byName = new Map<string, Tool>(CATALOG.map((t) => [t.name, t]));
/** JSON Schemas of the catalog, converted once. */
const described = new Map<string, McpTool>(CATALOG.map((t) => [t.name, describe(t)]));

function describe(t: Tool): McpTool {
  const schema = (s: z.ZodType, io: "input" | "output") => {
    const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: "any" }) as Record<string, unknown>;
    return rest as McpTool["inputSchema"];
  };
  return { name: t.name, title: t.title, description: t.description, inputSchema: schema(t.input, "input"), outputSchema: schema(t.output, "output"), annotations: { title: t.title, ...t.annotations } };
}

export interface McpServerOptions {
  /** false: list only the public tools (tenant tools still answer, with E_AUTH). */
  keyed: boolean;
  /** Called after each tool call (metrics, logs). */
  onCall?: (tool: string, ok: boolean, ms: number) => void;
  /** Unexpected (non-ToolError) failures. */
  onError?: (tool: string, err: unknown) => void;
}

export function mcpServer(api: Api, opts: McpServerOptions): Server {
  const server = new Server({ name: "svc", title: "svc memory substrate", version: VERSION }, { capabilities: { tools: { listChanged: false } } });
  const listed = CATALOG.filter((t) => opts.keyed || t.access === "public").map((t) => described.get(t.name)!);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const tool = byName.get(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool '${req.params.name}'; tools/list names them`);
    const t0 = performance.now();
    const result = await callTool(tool, req.params.arguments ?? {}, api, opts);
    opts.onCall?.(tool.name, !result.isError, performance.now() - t0);
    return result;
  });
  return server;
}

async function callTool(tool: Tool, args: unknown, api: Api, opts: McpServerOptions): Promise<CallToolResult> {
  try {
    checkValue(args, "arguments");
  } catch (err) {
    if (!(err instanceof SvcError)) throw err;
    return failure(new ToolError(err.code, err.message, err.field));
  }
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

/** A handler's error as a tool result: isError, with the REST error body as text. */
function failure(e: ToolError): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ error: { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) } }) }] };
}
