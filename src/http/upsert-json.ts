/**
 * @module upsert-json — a JSON upsert body (`{"vectors": [{"id", "values": [numbers], "metadata"}], "namespace"}`,
 * the official Pinecone clients' shape) read with each `values` array parsed straight from the bytes into one
 * float32 buffer: no JavaScript array of doubles per vector, no string of the whole body; and a JSON query body
 * (`{"vector": [numbers], "topK", ...}`) with its `vector` read the same way. Everything else (ids, metadata,
 * other fields) goes through JSON.parse of its own span. A body of any other shape, or with anything this reader
 * does not take (escaped keys, repeated keys, a non-number in the array, malformed JSON), is left to the plain
 * JSON.parse path (null), so errors and results stay exactly those of JSON.parse.
 */
import { upsertValuesBuffer } from "../engine/upsert-buffers.js";
import { RESERVED_KEYS } from "../safe-values.js";

/** Thrown inside the reader: the body is not one it takes (the caller uses JSON.parse). */
const NOT_TAKEN = Symbol("not taken");

/** Exact powers of ten as doubles (10^22 is the largest exactly representable). */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));
/** Relative margin around an inexact approximation (error < 2^-49) inside which its float32 rounding is certain. */
const MARGIN = 2 ** -44;

/**
 * The body as an object whose vectors' `values` are Float32Array views, in order, of one buffer from
 * upsertValuesBuffer (so the collection takes it as the batch's rows without a copy); null when the body is not
 * taken. Each value is Math.fround of what JSON.parse reads for the number.
 */
export function readUpsertJson(body: Buffer): Record<string, unknown> | null {
  try {
    return new Reader(body, "upsert").body();
  } catch (e) {
    if (e === NOT_TAKEN) return null;
    throw e;
  }
}

/**
 * A query body as an object whose top-level `vector` (when it is a non-empty array of numbers each finite in float32)
 * is a Float32Array of Math.fround of what JSON.parse reads (what the engine makes of the numbers: float32, checked
 * finite after the conversion); null when the body is not taken. Pinecone's JSON.parse of 1024 decimal numbers was
 * the largest part of a JSON query's server CPU (bench/RESULTS.md, "served-cpu").
 */
export function readQueryJson(body: Buffer): Record<string, unknown> | null {
  try {
    return new Reader(body, "query").body();
  } catch (e) {
    if (e === NOT_TAKEN) return null;
    throw e;
  }
}

class Reader {
  private p = 0;
  private floats: Float32Array;
  /** Floats written. */
  private n = 0;
  /** Per array read into floats: the object, its key, its first float and length. */
  private readonly spans: Array<{ o: Record<string, unknown>; key: string; at: number; len: number }> = [];

  private readonly dv: DataView;

  /** "upsert": each vector's `values` (floats in an upsertValuesBuffer, taken as the batch's rows); "query": the top-level `vector`. */
  constructor(
    private readonly b: Buffer,
    private readonly mode: "upsert" | "query",
  ) {
    this.dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    // Every loop stops at a "}" or earlier: the number reader never reads past the end.
    let last = b.length - 1;
    while (last >= 0 && (b[last] === 0x20 || b[last] === 0x0a || b[last] === 0x0d || b[last] === 0x09)) last--;
    if (b[last] !== 0x7d) throw NOT_TAKEN;
    // An upsert's is sized for the batch after its first vector (see vectors()); a query's grows by doubling from a
    // common dimension (a number takes at least 2 bytes with its comma: never more than b.length / 2 floats).
    this.floats =
      mode === "upsert"
        ? new Float32Array(upsertValuesBuffer(4 * Math.min(b.length >> 1, 1 << 16)))
        : new Float32Array(Math.max(8, Math.min(b.length >> 1, 1024)));
  }

