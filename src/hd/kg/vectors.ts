/** @module hd/kg/vectors — the knowledge graph's hypervectors: D = 262,144 bits, derived deterministically from (graph seed, role, name). */
import { createHash } from "node:crypto";

/** Bits per hypervector (and counters per relation shard). */
export const KG_DIM = 262_144;
/** u64 lanes per vector (D is a multiple of 128, so no padding). */
export const KG_WORDS = KG_DIM / 64;
/** Bytes per packed vector: 32 KiB. */
export const KG_BYTES = KG_DIM / 8;
/** Default graph seed: every graph created over HTTP uses it, so the same requests give the same bytes. */
export const KG_DEFAULT_SEED = 0x6b67_5eed;

/**
 * Roles: an entity has one vector as a subject and an unrelated one as an object. With a single vector per
 * entity, XOR binding is symmetric and fact (x, r, a) would answer query (a, r) with x; separate role
 * vectors make subject and object positions distinct. "tie" seeds the majority tie-break row of a shard.
 */
export type KgRole = "subject" | "object" | "tie";

/**
 * Fill `out` (KG_DIM / 32 u32 lanes, little-endian bit order as the kernels read them) with the vector of
 * (seed, role, name): SHA-256 of the three gives a 128-bit xoshiro128** state; the lanes are its output.
 * 128 bits of state make two names' vectors collide with negligible probability (a 32-bit seed would not).
 */
export function fillVector(out: Uint32Array, seed: number, role: KgRole | "role" | "filler", name: string): void {
  const h = createHash("sha256")
    .update(`hdkg\u0000${seed >>> 0}\u0000${role}\u0000`)
    .update(name, "utf8")
    .digest();
  let a = h.readUInt32LE(0),
    b = h.readUInt32LE(4),
    c = h.readUInt32LE(8),
    d = h.readUInt32LE(12);
  if ((a | b | c | d) === 0) a = 1; // the all-zero state is a fixed point
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const r = Math.imul(rotl(Math.imul(b, 5), 7), 9);
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    out[i] = r >>> 0;
  }
}

/** A fresh vector (for tests and tools); the service writes straight into shared memory. */
export function vectorOf(seed: number, role: KgRole, name: string): Uint8Array {
  const out = new Uint32Array(KG_DIM / 32);
  fillVector(out, seed, role, name);
  return new Uint8Array(out.buffer);
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
