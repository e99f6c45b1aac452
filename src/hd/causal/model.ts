/** @module causal/model — a causal model's worlds: categorical rows packed into one growing Uint16Array, the vocabulary, the optional graph; upload validation. */
import { SvcError } from "../../errors.js";
import { MAX_ROWS } from "../input-rules.js";

export interface CausalModel {
  nVars: number;
  /** Categories per variable; values of variable j are 0..vocab[j]-1. */
  vocab: number[];
  /** parents[j]: sorted parent indices of variable j; null when the uploads carried no graph. */
  parents: number[][] | null;
  /** Seed given when the model was created (u32; recorded, echoed). */
  seed: number;
  /** Row-major values, rows * nVars used; capacity may be larger. */
  rows: Uint16Array;
  count: number;
}

/** A validated worlds upload. */
export interface WorldsUpload {
  nVars: number;
  vocab: number[];
  parents: number[][] | null;
  seed: number | null;
  /** rows.length === n * nVars */
  rows: Uint16Array;
  n: number;
}

const bad = (message: string, field: string) => new SvcError("E_BAD_REQUEST", message, { field });
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);

/** A worlds upload as the route's schema checked it (tools/hd-ops.ts: types, ranges, 1..MAX_ROWS rows, seed). */
export interface WorldsBody {
  n_vars: number;
  vocab_per_var: number[];
  worlds: number[][];
  seed?: number;
  parents?: number[][] | null;
}

/**
 * The rules the schema cannot state, as they relate fields: one vocabulary entry and one value per variable in
 * each row, each value below its variable's vocabulary, parents a DAG over the n_vars variables. The first
 * problem is reported with its path (e.g. worlds[3][1]).
 */
export function parseWorlds(b: WorldsBody): WorldsUpload {
  const { n_vars: nVars, vocab_per_var: vocab, worlds } = b;
  if (vocab.length !== nVars) throw bad(`vocab_per_var has ${vocab.length} entries; n_vars is ${nVars}`, "vocab_per_var");
  const parents = b.parents === undefined || b.parents === null ? null : parseParents(b.parents, nVars);
  const rows = new Uint16Array(worlds.length * nVars);
  for (let i = 0; i < worlds.length; i++) {
    const row = worlds[i]!;
    if (row.length !== nVars) throw bad(`worlds[${i}] has ${row.length} values; n_vars is ${nVars}`, `worlds[${i}]`);
    for (let j = 0; j < nVars; j++) {
      const v = row[j]!;
      if (v >= vocab[j]!) throw bad(`worlds[${i}][${j}] must be an integer in [0, ${vocab[j]! - 1}]`, `worlds[${i}][${j}]`);
      rows[i * nVars + j] = v;
    }
  }
  return { nVars, vocab, parents, seed: b.seed ?? null, rows, n: worlds.length };
}

/**
 * A list of parent indices per variable: in range, no self-loops, no duplicates, acyclic. Returned sorted.
 * Also reads the graph of a .hdscm file (format.ts), which no schema checked: so every value is checked here.
 */
export function parseParents(raw: unknown, nVars: number): number[][] {
  if (!Array.isArray(raw)) throw bad("parents must be an array (one list of parent indices per variable)", "parents");
  if (raw.length !== nVars) throw bad(`parents has ${raw.length} entries; n_vars is ${nVars}`, "parents");
  const out: number[][] = [];
  raw.forEach((ps: unknown, j) => {
    if (!Array.isArray(ps)) throw bad(`parents[${j}] must be an array of variable indices`, `parents[${j}]`);
    const seen = new Set<number>();
    ps.forEach((p: unknown, k) => {
      if (!isInt(p) || p < 0 || p >= nVars)
        throw bad(`parents[${j}][${k}] must be a variable index in [0, ${nVars - 1}]`, `parents[${j}][${k}]`);
      if (p === j) throw bad(`variable ${j} cannot be its own parent`, `parents[${j}][${k}]`);
      if (seen.has(p)) throw bad(`parents[${j}] lists ${p} twice`, `parents[${j}][${k}]`);
      seen.add(p);
    });
    out.push([...seen].sort((a, b) => a - b));
  });
  // Kahn's algorithm: every variable must be removable
  const indeg = out.map((ps) => ps.length);
  const children: number[][] = out.map(() => []);
  out.forEach((ps, j) => ps.forEach((p) => children[p]!.push(j)));
  const ready = indeg.flatMap((d, j) => (d === 0 ? [j] : []));
  let removed = 0;
  while (ready.length > 0) {
    const j = ready.pop()!;
    removed++;
    for (const c of children[j]!) if (--indeg[c]! === 0) ready.push(c);
  }
  if (removed !== nVars) throw bad("parents has a cycle; the causal graph must be acyclic", "parents");
  return out;
}

export function newModel(up: WorldsUpload): CausalModel {
  return { nVars: up.nVars, vocab: [...up.vocab], parents: up.parents, seed: up.seed ?? 0, rows: up.rows.slice(), count: up.n };
}

const sameGraph = (a: number[][], b: number[][]) =>
  a.length === b.length && a.every((ps, j) => ps.length === b[j]!.length && ps.every((p, k) => p === b[j]![k]));

/** Appending needs the same n_vars, vocabulary and (when given) graph; a graph may be added to a model that had none. */
export function checkAppend(m: CausalModel, up: WorldsUpload): void {
  if (up.nVars !== m.nVars)
    throw new SvcError("E_CONFLICT", `the model has n_vars ${m.nVars}, the upload ${up.nVars}`, { field: "n_vars" });
  up.vocab.forEach((v, j) => {
    if (v !== m.vocab[j])
      throw new SvcError("E_CONFLICT", `vocab_per_var[${j}] is ${m.vocab[j]} in the model, ${v} in the upload`, {
        field: `vocab_per_var[${j}]`,
      });
  });
  if (up.parents !== null && m.parents !== null && !sameGraph(up.parents, m.parents)) {
    throw new SvcError("E_CONFLICT", "parents differs from the model's causal graph", { field: "parents" });
  }
  if (m.count + up.n > MAX_ROWS) throw bad(`the model would exceed ${MAX_ROWS} worlds`, "worlds");
}

/** The rows buffer with room for `extra` more rows (amortised doubling); rows past m.count are scratch. */
export function withRoom(m: CausalModel, extra: number): Uint16Array {
  const need = (m.count + extra) * m.nVars;
  if (need <= m.rows.length) return m.rows;
  const grown = new Uint16Array(Math.max(need, m.rows.length * 2));
  grown.set(m.rows.subarray(0, m.count * m.nVars));
  return grown;
}
