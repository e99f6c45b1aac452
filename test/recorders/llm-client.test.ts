import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushRecorders, wrapClient } from "../../src/recorders/index.js";
import { call } from "../e2e/client.js";
import { startServerProcess, type ServerProcess } from "../e2e/server-process.js";
import { until } from "../e2e/until.js";

/** An Anthropic-style fake: messages.create, streaming when asked. */
function fakeAnthropic() {
  const events = [
    { type: "message_start", message: { model: "claude-x", usage: { input_tokens: 11, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: ", stream" } },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 4 } },
    { type: "message_stop" },
  ];
  return {
    apiKey: "vendor-secret",
    messages: {
      calls: 0,
      async create(params: { stream?: boolean }) {
        this.calls++;
        if (params.stream)
          return {
            events,
            async *[Symbol.asyncIterator]() {
              for (const e of events) yield e;
            },
          };
        return {
          id: "msg_1",
          type: "message",
          model: "claude-x",
          content: [{ type: "text", text: "Paris." }],
          stop_reason: "end_turn",
          usage: { input_tokens: 12, output_tokens: 3 },
        };
      },
    },
  };
}

function fakeOpenAI() {
  const chunks = [
    { model: "gpt-x", choices: [{ delta: { content: "Ber" }, finish_reason: null }] },
    { model: "gpt-x", choices: [{ delta: { content: "lin." }, finish_reason: "stop" }] },
    { model: "gpt-x", choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } },
  ];
  return {
    chat: {
      completions: {
        async create(params: { stream?: boolean }) {
          if (params.stream)
            return {
              chunks,
              async *[Symbol.asyncIterator]() {
                for (const c of chunks) yield c;
              },
            };
          return {
            model: "gpt-x",
            choices: [{ message: { role: "assistant", content: "Rome." }, finish_reason: "stop" }],
            usage: { prompt_tokens: 9, completion_tokens: 2 },
          };
        },
      },
    },
    responses: {
      async create(_params: unknown) {
        return { model: "gpt-r", status: "completed", output_text: "Madrid.", usage: { input_tokens: 5, output_tokens: 2 } };
      },
    },
  };
}

