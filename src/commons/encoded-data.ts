/**
 * @module commons/encoded-data — the commons' one rule for encoded payloads in free text: base64,
 * base32 and hex however they are cut (one token, wrapped, split by spaces, commas, connector
 * words, "-", numbered or bulleted lines: the message's letters and digits are judged with
 * separators and list markers removed), data: URIs, escape and percent-escape runs. URLs and
 * prose pass: a URL is judged by its own parts, prose words are dropped (three in a row end a
 * stretch), and a run is called encoded by how its characters are distributed (random bytes in
 * base64 switch between upper case, lower case and digits on most characters; hex of random bytes
 * mixes digits and a-f; base32 uses most of its 32 symbols and few vowels), not by its alphabet.
 */

/** A data: URI with inline base64. */
const DATA_URI = /data:[\w.+-]+\/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,/i;
/** Six or more percent-escapes in a row (%41%42...) outside a URL. */
const PERCENT_RUN = /(?:%[0-9a-f]{2}){6,}/i;
/** Twelve or more escapes of the form \xNN or \uNNNN in a row. */
const ESCAPE_RUN = /(?:\\x[0-9a-f]{2}|\\u[0-9a-f]{4}){12,}/i;
/** A URL: scheme://, then everything up to whitespace or a quote/bracket. */
const URL = /\b(?:https?|ftp|wss?):\/\/[^\s"'`<>]+/gi;
const HEX_CHUNK = /^(?:0x)?([0-9a-f]+)$/i;
/** An ordinary word: up to 24 lowercase or Capitalized letters with a vowel (shouting needs no rule: base64 mixes both cases; base32 has its own). */
const PLAIN_WORD = /^(?=.*[aeiouyAEIOUY])[A-Za-z][a-z]{0,23}$/;

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

/**
 * Whether `s` (letters and digits only) is balanced like base64 of random bytes: upper case,
 * lower case and digits each near their share and the class changing on most characters. Stricter
 * than base64Like: it judges text whose separators are gone, where identifiers from prose
 * ("GPT-4o", "70B", "v0") stand side by side; they are mostly digits or one case.
 */
function base64Balanced(s: string): boolean {
  const n = s.length;
  if (n < BASE64_MIN) return false;
  const count = [0, 0, 0, 0];
  let switches = 0;
  for (let i = 0; i < n; i++) {
    const k = kind(s.charCodeAt(i));
    count[k]!++;
    if (i > 0 && k !== kind(s.charCodeAt(i - 1))) switches++;
  }
  // Random bytes: upper 26/62, lower 26/62, digits 10/62, switches 0.62 per character, 37 of the
  // 62 symbols used (n = 56: each at least 2.5 standard deviations from its bound); tables of
  // units and numbers ("MB/s", "4 MB/s") switch as often but repeat a few symbols.
  return count[0]! >= 0.2 * n && count[1]! >= 0.2 * n && count[2]! <= 0.35 * n && switches >= 0.45 * (n - 1) && new Set(s).size >= 24;
}

/** Shortest base32 run (RFC 4648: letters of one case and the digits 2-7) called a blob: several pieces together (35 bytes), or one piece (50 bytes; an IPFS CID or an onion address is shorter). */
export const BASE32_MIN = 56;
export const BASE32_MIN_TOKEN = 80;

/**
 * Whether `s` (base32 alphabet, one case) is distributed like base32 of data: digits 2-7 on a fair
 * share of characters (random bytes: 6 in 32), vowels rare among the letters (random: 5 in 26;
 * English about 2 in 5: prose in capitals is not taken for it) and most of the 32 symbols used
 * (random, n = 56: 26.6 of them, standard deviation about 2; identifiers like "crc32c" repeat a
 * few).
 */
function base32Like(s: string): boolean {
  const n = s.length;
  const digits = s.replace(/[^2-7]/g, "").length;
  const vowels = s.replace(/[^aeiouAEIOU]/g, "").length;
  return digits >= 0.06 * n && vowels <= 0.34 * (n - digits) && new Set(s).size >= 20;
}

// --- 1. Chunks as written, over whitespace -------------------------------------------------

/** Chunks of the base64 alphabet (standard and URL-safe) with optional padding. */
const CHUNK = /[A-Za-z0-9+/_-]+={0,2}/g;

interface Chunk {
  text: string;
  start: number;
  end: number;
}

/** Maximal groups of consecutive chunks whose gaps are whitespace. */
function whitespaceRuns(chunks: Chunk[], text: string): Chunk[][] {
  const out: Chunk[][] = [];
  let cur: Chunk[] = [];
  for (const c of chunks) {
    if (cur.length > 0 && !/^\s*$/.test(text.slice(cur[cur.length - 1]!.end, c.start))) {
      out.push(cur);
      cur = [];
    }
    cur.push(c);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * Base64 as written: chunks separated by whitespace (one line, wrapped lines, groups split by
 * spaces), symbols and all, so a blob of far-from-random bytes (runs of "_-" in base64url) is
 * still seen. Ordinary words at the edges of a run are dropped and three in a row split it.
 */
function base64AsWritten(text: string): string | null {
  const chunks: Chunk[] = [];
  for (const m of text.matchAll(CHUNK)) chunks.push({ text: m[0], start: m.index!, end: m.index! + m[0].length });
  for (const run of whitespaceRuns(chunks, text)) {
    const plain = run.map((c) => PLAIN_WORD.test(c.text));
    let i = 0;
    while (i < run.length) {
      while (i < run.length && plain[i]) i++;
      let j = i;
      while (j < run.length && !(plain[j] && plain[j + 1] && plain[j + 2])) j++;
      let end = j;
      while (end > i && plain[end - 1]) end--;
      if (
        base64Like(
          run
            .slice(i, end)
            .map((c) => c.text.replace(/=+$/, ""))
            .join(""),
        )
      )
        return "a base64-encoded blob";
      i = j;
    }
  }
  return null;
}

// --- 2. Letters and digits, with separators and list markers removed ------------------------

/** A word of the message, separators and list markers removed. */
interface Token {
  /** Latin letters and digits (a UUID without its hyphens), or a word of other letters. */
  text: string;
  /** How many words of prose it counts for; 0: not prose (a piece of a blob, an identifier, a number). */
  prose: number;
  /** A UUID: an identifier, never part of a hex or base32 blob. */
  id: boolean;
}

/** Runs of letters, digits and marks of any script, with the symbols that join words (+ / _ - =). */
const WORD_RUN = /[\p{L}\p{N}\p{M}+/_=-]+/gu;
const UUID = /^[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i;
/**
 * List markers at the start of a line: bullets, and numbers, single letters or roman numerals
 * followed by . ) ] or : ("1.", "a)", "iv.", "(2)", "[3]", "#4"), task boxes ("- [x]"). Separators like the others.
 */
const LIST_MARKER =
  /^([ \t]*)(?:[-*+•·‣▪◦>]+(?:[ \t]+\[[ xX]\])?|\(?(?:\d{1,3}|[A-Za-z]|[ivxlcdm]{1,6}|[IVXLCDM]{1,6})[.)\]:]|\[\d{1,3}\]|#\d{1,3}[.:)]?)(?=[ \t])/gm;
/**
 * An identifier made of words: Capitalized or lower-case parts of 3-24 letters with a vowel, and
 * numbers of up to 4 digits ("DateString", "Float32", "Test262"). Prose, like an
 * ordinary word; in base64 of data such a chunk is rare (case changes within a few characters).
 */
const isWordy = (piece: string) =>
  piece
    .match(/[A-Z]?[a-z]+|[0-9]+|[A-Z]+/g)!
    .every((p) => /^[0-9]{1,4}$/.test(p) || (/^(?:[A-Z][a-z]{2,23}|[a-z]{3,24})$/.test(p) && /[aeiouy]/.test(p)));

/** A word in capitals: 2-24 letters with a vowel (base64 of data seldom has a chunk of capitals only). */
const SHOUTED_WORD = /^(?=.*[AEIOUY])[A-Z]{2,24}$/;

/** Prose words in a row that end a stretch (prose around a blob neither hides it nor is taken for one). */
const PROSE_BREAK = 3;

/**
 * The message's words after removing separators (whitespace, punctuation, symbols, the + / _ - =
 * inside words) and list markers, so a blob cut into chunks joined by ", ", " and ", "-" or
 * numbered lines is one sequence of pieces again. As prose an ordinary word counts 1, so does a
 * word with letters beyond ASCII ("café"), and a word of another script its length in characters
 * (Chinese and Japanese run words together).
 */
function tokens(text: string): Token[] {
  const out: Token[] = [];
  const unmarked = text.replace(LIST_MARKER, (all, indent: string) => indent + " ".repeat(all.length - indent.length));
  for (const [run] of unmarked.matchAll(WORD_RUN)) {
    if (UUID.test(run)) out.push({ text: run.replace(/-/g, ""), prose: 0, id: true });
    else if (/[^A-Za-z0-9+/_=-]/.test(run))
      out.push({ text: run, prose: /[A-Za-z]/.test(run) ? 1 : [...run.replace(/[\p{M}+/_=-]/gu, "")].length, id: false });
    else
      for (const piece of run.split(/[+/_=-]+/))
        if (piece !== "")
          out.push({ text: piece, prose: PLAIN_WORD.test(piece) || SHOUTED_WORD.test(piece) || isWordy(piece) ? 1 : 0, id: false });
  }
  return out;
}

/** Stretches of the pieces that are not prose, joined; PROSE_BREAK prose words in a row end one (prose around a blob neither hides it nor is taken for one). */
function stretches(words: Token[]): string[] {
  const out: string[] = [];
  let cur = "";
  let prose = 0;
  for (const w of words) {
    if (w.prose === 0) {
      cur += w.text;
      prose = 0;
    } else if ((prose += w.prose) >= PROSE_BREAK && cur !== "") {
      out.push(cur);
      cur = "";
    }
  }
  if (cur !== "") out.push(cur);
  return out;
}

/**
 * Runs of consecutive words that `fit`, joined. Any other word ends
 * a run, except one short prose word between two that fit (a connector: "<chunk> and <chunk>").
 * `joinedByWords`: a connector stood inside it.
 */
function groups(words: Token[], fits: (piece: Token) => boolean): { text: string; pieces: number; joinedByWords: boolean }[] {
  const out: { text: string; pieces: number; joinedByWords: boolean }[] = [];
  let text = "";
  let pieces = 0;
  let joinedByWords = false;
  let connector = false;
  const flush = () => {
    if (pieces > 0) out.push({ text, pieces, joinedByWords });
    [text, pieces, joinedByWords, connector] = ["", 0, false, false];
  };
  for (const w of words) {
    if (!w.id && /^[A-Za-z0-9]+$/.test(w.text) && fits(w)) {
      if (connector) joinedByWords = true;
      text += w.text;
      pieces++;
      connector = false;
    } else if (w.prose === 1 && w.text.length <= 4 && pieces > 0 && !connector) connector = true;
    else flush();
  }
  flush();
  return out;
}

/**
 * A run of `min.grouped` characters or more, or one piece of `min.token`; joined by connector
 * words it takes three pieces or more ("fixed in <sha> and <sha>" names two hashes).
 */
const long = (
  g: { text: string; pieces: number; joinedByWords: boolean },
  min: { token: number; grouped: number },
  length = g.text.length,
) => (g.pieces === 1 ? length >= min.token : length >= min.grouped && (!g.joinedByWords || g.pieces >= 3));

function hexProblem(words: Token[]): string | null {
  // a short prose word fits too: a chunk of a blob can read "cafe", a byte dump "ad be ef"
  for (const g of groups(words, (w) => (w.prose === 0 || w.text.length <= 4) && HEX_CHUNK.test(w.text))) {
    const digits = g.text.replace(/0x/gi, "");
    if (long(g, { token: HEX_MIN_TOKEN, grouped: HEX_MIN_GROUPED }, digits.length) && hexLike(digits)) return "a hex-encoded blob";
  }
  return null;
}

function base64Problem(words: Token[]): string | null {
  return stretches(words).some(base64Balanced) ? "a base64-encoded blob" : null;
}

/** Base32 in capitals, or in lower case (one case per blob; digits fit both). */
function base32Problem(words: Token[]): string | null {
  // words in capitals fit (base32Like tells English from data); lower-case prose does not
  for (const fits of [(w: Token) => /^[A-Z2-7]+$/.test(w.text), (w: Token) => w.prose === 0 && /^[a-z2-7]+$/.test(w.text)]) {
    for (const g of groups(words, fits))
      if (long(g, { token: BASE32_MIN_TOKEN, grouped: BASE32_MIN }) && base32Like(g.text)) return "a base32-encoded blob";
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
  const words = tokens(rest);
  return hexProblem(words) ?? base64Problem(words) ?? base32Problem(words) ?? base64AsWritten(rest);
}
