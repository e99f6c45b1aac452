/** POST /v1/ask over real HTTP against local NLWeb-style sites on loopback (allow-listed): both dialects (GET JSON/SSE, POST {query, prefer}), discovery, the agent passed on, 400 E_UPSTREAM without an endpoint, SSRF attempts refused. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { startCommonsServer, type CommonsServer } from "../commons/commons-server.js";
import { startSite, type SiteRequest, type TestSite } from "../commons/site.js";

const pages = (origin: string) => [
  {
    url: `${origin}/guides/midnight`,
    name: "Why forecasts go stale at midnight",
    score: 0.92,
    description: "Our cache rolls over at 01:00 UTC.",
  },
  { url: `${origin}/status`, name: "Status \u202Epage", score: 0.41, description: "Incidents." },
  { url: "javascript:alert(1)", name: "dropped", score: 0.3 },
];

/** GET ?query=&mode= with JSON, or ?generate_mode= with SSE when asked for `sse` in the path. */
function getJsonSite(origin: () => string) {
  return (req: SiteRequest, u: URL) => {
    if (u.pathname !== "/ask") return { status: 404, body: "not here" };
    if (req.method !== "GET") return { status: 405, body: "GET only" };
    const mode = u.searchParams.get("mode");
    const q = u.searchParams.get("query");
    return {
      body: {
        query_id: "q1",
        results: pages(origin()),
        ...(mode === "summarize" ? { summary: { message: `About '${q}': the cache rolls over at 01:00 UTC.` } } : {}),
      },
    };
  };
}

function sseSite(origin: () => string) {
  return (_req: SiteRequest, u: URL) => {
    if (u.pathname !== "/ask") return { status: 404, body: "" };
    const mode = u.searchParams.get("generate_mode");
    const events = [
      { message_type: "begin-nlweb-response" },
      { message_type: "result_batch", results: pages(origin()).slice(0, 1) },
      { message_type: "result_batch", results: pages(origin()).slice(1, 2) },
      ...(mode === "generate" ? [{ message_type: "nlws", answer: "Forecasts refresh at 01:00 UTC.", items: [] }] : []),
      { message_type: "end-nlweb-response" },
    ];
    return {
      headers: { "content-type": "text/event-stream" },
      body: `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")}data: [DONE]\n\n`,
    };
  };
}

/** The POST dialect only, at a path published in /.well-known/nlweb.json. */
function postSite(origin: () => string) {
  return (req: SiteRequest, u: URL) => {
    if (u.pathname === "/.well-known/nlweb.json") return { body: { ask: "/api/nlweb/ask" } };
    if (u.pathname !== "/api/nlweb/ask") return { status: 404, body: "" };
    if (req.method !== "POST") return { status: 405, body: "" };
    const b = JSON.parse(req.body) as { query: { text: string; site: string }; prefer: { mode: string } };
    const results: unknown[] = pages(origin()).slice(0, 1);
    if (b.prefer.mode === "generate") results.push({ "@type": "Answer", text: `Answer to ${b.query.text}` });
    return { body: { _meta: { response_type: "answer", version: "0.5" }, results } };
  };
}