  body(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.mode === "upsert") this.object(out, (key) => (key === "vectors" && this.peek() === 0x5b ? this.vectors() : this.span()));
    else this.object(out, (key) => (key === "vector" && this.peek() === 0x5b ? this.values(out, key) : this.span()));
    this.ws();
    if (this.p !== this.b.length) throw NOT_TAKEN;
    for (const s of this.spans) s.o[s.key] = this.floats.subarray(s.at, s.at + s.len);
    return out;
  }

  private vectors(): unknown[] {
    const out: unknown[] = [];
    this.p++; // [
    this.ws();
    if (this.peek() === 0x5d) {
      this.p++;
      return out;
    }
    const start = this.p;
    for (;;) {
      if (this.peek() !== 0x7b) throw NOT_TAKEN;
      const o: Record<string, unknown> = {};
      this.object(o, (key) => (key === "values" && this.peek() === 0x5b ? this.values(o, key) : this.span()));
      out.push(o);
      if (out.length === 1 && this.n > 0) this.resize(Math.ceil(((this.b.length - start) / (this.p - start)) * 1.02) * this.n + this.n);
      this.ws();
      const c = this.b[this.p++];
      if (c === 0x5d) return out;
      if (c !== 0x2c) throw NOT_TAKEN;
      this.ws();
    }
  }

  /** `{ "key": value, ... }` into `out`; `value(key)` reads the value at the cursor (after the colon and whitespace). */
  private object(out: Record<string, unknown>, value: (key: string) => unknown): void {
    this.ws();
    if (this.b[this.p++] !== 0x7b) throw NOT_TAKEN;
    this.ws();
    if (this.peek() === 0x7d) {
      this.p++;
      return;
    }
    for (;;) {
      const key = this.key();
      // A repeated or reserved key: JSON.parse and the safe-values check decide (the last repeat wins there).
      if (RESERVED_KEYS.has(key) || Object.hasOwn(out, key)) throw NOT_TAKEN;
      this.ws();
      if (this.b[this.p++] !== 0x3a) throw NOT_TAKEN;
      this.ws();
      out[key] = value(key);
      this.ws();
      const c = this.b[this.p++];
      if (c === 0x7d) return;
      if (c !== 0x2c) throw NOT_TAKEN;
      this.ws();
    }
  }

  /** A key without escapes. */
  private key(): string {
    const b = this.b;
    if (b[this.p] !== 0x22) throw NOT_TAKEN;
    const start = ++this.p;
    let ascii = true;
    for (;;) {
      const c = b[this.p];
      if (c === undefined || c === 0x5c || c < 0x20) throw NOT_TAKEN;
      if (c === 0x22) break;
      if (c >= 0x80) ascii = false;
      this.p++;
    }
    const s = ascii ? latin1(b, start, this.p) : b.toString("utf8", start, this.p);
    this.p++;
    return s;
  }

  /** Any JSON value: its extent found here, its meaning (and validity) JSON.parse's. */
  private span(): unknown {
    const b = this.b;
    const start = this.p;
    let depth = 0;
    let plain = true; // a string without escapes or non-ASCII bytes: no JSON.parse needed
    do {
      const c = b[this.p++];
      if (c === undefined) throw NOT_TAKEN;
      if (c === 0x22) {
        for (;;) {
          const d = b[this.p++];
          if (d === undefined || d < 0x20) throw NOT_TAKEN;
          if (d === 0x22) break;
          if (d === 0x5c) {
            plain = false;
            this.p++;
          } else if (d >= 0x80) plain = false;
        }
      } else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) depth--;
      else if (depth === 0) {
        // a number or literal: up to the next separator or whitespace
        while (this.p < b.length && !isEnd(b[this.p]!)) this.p++;
        plain = false;
      }
    } while (depth > 0);
    if (depth < 0) throw NOT_TAKEN;
    if (plain && b[start] === 0x22) return latin1(b, start + 1, this.p - 1);
    try {
      return JSON.parse(b.toString("utf8", start, this.p));
    } catch {
      throw NOT_TAKEN;
    }
  }

  /** `[numbers]` into the float buffer; returns a placeholder: the view is set once the buffer is final (body()). */
  private values(o: Record<string, unknown>, key: string): null {
    const b = this.b;
    const at = this.n;
    this.p++; // [
    this.ws();
    if (b[this.p] === 0x5d) {
      if (this.mode === "query") throw NOT_TAKEN; // [] stays a JavaScript array (the engine's length error names it as before)
      this.p++;
    } else
      for (;;) {
        if (this.n === this.floats.length) this.resize(this.floats.length * 2);
        this.number(this.floats, this.n++);
        this.ws();
        const c = b[this.p++];
        if (c === 0x5d) break;
        if (c !== 0x2c) throw NOT_TAKEN;
        this.ws();
      }
    if (this.mode === "query") {
      // A number past float32's range: JSON.parse's double goes to the engine, which names it non-finite after its own conversion.
      for (let i = at; i < this.n; i++) if (this.floats[i]! - this.floats[i]! !== 0) throw NOT_TAKEN;
    }
    this.spans.push({ o, key, at, len: this.n - at });
    return null;
  }

  private resize(floats: number): void {
    if (floats < this.n) return;
    const next = new Float32Array(this.mode === "upsert" ? upsertValuesBuffer(floats * 4) : new ArrayBuffer(floats * 4));
    next.set(this.floats.subarray(0, this.n));
    this.floats = next;
  }

  /**
   * Store at out[at] a JSON number rounded to float32 exactly as Math.fround(JSON.parse(text)): up to 15
   * significant digits with a power of ten up to 22 the double is exact (m * 10^e or m / 10^e of two exact
   * doubles, rounded once); up to 19 digits the approximation (relative error < 2^-49) is used when its float32
   * rounding cannot differ from the exact double's; anything else is read by Number() (which reads JSON numbers
   * as JSON.parse does). Digits are taken eight at a time where they can be (two 32-bit loads); the value is
   * stored here rather than returned (a returned double would be boxed). Never reads past the body: it ends
   * with "}" (checked in the constructor).
   */
  private number(out: Float32Array, at: number): void {
    const b = this.b;
    const dv = this.dv;
    const last8 = b.length - 8;
    const start = this.p;
    let p = start;
    let c = b[p]!;
    const neg = c === 0x2d;
    if (neg) c = b[++p]!;
    let m = 0; // the significant digits read so far (exact below 2^53)
    let sig = 0;
    let exp = 0;
    if (c === 0x30) c = b[++p]!;
    else if ((c - 0x31) >>> 0 < 9) {
      const from = p;
      while (p <= last8) {
        const lo = dv.getUint32(p, true);
        const hi = dv.getUint32(p + 4, true);
        if (!fourDigits(lo) || !fourDigits(hi)) break;
        m = m * 1e8 + (fourValue(lo) * 10_000 + fourValue(hi));
        p += 8;
      }
      c = b[p]!;
      while ((c - 0x30) >>> 0 < 10) {
        m = m * 10 + (c - 0x30);
        c = b[++p]!;
      }
      sig = p - from;
    } else throw NOT_TAKEN;
    if (c === 0x2e) {
      c = b[++p]!;
      if ((c - 0x30) >>> 0 >= 10) throw NOT_TAKEN;
      if (m === 0) {
        const zeros = p;
        while (c === 0x30) c = b[++p]!;
        exp -= p - zeros;
      }
      // the integer part's digit loop again, inline: a shared method (m in a field) cost ~10 µs of server CPU a vector (~8% of JSON ingest)
      const from = p;
      while (p <= last8) {
        const lo = dv.getUint32(p, true);
        const hi = dv.getUint32(p + 4, true);
        if (!fourDigits(lo) || !fourDigits(hi)) break;
        m = m * 1e8 + (fourValue(lo) * 10_000 + fourValue(hi));
        p += 8;
      }
      c = b[p]!;
      while ((c - 0x30) >>> 0 < 10) {
        m = m * 10 + (c - 0x30);
        c = b[++p]!;
      }
      sig += p - from;
      exp -= p - from;
    }
    if (c === 0x65 || c === 0x45) {
      c = b[++p]!;
      let sign = 1;
      if (c === 0x2b || c === 0x2d) {
        if (c === 0x2d) sign = -1;
        c = b[++p]!;
      }
      if ((c - 0x30) >>> 0 >= 10) throw NOT_TAKEN;
      let e = 0;
      do {
        if (e < 100_000) e = e * 10 + (c - 0x30);
        c = b[++p]!;
      } while ((c - 0x30) >>> 0 < 10);
      exp += sign * e;
    }
    this.p = p;
    if (m === 0) {
      out[at] = neg ? -0 : 0;
      return;
    }
    if (exp >= -22 && exp <= 22) {
      const x = exp < 0 ? m / POW10[-exp]! : m * POW10[exp]!;
      if (sig <= 15) {
        out[at] = neg ? -x : x; // the store rounds to float32
        return;
      }
      if (sig <= 19) {
        const lo = Math.fround(x * (1 - MARGIN));
        if (lo === Math.fround(x * (1 + MARGIN))) {
          out[at] = neg ? -lo : lo;
          return;
        }
      }
    }
    out[at] = Number(latin1(b, start, p));
  }

  private ws(): void {
    const b = this.b;
    let c = b[this.p];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++this.p];
  }

  private peek(): number | undefined {
    return this.b[this.p];
  }
}

/** Whether the 4 bytes of x (little-endian) are all ASCII digits. */
function fourDigits(x: number): boolean {
  return (x & 0xf0f0f0f0) === (0x30303030 | 0) && ((x + 0x06060606) & 0xf0f0f0f0) === (0x30303030 | 0);
}

/** The 4 ASCII digits of x (the first in the lowest byte) as a number, 0..9999. */
function fourValue(x: number): number {
  const pairs = Math.imul(x & 0x0f0f0f0f, 2561) >>> 8; // byte 0: d0 * 10 + d1, byte 2: d2 * 10 + d3
  return Math.imul(pairs & 0x00ff00ff, 6553601) >>> 16;
}

function isEnd(c: number): boolean {
  return c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function latin1(b: Buffer, start: number, end: number): string {
  return b.toString("latin1", start, end);
}
