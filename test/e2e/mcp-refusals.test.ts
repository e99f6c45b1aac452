/**
 * Issue 20.3: a write refused by its per-address limit (429 from the handler, not a thrown error) is an isError tool
 * result carrying `rate_limited` over both transports, driven with the official MCP SDK client: never a success
 * whose structured content is the 429 body (which the SDK client rejects with -32602 against the output schema).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "./server-process.js";

let srv: ServerProcess;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "svc-mcp-refusals-"));
  const one = { count: 1, windowSeconds: 3600 };
  await writeFile(
    join(dataDir, "config.json"),
    JSON.stringify({ commons: { rateLimits: { trust: one, board: one, ask: one, writes: one } } }),
  );
  srv = await startServerProcess({ dataDir });
}, 60_000);
afterAll(async () => {
  await srv?.dispose();
  await rm(dataDir, { recursive: true, force: true });
});

const POST = "rec_0123456789abcdef"; // a post id of the right shape (the tool takes the route's schema), naming no post
/** Each limited write with arguments the tool's own schema accepts (so the call reaches REST and counts). */
const LIMITED: Array<[string, Record<string, unknown>]> = [
  ["board_post", { agent: "tester", message: "hello from the refusal test" }],
  ["board_vote", { agent: "tester", post: POST, verdict: "useful" }],
  ["board_file_add", { agent: "tester", filename: "a.txt", content: "some text" }],
  ["board_working_add", { agent: "tester", note: "testing limits" }],
  ["board_profile", { agent: "tester", about: "a test agent" }],
  ["trust_record", { agent: "tester", target: "example.com", outcome: "worked" }],
  ["ask_site", { site: "127.0.0.1", question: "anything?" }],
  [
    "directory_consultation_request",
    {
      id: "no-such-business",
      start: "2030-01-01T10:00:00+00:00",
      customer: { name: "A", email: "a@example.com" },
      customer_confirmed: true,
    },
  ],
];

type Result = CallToolResult & { structuredContent?: Record<string, unknown> };
const errorOf = (r: Result) => JSON.parse((r.content[0] as { text: string }).text).error as { code: string; message: string };

/** Calls `tool` until it is refused by its limit (at most 12 calls: the directory allows 10 per 10 minutes); every answer is a result, never a protocol error. */
async function driveToLimit(client: Client, tool: string, args: Record<string, unknown>): Promise<Result> {
  for (let i = 0; i < 12; i++) {
    const r = (await client.callTool({ name: tool, arguments: args })) as Result; // -32602 would throw here
    if (r.isError && errorOf(r).code === "rate_limited") return r;
    if (!r.isError) expect(r.structuredContent).not.toHaveProperty("error");
  }
  throw new Error(`${tool} was never refused by its rate limit`);
}

async function check(client: Client): Promise<void> {
  for (const [tool, args] of LIMITED) {
    const r = await driveToLimit(client, tool, args);
    expect(r.isError, tool).toBe(true);
    expect(r.structuredContent, tool).toBeUndefined();
    expect(errorOf(r).code, tool).toBe("rate_limited");
  }
}

describe("rate-limited MCP writes are isError results", () => {
  it("over streamable HTTP (/mcp)", async () => {
    const client = new Client({ name: "svc-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`)));
    try {
      await check(client);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("over stdio (svc mcp)", async () => {
    const client = new Client({ name: "svc-e2e", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "mcp"],
        env: { SVC_URL: srv.url, PATH: process.env.PATH ?? "" },
        stderr: "pipe",
      }),
    );
    try {
      await check(client);
    } finally {
      await client.close();
    }
  }, 60_000);
});
