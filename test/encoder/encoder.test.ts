import { describe, expect, it } from "vitest";
import { DIMENSION, TextEncoder1024 } from "../../src/encoder/encoder.js";
import { Lexicon } from "../../src/encoder/lexicon.js";
import { loadWordTable } from "../../src/encoder/table.js";
import { SvcError } from "../../src/errors.js";

const enc = TextEncoder1024.load();
const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const norm = (a: Float32Array) => Math.sqrt(cos(a, a));
const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

const SAMPLES = [
  "The cat sat on the mat.",
  "experimental investigation of the aerodynamics of a wing in a slipstream",
  "Order #12345 shipped on 2024-03-01 to J. Smith",
  "naïve café résumé — 東京タワー",
  "a",
];

describe("TextEncoder1024", () => {
  it("returns a unit Float32Array of 1024 dims", () => {
    expect(enc.dimension).toBe(1024);
    for (const t of SAMPLES) {
      const v = enc.encode(t);
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(DIMENSION);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
  });

  it("is deterministic: same text, same bytes, across calls, batches and two independent loads", () => {
    const other = new TextEncoder1024(new Lexicon(loadWordTable()));
    expect(other.id).toBe(enc.id);
    const batch = enc.encodeBatch(SAMPLES);
    expect(batch.length).toBe(SAMPLES.length * DIMENSION);
    SAMPLES.forEach((t, i) => {
      const a = enc.encode(t);
      expect(bytes(enc.encode(t)).equals(bytes(a))).toBe(true);
      expect(bytes(other.encode(t)).equals(bytes(a))).toBe(true);
      expect(bytes(batch.subarray(i * DIMENSION, (i + 1) * DIMENSION)).equals(bytes(a))).toBe(true);
    });
    expect(TextEncoder1024.load()).toBe(enc);
  });

  it("maps texts without tokens to one defined unit vector (the last dim), orthogonal to every other text", () => {
    const empty = enc.encode("");
    expect(empty[DIMENSION - 1]).toBe(1);
    expect(norm(empty)).toBe(1);
    for (const t of ["   \n\t ", "?!... --- ***", "🙂🚀"]) expect(bytes(enc.encode(t)).equals(bytes(empty))).toBe(true);
    for (const t of SAMPLES) {
      const v = enc.encode(t);
      expect(v[DIMENSION - 1]).toBe(0);
      expect(cos(v, empty)).toBe(0);
    }
  });

  it("handles Unicode: composed and decomposed accents and full-width forms encode alike; CJK gets real features", () => {
    expect(bytes(enc.encode("café crème")).equals(bytes(enc.encode("cafe\u0301 cre\u0300me")))).toBe(true);
    expect(bytes(enc.encode("ＦＵＬＬ width")).equals(bytes(enc.encode("full WIDTH")))).toBe(true);
    const ja = enc.encode("東京の天気は晴れ");
    expect(ja[DIMENSION - 1]).toBe(0);
    expect(cos(ja, enc.encode("東京の天気は雨"))).toBeGreaterThan(cos(ja, enc.encode("the weather in Tokyo")));
  });

  it("encodes very long text (1 MB) to a finite unit vector", () => {
    const long = "the boundary layer separates near the trailing edge of the wing ".repeat(16_000);
    expect(long.length).toBeGreaterThan(1_000_000);
    const v = enc.encode(long);
    expect(v.every(Number.isFinite)).toBe(true);
    expect(norm(v)).toBeCloseTo(1, 5);
    expect(cos(v, enc.encode("boundary layer separation on wings"))).toBeGreaterThan(0.2);
  });

  it.each([
    ["The cat sat on the mat.", "A kitten was sitting on the rug.", "Quarterly revenue grew by ten percent."],
    ["How do I bake bread at home?", "Easy homemade bread recipe for beginners", "The stock market crashed in 1929."],
    ["Flutter of aircraft wings at high speed", "Vibration of airplane wings in fast flight", "She bought fresh vegetables at the market."],
    [
      "The patient was prescribed antibiotics for the infection.",
      "The doctor gave her medicine to treat the bacterial infection.",
      "The football team won the championship.",
    ],
    ["Reset my account password", "I forgot my password and cannot log in", "Weather forecast: heavy rain tomorrow"],
    ["car", "automobile", "banana"],
  ])("scores %j closer to its paraphrase than to an unrelated text", (a, similar, unrelated) => {
    const va = enc.encode(a);
    expect(cos(va, enc.encode(similar))).toBeGreaterThan(cos(va, enc.encode(unrelated)) + 0.05);
  });

  it("rejects non-strings with E_BAD_REQUEST naming the field", () => {
    expect(() => enc.encode(42 as unknown as string)).toThrow(SvcError);
    try {
      enc.encodeBatch(["ok", null as unknown as string]);
      expect.unreachable();
    } catch (e) {
      expect((e as SvcError).code).toBe("E_BAD_REQUEST");
      expect((e as SvcError).field).toBe("texts[1]");
    }
  });

  it("encodeInto writes a full row even over a dirty buffer", () => {
    const out = new Float32Array(2 * DIMENSION).fill(7);
    enc.encodeInto("", out, 0);
    enc.encodeInto("wing flutter", out, DIMENSION);
    expect(bytes(out.subarray(0, DIMENSION)).equals(bytes(enc.encode("")))).toBe(true);
    expect(bytes(out.subarray(DIMENSION)).equals(bytes(enc.encode("wing flutter")))).toBe(true);
    expect(() => enc.encodeInto("x", out, DIMENSION + 1)).toThrow(SvcError);
  });
});
