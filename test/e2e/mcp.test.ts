/** MCP end to end: the official SDK Client over stdio (spawning `svc mcp` against a running server) and over streamable HTTP (/mcp). */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GROUPS, selectTools } from "../../src/tools/catalog.js";
import { call, newTenantKey } from "./client.js";
import { MAIN, startServerProcess, type ServerProcess } from "./server-process.js";

let srv: ServerProcess;
let key: string;

beforeAll(async () => {
  srv = await startServerProcess();
  key = (await newTenantKey(srv)).key;
});
afterAll(async () => {
  await srv?.dispose();
});

type Result = CallToolResult & { structuredContent?: Record<string, unknown> };
const errorOf = (r: Result) =>
  JSON.parse((r.content[0] as { text: string }).text).error as { code: string; message: string; field?: string };

async function httpClient(apiKey: string | null, opts: { query?: string; headers?: Record<string, string> } = {}): Promise<Client> {
  const client = new Client({ name: "svc-e2e", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp${opts.query ?? ""}`), {
      requestInit: { headers: { ...(apiKey ? { "api-key": apiKey } : {}), ...opts.headers } },
    }),
  );
  return client;
}

async function stdioClient(apiKey: string, args: string[] = []): Promise<Client> {
  const client = new Client({ name: "svc-e2e", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, "mcp", ...args],
      env: { SVC_URL: srv.url, SVC_API_KEY: apiKey, PATH: process.env.PATH ?? "" },
      stderr: "pipe",
    }),
  );
  return client;
}

/** The same scenario over each transport. */
async function scenario(client: Client, ns: string): Promise<void> {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of [
    "create_index",
    "query_text",
    "hd_kg_add_fact",
    "hd_causal_query",
    "hd_analogy",
    "bind_role",
    "read_roles",
    "records_ingest",
    "records_query",
    "hd_kg_query",
  ])
    expect(names).toContain(n);
  // every name passes OpenAI's function-name rule (what the strictest major client checks); no name twice
  for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  expect(new Set(names).size).toBe(names.length);
  // the default set: every group but admin, its tools/list within budget (measured: see docs/MCP.md)
  expect(names).toEqual(selectTools(undefined).map((t) => t.name));
  expect(JSON.stringify({ tools })).not.toMatch(/"admin_credit"/);
  expect(JSON.stringify({ tools }).length).toBeLessThan(80 * 1024); // 77,978 B when measured (every tool takes its route's schema, with its bounds and patterns: 66,102 B before the index tools did)
  const ingest = tools.find((t) => t.name === "records_ingest")!;
  expect(ingest.inputSchema.required).toEqual(expect.arrayContaining(["namespace", "items"]));
  expect(ingest.annotations?.readOnlyHint).toBe(false);

  const ingested = (await client.callTool({
    name: "records_ingest",
    arguments: {
      namespace: ns,
      items: [
        { kind: "decision", text: "We chose PostgreSQL for the billing service because of strong transactions", tags: ["db"] },
        { kind: "mistake", text: "The deploy failed because the TLS certificate had expired", tags: ["ops"] },
      ],
    },
  })) as Result;
  expect(ingested.isError).toBeFalsy();
  expect(ingested.structuredContent!.count).toBe(2);
  const found = (await client.callTool({
    name: "records_query",
    arguments: { namespace: ns, text: "why did the deployment break? certificate", topK: 1, includeText: true },
  })) as Result;
  const records = found.structuredContent!.records as Array<{ kind: string; text: string }>;
  expect(records[0]!.kind).toBe("mistake");
  expect(records[0]!.text).toContain("certificate");

  const added = (await client.callTool({
    name: "hd_kg_add_fact",
    arguments: { graph: `${ns}-g`, facts: [{ subject: "paris", relation: "capital_of", object: "france" }] },
  })) as Result;
  expect(added.structuredContent!.added).toBe(1);
  const answer = (await client.callTool({
    name: "hd_kg_query",
    arguments: { graph: `${ns}-g`, subject: "paris", relation: "capital_of" },
  })) as Result;
  expect(answer.structuredContent!.object).toBe("france");
  expect(answer.structuredContent!.confidence as number).toBeGreaterThan(0.5);

  // binary round trip: export as base64, import under another name
  const exported = (await client.callTool({ name: "hd_kg_export", arguments: { graph: `${ns}-g` } })) as Result;
  expect(exported.structuredContent).toMatchObject({ filename: `${ns}-g.hdkg`, contentType: "application/octet-stream" });
  const imported = (await client.callTool({
    name: "hd_kg_import",
    arguments: { graph: `${ns}-copy`, base64: exported.structuredContent!.base64 },
  })) as Result;
  expect(imported.structuredContent!.imported).toBe(1);
  expect(
    (
      (await client.callTool({
        name: "hd_kg_query",
        arguments: { graph: `${ns}-copy`, subject: "paris", relation: "capital_of" },
      })) as Result
    ).structuredContent!.object,
  ).toBe("france");

  const bad = (await client.callTool({ name: "records_query", arguments: { namespace: ns, topK: "ten" } })) as Result;
  expect(bad.isError).toBe(true);
  expect(errorOf(bad)).toMatchObject({ code: "E_BAD_REQUEST", field: "topK" });
  // An error from REST itself comes back with its stable code.
  const missing = (await client.callTool({ name: "records_get", arguments: { namespace: ns, id: "rec_00" } })) as Result;
  expect(missing.isError).toBe(true);
  expect(errorOf(missing).code).toBe("E_NOT_FOUND");
}

describe("MCP over streamable HTTP (/mcp)", () => {
  it("lists tools, ingests and queries records, adds and queries facts, reports bad arguments with a code", async () => {
    const client = await httpClient(key);
    try {
      await scenario(client, "mcp-http");
    } finally {
      await client.close();
    }
  });

  it("charges tool calls to the same wallet as REST", async () => {
    const before = (await call(srv.url, key, "GET", "/v1/wallet")).body as { balanceUsd: number };
    const client = await httpClient(key);
    try {
      const r = (await client.callTool({
        name: "records_ingest",
        arguments: { namespace: "mcp-wallet", items: [{ kind: "note", text: "metered" }] },
      })) as Result;
      expect(r.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const after = (await call(srv.url, key, "GET", "/v1/wallet")).body as { balanceUsd: number };
    expect(after.balanceUsd).toBeLessThan(before.balanceUsd);
  });

  it("without a key lists only public tools and refuses memory tools with E_AUTH", async () => {
    const client = await httpClient(null);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).not.toContain("records_ingest");
      const r = (await client.callTool({
        name: "records_ingest",
        arguments: { namespace: "x", items: [{ kind: "note", text: "no key" }] },
      })) as Result;
      expect(r.isError).toBe(true);
      expect(errorOf(r).code).toBe("E_AUTH");
    } finally {
      await client.close();
    }
  });

  it("without a key serves the public commons and directory tools", async () => {
    const client = await httpClient(null);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining(["board_post", "board_read", "trust_record", "directory_search", "directory_consultation_request"]),
      );
      const posted = (await client.callTool({
        name: "board_post",
        arguments: { agent: "mcp-tester", message: "Testing the board through MCP. Replies welcome." },
      })) as Result;
      expect(posted.isError).toBeFalsy();
      const board = (await client.callTool({ name: "board_read", arguments: { limit: 5 } })) as Result;
      expect((board.structuredContent!.posts as Array<{ id: string }>).map((p) => p.id)).toContain(posted.structuredContent!.id);
      const refused = (await client.callTool({
        name: "board_post",
        arguments: { agent: "mcp-tester", message: "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGxvbmcgYmFzZTY0IGJsb2IgdGhhdCBzaG91bGQgYmUgcmVmdXNlZA==" },
      })) as Result;
      expect(refused.isError).toBe(true);
      expect(errorOf(refused).code).toBe("E_REFUSED");
      const found = (await client.callTool({ name: "directory_search", arguments: { q: "", limit: 3 } })) as Result;
      expect(found.isError).toBeFalsy();
      expect(found.structuredContent!.limit).toBe(3);
      // a business through MCP is the REST body: facts as {value, state, source}, id and page bare
      const hit = (found.structuredContent!.results as Array<{ id: string; claim: { value: string }; bookable: { value: boolean } }>)[0]!;
      expect(hit.claim).toMatchObject({
        value: expect.stringMatching(/^(un)?claimed$/),
        state: "verified",
        source: { asserted_by: "operator" },
      });
      const got = (await client.callTool({ name: "directory_get", arguments: { id: hit.id } })) as Result;
      expect(got.isError).toBeFalsy();
      const biz = got.structuredContent as Record<string, unknown>;
      expect(typeof biz.id).toBe("string");
      expect(typeof biz.page).toBe("string");
      for (const k of ["listed", "claim", "verification", "bookable", "updated", "name", "category"])
        expect(Object.keys(biz[k] as object).sort(), k).toEqual(["source", "state", "value"]);
      const trust = (await client.callTool({ name: "directory_trust", arguments: { id: hit.id } })) as Result;
      expect(trust.structuredContent!.claim).toEqual(biz.claim);
    } finally {
      await client.close();
    }
  });

  it("refuses a foreign Host or Origin (DNS rebinding), a wrong key and an unknown session", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${srv.url}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(init),
      });
    expect((await post({ origin: "http://evil.example" })).status).toBe(403);
    const port = new URL(srv.url).port;
    // fetch sets Host itself; a rebinding attack looks like this at the socket:
    const raw = await import("node:net").then(
      ({ connect }) =>
        new Promise<string>((resolve, reject) => {
          const s = connect(Number(port), "127.0.0.1", () =>
            s.end(`GET /mcp HTTP/1.1\r\nHost: attacker.example:${port}\r\nConnection: close\r\n\r\n`),
          );
          let out = "";
          s.on("data", (b) => (out += b.toString()));
          s.on("end", () => resolve(out));
          s.on("error", reject);
        }),
    );
    expect(raw).toMatch(/^HTTP\/1\.1 403/);
    expect((await post({ "api-key": "svc_not_a_key" })).status).toBe(401);
    const stale = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": "00000000-0000-0000-0000-000000000000",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(stale.status).toBe(404);
  });

  it("opens the standalone SSE stream on GET for a live session (one per session)", async () => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "api-key": key };
    const init = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    expect(init.status).toBe(200);
    expect(init.headers.get("content-type")).toContain("text/event-stream"); // the reply itself comes as SSE
    expect(await init.text()).toMatch(/^event: message\ndata: \{.*"serverInfo"/m);
    const sid = init.headers.get("mcp-session-id")!;
    const session = { ...headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
    await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers: session,
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    const ac = new AbortController();
    const stream = await fetch(`${srv.url}/mcp`, { headers: { ...session, accept: "text/event-stream" }, signal: ac.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    expect((await fetch(`${srv.url}/mcp`, { headers: { ...session, accept: "text/event-stream" } })).status).toBe(409);
    ac.abort();
    const list = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers: session,
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(list.status).toBe(200); // the session outlives its dropped stream
    expect(await list.text()).toContain("records_ingest");
  });

  it("answers malformed JSON-RPC with protocol errors, and keeps serving", async () => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "api-key": key };
    const garbage = await fetch(`${srv.url}/mcp`, { method: "POST", headers, body: "{not json" });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const notInit = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(notInit.status).toBe(400);
    const client = await httpClient(key);
    const sid = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const inSession = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
      body: "[1, 2",
    });
    expect(inSession.status).toBe(400);
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/unknown tool/);
    expect((await client.listTools()).tools.length).toBeGreaterThan(50);
    await client.close();
  });

  it("ends a session on DELETE", async () => {
    const client = await httpClient(key);
    const transport = client.transport as StreamableHTTPClientTransport;
    const sid = transport.sessionId!;
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    await transport.terminateSession();
    const after = await fetch(`${srv.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "api-key": key, "mcp-session-id": sid },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
    });
    expect(after.status).toBe(404);
    await client.close();
  });
});

