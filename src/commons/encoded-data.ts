/**
 * @module commons/encoded-data — the commons' one rule for encoded payloads in free text: base64
 * (one token, wrapped at any width, split by spaces), hex (one token, groups, bytes separated by
 * spaces, colons or commas, 0x-prefixed), data: URIs, escape and percent-escape runs. URLs and
 * prose pass: a URL is judged by its own parts, and a run of characters is called encoded by how
 * its characters are distributed (random bytes in base64 switch between upper case, lower case and
 * digits on most characters; hex of random bytes mixes digits and a-f), not by its alphabet alone.
 */

/** A data: URI with inline base64. */
const DATA_URI = /data:[\w.+-]+\/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,/i;
/** Six or more percent-escapes in a row (%41%42...) outside a URL. */
const PERCENT_RUN = /(?:%[0-9a-f]{2}){6,}/i;
/** Twelve or more escapes of the form \xNN or \uNNNN in a row. */
const ESCAPE_RUN = /(?:\\x[0-9a-f]{2}|\\u[0-9a-f]{4}){12,}/i;
/** A URL: scheme://, then everything up to whitespace or a quote/bracket. */
const URL = /\b(?:https?|ftp|wss?):\/\/[^\s"'`<>]+/gi;
/** Chunks of the base64 alphabet (standard and URL-safe) with optional padding. */
const CHUNK = /[A-Za-z0-9+/_-]+={0,2}/g;
const HEX_CHUNK = /^(?:0x)?([0-9a-f]+)$/i;
/** An ordinary word: lowercase or Capitalized letters with a vowel (shouting needs no rule: base64 mixes both cases). */
const PLAIN_WORD = /^(?=.*[aeiouyAEIOUY])[A-Za-z][a-z]*$/;

/** Shortest base64 run (characters; 42 bytes) called a blob. */
export const BASE64_MIN = 56;
/** Shortest hex run (digits) called a blob: one token, or several tokens together. */
export const HEX_MIN_TOKEN = 80;
export const HEX_MIN_GROUPED = 64;
/** A URL part is judged as a base64 run only from this length (ids in URLs are shorter). */
const URL_PART_MIN = 100;

type Kind = 0 | 1 | 2 | 3; // upper, lower, digit, other

function kind(c: number): Kind {
  if (c >= 65 && c <= 90) return 0;
  if (c >= 97 && c <= 122) return 1;
  if (c >= 48 && c <= 57) return 2;
  return 3;
}

/** Whether `s` (base64 alphabet, padding stripped) is distributed like base64 of data: both cases, and the character class changes on most characters. */
function base64Like(s: string): boolean {
  const n = s.length;
  if (n < BASE64_MIN) return false;
  const count = [0, 0, 0, 0];
  let switches = 0;
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const k = kind(s.charCodeAt(i));
    count[k]!++;
    if (prev >= 0 && k !== prev) switches++;
    prev = k;
  }
  // Random bytes: upper 0.41, lower 0.41, digits 0.16, switches 0.64 per character; prose,
  // identifiers and URL paths switch on a third of their characters or fewer.
  return count[0]! + count[1]! >= 0.3 * n && count[0]! >= 0.05 * n && count[1]! >= 0.05 * n && switches >= 0.45 * (n - 1);
}

/** Whether `digits` (hex digits) look like hex of data: letters among them (numbers have none) and at least 2 bits of entropy per digit (not one repeated letter). */
function hexLike(digits: string): boolean {
  const lower = digits.toLowerCase();
  const count = new Map<string, number>();
  let letters = 0;
  for (const c of lower) {
    count.set(c, (count.get(c) ?? 0) + 1);
    if (c >= "a") letters++;
  }
  let bits = 0;
  for (const k of count.values()) bits -= (k / lower.length) * Math.log2(k / lower.length);
  // Random bytes: 0.375 letters, ~3.9 bits per digit; hex of ASCII text has fewer letters but some.
  return letters >= 0.05 * lower.length && bits >= 2;
}

