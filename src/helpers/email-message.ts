/** @module email-message — writes an RFC 5322 / MIME message: multipart/mixed of multipart/alternative (text, html) plus one attachment. */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

const CRLF = "\r\n";
/** RFC 5322 §2.1.1: lines SHOULD stay within 78 characters and MUST stay within 998, CRLF excluded. */
const SOFT_LINE = 78;
/** RFC 2047 section 2: a header line that holds an encoded-word is at most 76 characters. */
const ENCODED_LINE = 76;
const HARD_LINE = 998;

const oneLine = (what: string) => z.string().refine((s) => !/[\r\n\0]/.test(s), { message: `${what} must not contain CR, LF or NUL` });

/** `type/subtype` tokens (RFC 2045 §5.1), optionally followed by `; parameters`. */
const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;[^\r\n]*)?$/;

const EmailArgs = z.object({
  from_addr: oneLine("from_addr").pipe(z.string().min(1)),
  to_addr: oneLine("to_addr").pipe(z.string().min(1)),
  subject: oneLine("subject"),
  plain_text: z.string(),
  html_text: z.string(),
  attachment: z.object({
    filename: oneLine("filename").pipe(z.string().min(1)),
    content_type: z.string().regex(MIME_TYPE, { message: "must be a MIME type such as application/pdf or text/csv; charset=UTF-8" }),
    content: z.string(),
  }),
  date: z.string().optional(),
  output_path: z.string().min(1),
});

export type EmailArgs = z.input<typeof EmailArgs>;

// ---------------------------------------------------------------- date

/**
 * ISO 8601 date or date-time, extended or basic form, optional fraction and offset.
 * Groups: year, month, day, hour, minute, second, fraction, zone.
 */
