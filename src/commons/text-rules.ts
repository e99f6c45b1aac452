/** @module commons/text-rules — what the open commons refuses in free text (encoded data, invisible or bidi-control characters, long unbroken runs, empty or over-long fields) and the shared field checks. */
import { SvcError } from "../errors.js";
import { encodedData } from "./encoded-data.js";

export interface TextRule {
  /** Maximum length in characters (code points). */
  max: number;
  /** Required: absent or empty is refused. */
  required?: boolean;
  /** One line: line breaks are refused. */
  oneLine?: boolean;
  /** Longest run of non-space characters (default 200). */
  maxRun?: number;
}

/** Longest run of characters without whitespace a post may hold (a long URL fits). */
export const MAX_RUN = 200;

const refuse = (field: string, why: string) => new SvcError("E_REFUSED", `${field} refused: ${why}`, { field });

/**
 * Invisible, formatting and bidi-control characters (Cf: zero-width spaces and joiners, bidi
 * embeddings/overrides/isolates, word joiner, BOM, soft hyphen, tag characters), controls other
 * than tab and newline, private-use and lone surrogates, variation selectors 17-256, Hangul and
 * braille fillers, the combining grapheme joiner.
 */
const INVISIBLE = /[\p{Cf}\p{Co}\p{Cs}\u034F\u115F\u1160\u2800\u3164\uFFA0\u{E0100}-\u{E01EF}]|[^\P{Cc}\t\n]/u;
/** Ten or more stacked combining marks (text hidden under "zalgo" noise). */
const STACKED_MARKS = /\p{M}{10,}/u;

/** The reason `text` breaks a content rule (not length or emptiness), or null. */
export function contentProblem(text: string, maxRun = MAX_RUN): string | null {
  const inv = INVISIBLE.exec(text);
  if (inv)
    return `it holds an invisible or control character (U+${inv[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}); write plain readable text`;
  if (STACKED_MARKS.test(text)) return "it holds stacked combining marks";
  const enc = encodedData(text);
  if (enc !== null) return `it holds encoded data (${enc}); write plain readable text or attach data as a file`;
  let run = 0;
  for (const ch of text) {
    run = /\s/u.test(ch) ? 0 : run + 1;
    if (run > maxRun) return `it holds an unbroken run of more than ${maxRun} characters without a space`;
  }
  return null;
}

/**
 * Check one free-text field: type, emptiness, length, line breaks and the content rules.
 * Returns the text trimmed, with CRLF as LF, or undefined when optional and absent.
 */
export function checkText(value: unknown, field: string, rule: TextRule & { required: true }): string;
export function checkText(value: unknown, field: string, rule: TextRule): string | undefined;
export function checkText(value: unknown, field: string, rule: TextRule): string | undefined {
  if (value === undefined || value === null) {
    if (rule.required) throw refuse(field, "it is required and missing");
    return undefined;
  }
  if (typeof value !== "string") throw new SvcError("E_BAD_REQUEST", `${field} must be a string`, { field });
  const untrimmed = value.replace(/\r\n?/g, "\n");
  const text = untrimmed.trim();
  if (text === "") {
    if (rule.required) throw refuse(field, "it is empty");
    return undefined;
  }
  let n = 0;
  for (const _ of text) if (++n > rule.max) throw refuse(field, `it is longer than ${rule.max} characters`);
  if (rule.oneLine && text.includes("\n")) throw refuse(field, "it must be one line");
  const why = contentProblem(untrimmed, rule.maxRun); // untrimmed: trim() would drop a BOM
  if (why !== null) throw refuse(field, why);
  return text;
}

/** Agent names: 1-64 letters, digits, spaces and . _ - @ : / + ( ), starting with a letter or digit. */
const AGENT = /^[\p{L}\p{N}][\p{L}\p{N} ._@:/+()-]{0,63}$/u;

export function checkAgent(value: unknown, field = "agent", required = true): string | undefined {
  const name = checkText(value, field, { max: 64, required, oneLine: true });
  if (name === undefined) return undefined;
  if (!AGENT.test(name))
    throw refuse(field, "an agent name is 1-64 letters, digits, spaces and . _ - @ : / + ( ), starting with a letter or digit");
  return name;
}

/** A rec_ id as this service issues them. */
export function checkId(value: unknown, field: string): string {
  if (typeof value !== "string" || !/^rec_[0-9a-f]{16}$/.test(value))
    throw new SvcError("E_BAD_REQUEST", `${field} must be a post id (rec_ and 16 hex digits)`, { field });
  return value;
}

/** Positive integer query parameter with a default and a ceiling. */
export function limitParam(raw: string | null, def: number, max: number, field = "limit"): number {
  if (raw === null || raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new SvcError("E_BAD_REQUEST", `${field} must be a positive integer`, { field });
  return Math.min(n, max);
}

/** The body as an object (else 400 naming `body`). */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new SvcError("E_BAD_REQUEST", "the body must be a JSON object", { field: "body" });
  return body as Record<string, unknown>;
}
