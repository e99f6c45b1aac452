/** @module encoder — TextEncoder1024: deterministic, offline text -> L2-normalized Float32Array(1024): a GloVe semantic block plus signed feature hashing of stems and character n-grams. */
import { SvcError } from "../errors.js";
import { hashRange, hashString } from "./hash.js";
import { Lexicon } from "./lexicon.js";
import { DEFAULT_TABLE_DIR, loadWordTable } from "./table.js";
import { stemOf } from "./terms.js";
import { tokenize } from "./tokenize.js";

export const DIMENSION = 1024;

/**
 * The weights of the design (docs/internals/encoder.md). Changing any value changes
 * every vector: bump DESIGN_VERSION with it.
 */
export interface EncoderDesign {
  /** lexical weight of a term: idf from its frequency rank, ln(1 + rank / r0) */
  r0: number;
  /** term-frequency saturation tf * (k1 + 1) / (tf + k1 * (1 - b + b * tokens / L0)) */
  k1: number;
  b: number;
  L0: number;
  /** the first `lead` tokens count 1 + leadBoost times (titles and opening sentences carry the topic) */
  lead: number;
  leadBoost: number;
  /** semantic weight of a word: SIF a / (a + p(word)), p from the Zipf prior */
  sifA: number;
  /** squared-norm share of each block in the output (they sum to 1) */
  shareSemantic: number;
  shareStems: number;
  shareGrams: number;
  /** character n-gram lengths over "<token>" */
  gramMin: number;
  gramMax: number;
  /** hash seed: stems use seed + 1, character n-grams seed + 3 */
  seed: number;
}

export const DESIGN_VERSION = 1;

export const DEFAULT_DESIGN: Readonly<EncoderDesign> = Object.freeze({
  r0: 1,
  k1: 1.2,
  b: 1,
  L0: 50,
  lead: 20,
  leadBoost: 1,
  sifA: 1e-3,
  shareSemantic: 0.2,
  shareStems: 0.6,
  shareGrams: 0.2,
  gramMin: 4,
  gramMax: 5,
  seed: 0x5eed0000,
});

const SIGN = 0x80000000;
const memo = new Map<string, TextEncoder1024>();

/**
 * Layout of the 1024 dims: [0, S) the semantic block (S = table dims, 100: the SIF-weighted mean
 * of the words' GloVe vectors); [S, 1023) signed feature hashing of stems and of character
 * 4..5-grams; 1023 is set only for a text without tokens (empty, whitespace, punctuation), so
 * that vector is the same unit vector for all of them and orthogonal to every other text.
 */
export class TextEncoder1024 {
  readonly dimension = DIMENSION;
  /** identifies the vector space: design version + word table checksum (store it beside vectors) */
  readonly id: string;
  readonly design: Readonly<EncoderDesign>;
  private readonly lexicon: Lexicon;
  private readonly semDims: number;
  private readonly hashDims: number;
  private readonly emptyDim = DIMENSION - 1;
  /** per table row: lexical idf, and the semantic weight folded with the row's dequantization scale / norm */
  private readonly rowIdf: Float64Array;
  private readonly rowSem: Float64Array;
  private readonly sem: Float64Array;
  private readonly stems: Float64Array;
  private readonly grams: Float64Array;
  private readonly termOf = new Map<string, number>();

  constructor(lexicon: Lexicon, design: Readonly<EncoderDesign> = DEFAULT_DESIGN) {
    this.lexicon = lexicon;
    this.design = design;
    const { table } = lexicon;
    this.id = `text1024-v${DESIGN_VERSION}-${table.manifest.sha256.slice(0, 12)}`;
    this.semDims = table.dims;
    this.hashDims = DIMENSION - 1 - this.semDims;
    this.rowIdf = new Float64Array(table.count);
    this.rowSem = new Float64Array(table.count);
    for (let r = 0; r < table.count; r++) {
      const rank = r + 1;
      this.rowIdf[r] = Math.log(1 + rank / design.r0);
      const p = lexicon.probability(rank);
      const norm = lexicon.norms[r]!;
      this.rowSem[r] = norm > 0 ? ((design.sifA / (design.sifA + p)) * table.scales[r]!) / norm : 0;
    }
    this.sem = new Float64Array(this.semDims);
    this.stems = new Float64Array(this.hashDims);
    this.grams = new Float64Array(this.hashDims);
  }

  /** The encoder over data/encoder/ (or `dir`); the table is read and verified once per process and directory. */
  static load(dir: URL = DEFAULT_TABLE_DIR): TextEncoder1024 {
    let e = memo.get(dir.href);
    if (!e) memo.set(dir.href, (e = new TextEncoder1024(new Lexicon(loadWordTable(dir)))));
    return e;
  }

  encode(text: string): Float32Array {
    const out = new Float32Array(DIMENSION);
    this.encodeInto(text, out, 0);
    return out;
  }