const ISO_DATE = /^(\d{4})-?(\d{2})-?(\d{2})(?:[Tt ](\d{2}):?(\d{2})(?::?(\d{2})(?:[.,](\d{1,9}))?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * Milliseconds since the epoch of an ISO 8601 value; a value without an offset (naive) is
 * UTC, a date without a time is midnight UTC. Undefined when malformed or out of range.
 */
export function parseIsoDate(value: string): number | undefined {
  const m = ISO_DATE.exec(value.trim());
  if (m === null) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  const local = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  if (new Date(local).getUTCDate() !== d) return undefined; // 2023-02-30 and the like
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== "Z") {
    const digits = zone.slice(1).replace(":", "");
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2) || "0");
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const t = local - offsetMinutes * 60_000;
  const year = new Date(t).getUTCFullYear();
  return year >= 1900 && year <= 9999 ? t : undefined;
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** RFC 5322 §3.3 date-time in UTC, e.g. `Tue, 06 May 2025 14:30:00 +0000` (seconds truncated). */
export function rfc5322Date(t: number): string {
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${DAYS[d.getUTCDay()]}, ${p(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

// ---------------------------------------------------------------- headers

/** Splits `text` into runs of whole code points whose UTF-8 length is at most `max(i)` octets for run i. */
function utf8Runs(text: string, max: (i: number) => number): Buffer[] {
  const runs: Buffer[] = [];
  let current: Buffer[] = [];
  let size = 0;
  for (const ch of text) {
    const bytes = Buffer.from(ch, "utf8");
    if (size + bytes.length > max(runs.length) && size > 0) {
      runs.push(Buffer.concat(current));
      current = [];
      size = 0;
    }
    current.push(bytes);
    size += bytes.length;
  }
  if (size > 0) runs.push(Buffer.concat(current));
  return runs;
}

/**
 * A Subject header, folded. Printable ASCII with single spaces is written as is (folded at
 * spaces, which unfolding restores). Anything else — non-ASCII, tabs, runs of spaces,
 * leading/trailing space, a literal `=?`, or a word too long to fold — is written entirely as
 * RFC 2047 B encoded-words of whole UTF-8 characters, each at most 75 characters and one per
 * line, so decoders (which drop the whitespace between adjacent encoded-words) get the
 * original back exactly.
 */
export function subjectHeader(subject: string): string {
  const name = "Subject: ";
  const words = subject.split(" ");
  const plain =
    subject === "" ||
    (/^[\x21-\x7E]+( [\x21-\x7E]+)*$/.test(subject) &&
      !subject.includes("=?") &&
      words[0]!.length <= SOFT_LINE - name.length &&
      words.every((w) => w.length < SOFT_LINE));
  if (plain) {
    const lines = [name + words[0]!];
    for (const w of words.slice(1)) {
      if (lines[lines.length - 1]!.length + 1 + w.length <= SOFT_LINE) lines[lines.length - 1] += ` ${w}`;
      else lines.push(` ${w}`);
    }
    return lines.join(CRLF);
  }
  // "=?UTF-8?B?" + base64 + "?=": 12 characters of framing. RFC 2047 limits a line holding an
  // encoded-word to 76 characters: a continuation line is one space plus a 72-character word
  // (45 octets -> 60 base64 characters); the first line also holds "Subject: ", so its word
  // carries at most 39 octets (52 base64 characters, a 73-character line).
  const firstMax = Math.floor((ENCODED_LINE - name.length - 12) / 4) * 3;
  const runs = utf8Runs(subject, (i) => (i === 0 ? firstMax : 45));
  return runs.map((run, i) => `${i === 0 ? name : " "}=?UTF-8?B?${run.toString("base64")}?=`).join(CRLF);
}

/** A header written verbatim; it must fit the RFC 5322 hard line limit. */
function verbatimHeader(name: string, value: string, field: string): string {
  const line = `${name}: ${value}`;
  if (Buffer.byteLength(line, "utf8") > HARD_LINE)
    throw new SvcError("E_BAD_REQUEST", `email-message: ${field}: the ${name} header would exceed ${HARD_LINE} octets`, { field });
  return line;
}

/** RFC 2231 attr-char: what may stand unescaped in an extended parameter value. */
const ATTR_CHAR = /[A-Za-z0-9!#$&+\-.^_`|~]/;

/**
 * The Content-Disposition header. A short printable-ASCII filename is a quoted string;
 * otherwise RFC 2231 `filename*` (UTF-8, percent-encoded) split into numbered continuations
 * of whole characters so every line stays within 78 characters.
 */
export function dispositionHeader(filename: string): string {
  const head = "Content-Disposition: attachment;";
  const quoted = `filename="${filename.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  if (/^[\x20-\x7E]*$/.test(filename) && 1 + quoted.length <= SOFT_LINE) return `${head}${CRLF} ${quoted}`;
  const encodedChars = Array.from(filename, (ch) =>
    ATTR_CHAR.test(ch) ? ch : Array.from(Buffer.from(ch, "utf8"), (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(""),
  );
  const segments: string[] = [];
  let current = "";
  for (const enc of encodedChars) {
    if (current.length + enc.length > 56 && current !== "") {
      segments.push(current);
      current = "";
    }
    current += enc;
  }
  segments.push(current);
  if (segments.length === 1) return `${head}${CRLF} filename*=UTF-8''${segments[0]}`;
  return (
    head +
    segments.map((seg, i) => `${CRLF} filename*${i}*=${i === 0 ? "UTF-8''" : ""}${seg}${i === segments.length - 1 ? "" : ";"}`).join("")
  );
}

// ---------------------------------------------------------------- bodies

/**
 * RFC 2045 §6.7 quoted-printable of UTF-8 text in canonical form: every line break (CRLF,
 * CR or LF) becomes a hard CRLF; encoded lines are at most 76 characters, longer ones broken
 * with soft `=` breaks between (never inside) escapes; space or tab before a line end is
 * escaped.
 */
export function quotedPrintable(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => {
      const bytes = Buffer.from(line, "utf8");
      const out: string[] = [];
      let current = "";
      bytes.forEach((b, i) => {
        const last = i === bytes.length - 1;
        const literal = (b >= 33 && b <= 126 && b !== 61) || ((b === 32 || b === 9) && !last);
        const token = literal ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, "0")}`;
        // 75 characters plus the soft-break "=" keeps every line within 76.
        if (current.length + token.length > 75) {
          out.push(`${current}=`);
          current = "";
        }
        current += token;
      });
      out.push(current);
      return out.join(CRLF);
    })
    .join(CRLF);
}

/** Base64 of `bytes` in lines of 76 characters (RFC 2045 §6.8). */
function base64Lines(bytes: Buffer): string {
  return (bytes.toString("base64").match(/.{1,76}/g) ?? [""]).join(CRLF);
}

// ---------------------------------------------------------------- assembly

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * A boundary derived from the message content (same input, same bytes). `=_` cannot occur
 * in quoted-printable or base64 output, and the candidate is also checked against every
 * part, so it never collides with content; the counter only moves on a (theoretical) hit.
 */
function boundaryFor(kind: string, seed: string, parts: string[]): string {
  for (let n = 0; ; n++) {
    const candidate = `=_svc_${kind}_${sha256Hex(`${kind}\0${n}\0${seed}`).slice(0, 32)}`;
    if (!parts.some((p) => p.includes(candidate))) return candidate;
  }
}

/** The domain of the last address in a From value, for the Message-ID; `svc.invalid` when none. */
function messageIdDomain(from: string): string {
  const m = /@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)>?\s*$/.exec(from);
  return m === null ? "svc.invalid" : m[1]!.toLowerCase();
}

