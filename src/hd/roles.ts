/**
 * @module hd/roles — role-filler binding: a record of (role, filler) pairs as ONE hypervector, and reading fillers back.
 * bind: R = majority( role(r) XOR filler(f) for each pair [, a tie vector when the count is even] ), D = 8,192 bits.
 * read: for a role r, role(r) XOR R is close to filler(f) of the bound pair and unrelated (cosine ~ 0) to every other
 * candidate, so the nearest candidate is the filler; XOR is its own inverse, which is what makes unbinding exact enough.
 * Atoms are deterministic in (seed, kind, name): the same request gives the same bytes, and no state is stored.
 */
import { invariant } from "../invariant.js";
import { ROLES_DIM } from "./input-rules.js";
import { fillVector } from "./kg/vectors.js";

export { ROLES_DIM };
const WORDS = ROLES_DIM / 32;

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

/**
 * `pairs`: {role: filler, ...}; the inputs of bindRoles and readRoles are as the routes' schemas checked them
 * (tools/hd-ops.ts: 1..MAX_PAIRS roles, names of 1..MAX_ROLE_NAME characters, the record ROLES_DIM / 8 bytes).
 */
export function bindRoles(pairs: Record<string, string>, seed: number): BindResult {
  const entries = Object.entries(pairs);
  const bound = entries.map(([r, f]) => {
    const a = atom(seed, "role", r),
      b = atom(seed, "filler", f);
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
export function readRoles(vector: string, roles: string[], candidates: string[], seed: number): RoleReading[] {
  const bytes = Buffer.from(vector, "base64");
  invariant(bytes.length === ROLES_DIM / 8, "a role record is ROLES_DIM / 8 bytes (the route's schema checked it)");
  const record = new Uint32Array(WORDS);
  for (let i = 0; i < WORDS; i++) record[i] = bytes.readUInt32LE(i * 4);
  const fillers = candidates.map((f) => ({ f, v: atom(seed, "filler", f) }));
  return roles.map((role) => {
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
