/** @module workload — the crash test's deterministic write sequence and the state any prefix of it leaves. */
import { mulberry32 } from "../../src/kernels/random.js";

export const DIM = 32;
export const NS = "crash";
const NEW_PER_BATCH = 6;

export type WorkOp = { kind: "upsert"; batch: number; ids: string[] } | { kind: "delete"; batch: number; ids: string[] };

const hash = (s: string): number => {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
};

/**
 * Batch b is one logged operation, so the log holds batches in order and any crash leaves a
 * prefix of them: every fifth batch deletes two older ids; the others upsert six new ids
 * plus a re-upsert of an older one (new values).
 */
export function batchOp(b: number): WorkOp {
  const next = mulberry32(0xc4a5 ^ b);
  const older = () => `b${next() % b}i${next() % NEW_PER_BATCH}`;
  if (b % 5 === 4) return { kind: "delete", batch: b, ids: [older(), older()] };
  const ids = Array.from({ length: NEW_PER_BATCH }, (_, i) => `b${b}i${i}`);
  if (b > 0) ids.push(older());
  return { kind: "upsert", batch: b, ids };
}

/** The float values id holds after batch b wrote it. */
export function valuesFor(id: string, b: number): Float32Array {
  const next = mulberry32(hash(id) ^ Math.imul(b + 1, 0x9e3779b1));
  return Float32Array.from({ length: DIM }, () => (next() / 2 ** 32) * 2 - 1);
}

/** Apply batch b to a state of id -> batch that last wrote it. */
export function applyBatch(state: Map<string, number>, b: number): void {
  const op = batchOp(b);
  if (op.kind === "upsert") for (const id of op.ids) state.set(id, b);
  else for (const id of op.ids) state.delete(id);
}
