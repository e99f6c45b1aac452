/** What the bridge reads from a site's answer: NLWeb JSON and SSE variants, schema_object URLs, prose, unsafe URLs dropped, non-answers recognised. */
import { describe, expect, it } from "vitest";
import { AskBridge, parseAnswer } from "../../src/commons/ask.js";
import { DEFAULT_COMMONS_CONFIG } from "../../src/commons/config.js";
import { Outbound } from "../../src/commons/outbound.js";
import { startSite } from "./site.js";

const json = (v: unknown) => ({ contentType: "application/json", body: Buffer.from(JSON.stringify(v)) });
const sse = (events: unknown[], eol = "\n") => ({
  contentType: "text/event-stream; charset=utf-8",
  body: Buffer.from(events.map((e) => `event: message${eol}data: ${JSON.stringify(e)}${eol}${eol}`).join("")),
});

describe("parseAnswer", () => {
  it("reads results, items and content lists; url from url, link or schema_object; score from score or ranking", () => {
    const a = parseAnswer(
      json({
        results: [
          { url: "https://a.example/1", name: "One", score: 0.5 },
          { link: "https://a.example/2", title: "Two" },
          { schema_object: { url: "https://a.example/3", name: "Three", description: "d" }, ranking: { score: 7 } },
        ],
      }),
    );
    expect(a.shaped).toBe(true);
    expect(a.pages).toEqual([
      { url: "https://a.example/1", name: "One", score: 0.5 },
      { url: "https://a.example/2", name: "Two" },
      { url: "https://a.example/3", name: "Three", score: 7, description: "d" },
    ]);
    const b = parseAnswer(
      sse(
        [
          { message_type: "result_batch", content: [{ url: "https://b.example/", name: "B" }] },
          { message_type: "summary", message: "Short summary." },
        ],
        "\r\n",
      ),
    );
    expect(b.pages.map((p) => p.url)).toEqual(["https://b.example/"]);
    expect(b.prose).toEqual(["Short summary."]);
  });

  it("drops non-http URLs and duplicates, strips invisible and control characters from the site's text", () => {
    const a = parseAnswer(
      json({
        results: [
          { url: "javascript:alert(1)", name: "x" },
          { url: "data:text/html,hi", name: "y" },
          { url: "https://ok.example/", name: "O\u200bK\u0007" },
          { url: "https://ok.example/", name: "dup" },
        ],
      }),
    );
    expect(a.pages).toEqual([{ url: "https://ok.example/", name: "OK" }]);
  });

  it("collects cited sources and answers; a page that is not an NLWeb answer is not shaped", () => {
    const a = parseAnswer(
      json({ _meta: { version: "0.5" }, results: [], answer: "Yes.", sources: ["https://s.example/a", { url: "https://s.example/b" }] }),
    );
    expect(a).toMatchObject({ shaped: true, prose: ["Yes."], sources: ["https://s.example/a", "https://s.example/b"] });
    expect(parseAnswer({ contentType: "text/html", body: Buffer.from("<html>hello</html>") }).shaped).toBe(false);
    expect(parseAnswer(json({ hello: "world" })).shaped).toBe(false);
    expect(parseAnswer(json([1, 2, 3])).shaped).toBe(false);
  });
});

describe("AskBridge", () => {
  it("gives up on a slow site after its deadline (about three time-outs) with E_UPSTREAM, without trying every place", async () => {
    const slow = await startSite(() => new Promise((r) => setTimeout(() => r({ body: { results: [] } }), 1500)));
    try {
      const bridge = new AskBridge(
        new Outbound({ ...DEFAULT_COMMONS_CONFIG.outbound, allow: [`127.0.0.1:${slow.port}`], http: true, timeoutMs: 150 }),
      );
      await expect(bridge.ask({ site: slow.origin, question: "anyone there?" })).rejects.toMatchObject({
        code: "E_UPSTREAM",
        field: "site",
      });
      // discovery document, home page, then the deadline: /ask is never asked in both dialects
      expect(slow.requests.length).toBeLessThanOrEqual(3);
    } finally {
      await slow.close();
    }
  });
});
