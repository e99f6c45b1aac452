/** @module passages — real encoder vectors for the HTTP bench: Cranfield documents cut into short overlapping passages, and the Cranfield queries, through the text encoder (src/encoder). */
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { docText, loadCranfield } from "../cranfield.js";

export interface Passages {
  /** `window` words every `stride` words of each document (title + body); a document shorter than a window is one passage. */
  window: number;
  stride: number;
  docs: number;
  /** Sentences the corpus has (split on . ? ! ;, at least 4 words): the count a sentence split would have given. */
  sentences: number;
  texts: string[];
  /** texts.length x 1024 floats, row i = encode(texts[i]). */
  vectors: Float32Array;
  queries: Float32Array[];
  encodeSeconds: number;
}

/** Every passage of the corpus and every query, encoded (a few seconds for ~60k passages). */
export function cranfieldPassages(window: number, stride: number): Passages {
  const cran = loadCranfield();
  const texts: string[] = [];
  let sentences = 0;
  for (const d of cran.docs) {
    const text = docText(d);
    sentences += text.split(/[.?!;]/).filter((s) => s.trim().split(/\s+/).length >= 4).length;
    const words = text.split(/\s+/).filter((w) => w !== "");
    if (words.length === 0) continue;
    for (let at = 0; ; at += stride) {
      texts.push(words.slice(at, at + window).join(" "));
      if (at + window >= words.length) break;
    }
  }
  const encoder = TextEncoder1024.load();
  const t0 = performance.now();
  const vectors = encoder.encodeBatch(texts);
  const queries = cran.queries.map((q) => encoder.encode(q.text));
  return { window, stride, docs: cran.docs.length, sentences, texts, vectors, queries, encodeSeconds: (performance.now() - t0) / 1000 };
}
