/** The commons' refusal rules, table-tested: encoded data, invisible/bidi characters, long runs, empty and over-long fields; and what plain text passes. */
import { describe, expect, it } from "vitest";
import { checkAgent, checkText, contentProblem } from "../../src/commons/text-rules.js";
import { SvcError } from "../../src/errors.js";

const b64 = Buffer.from("binary payload smuggled into a board post, long enough to matter!").toString("base64");
const refused: Array<[string, string, RegExp]> = [
  ["base64 blob", `see ${b64} for details`, /base64/],
  ["base64url blob", `token ${Buffer.from("x".repeat(20) + "\u00ff\u00fe".repeat(20), "latin1").toString("base64url")}`, /base64/],
  ["base64 after key=", `secret=${Buffer.from(Array.from({ length: 60 }, (_, i) => (i * 37) % 256)).toString("base64")}`, /base64/],
  ["hex blob", `payload ${"deadbeef".repeat(12)}`, /hex/],
  ["0x hex blob", `0x${"0123456789abcdef".repeat(6)}`, /hex/],
  ["percent-encoded run", "open %68%74%74%70%73%3a%2f%2f now", /percent/],
  ["data: URI", "img data:image/png;base64,iVBORw0KGgo= here", /data: URI/],
  ["escaped bytes", "run \\x41\\x42\\x43\\x44\\x45\\x46\\x47\\x48\\x49\\x4a\\x4b\\x4c please", /escaped/],
  ["zero-width space", "hello\u200Bworld", /U\+200B/],
  ["zero-width joiner", "a\u200Db", /U\+200D/],
  ["bidi override", "price \u202E001$", /U\+202E/],
  ["bidi isolate", "x \u2066y\u2069", /U\+2066/],
  ["BOM", "\uFEFFhello there", /U\+FEFF/],
  ["soft hyphen", "in\u00ADvisible", /U\+00AD/],
  ["tag characters", "ok \u{E0041}\u{E0042}", /U\+E0041/],
  ["variation selector supplement", "a\u{E0100}", /U\+E0100/],
  ["Hangul filler", "hi \u3164 there", /U\+3164/],
  ["NUL", "a\u0000b", /U\+0000/],
  ["escape control", "a\u001b[31mred", /U\+001B/],
  ["C1 control", "a\u0085b", /U\+0085/],
  ["private use", "a\uE000b", /U\+E000/],
  ["stacked marks", `z${"\u0301".repeat(12)}algo`, /combining/],
  ["unbroken run", "x".repeat(201), /unbroken run/],
];

const passes: string[] = [
  "The Acme API timed out twice today. Retry after 30 s worked.",
  "See https://example.com/docs/api/v2/rate-limits?section=writes#burst for the limits.",
  "Commit 3f9a2c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f fixed it; sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches.",
  "Ünïcödé is fine, 日本語も大丈夫, emoji too 🙂.",
  "Lines\nwith\tbreaks and tabs.",
  "a-very-long-hyphenated-identifier-that-is-still-words-only-and-nothing-more-than-that-ok",
  "50% of calls failed, 20% were slow.",
  "x".repeat(200),
];

function why(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (e) {
    return e as SvcError;
  }
  throw new Error("expected a refusal");
}

describe("content rules", () => {
  it.each(refused)("refuses %s", (_name, text, reason) => {
    const problem = contentProblem(text);
    expect(problem).toMatch(reason);
    const e = why(() => checkText(text, "message", { max: 4000, required: true }));
    expect(e.code).toBe("E_REFUSED");
    expect(e.status).toBe(400);
    expect(e.field).toBe("message");
    expect(e.message).toMatch(reason);
  });

  it.each(passes)("passes plain text: %s", (text) => {
    expect(contentProblem(text)).toBeNull();
    expect(checkText(text, "message", { max: 4000, required: true })).toBe(text.trim());
  });
});

describe("field checks", () => {
  const cases: Array<[string, unknown, Parameters<typeof checkText>[2], string, RegExp]> = [
    ["missing required", undefined, { max: 10, required: true }, "E_REFUSED", /required/],
    ["empty", "   ", { max: 10, required: true }, "E_REFUSED", /empty/],
    ["over-long", "a".repeat(11), { max: 10 }, "E_REFUSED", /longer than 10/],
    ["over-long in code points", "🙂".repeat(11), { max: 10 }, "E_REFUSED", /longer than 10/],
    ["two lines where one is wanted", "a\nb", { max: 10, oneLine: true }, "E_REFUSED", /one line/],
    ["not a string", 42, { max: 10 }, "E_BAD_REQUEST", /must be a string/],
  ];
  it.each(cases)("%s", (_name, value, rule, code, reason) => {
    const e = why(() => checkText(value, "f", rule));
    expect(e.code).toBe(code);
    expect(e.field).toBe("f");
    expect(e.message).toMatch(reason);
  });

  it("counts code points, trims, and turns CRLF into LF; optional absent is undefined", () => {
    expect(checkText("🙂".repeat(10), "f", { max: 10 })).toBe("🙂".repeat(10));
    expect(checkText("  a\r\nb  ", "f", { max: 10 })).toBe("a\nb");
    expect(checkText(undefined, "f", { max: 10 })).toBeUndefined();
    expect(checkText("", "f", { max: 10 })).toBeUndefined();
  });

  it("agent names: letters, digits and a few separators, 64 at most", () => {
    for (const ok of ["claude-code", "Agent Smith", "bot@acme.example", "räksmörgås/2", "a"]) expect(checkAgent(ok)).toBe(ok);
    for (const bad of ["-lead", "a".repeat(65), "semi;colon", "new\nline", "<script>", ""])
      expect(why(() => checkAgent(bad)).field).toBe("agent");
  });
});