interface Chunk {
  text: string;
  start: number;
  end: number;
}

/** Maximal groups of consecutive chunks whose gaps satisfy `gap`. */
function runs(chunks: Chunk[], text: string, gap: RegExp): Chunk[][] {
  const out: Chunk[][] = [];
  let cur: Chunk[] = [];
  for (const c of chunks) {
    if (cur.length > 0 && !gap.test(text.slice(cur[cur.length - 1]!.end, c.start))) {
      out.push(cur);
      cur = [];
    }
    cur.push(c);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Hex: consecutive hex chunks separated by whitespace, commas or colons. */
function hexProblem(chunks: Chunk[], text: string): string | null {
  for (const run of runs(chunks, text, /^[\s,:]*$/)) {
    let group: string[] = [];
    const flush = () => {
      const digits = group.join("");
      const hit = (group.length === 1 ? digits.length >= HEX_MIN_TOKEN : digits.length >= HEX_MIN_GROUPED) && hexLike(digits);
      group = [];
      return hit;
    };
    for (const c of run) {
      const m = HEX_CHUNK.exec(c.text);
      if (m) group.push(m[1]!);
      else if (flush()) return "a hex-encoded blob";
    }
    if (flush()) return "a hex-encoded blob";
  }
  return null;
}

/**
 * Base64: chunks separated by whitespace (one line, wrapped lines, groups split by spaces).
 * Ordinary words at the edges of a run are dropped and three in a row split it (a blob split
 * into short groups holds a plain-looking group now and then), so prose around a blob neither
 * hides it nor is taken for one.
 */
function base64Problem(chunks: Chunk[], text: string): string | null {
  for (const run of runs(chunks, text, /^\s*$/)) {
    const plain = run.map((c) => PLAIN_WORD.test(c.text));
    let i = 0;
    while (i < run.length) {
      while (i < run.length && plain[i]) i++;
      let j = i;
      while (j < run.length && !(plain[j] && plain[j + 1] && plain[j + 2])) j++;
      let end = j;
      while (end > i && plain[end - 1]) end--;
      if (base64Like(run.slice(i, end).map((c) => c.text.replace(/=+$/, "")).join(""))) return "a base64-encoded blob";
      i = j;
    }
  }
  return null;
}

/** Why a URL carries an encoded payload: a very long base64-like part, or percent-escapes that are not UTF-8 text. */
function urlProblem(url: string): string | null {
  for (const part of url.split(/[/?&=#;,]+/)) {
    if (part.length >= URL_PART_MIN && base64Like(part.replace(/=+$/, ""))) return "a base64-encoded blob in a URL";
  }
  if (/%[0-9a-f]{2}/i.test(url)) {
    try {
      const decoded = decodeURIComponent(url.replace(/%(?![0-9a-f]{2})/gi, "%25"));
      if (/[^\P{Cc}\t\n]/u.test(decoded)) return "percent-encoded control bytes in a URL";
    } catch {
      return "percent-encoded bytes in a URL that are not UTF-8 text";
    }
  }
  return null;
}

/** What kind of encoded payload `text` holds ("a base64-encoded blob", ...), or null. */
export function encodedData(text: string): string | null {
  if (DATA_URI.test(text)) return "a base64 data: URI";
  if (ESCAPE_RUN.test(text)) return "escaped binary data";
  for (const m of text.matchAll(URL)) {
    const why = urlProblem(m[0]);
    if (why !== null) return why;
  }
  const rest = text.replace(URL, (u) => " ".repeat(u.length));
  if (PERCENT_RUN.test(rest)) return "percent-encoded data";
  const chunks: Chunk[] = [];
  for (const m of rest.matchAll(CHUNK)) chunks.push({ text: m[0], start: m.index!, end: m.index! + m[0].length });
  return hexProblem(chunks, rest) ?? base64Problem(chunks, rest);
}
