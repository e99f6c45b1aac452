/** @module terms — the term pipeline shared by the encoder's word features and BM25: tokenize, then Porter-stem (memoized). */
import { stem } from "./stem.js";
import { tokenize } from "./tokenize.js";
/** Memo of stems; cleared when it reaches this many entries, so memory stays bounded on adversarial vocabularies. */
const MEMO_MAX = 200_000;
const memo = new Map();
/** Porter stem of one token, memoized (pure: the memo never changes a result). */
export function stemOf(token) {
    let s = memo.get(token);
    if (s === undefined) {
        if (memo.size >= MEMO_MAX)
            memo.clear();
        s = stem(token);
        memo.set(token, s);
    }
    return s;
}
/** Stemmed terms of a text, in order (duplicates kept). */
export function terms(text) {
    return tokenize(text).map(stemOf);
}
//# sourceMappingURL=terms.js.map