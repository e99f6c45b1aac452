import { describe, expect, it } from "vitest";
import { stem } from "../../src/encoder/stem.js";
import { terms } from "../../src/encoder/terms.js";
import { isToken, tokenize } from "../../src/encoder/tokenize.js";

describe("tokenize", () => {
  it("lowercases and splits on everything but letters, marks and digits", () => {
    expect(tokenize("Hello, World! It's 2024 -- v2.5")).toEqual(["hello", "world", "it", "s", "2024", "v2", "5"]);
    expect(tokenize("  \n\t ")).toEqual([]);
    expect(tokenize("")).toEqual([]);
  });

  it("normalizes non-ASCII text (NFKC) and splits Han/kana into characters", () => {
    expect(tokenize("Cafe\u0301 ＦＵＬＬ")).toEqual(["café", "full"]);
    expect(tokenize("Привет, мир")).toEqual(["привет", "мир"]);
    expect(tokenize("東京タワー tokyo")).toEqual(["東", "京", "タ", "ワ", "ー", "tokyo"]);
  });

  it("isToken accepts exactly the tokenizer's own outputs", () => {
    expect(isToken("wing")).toBe(true);
    expect(isToken("Wing")).toBe(false);
    expect(isToken("e-mail")).toBe(false);
  });
});

describe("Porter stemmer", () => {
  it.each([
    ["caresses", "caress"],
    ["ponies", "poni"],
    ["cats", "cat"],
    ["agreed", "agre"],
    ["plastered", "plaster"],
    ["motoring", "motor"],
    ["hopping", "hop"],
    ["filing", "file"],
    ["happy", "happi"],
    ["relational", "relat"],
    ["conditional", "condit"],
    ["generalizations", "gener"],
    ["oscillators", "oscil"],
    ["hopefulness", "hope"],
    ["adjustment", "adjust"],
    ["adoption", "adopt"],
    ["controll", "control"],
    ["aeroelasticity", "aeroelast"],
  ])("%s -> %s", (word, expected) => {
    expect(stem(word)).toBe(expected);
  });

  it("leaves short, non-ASCII and numeric tokens alone", () => {
    expect(["is", "café", "2024", "x1"].map(stem)).toEqual(["is", "café", "2024", "x1"]);
  });

  it("terms() is tokenize then stem", () => {
    expect(terms("Flutter of vibrating wings")).toEqual(["flutter", "of", "vibrat", "wing"]);
  });
});
