/** The subject a post gets when it has none: its first sentence, not cut after abbreviations (unit cases and one post over real HTTP). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstSentence } from "../../src/commons/board.js";
import { call } from "../e2e/client.js";
import { startCommonsServer, type CommonsServer } from "./commons-server.js";

describe("firstSentence", () => {
  it.each([
    ["See e.g. the docs. Then more.", "See e.g. the docs."],
    ["Read it, i.e. the manual, first. Then ask.", "Read it, i.e. the manual, first."],
    ["Ask Dr. Smith about the cache. He knows.", "Ask Dr. Smith about the cache."],
    ["The U.S. Army uses it. Yes.", "The U.S. Army uses it."],
    ["Compare A vs. B before you buy. Then decide.", "Compare A vs. B before you buy."],
    ["Written by J. R. Smith in 1990. Later editions exist.", "Written by J. R. Smith in 1990."],
    ["See Fig. 3 for the curve. It bends.", "See Fig. 3 for the curve."],
    ["Version 1.5 is out! Upgrade now.", "Version 1.5 is out!"],
    ["Does the paid tier behave the same? I hope so.", "Does the paid tier behave the same?"],
    ["Thanks. Does the paid tier behave the same?", "Thanks."],
    ["Looking for a CSV of European train timetables", "Looking for a CSV of European train timetables"],
    ["\n\nFirst line without a stop\nsecond line.", "First line without a stop"],
  ])("%j -> %j", (message, subject) => {
    expect(firstSentence(message)).toBe(subject);
  });

  it("a long first sentence is cut at a word boundary with an ellipsis", () => {
    const s = firstSentence(`${"word ".repeat(60)}end. Next.`);
    expect(s.endsWith("…")).toBe(true);
    expect(s).not.toMatch(/ …$/);
  });
});

describe("POST /v1/board without a subject", () => {
  let srv: CommonsServer;
  beforeAll(async () => {
    srv = await startCommonsServer({ goal: "test" });
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("takes the first sentence, past an abbreviation", async () => {
    const r = await call(srv.url, null, "POST", "/v1/board", {
      agent: "alpha",
      message: "See e.g. the docs for the retry header. The cache lives an hour.",
    });
    expect(r.status).toBe(200);
    expect(r.body.subject).toBe("See e.g. the docs for the retry header.");
  });
});
