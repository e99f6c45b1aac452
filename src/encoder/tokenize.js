/** @module tokenize — the one tokenizer shared by the encoder and BM25: NFKC (non-ASCII only), lowercase, runs of letters/marks/digits. */
/**
 * A token is one Han, Hiragana or Katakana character (scripts written without spaces), or a
 * maximal run of other Unicode letters, combining marks and digits; everything else separates.
 */
const WORD = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}]|(?:(?![\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}])[\p{L}\p{M}\p{N}])+/gu;
const ASCII_WORD = /[a-z0-9]+/g;
const NON_ASCII = /[^\x00-\x7f]/;
/**
 * Lowercased word tokens in text order. ASCII text takes a fast path (normalization is a
 * no-op there); other text is NFKC-normalized first, so composed and decomposed forms of the
 * same word (e.g. "é" vs "e\u0301") and full-width forms give the same tokens.
 */
export function tokenize(text) {
    if (!NON_ASCII.test(text))
        return text.toLowerCase().match(ASCII_WORD) ?? [];
    return text.normalize("NFKC").toLowerCase().match(WORD) ?? [];
}
/** True when `word` is exactly one token as `tokenize` would emit it (used to filter the word table). */
export function isToken(word) {
    const t = tokenize(word);
    return t.length === 1 && t[0] === word;
}
//# sourceMappingURL=tokenize.js.map