/** The whole message as a string (CRLF line ends; ASCII except for a verbatim non-ASCII From/To). */
export function renderMessage(a: z.output<typeof EmailArgs>, dateMillis: number): string {
  const date = rfc5322Date(dateMillis);
  const seed = JSON.stringify([a.from_addr, a.to_addr, a.subject, a.plain_text, a.html_text, a.attachment, date]);

  const textPart = [
    "Content-Type: text/plain; charset=UTF-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    quotedPrintable(a.plain_text),
  ].join(CRLF);
  const htmlPart = [
    "Content-Type: text/html; charset=UTF-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    quotedPrintable(a.html_text),
  ].join(CRLF);
  const altBoundary = boundaryFor("alt", seed, [textPart, htmlPart]);
  const altPart = [
    `Content-Type: multipart/alternative;${CRLF} boundary="${altBoundary}"`,
    "",
    `--${altBoundary}`,
    textPart,
    `--${altBoundary}`,
    htmlPart,
    `--${altBoundary}--`,
  ].join(CRLF);

  // The content is sent as UTF-8 octets, so a text/* type without a charset gets one.
  const type =
    /^text\//i.test(a.attachment.content_type) && !/;\s*charset\s*=/i.test(a.attachment.content_type)
      ? `${a.attachment.content_type}; charset=UTF-8`
      : a.attachment.content_type;
  const attachmentPart = [
    verbatimHeader("Content-Type", type, "attachment.content_type"),
    "Content-Transfer-Encoding: base64",
    dispositionHeader(a.attachment.filename),
    "",
    base64Lines(Buffer.from(a.attachment.content, "utf8")),
  ].join(CRLF);
  const mixedBoundary = boundaryFor("mixed", seed, [altPart, attachmentPart]);

  const headers = [
    verbatimHeader("From", a.from_addr, "from_addr"),
    verbatimHeader("To", a.to_addr, "to_addr"),
    subjectHeader(a.subject),
    `Date: ${date}`,
    `Message-ID: <${sha256Hex(`message\0${seed}`).slice(0, 32)}@${messageIdDomain(a.from_addr)}>`,
    "MIME-Version: 1.0",
    `Content-Type: multipart/mixed;${CRLF} boundary="${mixedBoundary}"`,
  ];
  return [
    ...headers,
    "",
    "This is a multi-part message in MIME format.",
    `--${mixedBoundary}`,
    altPart,
    `--${mixedBoundary}`,
    attachmentPart,
    `--${mixedBoundary}--`,
    "",
  ].join(CRLF);
}

/** Validate, then write the message file. Returns `output_path` as given. */
export function build(args: unknown): string {
  const a = parseArgs("email-message", EmailArgs, args);
  let dateMillis = Date.now();
  if (a.date !== undefined) {
    const t = parseIsoDate(a.date);
    if (t === undefined)
      throw new SvcError(
        "E_BAD_REQUEST",
        `email-message: date: not an ISO 8601 date-time (e.g. 2025-05-06T14:30:00Z; naive values are UTC): ${JSON.stringify(a.date)}`,
        { field: "date" },
      );
    dateMillis = t;
  }
  const message = renderMessage(a, dateMillis);
  const path = prepareOutput(a.output_path, "output_path");
  try {
    writeFileSync(path, message, "utf8");
  } catch (err) {
    throw new SvcError("E_IO", `email-message: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return a.output_path; // as given, per the contract (the file is at its resolved path)
}
