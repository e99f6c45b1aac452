/** @module line-folder — folds logical content lines into CRLF-terminated physical lines of at most 75 octets (RFC 5545 §3.1 style). */
import { writeFileSync } from "node:fs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

/** Octet limit of one physical line, excluding its CRLF; the leading space of a continuation line counts. */
export const MAX_LINE_OCTETS = 75;

const CRLF = "\r\n";

const LineFolderArgs = z
  .object({
    lines: z.array(z.string()),
    output_path: z.string().min(1),
  })
  .strict();

export type LineFolderArgs = z.input<typeof LineFolderArgs>;

/** UTF-8 length of one code point. */
function utf8Length(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/**
 * Throws E_BAD_REQUEST naming `lines.<i>` for a line that cannot round-trip through
 * fold + unfold: one holding CR or LF (it would end the physical line), one starting with
 * a space or tab (an unfolder would take it for a continuation of the line before it), or
 * one holding a lone surrogate (not encodable as UTF-8).
 */
function checkLine(line: string, i: number): void {
  const field = `lines.${i}`;
  if (/[\r\n]/.test(line))
    throw new SvcError(
      "E_BAD_REQUEST",
      `line-folder: ${field}: contains CR or LF, which cannot survive folding; pass each logical line separately`,
      { field },
    );
  if (line.startsWith(" ") || line.startsWith("\t"))
    throw new SvcError(
      "E_BAD_REQUEST",
      `line-folder: ${field}: starts with a space or tab, which unfolding would read as a continuation of the previous line`,
      { field },
    );
  if (/\p{Cs}/u.test(line))
    throw new SvcError("E_BAD_REQUEST", `line-folder: ${field}: holds a lone UTF-16 surrogate, which has no UTF-8 encoding`, { field });
}

/** Physical lines of one logical line: the first up to 75 octets, each continuation one space plus up to 74 octets. */
function foldLine(line: string): string[] {
  const out: string[] = [];
  let current = "";
  let octets = 0;
  for (const ch of line) {
    const n = utf8Length(ch.codePointAt(0)!);
    if (octets + n > MAX_LINE_OCTETS) {
      // Cut at the character boundary before `ch`: never inside a multi-byte character.
      out.push(current);
      current = " ";
      octets = 1;
    }
    current += ch;
    octets += n;
  }
  out.push(current);
  return out;
}

/**
 * Fold logical lines. Every physical line, the last included, is terminated by CRLF — the
 * RFC 5545 / RFC 6350 content-line grammar ends each line with CRLF — so an empty list gives
 * "" and `[""]` gives "\r\n". Pure; throws E_BAD_REQUEST (field `lines.<i>`) for a line that
 * could not round-trip.
 */
export function fold(lines: readonly string[]): string {
  let text = "";
  lines.forEach((line, i) => {
    checkLine(line, i);
    for (const physical of foldLine(line)) text += physical + CRLF;
  });
  return text;
}

/**
 * Inverse of `fold`: drop the final CRLF, remove every CRLF followed by one space or tab
 * (that whitespace octet included), split on the remaining CRLFs.
 */
export function unfold(text: string): string[] {
  if (text === "") return [];
  const body = text.endsWith(CRLF) ? text.slice(0, -CRLF.length) : text;
  return body.replace(/\r\n[ \t]/g, "").split(CRLF);
}

/** Write the folded lines (UTF-8, final CRLF included) to `output_path`; returns `{path}` (absolute). */
export function build(args: unknown): { path: string } {
  const a = parseArgs("line-folder", LineFolderArgs, args);
  const text = fold(a.lines);
  const path = prepareOutput(a.output_path, "output_path");
  try {
    writeFileSync(path, text, "utf8");
  } catch (err) {
    throw new SvcError("E_IO", `line-folder: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return { path };
}
