/**
 * @module mcp-bench — what a tool call costs over the REST call it runs: the same records_query (1,000
 * records, text query, top 10) as REST (fetch), as an MCP tool over streamable HTTP (/mcp, in-process
 * LocalApi) and over stdio (`svc mcp`, which forwards to REST), sequential calls, lanes taking turns.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startChild } from "./http/child.js";
import { summarize, type Latency } from "./stats.js";

const MAIN = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const RECORDS = 1000;
const WORDS = [
  "deploy",
  "certificate",
  "database",
  "migration",
  "latency",
  "cache",
  "billing",
  "retry",
  "queue",
  "schema",
  "index",
  "backup",
];

export interface McpRun {
  command: string;
  date: string;
  records: number;
  calls: number;
  lanes: Array<{ lane: string; latency: Latency }>;
}

export async function runMcpBench(o: { calls: number; log: (line: string) => void }): Promise<McpRun> {
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-bench-"));
  const server = await startChild([MAIN, "serve", "--port", "0", "--data", dir, "--log-level", "warn"]);
  const clients: Client[] = [];
  try {
    const key = server.adminKey!; // the first admin key (unmetered)
    const headers = { "api-key": key, "content-type": "application/json" };
    const items = Array.from({ length: RECORDS }, (_, i) => ({
      kind: i % 3 === 0 ? "decision" : "note",
      text: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} note ${i} about ${WORDS[(i * 5) % WORDS.length]}`,
    }));
    for (let s = 0; s < RECORDS; s += 500) {
      const res = await fetch(`${server.url}/v1/records/bench`, {
        method: "POST",
        headers,
        body: JSON.stringify({ items: items.slice(s, s + 500) }),
      });
      if (!res.ok) throw new Error(`ingest answered ${res.status}`);
    }
    const args = (i: number) => ({ text: `${WORDS[i % WORDS.length]} ${WORDS[(i * 3) % WORDS.length]}`, topK: 10 });
    const connect = async (transport: StdioClientTransport | StreamableHTTPClientTransport) => {
      const c = new Client({ name: "svc-bench", version: "1.0.0" });
      await c.connect(transport);
      clients.push(c);
      return c;
    };
    const http = await connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { "api-key": key } } }),
    );
    const stdio = await connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "mcp", "--url", server.url],
        env: { SVC_API_KEY: key, PATH: process.env.PATH ?? "" },
        stderr: "ignore",
      }),
    );
    const tool = async (c: Client, i: number) => {
      const r = await c.callTool({ name: "records_query", arguments: { namespace: "bench", ...args(i) } });
      if (r.isError) throw new Error(JSON.stringify(r.content));
    };
    const lanes: Array<{ lane: string; call: (i: number) => Promise<void>; ms: number[] }> = [
      {
        lane: "REST POST /v1/records/{ns}/query (fetch)",
        ms: [],
        call: async (i) => {
          const res = await fetch(`${server.url}/v1/records/bench/query`, { method: "POST", headers, body: JSON.stringify(args(i)) });
          if (!res.ok) throw new Error(`query answered ${res.status}`);
          await res.arrayBuffer();
        },
      },
      { lane: "MCP records_query over /mcp (streamable HTTP)", ms: [], call: (i) => tool(http, i) },
      { lane: "MCP records_query over stdio (svc mcp -> REST)", ms: [], call: (i) => tool(stdio, i) },
    ];
    for (const l of lanes) for (let i = 0; i < 20; i++) await l.call(i); // warm-up
    const BURST = 25;
    for (let s = 0; s < o.calls; s += BURST) {
      for (const l of lanes) {
        for (let i = s; i < Math.min(o.calls, s + BURST); i++) {
          const t0 = process.hrtime.bigint();
          await l.call(i);
          l.ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }
    }
    const out = lanes.map((l) => ({ lane: l.lane, latency: summarize(l.ms) }));
    for (const l of out)
      o.log(
        `${l.lane.padEnd(48)} p50 ${l.latency.p50.toFixed(3)} ms  p99 ${l.latency.p99.toFixed(3)} ms  mean ${l.latency.mean.toFixed(3)} ms`,
      );
    return { command: "npm run bench -- --only mcp", date: new Date().toISOString(), records: RECORDS, calls: o.calls, lanes: out };
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The RESULTS.md section (between <!-- mcp --> markers). */
export function renderMcpSection(r: McpRun): string {
  const rest = r.lanes[0]!.latency;
  const lines = ["<!-- mcp -->", "## MCP tool calls against the REST call they run", ""];
  lines.push(
    `\`${r.command}\` on ${r.date.slice(0, 10)}: records_query (text, top 10) over ${r.records.toLocaleString("en-US")} records, ${r.calls} sequential calls per lane from one client process, lanes taking turns every 25 calls; the server is \`svc serve\` in a child process, the admin key (unmetered).`,
    "",
  );
  lines.push("| lane | p50 ms | p99 ms | mean ms | p50 over REST |", "|---|---:|---:|---:|---:|");
  for (const l of r.lanes)
    lines.push(
      `| ${l.lane} | ${l.latency.p50.toFixed(3)} | ${l.latency.p99.toFixed(3)} | ${l.latency.mean.toFixed(3)} | ${l === r.lanes[0] ? "" : `+${(l.latency.p50 - rest.p50).toFixed(3)} ms`} |`,
    );
  lines.push(
    "",
    "/mcp runs the route's handler in-process (no second HTTP hop) but adds JSON-RPC framing, zod validation of the arguments and an SSE reply, and its lane includes the SDK client's SSE parsing (server-side, transport handling plus streaming the reply measured ~1.1 ms per call in a probe); stdio adds a process hop and the REST request it forwards.",
    "<!-- /mcp -->",
    "",
  );
  return lines.join("\n");
}