describe("wrapClient against a real server", () => {
  let server: ServerProcess;
  let key: string;
  const records = async (ns: string) =>
    (await call(server.url, key, "POST", `/v1/records/${ns}/query`, { includeText: true, includeMeta: true, topK: 100 })).body
      .records as any[];

  beforeAll(async () => {
    server = await startServerProcess();
    key = server.adminKey!;
  }, 60_000);
  afterAll(async () => server?.dispose());

  it("anthropic: same result object, one llm_turn record with the exact shape", async () => {
    const raw = fakeAnthropic();
    const inner = await raw.messages.create({});
    const client = wrapClient(raw, { namespace: "ant", url: server.url, apiKey: key, ttl_days: 3 });
    const original = raw.messages.create.bind(raw.messages);
    let returned: unknown;
    raw.messages.create = async (p: { stream?: boolean }) => (returned = await original(p)) as never;
    const res = await client.messages.create({
      model: "claude-x",
      max_tokens: 10,
      messages: [
        { role: "user", content: "earlier" },
        { role: "assistant", content: "ok" },
        { role: "user", content: [{ type: "text", text: "Capital of France?" }] },
      ],
    } as never);
    expect(res).toBe(returned);
    expect(res).toEqual(inner);
    await flushRecorders();
    const [r] = await until(
      "the record",
      () => records("ant"),
      (rs) => rs.length === 1,
    );
    expect(r.kind).toBe("llm_turn");
    expect(r.text).toBe("USER: Capital of France?\n\nASSISTANT: Paris.");
    expect(r.tags).toEqual(["anthropic", "claude-x"]);
    expect(r.ttlDays).toBe(3);
    expect(r.meta).toMatchObject({ vendor: "anthropic", model: "claude-x", stop_reason: "end_turn", input_tokens: 12, output_tokens: 3 });
    expect(r.meta.id).toMatch(/^llm-\d{13}-[a-z0-9]+$/);
    expect(typeof r.meta.latency_ms).toBe("number");
    expect(Object.keys(r.meta).sort()).toEqual(["id", "input_tokens", "latency_ms", "model", "output_tokens", "stop_reason", "vendor"]);
    expect(Math.abs(r.ts - Date.now())).toBeLessThan(60_000);
  });

  it("anthropic streaming: chunks pass through one for one, recorded after the end", async () => {
    const raw = fakeAnthropic();
    const client = wrapClient(raw, { namespace: "ant-stream", url: server.url, apiKey: key });
    const stream = (await client.messages.create({
      model: "claude-x",
      stream: true,
      messages: [{ role: "user", content: "greet" }],
    } as never)) as any;
    const seen: unknown[] = [];
    for await (const e of stream) seen.push(e);
    expect(seen).toEqual(stream.events);
    seen.forEach((e, i) => expect(e).toBe(stream.events[i]));
    await flushRecorders();
    const [r] = await until(
      "the stream record",
      () => records("ant-stream"),
      (rs) => rs.length === 1,
    );
    expect(r.text).toBe("USER: greet\n\nASSISTANT: Hello, stream");
    expect(r.meta).toMatchObject({ vendor: "anthropic", model: "claude-x", stop_reason: "end_turn", input_tokens: 11, output_tokens: 4 });
  });

  it("openai chat, chat streaming and responses", async () => {
    const raw = fakeOpenAI();
    const client = wrapClient(raw, { namespace: "oai", url: server.url, apiKey: key });
    const res = await client.chat.completions.create({
      model: "gpt-x",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "Capital of Italy?" },
      ],
    } as never);
    expect((res as any).choices[0].message.content).toBe("Rome.");
    const stream = (await client.chat.completions.create({
      model: "gpt-x",
      stream: true,
      messages: [{ role: "user", content: "Capital of Germany?" }],
    } as never)) as any;
    const seen: unknown[] = [];
    for await (const c of stream) seen.push(c);
    seen.forEach((c, i) => expect(c).toBe(stream.chunks[i]));
    expect(seen).toHaveLength(stream.chunks.length);
    await client.responses.create({ model: "gpt-r", input: "Capital of Spain?" } as never);
    await flushRecorders();
    const rs = await until(
      "three records",
      () => records("oai"),
      (x) => x.length === 3,
    );
    const byText = Object.fromEntries(rs.map((r) => [r.text, r]));
    expect(byText["USER: Capital of Italy?\n\nASSISTANT: Rome."].meta).toMatchObject({
      vendor: "openai",
      model: "gpt-x",
      stop_reason: "stop",
      input_tokens: 9,
      output_tokens: 2,
    });
    expect(byText["USER: Capital of Germany?\n\nASSISTANT: Berlin."].meta).toMatchObject({
      vendor: "openai",
      model: "gpt-x",
      stop_reason: "stop",
      input_tokens: 7,
      output_tokens: 2,
    });
    expect(byText["USER: Capital of Spain?\n\nASSISTANT: Madrid."].meta).toMatchObject({
      vendor: "openai",
      model: "gpt-r",
      stop_reason: "completed",
      input_tokens: 5,
      output_tokens: 2,
    });
  });

  it("with index: embeds via /v1/embed and upserts llm-... into the index namespace", async () => {
    expect(
      (
        await call(server.url, key, "POST", "/v1/indexes", {
          name: "turns",
          dimension: 1024,
          metric: "cosine",
          spec: { serverless: { cloud: "aws", region: "us-east-1" } },
        })
      ).status,
    ).toBe(201);
    const client = wrapClient(fakeAnthropic(), { namespace: "agent", index: "turns", url: server.url, apiKey: key });
    await client.messages.create({ model: "claude-x", messages: [{ role: "user", content: "Capital of France?" }] } as never);
    await flushRecorders();
    const emb = await call(server.url, key, "POST", "/v1/embed", { texts: ["USER: Capital of France?\n\nASSISTANT: Paris."] });
    expect(emb.status).toBe(200);
    expect(emb.body.dimension).toBe(1024);
    const q = await until(
      "the vector",
      () =>
        call(server.url, key, "POST", "/v1/indexes/turns/query", {
          namespace: "agent",
          vector: emb.body.vectors[0],
          topK: 5,
          includeMetadata: true,
        }),
      (r) => r.body?.matches?.length === 1,
    );
    const m = q.body.matches[0];
    expect(m.id).toMatch(/^llm-\d{13}-[a-z0-9]+$/);
    expect(m.score).toBeGreaterThan(0.99);
    expect(m.metadata).toMatchObject({
      kind: "llm_turn",
      vendor: "anthropic",
      model: "claude-x",
      stop_reason: "end_turn",
      input_tokens: 12,
      output_tokens: 3,
    });
    expect(typeof m.metadata.ts).toBe("number");
    expect(typeof m.metadata.latency_ms).toBe("number");
  });

  it("index mode with ttl_days: the vector carries svc_expires_at, and the server hides it once that passes", async () => {
    expect((await call(server.url, key, "POST", "/v1/indexes", { name: "turns-ttl", dimension: 1024, metric: "cosine" })).status).toBe(201);
    const client = wrapClient(fakeAnthropic(), { namespace: "agent", index: "turns-ttl", url: server.url, apiKey: key, ttl_days: 2 });
    await client.messages.create({ model: "claude-x", messages: [{ role: "user", content: "remember me for two days" }] } as never);
    await flushRecorders();
    const emb = (await call(server.url, key, "POST", "/v1/embed", { texts: ["USER: remember me for two days\n\nASSISTANT: Paris."] })).body
      .vectors[0];
    const q = await until(
      "the vector",
      () =>
        call(server.url, key, "POST", "/v1/indexes/turns-ttl/query", { namespace: "agent", vector: emb, topK: 5, includeMetadata: true }),
      (r) => r.body?.matches?.length === 1,
    );
    const m = q.body.matches[0].metadata;
    expect(m.ttl_days).toBe(2);
    expect(m.svc_expires_at).toBe(m.ts + 2 * 86_400_000);

    // The server honours it: a vector whose svc_expires_at has passed is not returned by query or fetch.
    const now = Date.now();
    const vec = (x: number) => Array.from({ length: 1024 }, (_, i) => (i === 0 ? 1 : i === 1 ? x : 0));
    expect(
      (
        await call(server.url, key, "POST", "/v1/indexes/turns-ttl/vectors/upsert", {
          namespace: "exp",
          vectors: [
            { id: "gone", values: vec(0.1), metadata: { svc_expires_at: now - 1 } },
            { id: "kept", values: vec(0.2), metadata: { svc_expires_at: now + 86_400_000 } },
            { id: "plain", values: vec(0.3), metadata: { kind: "x" } },
          ],
        })
      ).status,
    ).toBe(200);
    const ids = async () =>
      (
        (await call(server.url, key, "POST", "/v1/indexes/turns-ttl/query", { namespace: "exp", vector: vec(0.1), topK: 10 })).body
          .matches as { id: string }[]
      )
        .map((x) => x.id)
        .sort();
    const live = await until("the live vectors", ids, (x) => x.length >= 2);
    expect(live).toEqual(["kept", "plain"]);
    const f = await call(server.url, key, "GET", "/v1/indexes/turns-ttl/vectors/fetch?namespace=exp&ids=gone&ids=kept&ids=plain");
    expect(Object.keys(f.body.vectors).sort()).toEqual(["kept", "plain"]);
  });

  it("/v1/embed rejects bad bodies and needs a key", async () => {
    expect((await call(server.url, null, "POST", "/v1/embed", { texts: ["a"] })).status).toBe(401);
    expect((await call(server.url, key, "POST", "/v1/embed", { texts: [] })).status).toBe(400);
    expect((await call(server.url, key, "POST", "/v1/embed", { texts: Array(257).fill("a") })).status).toBe(400);
    expect((await call(server.url, key, "POST", "/v1/embed", { texts: [1] })).status).toBe(400);
  });

  it("an unreachable server is swallowed; the call result is unchanged", async () => {
    const client = wrapClient(fakeAnthropic(), { namespace: "x", url: "http://127.0.0.1:1", apiKey: "k" });
    const res = await client.messages.create({ model: "claude-x", messages: [{ role: "user", content: "hi" }] } as never);
    expect((res as any).content[0].text).toBe("Paris.");
    await expect(flushRecorders()).resolves.toBeUndefined();
    const failing = wrapClient(
      {
        messages: {
          create: async (_p?: unknown) => {
            throw new Error("vendor down");
          },
        },
      },
      { namespace: "x", url: "http://127.0.0.1:1" },
    );
    await expect(failing.messages.create({})).rejects.toThrow("vendor down");
  });

  it("the same client wrapped twice: each wrapper writes with its own options", async () => {
    const raw = fakeAnthropic();
    const a = wrapClient(raw, { namespace: "twice-a", url: server.url, apiKey: key });
    const b = wrapClient(raw, { namespace: "twice-b", url: server.url, apiKey: key, ttl_days: 5 });
    expect(a.messages).toBe(a.messages); // still one proxy per wrapper and resource
    expect(a.messages).not.toBe(b.messages);
    await a.messages.create({ model: "claude-x", messages: [{ role: "user", content: "via a" }] } as never);
    await b.messages.create({ model: "claude-x", messages: [{ role: "user", content: "via b" }] } as never);
    await flushRecorders();
    const ra = await until(
      "a's record",
      () => records("twice-a"),
      (rs) => rs.length >= 1,
    );
    const rb = await until(
      "b's record",
      () => records("twice-b"),
      (rs) => rs.length >= 1,
    );
    expect(ra.map((r) => r.text)).toEqual(["USER: via a\n\nASSISTANT: Paris."]);
    expect(rb.map((r) => r.text)).toEqual(["USER: via b\n\nASSISTANT: Paris."]);
    expect(ra[0].ttlDays).toBeUndefined();
    expect(rb[0].ttlDays).toBe(5);
  });

  it("flushRecorders covers the call just made: a script that awaits it and exits keeps the record", async () => {
    const entry = fileURLToPath(new URL("../../dist/recorders/index.js", import.meta.url));
    const script = `
      const { wrapClient, flushRecorders } = await import(${JSON.stringify(entry)});
      const raw = { messages: { create: async () => ({ model: "m", content: [{ type: "text", text: "bye" }], stop_reason: "end_turn", usage: {} }) } };
      const client = wrapClient(raw, { namespace: "script", url: process.env.URL, apiKey: process.env.KEY });
      await client.messages.create({ model: "m", messages: [{ role: "user", content: "short script" }] });
      await flushRecorders();
      process.exit(0);`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, URL: server.url, KEY: key },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, err).toBe(0);
    // The script has exited: whatever it sent is on the server (durable on acknowledgement).
    const rs = await until(
      "the script's record",
      () => records("script"),
      (x) => x.length >= 1,
      3_000,
    );
    expect(rs.map((r) => r.text)).toEqual(["USER: short script\n\nASSISTANT: bye"]);
  });

  it("latency_ms is the call itself, not the caller's work after it (plain and streaming)", async () => {
    const busy = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const raw = {
      messages: {
        async create(p: { stream?: boolean }) {
          await sleep(50);
          const events = [{ type: "content_block_delta", delta: { type: "text_delta", text: "slow" } }];
          if (p.stream)
            return {
              async *[Symbol.asyncIterator]() {
                for (const e of events) {
                  await sleep(50);
                  yield e;
                }
              },
            };
          return { model: "m", content: [{ type: "text", text: "slow" }], stop_reason: "end_turn", usage: {} };
        },
      },
    };
    const client = wrapClient(raw, { namespace: "latency", url: server.url, apiKey: key });
    // Plain: everything the wrapper can see happens inside the caller's [before, after] span.
    let t = performance.now();
    await client.messages.create({ model: "m", messages: [{ role: "user", content: "plain" }] } as never);
    const plainSpan = performance.now() - t;
    busy(300); // the caller's own work after the call
    // Streaming: the call lasts until the stream's end.
    t = performance.now();
    const stream = (await client.messages.create({
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "stream" }],
    } as never)) as AsyncIterable<unknown>;
    for await (const _ of stream) void _;
    const streamSpan = performance.now() - t;
    busy(300);
    await flushRecorders();
    const rs = await until(
      "two records",
      () => records("latency"),
      (x) => x.length === 2,
    );
    const byUser = Object.fromEntries(rs.map((r) => [r.text.split("\n")[0], r.meta.latency_ms as number]));
    expect(byUser["USER: plain"]).toBeGreaterThanOrEqual(45);
    expect(byUser["USER: plain"]).toBeLessThanOrEqual(plainSpan + 0.001);
    expect(byUser["USER: stream"]).toBeGreaterThanOrEqual(90); // to the end of the stream, not to its first chunk
    expect(byUser["USER: stream"]).toBeLessThanOrEqual(streamSpan + 0.001);
  });

  it("overhead on the call path (reported, not asserted)", async () => {
    const raw = {
      messages: {
        create: (_p: unknown) =>
          Promise.resolve({
            model: "m",
            content: [{ type: "text", text: "r" }],
            stop_reason: "end_turn",
            usage: { input_tokens: 1, output_tokens: 1 },
          }),
      },
    };
    // unreachable port: sends fail fast and are swallowed
    const client = wrapClient(raw, { namespace: "bench", url: "http://127.0.0.1:1" });
    const params = { model: "m", messages: [{ role: "user", content: "q" }] };
    const time = (fn: () => unknown) => {
      const t = performance.now();
      fn();
      return performance.now() - t;
    };
    const n = 2000;
    const base: number[] = [];
    const wrapped: number[] = [];
    for (let i = 0; i < n; i++) {
      base.push(time(() => raw.messages.create(params)));
      wrapped.push(time(() => client.messages.create(params)));
    }
    const p99 = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
    console.log(
      `wrapClient synchronous call-path cost: p99 ${(p99(wrapped) - p99(base)).toFixed(4)} ms over the bare fake (bare p99 ${p99(base).toFixed(4)} ms, wrapped p99 ${p99(wrapped).toFixed(4)} ms, n=${n})`,
    );
    await flushRecorders();
  }, 60_000);
});