describe("POST /v1/ask", () => {
  let getJson: TestSite;
  let sse: TestSite;
  let post: TestSite;
  let linked: TestSite;
  let none: TestSite;
  let redirector: TestSite;
  let secret: TestSite;
  let srv: CommonsServer;

  beforeAll(async () => {
    getJson = await startSite(getJsonSite(() => getJson.origin));
    sse = await startSite(sseSite(() => sse.origin));
    post = await startSite(postSite(() => post.origin));
    linked = await startSite((_req, u) => {
      if (u.pathname === "/")
        return { headers: { "content-type": "text/html" }, body: `<html><head><link rel="nlweb" href="/qa"></head><body>hi</body></html>` };
      if (u.pathname === "/qa") return { body: { results: [{ url: `${linked.origin}/about`, name: "About", score: 1 }] } };
      return { status: 404, body: "" };
    });
    none = await startSite(() => ({ status: 404, headers: { "content-type": "text/html" }, body: "<html>nothing</html>" }));
    secret = await startSite(() => ({ body: { results: [{ url: "http://secret.internal/", name: "internal" }] } }));
    redirector = await startSite((_req, u) => {
      if (u.pathname === "/ask") return { status: 302, headers: { location: `${secret.origin}/ask` } };
      if (u.pathname === "/meta/ask") return { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } };
      return { status: 404, body: "" };
    });
    const allow = [getJson, sse, post, linked, none, redirector].map((s) => `127.0.0.1:${s.port}`);
    srv = await startCommonsServer({ outbound: { allow, http: true, timeoutMs: 3000 } });
  });
  afterAll(async () => {
    await srv?.dispose();
    for (const s of [getJson, sse, post, linked, none, redirector, secret]) await s?.close();
  });

  it("GET dialect with a JSON reply: the pages with their URLs (unsafe URLs dropped, invisible characters stripped); the agent is passed on", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", {
      site: getJson.origin,
      question: "why are forecasts stale at midnight?",
      agent: "alpha",
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ site: `127.0.0.1:${getJson.port}`, endpoint: `${getJson.origin}/ask`, dialect: "get", mode: "list" });
    expect(r.body.pages).toEqual([
      {
        url: `${getJson.origin}/guides/midnight`,
        name: "Why forecasts go stale at midnight",
        score: 0.92,
        description: "Our cache rolls over at 01:00 UTC.",
      },
      { url: `${getJson.origin}/status`, name: "Status page", score: 0.41, description: "Incidents." },
    ]);
    expect(r.body.answer).toBeUndefined();
    expect(r.body.notice).toMatch(/seen by the bridge operator/);
    const asked = getJson.requests.find((x) => x.url.startsWith("/ask?"))!;
    const q = new URL(asked.url, "http://x").searchParams;
    expect(q.get("query")).toBe("why are forecasts stale at midnight?");
    expect(q.get("mode")).toBe("list");
    expect(q.get("generate_mode")).toBe("list");
    expect(q.get("agent")).toBe("alpha");
    expect(asked.headers["user-agent"]).toContain("agent: alpha");
  });

  it("summarize returns the site's prose with its sources", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", { site: getJson.origin, question: "stale forecasts", mode: "summarize" });
    expect(r.status).toBe(200);
    expect(r.body.answer).toEqual({
      text: "About 'stale forecasts': the cache rolls over at 01:00 UTC.",
      sources: [`${getJson.origin}/guides/midnight`, `${getJson.origin}/status`],
    });
  });

  it("GET dialect with an SSE reply (generate_mode), batches merged, prose from the nlws message", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", { site: sse.origin, question: "when do forecasts refresh?", mode: "generate" });
    expect(r.status).toBe(200);
    expect(r.body.dialect).toBe("get");
    expect(r.body.pages.map((p: { url: string }) => p.url)).toEqual([`${sse.origin}/guides/midnight`, `${sse.origin}/status`]);
    expect(r.body.answer.text).toBe("Forecasts refresh at 01:00 UTC.");
  });

  it("POST dialect at an endpoint published in /.well-known/nlweb.json", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", {
      site: post.origin,
      question: "cache policy",
      mode: "generate",
      agent: "beta",
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      endpoint: `${post.origin}/api/nlweb/ask`,
      dialect: "post",
      pages: [{ url: `${post.origin}/guides/midnight` }],
    });
    expect(r.body.answer.text).toBe("Answer to cache policy");
    const sent = post.requests.find((x) => x.method === "POST")!;
    expect(JSON.parse(sent.body)).toEqual({
      query: { text: "cache policy", site: `127.0.0.1:${post.port}` },
      prefer: { mode: "generate", streaming: false },
      meta: { agent: "beta" },
    });
    expect(sent.headers["x-agent-name"]).toBe("beta");
    // the endpoint is remembered: the next question goes straight to it
    const n = post.requests.length;
    expect((await call(srv.url, null, "POST", "/v1/ask", { site: post.origin, question: "again", mode: "list" })).status).toBe(200);
    expect(post.requests.slice(n).map((x) => `${x.method} ${new URL(x.url, "http://x").pathname}`)).toEqual(["POST /api/nlweb/ask"]);
  });

  it("an endpoint linked from the home page (<link rel=nlweb>), and an explicit endpoint path in site", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", { site: linked.origin, question: "who are you" });
    expect(r.body).toMatchObject({ endpoint: `${linked.origin}/qa`, pages: [{ url: `${linked.origin}/about`, name: "About", score: 1 }] });
    const direct = await call(srv.url, null, "POST", "/v1/ask", { site: `${linked.origin}/qa`, question: "who are you" });
    expect(direct.body.endpoint).toBe(`${linked.origin}/qa`);
  });

  it("400 E_UPSTREAM naming what was tried when the site publishes no endpoint", async () => {
    const r = await call(srv.url, null, "POST", "/v1/ask", { site: none.origin, question: "anything?" });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: "E_UPSTREAM", field: "site" });
    expect(r.body.error.message).toContain(`${none.origin}/ask`);
  });

  it("refuses SSRF attempts: loopback, private, metadata, a DNS name resolving to loopback, redirects to them; nothing reaches the target", async () => {
    const attempts = [
      `http://127.0.0.1:${secret.port}`,
      `127.0.0.1:${secret.port}`,
      "http://10.0.0.1",
      "10.1.2.3",
      "http://169.254.169.254/latest/meta-data/",
      `http://localhost:${secret.port}`,
      `http://[::1]:${secret.port}`,
      `http://[::ffff:127.0.0.1]:${secret.port}`,
      "http://0.0.0.0:80",
      "http://2130706433/",
      `${redirector.origin}/ask`,
      `${redirector.origin}/meta/ask`,
      "file:///etc/passwd",
      "https://user:pw@example.com",
    ];
    for (const site of attempts) {
      const r = await call(srv.url, null, "POST", "/v1/ask", { site, question: "internal secrets?" });
      expect(r.status, site).toBe(400);
      expect(r.body.error.field, site).toBe("site");
      expect(["E_OUTBOUND_BLOCKED", "E_BAD_REQUEST"], site).toContain(r.body.error.code);
    }
    expect(secret.requests).toEqual([]);
  });

  it("rejects bad requests with the field", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ question: "q" }, "site"],
      [{ site: getJson.origin }, "question"],
      [{ site: getJson.origin, question: "hi\u200b" }, "question"],
      [{ site: getJson.origin, question: "q", mode: "shout" }, "mode"],
      [{ site: getJson.origin, question: "q", agent: "<x>" }, "agent"],
      [{ site: 42, question: "q" }, "site"],
    ];
    for (const [body, field] of cases) {
      const r = await call(srv.url, null, "POST", "/v1/ask", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.field).toBe(field);
    }
  });
});
