/** @module cli/mcp — `svc mcp`: the stdio MCP tool server, forwarding every tool call to a running server's REST API. */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { mcpServer } from "../mcp/server.js";
import { selectTools } from "../tools/catalog.js";
import { restApi } from "../tools/rest-api.js";
import type { Command } from "./command.js";
import { storedApiKey } from "./hook.js";

export const DEFAULT_SVC_URL = "http://127.0.0.1:8080";

export const mcpCommand: Command = {
  name: "mcp",
  usage: `svc mcp [--url http://127.0.0.1:8080] [--tools records,indexes,...]
      MCP tool server on stdin/stdout (JSON-RPC 2.0) for agents: every tool
      call goes to the REST API at --url (or SVC_URL) with the key in
      SVC_API_KEY (else $SVC_HOME/api-key), metered against its wallet. Logs go to stderr;
      the key is sent only to that URL. --tools (or SVC_MCP_TOOLS) serves a subset:
      groups (records, indexes, kg, causal, hd, helpers, wallet, commons,
      directory, admin) or tool names, comma-separated, or all; default every
      group but admin. See docs/MCP.md.`,
  options: { url: { type: "string" }, tools: { type: "string" } },
  async run(values) {
    const url = (values.url as string | undefined) ?? (process.env.SVC_URL || DEFAULT_SVC_URL);
    const tools = selectTools((values.tools as string | undefined) ?? process.env.SVC_MCP_TOOLS);
    const key = storedApiKey(); // SVC_API_KEY, else the key `svc install-hooks --api-key` stored
    const server = mcpServer(restApi(url, key), {
      keyed: true,
      tools,
      onError: (tool, err) => process.stderr.write(`svc mcp: ${tool} failed: ${(err as Error).stack ?? String(err)}\n`),
    });
    const closed = new Promise<void>((resolve) => {
      server.onclose = resolve;
      process.stdin.once("end", resolve);
      process.stdin.once("close", resolve);
    });
    await server.connect(new StdioServerTransport());
    process.stderr.write(
      `svc mcp: serving tools over stdio, forwarding to ${url}${key ? "" : " (no SVC_API_KEY: only public tools will work)"}\n`,
    );
    await closed;
    await server.close();
    return 0;
  },
};