  /** n texts -> one Float32Array of n * 1024 (text i at [i * 1024, (i + 1) * 1024)). */
  encodeBatch(texts: readonly string[]): Float32Array {
    if (!Array.isArray(texts)) throw new SvcError("E_BAD_REQUEST", "texts must be an array of strings", { field: "texts" });
    const out = new Float32Array(texts.length * DIMENSION);
    for (let i = 0; i < texts.length; i++) this.encodeInto(texts[i]!, out, i * DIMENSION, `texts[${i}]`);
    return out;
  }

  /** Writes the unit vector of `text` to out[at, at + 1024). */
  encodeInto(text: string, out: Float32Array, at: number, field = "text"): void {
    if (typeof text !== "string") throw new SvcError("E_BAD_REQUEST", `${field} must be a string`, { field });
    if (!Number.isInteger(at) || at < 0 || at + DIMENSION > out.length)
      throw new SvcError("E_RANGE", `output offset ${at} leaves no room for ${DIMENSION} dims`, { field: "at" });
    const tokens = tokenize(text);
    if (tokens.length === 0) return this.writeEmpty(out, at);
    const d = this.design;
    const lex = this.lexicon;
    const { dims, vectors } = lex.table;
    const H = this.hashDims;
    const sem = this.sem.fill(0);
    const stems = this.stems.fill(0);
    const grams = this.grams.fill(0);

    // unique terms by stem, with lead-weighted counts; the first surface form stands for the term
    const termOf = this.termOf;
    termOf.clear();
    const keys: string[] = [];
    const surface: string[] = [];
    const tf: number[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const tok = tokens[i]!;
      const st = stemOf(tok);
      const add = i < d.lead ? 1 + d.leadBoost : 1;
      const t = termOf.get(st);
      if (t === undefined) {
        termOf.set(st, keys.length);
        keys.push(st);
        surface.push(tok);
        tf.push(add);
      } else tf[t]! += add;
    }

    const lenNorm = d.k1 * (1 - d.b + (d.b * tokens.length) / d.L0);
    for (let t = 0; t < keys.length; t++) {
      const tok = surface[t]!;
      const st = keys[t]!;
      const row = lex.row(tok, st);
      const n = tf[t]!;
      const sat = (n * (d.k1 + 1)) / (n + lenNorm);
      const idf = row >= 0 ? this.rowIdf[row]! : Math.log(1 + lex.rank(row, tok) / d.r0);
      const w = sat * idf;

      const h = hashString(st, d.seed + 1);
      stems[h % H]! += h & SIGN ? -w : w;

      // character n-grams of "<token>"; together they weigh as much as the word
      const marked = `<${tok}>`;
      let count = 0;
      for (let g = d.gramMin; g <= d.gramMax; g++) count += Math.max(0, marked.length - g + 1);
      if (count > 0) {
        const gw = w / Math.sqrt(count);
        for (let g = d.gramMin; g <= d.gramMax; g++) {
          for (let s = 0; s + g <= marked.length; s++) {
            const x = hashRange(marked, s, s + g, d.seed + 3);
            grams[x % H]! += x & SIGN ? -gw : gw;
          }
        }
      }

      if (row >= 0) {
        const sw = sat * this.rowSem[row]!;
        const o = row * dims;
        for (let k = 0; k < dims; k++) sem[k]! += sw * vectors[o + k]!;
      }
    }

    // each block scaled to its share of the squared norm, then the sum normalized
    const fSem = shareScale(sem, d.shareSemantic);
    const fStems = shareScale(stems, d.shareStems);
    const fGrams = shareScale(grams, d.shareGrams);
    let ss = 0;
    for (let k = 0; k < this.semDims; k++) ss += (sem[k]! * fSem) ** 2;
    for (let k = 0; k < H; k++) ss += (stems[k]! * fStems + grams[k]! * fGrams) ** 2;
    if (!(ss > 0)) return this.writeEmpty(out, at);
    const inv = 1 / Math.sqrt(ss);
    for (let k = 0; k < this.semDims; k++) out[at + k] = sem[k]! * fSem * inv;
    const base = at + this.semDims;
    for (let k = 0; k < H; k++) out[base + k] = (stems[k]! * fStems + grams[k]! * fGrams) * inv;
    out[at + this.emptyDim] = 0;
  }

  private writeEmpty(out: Float32Array, at: number): void {
    out.fill(0, at, at + DIMENSION);
    out[at + this.emptyDim] = 1;
  }
}

/** sqrt(share) / |v| (0 for a zero vector): scales v to squared norm `share`. */
function shareScale(v: Float64Array, share: number): number {
  let ss = 0;
  for (let k = 0; k < v.length; k++) ss += v[k]! * v[k]!;
  return ss > 0 ? Math.sqrt(share / ss) : 0;
}
