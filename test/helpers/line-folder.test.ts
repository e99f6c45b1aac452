/** @module line-folder.test — folding limits, character boundaries and exact unfold round trips over seeded Unicode lines. */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { build, fold, MAX_LINE_OCTETS, unfold } from "../../src/helpers/line-folder.js";

const dir = mkdtempSync(join(tmpdir(), "svc-line-folder-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Physical lines of folded text, checked to be CRLF-terminated (the last one included). */
function physicalLines(text: string): string[] {
  if (text === "") return [];
  expect(text.endsWith("\r\n")).toBe(true);
  const lines = text.slice(0, -2).split("\r\n");
  for (const l of lines) expect(l).not.toMatch(/[\r\n]/);
  return lines;
}

/** A generic RFC 5545 unfolder, written independently of the module's `unfold`. */
function genericUnfold(text: string): string[] {
  const bytes = Buffer.from(text, "utf8").toString("latin1"); // unfold on octets, decode after
  return bytes
    .replace(/\r\n$/, "")
    .replace(/\r\n[ \t]/g, "")
    .split("\r\n")
    .map((l) => Buffer.from(l, "latin1").toString("utf8"));
}

const POOLS: string[][] = [
  ["a", "b", "Z", "0", ";", ",", ":", "\\", "=", " ", "\t"], // ASCII incl. separators and inner whitespace
  ["é", "ß", "ж", "ע", "ω"], // 2 octets
  ["東", "京", "€", "✓", "—", "\u0301", "\u0308", "\u200d"], // 3 octets incl. combining marks and ZWJ
  ["😀", "👍🏽", "🇯🇵", "𝄞", "👩‍💻"], // 4 octets, modifiers, flags, ZWJ sequences
];

function randomLine(next: () => number): string {
  const kind = next() % 10;
  if (kind === 0) return "";
  const length = kind < 4 ? next() % 20 : kind < 8 ? 60 + (next() % 100) : 300 + (next() % 400);
  let s = "";
  while ([...s].length < length) {
    const pool = POOLS[next() % POOLS.length]!;
    s += pool[next() % pool.length]!;
  }
  // A line may not begin with space or tab (it would read as a continuation).
  return s.replace(/^[ \t]+/, "x");
}

describe("fold", () => {
  it("keeps a short line as is and ends every line, the last included, with CRLF", () => {
    expect(fold(["BEGIN:VCALENDAR", "END:VCALENDAR"])).toBe("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n");
    expect(fold([])).toBe("");
    expect(fold([""])).toBe("\r\n");
    expect(fold(["", ""])).toBe("\r\n\r\n");
  });

  it("cuts ASCII at exactly 75 octets, continuations at 1 + 74", () => {
    const line = "X".repeat(75 + 74 + 10);
    const phys = physicalLines(fold([line]));
    expect(phys.map((l) => l.length)).toEqual([75, 75, 11]);
    expect(phys[1]!.startsWith(" X")).toBe(true);
    expect(unfold(fold([line]))).toEqual([line]);
  });

  it("backs off to the character boundary before the limit", () => {
    // 73 ASCII octets then a 4-octet emoji: 77 > 75, so the emoji moves whole to the next line.
    const line = `${"a".repeat(73)}😀b`;
    const phys = physicalLines(fold([line]));
    expect(phys).toEqual(["a".repeat(73), " 😀b"]);
    expect(Buffer.byteLength(phys[0]!)).toBe(73);
    // 74 octets then a 2-octet é: first line 74 octets.
    expect(physicalLines(fold([`${"a".repeat(74)}é`]))).toEqual(["a".repeat(74), " é"]);
    // 3-octet characters: 25 of them fill 75 octets exactly; a continuation holds 24 (1 + 72).
    const han = "東".repeat(60);
    const lens = physicalLines(fold([han])).map((l) => Buffer.byteLength(l));
    expect(lens).toEqual([75, 73, 34]);
  });

  it("property: seeded random Unicode lines stay within 75 octets, never split a character, and unfold exactly", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = mulberry32(seed);
      const lines = Array.from({ length: 1 + (next() % 8) }, () => randomLine(next));
      const text = fold(lines);
      const phys = physicalLines(text);
      let logical = 0;
      for (const [i, p] of phys.entries()) {
        const bytes = Buffer.from(p, "utf8");
        expect(bytes.length).toBeLessThanOrEqual(MAX_LINE_OCTETS);
        // Never split a character: every physical line is valid UTF-8 on its own.
        expect(Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes)).toBe(true);
        expect(bytes.toString("utf8")).not.toContain("\uFFFD");
        if (p.startsWith(" ")) {
          expect(i).toBeGreaterThan(0);
          expect(p.length).toBeGreaterThan(1); // a continuation carries content
          // Greedy: the previous physical line could not take this line's first character.
          const prev = Buffer.byteLength(phys[i - 1]!);
          const first = Buffer.byteLength([...p.slice(1)][0]!);
          expect(prev + first).toBeGreaterThan(MAX_LINE_OCTETS);
        } else logical++;
      }
      expect(logical).toBe(lines.length);
      expect(unfold(text)).toEqual(lines);
      expect(genericUnfold(text)).toEqual(lines);
    }
  });

  it("rejects CR, LF, a leading space or tab, and lone surrogates, naming lines.<i>", () => {
    const cases: [string[], string][] = [
      [["ok", "a\r\nb"], "lines.1"],
      [["a\nb"], "lines.0"],
      [["ok", "ok", "a\rb"], "lines.2"],
      [["ok", " indented"], "lines.1"],
      [["\tx"], "lines.0"],
      [["ok", "bad \uD800 half"], "lines.1"],
    ];
    for (const [lines, field] of cases) {
      try {
        fold(lines);
        expect.unreachable(`accepted ${JSON.stringify(lines)}`);
      } catch (err) {
        expect(err).toBeInstanceOf(SvcError);
        expect((err as SvcError).code).toBe("E_BAD_REQUEST");
        expect((err as SvcError).field).toBe(field);
      }
    }
  });
});

describe("build", () => {
  it("writes the folded text and returns {path}", () => {
    const lines = ["DESCRIPTION:" + "Résumé — 東京 meeting ✓ ".repeat(8).trim(), "", "END:X"];
    const out = join(dir, "nested", "deeper", "folded.txt");
    const result = build({ lines, output_path: out });
    expect(result).toEqual({ path: out });
    const bytes = readFileSync(out);
    expect(bytes.subarray(-2).toString("latin1")).toBe("\r\n");
    const text = bytes.toString("utf8");
    expect(text).toBe(fold(lines));
    expect(unfold(text)).toEqual(lines);
    expect(physicalLines(text).length).toBeGreaterThan(3);
  });

  it("validates before writing anything", () => {
    const out = join(dir, "never", "written.txt");
    expect(() => build({ lines: ["ok", "bad\nline"], output_path: out })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "lines.1" }),
    );
    expect(() => build({ lines: "not a list", output_path: out })).toThrow(
      expect.objectContaining({ code: "E_BAD_REQUEST", field: "lines" }),
    );
    expect(() => build({ lines: ["x"] })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST", field: "output_path" }));
    expect(() => build({ lines: ["x"], output_path: out, extra: 1 })).toThrow(expect.objectContaining({ code: "E_BAD_REQUEST" }));
    expect(() => readFileSync(out)).toThrow();
    expect(() => readFileSync(join(dir, "never"))).toThrow();
  });
});
