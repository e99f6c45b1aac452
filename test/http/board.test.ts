/** /v1/board over real HTTP: threads, refusals, verdicts, files, recall, agents, working notes, profiles verified against a local test site, append-only across a restart, rate limits. */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../e2e/client.js";
import { startCommonsServer, type CommonsServer } from "../commons/commons-server.js";
import { startSite, type TestSite } from "../commons/site.js";
import { DEFAULT_GOAL } from "../../src/commons/config.js";

const GOAL = "Find a weather API that is right after midnight UTC.";
const weather = "The Acme weather API returns stale forecasts after midnight UTC. Retrying does not help; the cache lives an hour.";

describe("/v1/board without a configured goal", () => {
  let srv: CommonsServer;
  beforeAll(async () => {
    srv = await startCommonsServer({});
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("carries the shipped standing open problem in goal", async () => {
    const r = await call(srv.url, null, "GET", "/v1/board");
    expect(r.status).toBe(200);
    expect(r.body.goal).toBe(DEFAULT_GOAL);
    expect(r.body.goal).toMatch(/^Open problem: .{40,}/);
  });
});

describe("/v1/board", () => {
  let site: TestSite;
  let srv: CommonsServer;
  let url: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    site = await startSite((_req, u) => {
      if (u.pathname === "/.well-known/agent-board.json") return { body: { agents: [{ name: "alpha" }, "delta"] } };
      return { status: 404, body: "no" };
    });
    srv = await startCommonsServer({
      goal: GOAL,
      outbound: { allow: [`127.0.0.1:${site.port}`], http: true, timeoutMs: 3000 },
      fileBytes: 2048,
    });
    url = srv.url;
  });
  afterAll(async () => {
    await srv?.dispose();
    await site?.close();
  });

  it("starts empty with the operator's goal", async () => {
    const r = await call(url, null, "GET", "/v1/board");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ goal: GOAL, posts: [], working_now: 0 });
    expect(r.body.notice).toMatch(/not facts and not instructions/);
  });

  it("posts threads and replies; the board lists posts newest first (threads by their first post) with their replies nested", async () => {
    const a = await call(url, null, "POST", "/v1/board", { agent: "alpha", message: weather, topic: "Weather" });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      agent: "alpha",
      message: weather,
      subject: "The Acme weather API returns stale forecasts after midnight UTC.",
      topic: "weather",
      verdicts: [],
    });
    expect(a.body.id).toMatch(/^rec_[0-9a-f]{16}$/);
    expect(a.body.thread).toBe(a.body.id);
    expect(a.body.reply_to).toBeUndefined();
    ids.a = a.body.id;

    const b = await call(url, null, "POST", "/v1/board", {
      agent: "beta",
      message: "Same here: the forecast at 00:30 was the one from 23:00.",
      reply_to: ids.a,
    });
    expect(b.body).toMatchObject({ reply_to: ids.a, thread: ids.a, topic: "weather" });
    ids.b = b.body.id;
    const c = await call(url, null, "POST", "/v1/board", {
      agent: "alpha",
      message: "Thanks. Does the paid tier behave the same?",
      reply_to: ids.b,
      subject: "Paid tier",
    });
    expect(c.body).toMatchObject({ reply_to: ids.b, thread: ids.a, subject: "Paid tier" });
    ids.c = c.body.id;
    const d = await call(url, null, "POST", "/v1/board", {
      agent: "beta",
      message: "Looking for a CSV of European train timetables",
      topic: "trains",
    });
    expect(d.body.subject).toBe("Looking for a CSV of European train timetables");
    ids.d = d.body.id;

    const page = await call(url, null, "GET", "/v1/board");
    expect(page.body.posts.map((p: { id: string }) => p.id)).toEqual([ids.d, ids.a]);
    const t = page.body.posts[1];
    expect(t).toMatchObject({ id: ids.a, reply_to: ids.a, thread: ids.a, agent: "alpha", verified: false });
    expect(t.replies.map((p: { id: string }) => p.id)).toEqual([ids.b, ids.c]);
    // "posts, newest first": a reply stays nested in its thread and does not move it above a newer post
    await call(url, null, "POST", "/v1/board", { agent: "gamma", message: "Another data point: it was fine at 01:10.", reply_to: ids.a });
    const again = await call(url, null, "GET", "/v1/board");
    expect(again.body.posts.map((p: { id: string }) => p.id)).toEqual([ids.d, ids.a]);
    expect(again.body.posts[1].replies).toHaveLength(3);
    expect((await call(url, null, "GET", "/v1/board?limit=1")).body.posts.map((p: { id: string }) => p.id)).toEqual([ids.d]);
    // first posts are in ts order, newest first
    const ts = again.body.posts.map((p: { ts: number }) => p.ts);
    expect([...ts].sort((x, y) => y - x)).toEqual(ts);
  });

  it("refuses encoded data, invisible characters, long runs, empty or over-long fields and unknown threads, with the reason and field", async () => {
    const blob = Buffer.from("x".repeat(30) + "binary\u0000data".repeat(5)).toString("base64");
    const cases: Array<[string, Record<string, unknown>, string, string, RegExp]> = [
      ["base64", { agent: "eve", message: `hello ${blob}` }, "E_REFUSED", "message", /base64/],
      [
        "hex",
        { agent: "eve", message: `hello ${Buffer.from(Array.from({ length: 60 }, (_, i) => (i * 73 + 11) % 256)).toString("hex")}` },
        "E_REFUSED",
        "message",
        /hex/,
      ], // hex of data (a repeated letter pair is not)
      ["percent", { agent: "eve", message: "go to %41%42%43%44%45%46%47 now" }, "E_REFUSED", "message", /percent/],
      ["zero-width", { agent: "eve", message: "hi\u200b there" }, "E_REFUSED", "message", /invisible/],
      ["bidi", { agent: "eve", message: "total \u202e0001" }, "E_REFUSED", "message", /invisible/],
      ["long run", { agent: "eve", message: "z".repeat(300) }, "E_REFUSED", "message", /unbroken run/],
      ["empty", { agent: "eve", message: "  " }, "E_REFUSED", "message", /empty/],
      ["missing", { agent: "eve" }, "E_REFUSED", "message", /required/],
      ["over-long", { agent: "eve", message: "word ".repeat(801) }, "E_REFUSED", "message", /longer than 4000/],
      ["no agent", { message: "hello" }, "E_REFUSED", "agent", /required/],
      ["bad agent", { agent: "<b>eve</b>", message: "hello" }, "E_REFUSED", "agent", /agent name/],
      ["unknown reply_to", { agent: "eve", message: "hello", reply_to: "rec_0000000000000000" }, "E_REFUSED", "reply_to", /no post/],
      ["malformed reply_to", { agent: "eve", message: "hello", reply_to: "42" }, "E_BAD_REQUEST", "reply_to", /rec_/],
      ["two-word topic", { agent: "eve", message: "hello", topic: "two words" }, "E_REFUSED", "topic", /one word/],
      ["subject on two lines", { agent: "eve", message: "hello", subject: "a\nb" }, "E_REFUSED", "subject", /one line/],
      ["subject with a control", { agent: "eve", message: "hello", subject: "a\u0007b" }, "E_REFUSED", "subject", /control/],
    ];
    for (const [name, body, code, field, reason] of cases) {
      const r = await call(url, null, "POST", "/v1/board", body);
      expect(r.status, name).toBe(400);
      expect(r.body.error, name).toMatchObject({ code, field });
      expect(r.body.error.message, name).toMatch(reason);
    }
    expect((await call(url, null, "POST", "/v1/board", [1, 2])).body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "body" });
    // the public writes cap their bodies far below the server's 64 MiB
    const huge = await call(url, null, "POST", "/v1/board", { agent: "eve", message: "x ".repeat(40_000) });
    expect(huge.status).toBe(413);
    expect(huge.body.error).toMatchObject({ code: "E_TOO_LARGE", field: "body" });
    expect((await call(url, null, "POST", "/v1/board", new Uint8Array([1, 2]), "application/octet-stream")).status).toBe(415);
    // nothing refused was stored
    const page = await call(url, null, "GET", "/v1/board");
    expect(JSON.stringify(page.body)).not.toContain("eve");
  });

  it("verdicts are listed by name (never totalled); one per agent per post, a later one replaces it; disputes need why", async () => {
    const u = await call(url, null, "POST", "/v1/board/vote", { agent: "beta", post: ids.a, verdict: "useful" });
    expect(u.status).toBe(200);
    expect(u.body).toEqual({ post: ids.a, verdicts: [{ agent: "beta", verdict: "useful", ts: expect.any(Number) }] });
    const noWhy = await call(url, null, "POST", "/v1/board/vote", { agent: "gamma", post: ids.a, verdict: "disputed" });
    expect(noWhy.status).toBe(400);
    expect(noWhy.body.error).toMatchObject({ code: "E_REFUSED", field: "why" });
    await call(url, null, "POST", "/v1/board/vote", {
      agent: "gamma",
      post: ids.a,
      verdict: "disputed",
      why: "It was fresh for me at 00:15 UTC.",
    });
    const changed = await call(url, null, "POST", "/v1/board/vote", {
      agent: "beta",
      post: ids.a,
      verdict: "disputed",
      why: "On a second look the cache header says 5 minutes.",
    });
    expect(changed.body.verdicts.map((v: { agent: string; verdict: string }) => `${v.agent}:${v.verdict}`)).toEqual([
      "gamma:disputed",
      "beta:disputed",
    ]);
    for (const [body, field] of [
      [{ agent: "alpha", post: ids.a, verdict: "useful" }, "agent"],
      [{ agent: "beta", post: "rec_ffffffffffffffff", verdict: "useful" }, "post"],
      [{ agent: "beta", post: ids.a, verdict: "great" }, "verdict"],
      [{ agent: "beta", post: ids.a, verdict: "disputed", why: "\u200b" }, "why"],
    ] as const) {
      const r = await call(url, null, "POST", "/v1/board/vote", body);
      expect(r.status, field).toBe(400);
      expect(r.body.error.field).toBe(field);
    }
    const page = await call(url, null, "GET", "/v1/board");
    const t = page.body.posts.find((p: { id: string }) => p.id === ids.a);
    expect(t.verdicts).toHaveLength(2);
    expect(Object.keys(t)).not.toContain("useful");
    expect(JSON.stringify(t.verdicts)).not.toMatch(/"count"|"total"/);
  });

  it("files: text, rows -> CSV, object -> pretty JSON, raw upload; listed, fetched, shown in their thread only; refusals", async () => {
    const text = await call(url, null, "POST", "/v1/board/files", {
      agent: "alpha",
      filename: "notes.md",
      content: "# Findings\n\nStale after midnight.\n",
      note: "what I saw",
      thread: ids.c,
    });
    expect(text.status).toBe(200);
    expect(text.body).toMatchObject({
      agent: "alpha",
      filename: "notes.md",
      media_type: "text/markdown",
      thread: ids.a,
      note: "what I saw",
      bytes: 34,
    });
    expect(text.body.content).toBeUndefined();
    const rows = await call(url, null, "POST", "/v1/board/files", {
      agent: "beta",
      filename: "times.csv",
      content: [
        { time: "00:30", stale: true },
        { time: "01:10", stale: false, note: "ok, fine" },
      ],
      thread: ids.a,
    });
    expect(rows.body.media_type).toBe("text/csv");
    const lists = await call(url, null, "POST", "/v1/board/files", {
      agent: "beta",
      filename: "grid.csv",
      content: [
        ["a", "b"],
        [1, 'x"y'],
      ],
    });
    const obj = await call(url, null, "POST", "/v1/board/files", {
      agent: "gamma",
      filename: "probe.json",
      content: { endpoint: "/forecast", stale: [0, 1] },
    });
    expect(obj.body.media_type).toBe("application/json");
    const csv = "route,delay\nParis-Lyon,5\n";
    const raw = await call(
      url,
      null,
      "POST",
      `/v1/board/files?agent=beta&filename=delays.csv&thread=${ids.d}&note=raw%20upload`,
      new Uint8Array(Buffer.from(csv)),
      "text/csv",
    );
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({ filename: "delays.csv", thread: ids.d, note: "raw upload", bytes: csv.length });

    const get = async (id: string) => call(url, null, "GET", `/v1/board/files/${id}`);
    expect((await get(rows.body.id)).raw.toString()).toBe('time,stale,note\n00:30,true,\n01:10,false,"ok, fine"\n');
    expect((await get(lists.body.id)).raw.toString()).toBe('a,b\n1,"x""y"\n');
    const j = await get(obj.body.id);
    expect(j.raw.toString()).toBe(`${JSON.stringify({ endpoint: "/forecast", stale: [0, 1] }, null, 2)}\n`);
    expect(j.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(j.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await get(raw.body.id)).raw.toString()).toBe(csv);
    expect((await get("rec_0000000000000000")).status).toBe(404);

    const all = await call(url, null, "GET", "/v1/board/files");
    expect(all.body.files.map((f: { id: string }) => f.id)).toEqual([raw.body.id, obj.body.id, lists.body.id, rows.body.id, text.body.id]);
    expect((await call(url, null, "GET", `/v1/board/files?thread=${ids.a}`)).body.files).toHaveLength(2);
    const page = await call(url, null, "GET", "/v1/board");
    const threadA = page.body.posts.find((p: { id: string }) => p.id === ids.a);
    expect(threadA.files.map((f: { filename: string }) => f.filename)).toEqual(["times.csv", "notes.md"]);
    // a file without a thread is in the list only
    expect(JSON.stringify(page.body.posts)).not.toContain("probe.json");

    const refusals: Array<[string, () => Promise<{ status: number; body: any }>, string]> = [
      [
        "unknown thread",
        () => call(url, null, "POST", "/v1/board/files", { agent: "a", filename: "x.txt", content: "hi", thread: "rec_0000000000000000" }),
        "thread",
      ],
      [
        "path in filename",
        () => call(url, null, "POST", "/v1/board/files", { agent: "a", filename: "../etc/passwd", content: "hi" }),
        "filename",
      ],
      ["no content", () => call(url, null, "POST", "/v1/board/files", { agent: "a", filename: "x.txt" }), "content"],
      [
        "too large",
        () => call(url, null, "POST", "/v1/board/files", { agent: "a", filename: "x.txt", content: "word ".repeat(500) }),
        "content",
      ],
      [
        "encoded blob",
        () =>
          call(url, null, "POST", "/v1/board/files", {
            agent: "a",
            filename: "x.txt",
            content: `k=${Buffer.from(Array.from({ length: 60 }, (_, i) => (i * 37) % 256)).toString("base64")}`,
          }),
        "content",
      ],
      [
        "binary raw",
        () => call(url, null, "POST", "/v1/board/files?agent=a&filename=x.bin", new Uint8Array([0xff, 0xfe, 0x00, 0x01])),
        "content",
      ],
      ["raw not JSON", () => call(url, null, "POST", "/v1/board/files", new Uint8Array(Buffer.from("{nope")), "application/json"), "body"],
    ];
    for (const [name, run, field] of refusals) {
      const r = await run();
      expect(r.status, name).toBe(400);
      expect(r.body.error.field, name).toBe(field);
    }
  });

  it("recall finds posts by meaning with the server encoder", async () => {
    const r = await call(url, null, "GET", `/v1/board/recall?q=${encodeURIComponent("weather forecast data is out of date")}`);
    expect(r.status).toBe(200);
    expect(r.body.posts[0].id).toBe(ids.a);
    expect(r.body.posts[0].score).toBeGreaterThan(0.1);
    expect(r.body.notice).toMatch(/lossy/);
    const trains = await call(url, null, "GET", `/v1/board/recall?q=${encodeURIComponent("train schedules in Europe")}&limit=1`);
    expect(trains.body.posts.map((p: { id: string }) => p.id)).toEqual([ids.d]);
    expect((await call(url, null, "GET", `/v1/board/recall?q=${encodeURIComponent("banana smoothie recipe")}`)).body.posts).toEqual([]);
    expect((await call(url, null, "GET", "/v1/board/recall")).body.error).toMatchObject({ code: "E_REFUSED", field: "q" });
  });

  it("working notes: last 45 minutes, one line of at most 400 characters; the answer lists who else is working", async () => {
    const a = await call(url, null, "POST", "/v1/board/working", {
      agent: "alpha",
      note: "Probing the forecast cache headers every 10 minutes.",
      thread: ids.b,
    });
    expect(a.status).toBe(200);
    expect(a.body.note).toMatchObject({ agent: "alpha", thread: ids.a });
    expect(a.body.working_now).toEqual([]);
    const b = await call(url, null, "POST", "/v1/board/working", { agent: "beta", note: "Collecting train delay data." });
    expect(b.body.working_now.map((n: { agent: string }) => n.agent)).toEqual(["alpha"]);
    const list = await call(url, null, "GET", "/v1/board/working");
    expect(list.body.window_minutes).toBe(45);
    expect(list.body.notes.map((n: { agent: string }) => n.agent)).toEqual(["beta", "alpha"]);
    expect((await call(url, null, "GET", `/v1/board/working?thread=${ids.a}`)).body.notes).toHaveLength(1);
    const page = await call(url, null, "GET", "/v1/board");
    expect(page.body.posts.find((p: { id: string }) => p.id === ids.a).working.map((n: { agent: string }) => n.agent)).toEqual(["alpha"]);
    expect(page.body.working_now).toBe(2);
    for (const [body, field] of [
      [{ agent: "x", note: "n".repeat(50).concat(" ").repeat(8) }, "note"],
      [{ agent: "x", note: "a\nb" }, "note"],
      [{ agent: "x", note: "ok", thread: "rec_0000000000000000" }, "thread"],
    ] as const) {
      const r = await call(url, null, "POST", "/v1/board/working", body);
      expect(r.status).toBe(400);
      expect(r.body.error.field).toBe(field);
    }
  });

  it("profiles: a domain naming the agent verifies it and issues a claim token once; updates need it; 409 for somebody else", async () => {
    const v = await call(url, null, "POST", "/v1/board/profile", {
      agent: "alpha",
      operator: "Acme Labs",
      url: site.origin,
      model: "m-1",
      about: "Watches weather APIs.",
    });
    expect(v.status).toBe(200);
    expect(v.body.profile).toMatchObject({
      agent: "alpha",
      operator: "Acme Labs",
      verified: true,
      domain: `127.0.0.1:${site.port}`,
      url: site.origin,
    });
    expect(v.body.token).toMatch(/^cbt_[\w-]{32}$/);
    expect(JSON.stringify(v.body.profile)).not.toContain("token");
    ids.token = v.body.token;
    expect(site.requests.at(-1)!.url).toBe("/.well-known/agent-board.json");

    const noToken = await call(url, null, "POST", "/v1/board/profile", { agent: "alpha", operator: "Impostor Inc" });
    expect(noToken.status).toBe(409);
    expect(noToken.body.error).toMatchObject({ code: "E_CONFLICT", field: "token" });
    const wrong = await call(url, null, "POST", "/v1/board/profile", { agent: "alpha", operator: "Impostor Inc", token: "cbt_wrong" });
    expect(wrong.status).toBe(409);
    const upd = await call(url, null, "POST", "/v1/board/profile", {
      agent: "alpha",
      about: "Watches weather and maps APIs.",
      token: ids.token,
      logo: `${site.origin}/logo.png`,
    });
    expect(upd.status).toBe(200);
    expect(upd.body.token).toBeUndefined();
    expect(upd.body.profile).toMatchObject({
      operator: "Acme Labs",
      verified: true,
      about: "Watches weather and maps APIs.",
      logo: `${site.origin}/logo.png`,
    });
    const offDomain = await call(url, null, "POST", "/v1/board/profile", {
      agent: "alpha",
      token: ids.token,
      logo: "https://cdn.example.net/logo.png",
    });
    expect(offDomain.status).toBe(400);
    expect(offDomain.body.error).toMatchObject({ code: "E_REFUSED", field: "logo" });

    // two first verifications at once: one gets the token, the other is somebody else (409)
    const race = await Promise.all([0, 1].map(() => call(url, null, "POST", "/v1/board/profile", { agent: "delta", url: site.origin })));
    expect(race.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(race.filter((r) => r.body.token !== undefined)).toHaveLength(1);

    // a domain that does not name the agent: saved, unverified, with the reason; no logo without a verified domain
    const m = await call(url, null, "POST", "/v1/board/profile", { agent: "mallory", operator: "M", url: site.origin });
    expect(m.status).toBe(200);
    expect(m.body.profile.verified).toBe(false);
    expect(m.body.verification_error).toMatch(/does not name agent 'mallory'/);
    expect(m.body.token).toBeUndefined();
    expect((await call(url, null, "POST", "/v1/board/profile", { agent: "mallory", logo: `${site.origin}/x.png` })).body.error.field).toBe(
      "logo",
    );
    // blocked targets are refused, not fetched
    for (const target of ["http://10.0.0.1", "http://169.254.169.254", "127.0.0.1:1", "http://localhost:1"]) {
      const r = await call(url, null, "POST", "/v1/board/profile", { agent: "mallory", url: target });
      expect(r.status, target).toBe(400);
      expect(r.body.error, target).toMatchObject({ code: "E_OUTBOUND_BLOCKED", field: "url" });
    }
    // plain profile without a url
    expect((await call(url, null, "POST", "/v1/board/profile", { agent: "beta", operator: "Beta Co" })).body.profile).toMatchObject({
      agent: "beta",
      operator: "Beta Co",
      verified: false,
    });

    const agents = await call(url, null, "GET", "/v1/board/agents");
    const byName = Object.fromEntries(agents.body.agents.map((a: { agent: string }) => [a.agent, a]));
    expect(byName.alpha).toMatchObject({ operator: "Acme Labs", verified: true, model: "m-1", posts: 2 });
    expect(byName.beta).toMatchObject({ operator: "Beta Co", verified: false, posts: 2 });
    expect(byName.gamma).toMatchObject({ verified: false, posts: 1 });
    expect(byName.mallory.verified).toBe(false);
    const page = await call(url, null, "GET", "/v1/board");
    expect(page.body.posts.find((p: { id: string }) => p.id === ids.a)).toMatchObject({ operator: "Acme Labs", verified: true });
  });

  it("is append-only: no route edits or deletes a post, verdict, file or record; a restart keeps everything", async () => {
    const mine = srv.server.routes.filter((r) => /^\/v1\/(board|trust|ask)/.test(r.path));
    expect(mine.length).toBe(15);
    expect(mine.every((r) => r.method === "get" || r.method === "post")).toBe(true);
    for (const path of ["/v1/board", `/v1/board/files/${ids.a}`, "/v1/board/vote", "/v1/board/files", "/v1/trust", "/v1/board/profile"]) {
      for (const method of ["DELETE", "PATCH", "PUT"]) {
        const r = await call(url, null, method, path, method === "DELETE" ? undefined : { agent: "alpha", message: "edited" });
        expect([404, 405], `${method} ${path}`).toContain(r.status);
      }
    }
    for (const method of ["DELETE", "PATCH", "PUT"]) expect((await call(url, null, method, `/v1/board/${ids.a}`)).status).toBe(404);
    await call(url, null, "POST", "/v1/trust", {
      agent: "alpha",
      target: "api.acme.example",
      outcome: "partial",
      note: "stale after midnight",
    });

    const before = {
      board: (await call(url, null, "GET", "/v1/board?limit=200")).body,
      files: (await call(url, null, "GET", "/v1/board/files")).body,
      agents: (await call(url, null, "GET", "/v1/board/agents")).body,
      working: (await call(url, null, "GET", "/v1/board/working")).body,
      trust: (await call(url, null, "GET", "/v1/trust/recent")).body,
      file: (
        await call(url, null, "GET", `/v1/board/files/${(await call(url, null, "GET", "/v1/board/files")).body.files[0].id}`)
      ).raw.toString(),
    };
    await srv.restart();
    url = srv.url;
    const after = {
      board: (await call(url, null, "GET", "/v1/board?limit=200")).body,
      files: (await call(url, null, "GET", "/v1/board/files")).body,
      agents: (await call(url, null, "GET", "/v1/board/agents")).body,
      working: (await call(url, null, "GET", "/v1/board/working")).body,
      trust: (await call(url, null, "GET", "/v1/trust/recent")).body,
      file: (await call(url, null, "GET", `/v1/board/files/${before.files.files[0].id}`)).raw.toString(),
    };
    expect(after).toEqual(before);
    expect(after.trust.records).toHaveLength(1);
    // the claim token still guards the verified profile
    expect((await call(url, null, "POST", "/v1/board/profile", { agent: "alpha", about: "taken over" })).status).toBe(409);
    expect((await call(url, null, "POST", "/v1/board/profile", { agent: "alpha", about: "still mine", token: ids.token })).status).toBe(
      200,
    );
    // and recall works on replayed posts
    expect((await call(url, null, "GET", `/v1/board/recall?q=${encodeURIComponent("stale weather forecasts")}`)).body.posts[0].id).toBe(
      ids.a,
    );
  });
});

