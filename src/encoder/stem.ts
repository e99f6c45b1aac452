/** @module stem — the Porter (1980) stemmer, as in Martin Porter's reference C implementation; applied only to ASCII a-z words longer than 2 letters. */

const ASCII_WORD = /^[a-z]+$/;

/** Porter stem of a lowercase word; anything that is not 3+ ASCII letters is returned unchanged. */
export function stem(word: string): string {
  if (word.length <= 2 || !ASCII_WORD.test(word)) return word;
  return new Porter(word).run();
}

/** One stemming run over b[0..k]; j marks the end of the stem left by the last matching `ends`. */
class Porter {
  private b: string;
  private k: number;
  private j = 0;

  constructor(word: string) {
    this.b = word;
    this.k = word.length - 1;
  }

  run(): string {
    this.step1ab();
    if (this.k > 0) {
      this.step1c();
      this.step2();
      this.step3();
      this.step4();
      this.step5();
    }
    return this.b.slice(0, this.k + 1);
  }

  /** b[i] is a consonant: not a vowel, and y only when not preceded by a consonant. */
  private cons(i: number): boolean {
    const c = this.b[i];
    if (c === "a" || c === "e" || c === "i" || c === "o" || c === "u") return false;
    if (c === "y") return i === 0 ? true : !this.cons(i - 1);
    return true;
  }

  /** m: the number of vowel-consonant sequences in b[0..j] ([C](VC)^m[V]). */
  private m(): number {
    let n = 0;
    let i = 0;
    const j = this.j;
    for (;;) {
      if (i > j) return n;
      if (!this.cons(i)) break;
      i++;
    }
    i++;
    for (;;) {
      for (;;) {
        if (i > j) return n;
        if (this.cons(i)) break;
        i++;
      }
      i++;
      n++;
      for (;;) {
        if (i > j) return n;
        if (!this.cons(i)) break;
        i++;
      }
      i++;
    }
  }

  private vowelInStem(): boolean {
    for (let i = 0; i <= this.j; i++) if (!this.cons(i)) return true;
    return false;
  }

  private doubleC(j: number): boolean {
    return j >= 1 && this.b[j] === this.b[j - 1] && this.cons(j);
  }

  /** b[i-2..i] is consonant-vowel-consonant and b[i] is not w, x or y. */
  private cvc(i: number): boolean {
    if (i < 2 || !this.cons(i) || this.cons(i - 1) || !this.cons(i - 2)) return false;
    const c = this.b[i];
    return c !== "w" && c !== "x" && c !== "y";
  }

  private ends(s: string): boolean {
    const l = s.length;
    if (l > this.k + 1) return false;
    if (!this.b.startsWith(s, this.k - l + 1)) return false;
    this.j = this.k - l;
    return true;
  }

  private setTo(s: string): void {
    this.b = this.b.slice(0, this.j + 1) + s;
    this.k = this.b.length - 1;
  }

  private r(s: string): void {
    if (this.m() > 0) this.setTo(s);
  }

  /** Plurals and -ed/-ing. */
  private step1ab(): void {
    if (this.b[this.k] === "s") {
      if (this.ends("sses")) this.k -= 2;
      else if (this.ends("ies")) this.setTo("i");
      else if (this.b[this.k - 1] !== "s") this.k--;
    }
    if (this.ends("eed")) {
      if (this.m() > 0) this.k--;
    } else if ((this.ends("ed") || this.ends("ing")) && this.vowelInStem()) {
      this.k = this.j;
      if (this.ends("at")) this.setTo("ate");
      else if (this.ends("bl")) this.setTo("ble");
      else if (this.ends("iz")) this.setTo("ize");
      else if (this.doubleC(this.k)) {
        this.k--;
        const c = this.b[this.k];
        if (c === "l" || c === "s" || c === "z") this.k++;
      } else if (this.m() === 1 && this.cvc(this.k)) this.setTo("e");
    }
  }

  /** Terminal y -> i when the stem has a vowel. */
  private step1c(): void {
    if (this.ends("y") && this.vowelInStem()) this.b = `${this.b.slice(0, this.k)}i${this.b.slice(this.k + 1)}`;
  }

  /** Rules tried in order; the first suffix that matches decides (applied only when m > 0). */
  private rules(list: readonly (readonly [string, string])[]): void {
    for (const [suffix, to] of list) {
      if (this.ends(suffix)) {
        this.r(to);
        return;
      }
    }
  }

  private step2(): void {
    const rules = STEP2[this.b[this.k - 1] ?? ""];
    if (rules) this.rules(rules);
  }

  private step3(): void {
    const rules = STEP3[this.b[this.k] ?? ""];
    if (rules) this.rules(rules);
  }

  /** Drop -ant, -ence etc. when m > 1 (-ion only after s or t). */
  private step4(): void {
    const list = STEP4[this.b[this.k - 1] ?? ""];
    if (!list) return;
    let found = false;
    for (const suffix of list) {
      if (this.ends(suffix)) {
        found = suffix !== "ion" || (this.j >= 0 && (this.b[this.j] === "s" || this.b[this.j] === "t"));
        if (found) break;
      }
    }
    if (found && this.m() > 1) this.k = this.j;
  }

  /** Final -e and -ll. */
  private step5(): void {
    this.j = this.k;
    if (this.b[this.k] === "e") {
      const a = this.m();
      if (a > 1 || (a === 1 && !this.cvc(this.k - 1))) this.k--;
    }
    if (this.b[this.k] === "l" && this.doubleC(this.k) && this.m() > 1) this.k--;
  }
}

type Rules = Record<string, readonly (readonly [string, string])[]>;

/** Keyed by the penultimate letter, as in the reference implementation. */
const STEP2: Rules = {
  a: [
    ["ational", "ate"],
    ["tional", "tion"],
  ],
  c: [
    ["enci", "ence"],
    ["anci", "ance"],
  ],
  e: [["izer", "ize"]],
  l: [
    ["bli", "ble"],
    ["alli", "al"],
    ["entli", "ent"],
    ["eli", "e"],
    ["ousli", "ous"],
  ],
  o: [
    ["ization", "ize"],
    ["ation", "ate"],
    ["ator", "ate"],
  ],
  s: [
    ["alism", "al"],
    ["iveness", "ive"],
    ["fulness", "ful"],
    ["ousness", "ous"],
  ],
  t: [
    ["aliti", "al"],
    ["iviti", "ive"],
    ["biliti", "ble"],
  ],
  g: [["logi", "log"]],
};

/** Keyed by the last letter. */
const STEP3: Rules = {
  e: [
    ["icate", "ic"],
    ["ative", ""],
    ["alize", "al"],
  ],
  i: [["iciti", "ic"]],
  l: [
    ["ical", "ic"],
    ["ful", ""],
  ],
  s: [["ness", ""]],
};

/** Keyed by the penultimate letter; longest suffix first within a letter. */
const STEP4: Record<string, readonly string[]> = {
  a: ["al"],
  c: ["ance", "ence"],
  e: ["er"],
  i: ["ic"],
  l: ["able", "ible"],
  n: ["ant", "ement", "ment", "ent"],
  o: ["ion", "ou"],
  s: ["ism"],
  t: ["ate", "iti"],
  u: ["ous"],
  v: ["ive"],
  z: ["ize"],
};
