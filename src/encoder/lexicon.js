/** @module lexicon — lookups derived from the word table at load: word -> row, stem -> row, per-row vector norms, and the frequency prior from rank. */
import { stem } from "./stem.js";
/**
 * Row r of the table is the (r+1)-th most frequent word of the source corpus (GloVe 6B:
 * Wikipedia + Gigaword). Under Zipf's law its probability is about 1 / (rank * H) with
 * H = ln(V) + 0.5772, so rank is the whole frequency prior. A word outside the table is
 * rarer than every word in it and gets rank 2V.
 */
export class Lexicon {
    table;
    /** rank given to words the table does not hold */
    oovRank;
    /** Zipf normalizer H */
    zipfH;
    /** L2 norm of each row's dequantized vector */
    norms;
    rowOfWord = new Map();
    rowOfStem = new Map();
    constructor(table) {
        this.table = table;
        this.oovRank = 2 * table.count;
        this.zipfH = Math.log(table.count) + 0.5772156649;
        this.norms = new Float32Array(table.count);
        const { dims, vectors, scales } = table;
        for (let r = 0; r < table.count; r++) {
            const w = table.words[r];
            this.rowOfWord.set(w, r);
            const s = stem(w);
            if (!this.rowOfStem.has(s))
                this.rowOfStem.set(s, r);
            let ss = 0;
            for (let d = 0; d < dims; d++)
                ss += vectors[r * dims + d] ** 2;
            this.norms[r] = Math.sqrt(ss) * scales[r];
        }
    }
    /** Row of the word itself, else of the most frequent table word with the same stem, else -1. */
    row(token, stemmed) {
        return this.rowOfWord.get(token) ?? this.rowOfStem.get(stemmed) ?? -1;
    }
    /** 1-based frequency rank of a token whose table row is `row` (-1: not in the table; see `missingRank`). */
    rank(row, token) {
        return row >= 0 ? row + 1 : missingRank(token, this.oovRank);
    }
    /** Estimated corpus probability of a word of this rank (Zipf). */
    probability(rank) {
        return 1 / (rank * this.zipfH);
    }
}
/** Ranks for single letters the source table omits (it drops every 1-letter word and every number). */
const LETTER_RANK = { a: 6, i: 20, s: 100 };
/**
 * The prior for tokens outside the table: single letters and digits are frequent (a: 6, i: 20,
 * s: 100, other letters and digits: 1000); an n-digit number ranks 10^(n+1) (years and codes
 * are rarer than small numbers, long identifiers are distinctive); anything else gets `oovRank`.
 */
export function missingRank(token, oovRank) {
    if (token.length === 1)
        return LETTER_RANK[token] ?? (token.charCodeAt(0) < 0x80 ? 1000 : oovRank);
    if (/^[0-9]+$/.test(token))
        return Math.min(oovRank, 10 ** (token.length + 1));
    return oovRank;
}
//# sourceMappingURL=lexicon.js.map