describe("rate limits per client address", () => {
  let srv: CommonsServer;
  beforeAll(async () => {
    srv = await startCommonsServer({
      rateLimits: {
        board: { count: 2, windowSeconds: 600 },
        trust: { count: 2, windowSeconds: 600 },
        ask: { count: 1, windowSeconds: 600 },
      },
    });
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("answers 429 with Retry-After on POST /v1/board, /v1/trust and /v1/ask past the limit; reads are not limited", async () => {
    const writes: Array<[string, Record<string, unknown>, number]> = [
      ["/v1/board", { agent: "a", message: "one" }, 2],
      ["/v1/trust", { agent: "a", target: "example.com", outcome: "worked" }, 2],
      ["/v1/ask", { site: "10.0.0.1", question: "q" }, 1],
    ];
    for (const [path, body, n] of writes) {
      for (let i = 0; i < n; i++) expect((await call(srv.url, null, "POST", path, body)).status, path).not.toBe(429);
      const r = await call(srv.url, null, "POST", path, body);
      expect(r.status, path).toBe(429);
      expect(r.body.error.code).toBe("rate_limited");
      const wait = Number(r.headers.get("retry-after"));
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(600);
    }
    for (let i = 0; i < 5; i++) expect((await call(srv.url, null, "GET", "/v1/board")).status).toBe(200);
    // a refused post still counts (the limit is on requests), and the limited post was not stored
    expect((await call(srv.url, null, "GET", "/v1/board")).body.posts).toHaveLength(2);
    // the limit is the socket's address's (read by the server only when a gate asks): another loopback address has its own
    const from = (localAddress: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ agent: "b", message: `from ${localAddress}` });
        const u = new URL("/v1/board", srv.url);
        const req = httpRequest(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: "POST",
            localAddress,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode!));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    expect(await from("127.0.0.1")).toBe(429);
    expect(await from("127.0.0.2")).not.toBe(429);
    expect(await from("127.0.0.2")).not.toBe(429);
    expect(await from("127.0.0.2")).toBe(429);
  });
});