describe("MCP over stdio (svc mcp)", () => {
  it("forwards to the running server: the same scenario", async () => {
    const client = await stdioClient(key);
    try {
      await scenario(client, "mcp-stdio");
    } finally {
      await client.close();
    }
  });

  it("names the problem when the server is unreachable", async () => {
    const client = new Client({ name: "svc-e2e", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, "mcp", "--url", "http://127.0.0.1:9"],
        env: { SVC_API_KEY: key, PATH: process.env.PATH ?? "" },
        stderr: "pipe",
      }),
    );
    try {
      const r = (await client.callTool({ name: "list_indexes", arguments: {} })) as Result;
      expect(r.isError).toBe(true);
      expect(errorOf(r).code).toBe("E_UNREACHABLE");
    } finally {
      await client.close();
    }
  });
});

describe("MCP tool subsets and resources", () => {
  const groupNames = (...groups: string[]) => selectTools(groups.join(",")).map((t) => t.name);

  it("/mcp?tools=records serves only the records tools; a tool outside the set, or a renamed one, is refused with a hint", async () => {
    const client = await httpClient(key, { query: "?tools=records" });
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(GROUPS.records!.map((t) => t.name));
      const ok = (await client.callTool({
        name: "records_ingest",
        arguments: { namespace: "mcp-subset", items: [{ kind: "note", text: "subset" }] },
      })) as Result;
      expect(ok.isError).toBeFalsy();
      await expect(client.callTool({ name: "hd_kg_query", arguments: { graph: "g", subject: "a", relation: "b" } })).rejects.toThrow(
        /not in this session's tool set/,
      );
      await expect(client.callTool({ name: "kg.query", arguments: {} })).rejects.toThrow(/now hd_kg_query/);
    } finally {
      await client.close();
    }
  });

  it("the Mcp-Tools header does the same; an unknown group is a 400 naming the groups", async () => {
    const client = await httpClient(key, { headers: { "mcp-tools": "records,indexes" } });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(groupNames("records", "indexes"));
    } finally {
      await client.close();
    }
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    };
    const bad = await fetch(`${srv.url}/mcp?tools=records,nope`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "api-key": key },
      body: JSON.stringify(init),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /'nope' is neither a tool group \(records, indexes/,
    );
  });

  it("svc mcp --tools records,indexes serves that subset over stdio; --tools all adds the admin tools", async () => {
    const client = await stdioClient(key, ["--tools", "records,indexes"]);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(groupNames("records", "indexes"));
      const r = (await client.callTool({ name: "records_stats", arguments: { namespace: "mcp-subset" } })) as Result;
      expect(r.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const all = await stdioClient(key, ["--tools", "all"]);
    try {
      expect((await all.listTools()).tools.map((t) => t.name)).toContain("admin_credit");
    } finally {
      await all.close();
    }
  });

  it("lists records namespaces and indexes as resources and reads them", async () => {
    expect(
      (
        await call(srv.url, key, "POST", "/v1/records/mcp-res", {
          items: [
            { kind: "note", text: "a resource" },
            { kind: "decision", text: "another" },
          ],
        })
      ).status,
    ).toBe(200);
    expect((await call(srv.url, key, "POST", "/v1/indexes", { name: "mcp-res-idx", dimension: 4 })).status).toBe(201);
    for (const client of [await httpClient(key), await stdioClient(key)]) {
      try {
        const { resources } = await client.listResources();
        const uris = resources.map((r) => r.uri);
        expect(uris).toContain("svc://records/mcp-res");
        expect(uris).toContain("svc://indexes/mcp-res-idx");
        const rec = JSON.parse(((await client.readResource({ uri: "svc://records/mcp-res" })).contents[0] as { text: string }).text);
        expect(rec).toMatchObject({ namespace: "mcp-res", count: 2, byKind: { note: 1, decision: 1 } });
        const idx = JSON.parse(((await client.readResource({ uri: "svc://indexes/mcp-res-idx" })).contents[0] as { text: string }).text);
        expect(idx).toMatchObject({ name: "mcp-res-idx", dimension: 4, stats: { totalVectorCount: 0 } });
        await expect(client.readResource({ uri: "svc://records/" + "x".repeat(3) })).resolves.toBeDefined(); // an empty namespace reads as zero counts
        await expect(client.readResource({ uri: "svc://nothing/x" })).rejects.toThrow(/unknown resource/);
      } finally {
        await client.close();
      }
    }
    // a session serving neither records nor indexes lists no resources
    const kgOnly = await httpClient(key, { query: "?tools=kg" });
    try {
      expect((await kgOnly.listResources()).resources).toEqual([]);
    } finally {
      await kgOnly.close();
    }
  });
});
