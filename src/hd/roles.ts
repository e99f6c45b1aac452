/**
 * @module hd/roles — role-filler binding: a record of (role, filler) pairs as ONE hypervector, and reading fillers back.
 * bind: R = majority( role(r) XOR filler(f) for each pair [, a tie vector when the count is even] ), D = 8,192 bits.
 * read: for a role r, role(r) XOR R is close to filler(f) of the bound pair and unrelated (cosine ~ 0) to every other
 * candidate, so the nearest candidate is the filler; XOR is its own inverse, which is what makes unbinding exact enough.
 * Atoms are deterministic in (seed, kind, name): the same request gives the same bytes, and no state is stored.
 */
import { SvcError } from "../errors.js";
import { fillVector } from "./kg/vectors.js";

export const ROLES_DIM = 8192;
const WORDS = ROLES_DIM / 32;
export const MAX_PAIRS = 256;
export const MAX_CANDIDATES = 10_000;
const MAX_NAME = 512;

export interface BindResult {
  /** The bound record: ROLES_DIM bits, little-endian bit order, base64. */
  vector: string;
  dimension: number;
  pairs: number;
  seed: number;
}

export interface RoleReading {
  role: string;
  /** The candidate nearest to role XOR record; null when no candidate is clearly there (cosine below MIN_COSINE). */
  filler: string | null;
  /** 1 - 2 * hamming / D between the unbound vector and the filler. */
  cosine: number;
  runnerUp: string | null;
  /** cosine - runner-up cosine, in [0, 1]. */
  margin: number;
}

/** A bundle of k pairs leaves each bound filler at cosine ~ sqrt(2 / (pi k)) (0.08 at k = 100); unrelated atoms sit at 0 +- 0.011. */
export const MIN_COSINE = 0.05;

function atom(seed: number, kind: "role" | "filler", name: string): Uint32Array {
  const v = new Uint32Array(WORDS);
  fillVector(v, seed, kind, name);
  return v;
}

function name(v: unknown, field: string): string {
  if (typeof v !== "string" || v === "" || v.length > MAX_NAME)
    throw new SvcError("E_BAD_REQUEST", `${field} must be a non-empty string of at most ${MAX_NAME} characters`, { field });
  return v;
}

export function parseSeed(v: unknown): number {
  if (v === undefined) return 0;
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 0xffff_ffff)
    throw new SvcError("E_BAD_REQUEST", "seed must be an integer in [0, 2^32 - 1]", { field: "seed" });
  return v as number;
}

/** `pairs`: {role: filler, ...}. */
export function bindRoles(pairs: unknown, seed: number): BindResult {
  if (typeof pairs !== "object" || pairs === null || Array.isArray(pairs))
    throw new SvcError("E_BAD_REQUEST", "pairs must be an object {role: filler}", { field: "pairs" });
  const entries = Object.entries(pairs);
  if (entries.length === 0 || entries.length > MAX_PAIRS)
    throw new SvcError("E_BAD_REQUEST", `pairs must hold 1 to ${MAX_PAIRS} roles`, { field: "pairs" });
  const bound = entries.map(([r, f]) => {
    const a = atom(seed, "role", name(r, "pairs")),
      b = atom(seed, "filler", name(f, `pairs.${r}`));
    for (let i = 0; i < WORDS; i++) a[i]! ^= b[i]!;
    return a;
  });
  if (bound.length % 2 === 0) bound.push(atom(seed, "role", "\u0000tie"));
  const out = new Uint32Array(WORDS);
  const half = bound.length >> 1;
  for (let i = 0; i < WORDS; i++) {
    let word = 0;
    for (let bit = 0; bit < 32; bit++) {
      let ones = 0;
      for (const v of bound) ones += (v[i]! >>> bit) & 1;
      if (ones > half) word |= 1 << bit;
    }
    out[i] = word >>> 0;
  }
  return { vector: Buffer.from(out.buffer).toString("base64"), dimension: ROLES_DIM, pairs: entries.length, seed };
}

/** For each role, the nearest of `candidates` to role XOR vector. */
export function readRoles(vector: unknown, roles: unknown, candidates: unknown, seed: number): RoleReading[] {
  if (typeof vector !== "string")
    throw new SvcError("E_BAD_REQUEST", "vector must be the base64 string bind_role returned", { field: "vector" });
  const bytes = Buffer.from(vector, "base64");
  if (bytes.length !== ROLES_DIM / 8)
    throw new SvcError("E_BAD_REQUEST", `vector must decode to ${ROLES_DIM / 8} bytes, got ${bytes.length}`, { field: "vector" });
  const record = new Uint32Array(WORDS);
  for (let i = 0; i < WORDS; i++) record[i] = bytes.readUInt32LE(i * 4);
  const list = (v: unknown, field: string, max: number): string[] => {
    if (!Array.isArray(v) || v.length === 0 || v.length > max)
      throw new SvcError("E_BAD_REQUEST", `${field} must be a list of 1 to ${max} names`, { field });
    return v.map((x, i) => name(x, `${field}[${i}]`));
  };
  const fillers = list(candidates, "candidates", MAX_CANDIDATES).map((f) => ({ f, v: atom(seed, "filler", f) }));
  return list(roles, "roles", MAX_PAIRS).map((role) => {
    const probe = atom(seed, "role", role);
    for (let i = 0; i < WORDS; i++) probe[i]! ^= record[i]!;
    let best = { f: null as string | null, cos: -2 },
      second = { f: null as string | null, cos: -2 };
    for (const { f, v } of fillers) {
      let d = 0;
      for (let i = 0; i < WORDS; i++) d += popcount(probe[i]! ^ v[i]!);
      const cos = 1 - (2 * d) / ROLES_DIM;
      if (cos > best.cos) [second, best] = [best, { f, cos }];
      else if (cos > second.cos) second = { f, cos };
    }
    const runnerCos = second.f === null ? 0 : second.cos;
    return {
      role,
      filler: best.cos >= MIN_COSINE ? best.f : null,
      cosine: round(best.cos),
      runnerUp: second.f,
      margin: round(Math.min(1, Math.max(0, best.cos - runnerCos))),
    };
  });
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
