/**
 * The encoded-data rule on both sides: real URLs and prose pass; real base64 and hex of random
 * bytes (fast-check, fixed seed) are refused in every shape a payload can take in a post, and the
 * refusal reaches the client over real HTTP as 400 E_REFUSED naming the field.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodedData } from "../../src/commons/encoded-data.js";
import { contentProblem } from "../../src/commons/text-rules.js";
import { call } from "../e2e/client.js";
import { startCommonsServer, type CommonsServer } from "./commons-server.js";

const URLS = [
  "https://github.com/nodejs/node/blob/3f9a2c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f/lib/internal/url.js#L120-L180",
  "https://github.com/microsoft/TypeScript/blob/main/src/compiler/checker.ts",
  "https://en.wikipedia.org/wiki/List_of_Nobel_laureates_in_Physiology_or_Medicine_by_country_of_birth",
  "https://en.wikipedia.org/wiki/Comparison_of_file_systems_supporting_extended_attributes_and_access_control_lists",
  "https://ja.wikipedia.org/wiki/%E6%9D%B1%E4%BA%AC%E9%83%BD%E5%BA%81%E8%88%8E",
  "https://de.wikipedia.org/wiki/M%C3%BCnchen",
  "https://docs.google.com/spreadsheets/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit#gid=0",
  "https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLFgquLnL59alCl_2TQvOiD5Vgm1hCaGSI",
  "https://arxiv.org/abs/1706.03762v7",
  "https://stackoverflow.com/questions/11227809/why-is-processing-a-sorted-array-faster-than-processing-an-unsorted-array",
  "https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Intl/Segmenter/Segmenter",
  "https://registry.npmjs.org/@trufflesuite/uws-js-unofficial/-/uws-js-unofficial-20.49.0.tgz",
  "https://example-bucket.s3.amazonaws.com/reports/2025/q3.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "https://www.amazon.com/Designing-Data-Intensive-Applications-Reliable-Maintainable/dp/1449373321/ref=sr_1_1",
  "https://maps.google.com/?q=51.5007,-0.1246",
];

const PROSE = [
  "a".repeat(150),
  "The Acme API timed out twice today. Retry after 30 s worked.",
  "Commit 3f9a2c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f fixed it; sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches.",
  "AbstractSingletonProxyFactoryBean and SimpleBeanFactoryAwareAspectInstanceFactory are both in Spring Framework 5.3.",
  "Meet John at 10 in Room 42B with Alice and Bob on Monday 3 March 2025 about the Q3 OKRs for EMEA and APAC.",
  "Order numbers 100234 100235 100236 100237 100238 100239 100240 100241 100242 100243 100244 100245 were late.",
  "a bad cafe faced a dead bee fed a deaf babe",
  "ERROR 503 AT 10 30 ON SERVER A1 B2 C3 D4 E5 F6 RETRYING NOW AND AGAIN AND AGAIN",
  "Use GPT-4o, Claude 3.5 Sonnet, Llama-3-70B-Instruct and Mistral-7B-v0.1 side by side.",
  "Lines\nwith\tbreaks and tabs.",
  "50% of calls failed, 20% were slow.",
  "Ünïcödé is fine, 日本語も大丈夫, emoji too 🙂.",
];

describe("URLs and prose pass", () => {
  it.each(URLS)("URL %s", (url) => {
    expect(encodedData(url)).toBeNull();
    // (a URL longer than the 200-character run limit is refused by that rule, not as encoded data)
    expect(contentProblem(`Details are at ${url} if you need them.`, Math.max(200, url.length))).toBeNull();
  });
  it.each(PROSE)("prose %j", (text) => {
    expect(encodedData(text)).toBeNull();
    expect(contentProblem(text)).toBeNull();
  });
});

/** Every shape an encoded payload takes in a post, from the bytes. */
const SHAPES: Record<string, (b: Buffer) => string> = {
  "base64 one line": (b) => b.toString("base64"),
  "base64url one line": (b) => b.toString("base64url"),
  "base64 wrapped at 76": (b) => wrap(b.toString("base64"), 76, "\n"),
  "base64 wrapped at 64": (b) => wrap(b.toString("base64"), 64, "\n"),
  "base64 wrapped at 56": (b) => wrap(b.toString("base64"), 56, "\n"),
  "base64 wrapped at 56 with CRLF and indent": (b) => wrap(b.toString("base64"), 56, "\r\n    "),
  "base64 split by spaces every 4": (b) => wrap(b.toString("base64"), 4, " "),
  "base64 split by spaces every 8": (b) => wrap(b.toString("base64"), 8, " "),
  "base64 split by spaces every 16": (b) => wrap(b.toString("base64"), 16, " "),
  "hex one token": (b) => b.toString("hex"),
  "hex upper case": (b) => b.toString("hex").toUpperCase(),
  "hex in 64-character groups on lines": (b) => wrap(b.toString("hex"), 64, "\n"),
  "hex in 64-character groups by spaces": (b) => wrap(b.toString("hex"), 64, " "),
  "hex in 32-character groups": (b) => wrap(b.toString("hex"), 32, " "),
  "hex bytes separated by spaces": (b) => wrap(b.toString("hex"), 2, " "),
  "hex bytes, 16 a line": (b) => wrap(wrap(b.toString("hex"), 32, "\n").replace(/([0-9a-f]{2})(?!\n|$)/g, "$1 "), 1000, ""),
  "hex bytes separated by colons": (b) => wrap(b.toString("hex"), 2, ":"),
  "0x bytes separated by commas": (b) => [...b].map((x) => `0x${x.toString(16).padStart(2, "0")}`).join(", "),
};

function wrap(s: string, width: number, sep: string): string {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += width) out.push(s.slice(i, i + width));
  return out.join(sep);
}

describe("encoded payloads are refused in every shape", () => {
  it.each(Object.keys(SHAPES))("%s, alone and inside prose", (shape) => {
    fc.assert(
      fc.property(fc.noBias(fc.uint8Array({ minLength: 48, maxLength: 400 })), (bytes) => {
        const enc = SHAPES[shape]!(Buffer.from(bytes));
        const kind = shape.startsWith("hex") || shape.startsWith("0x") ? /hex/ : /base64/;
        expect(encodedData(enc), enc).toMatch(kind);
        expect(encodedData(`Here is the file you asked for:\n${enc}\nThanks, and let me know if it opens.`), enc).toMatch(kind);
        expect(encodedData(`see ${enc} for details`), enc).toMatch(kind);
      }),
      { seed: 0xe1c0de, numRuns: 60 },
    );
  });
});

describe("over HTTP", () => {
  let srv: CommonsServer;
  beforeAll(async () => {
    srv = await startCommonsServer({ goal: "test" });
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it("a post with URLs passes; the same post with base64 wrapped at 56 columns is 400 E_REFUSED naming message", async () => {
    const urls = `Compare ${URLS[0]} with ${URLS[2]} and ${URLS[4]}; ${"a".repeat(150)}`;
    const ok = await call(srv.url, null, "POST", "/v1/board", { agent: "alpha", message: urls });
    expect(ok.status, ok.raw.toString()).toBe(200);
    const blob = wrap(Buffer.from(Array.from({ length: 120 }, (_, i) => (i * 113 + 7) % 256)).toString("base64"), 56, "\n");
    const bad = await call(srv.url, null, "POST", "/v1/board", { agent: "alpha", message: `The dump:\n${blob}` });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "E_REFUSED", field: "message" });
    expect(bad.body.error.message).toMatch(/base64/);
  });
});
