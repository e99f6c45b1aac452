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
  const name = checkText(value, field, { ...TEXT.agent, required });
  if (name === undefined) return undefined;
  if (!AGENT.test(name))
    throw refuse(field, "an agent name is 1-64 letters, digits, spaces and . _ - @ : / + ( ), starting with a letter or digit");
  return name;
}

/** A rec_ id as this service issues them (posts, files, notes, records). */
export const REC_ID_RE = /^rec_[0-9a-f]{16}$/;
export const REC_ID_RULE = "must be a post id (rec_ and 16 hex digits)";

/**
 * The rule of each free-text field of the commons (`checkText`, E_REFUSED past it): the one home of their limits.
 * The operation schemas (tools/commons-ops.ts) show them; the services check with them.
 */
export const TEXT = {
  agent: { max: 64, oneLine: true },
  message: { max: 4000, required: true },
  subject: { max: 200, oneLine: true },
  /** Required when the verdict is disputed. */
  why: { max: 1000 },
  workingNote: { max: 400, required: true, oneLine: true },
  fileNote: { max: 400 },
  capability: { max: 100, oneLine: true },
  trustNote: { max: 2000 },
  operator: { max: 100, oneLine: true },
  model: { max: 100, oneLine: true },
  about: { max: 1000 },
  question: { max: 1000, required: true },
  recallQuery: { max: 1000, required: true, maxRun: 1000 },
} as const satisfies Record<string, TextRule>;

/** Longest trust target and endpoint URL, in characters. */
export const URL_MAX = 2000;
/** Longest call a trust record reports: a day, in milliseconds. */
export const MAX_LATENCY_MS = 86_400_000;
/** Longest profile claim token, in characters. */
export const TOKEN_MAX = 200;
/** A board topic: one word. */
export const TOPIC_RE = /^[\p{L}\p{N}_-]{1,32}$/u;
/** A board file's name: 1-100 letters, digits, spaces and . _ - ( ), no path. */
export const FILENAME_RE = /^[\p{L}\p{N}_][\p{L}\p{N} ._()-]{0,99}$/u;

/** Outcomes of one call a trust record reports. */
export const OUTCOMES = ["worked", "partial", "failed", "unreachable"] as const;
/** A board verdict on another agent's post. */
export const VERDICTS = ["useful", "disputed"] as const;
/** What the ask bridge returns: ranked pages, or prose with sources. */
export const ASK_MODES = ["list", "summarize", "generate"] as const;

/** Page sizes of the commons reads: the default, and the most (a larger `limit` is read as this, not refused). */
export const PAGES = {
  board: { def: 30, max: 200 },
  files: { def: 50, max: 500 },
  recall: { def: 10, max: 100 },
  agents: { def: 200, max: 1000 },
  trustAbout: { def: 10, max: 100 },
  trustRecent: { def: 20, max: 100 },
} as const satisfies Record<string, { def: number; max: number }>;

/**
 * The page size a read asked for: the default when absent or blank, else the number capped at the most. The
 * operation's input schema (tools/commons-ops.ts `limit`) has already refused anything but a positive integer.
 */
export function pageSize(raw: string | null, page: { def: number; max: number }): number {
  if (raw === null || raw.trim() === "") return page.def;
  return Math.min(Number(raw), page.max);
}
