/** @module causal/query — observation P(Y=y | X=x) and intervention P(Y=y | do(X=x)) by back-door adjustment, counted over the worlds. */
import { SvcError } from "../../errors.js";
import type { CausalModel } from "./model.js";

export interface CausalQuery {
  query_type: "observation" | "intervention";
  condition_var: number;
  condition_value: number;
  query_var: number;
  query_value: number;
}

export interface CausalAnswer {
  query_type: "observation" | "intervention";
  /** null when no world can answer (no X=x rows, or every stratum empty). */
  probability: number | null;
  support: {
    rows_total: number;
    /** Worlds with X=x. */
    rows_matching_condition: number;
    /** Worlds with X=x and Y=y. */
    rows_matching_both: number;
    /** Intervention only: strata of the adjustment set seen in the worlds, those used, those without X=x rows, and the population share of the latter. */
    strata_total?: number;
    strata_used?: number;
    strata_empty?: number;
    skipped_weight?: number;
  };
  /** Variable indices adjusted for, ascending (empty for an observation). */
  adjustment_set: number[];
  adjusted_for: "none" | "parents" | "all_other_variables";
  warnings: string[];
}

const bad = (message: string, field: string) => new SvcError("E_BAD_REQUEST", message, { field });

/**
 * The query's rules that depend on the model: variables of it, values in their variable's vocabulary, two
 * different variables. The rest (the fields, their types, query_type) the route's schema checked (tools/hd-ops.ts).
 */
export function parseQuery(q: CausalQuery, m: CausalModel): CausalQuery {
  const variable = (f: "condition_var" | "query_var"): number => {
    const v = q[f];
    if (v >= m.nVars) throw bad(`${f} must be a variable index in [0, ${m.nVars - 1}]`, f);
    return v;
  };
  const value = (f: "condition_value" | "query_value", j: number): number => {
    const v = q[f];
    if (v >= m.vocab[j]!) throw bad(`${f} must be an integer in [0, ${m.vocab[j]! - 1}] (variable ${j}'s vocabulary)`, f);
    return v;
  };
  const x = variable("condition_var");
  const y = variable("query_var");
  if (x === y) throw bad("query_var must differ from condition_var", "query_var");
  return {
    query_type: q.query_type,
    condition_var: x,
    condition_value: value("condition_value", x),
    query_var: y,
    query_value: value("query_value", y),
  };
}

/** Exact counting; the same model and query give the same answer, bit for bit (a fixed summation order). */
export function answer(m: CausalModel, q: CausalQuery): CausalAnswer {
  return q.query_type === "observation" ? observe(m, q) : intervene(m, q);
}

function observe(m: CausalModel, q: CausalQuery): CausalAnswer {
  const { rows, nVars: v, count } = m;
  const xo = q.condition_var,
    xv = q.condition_value,
    yo = q.query_var,
    yv = q.query_value;
  let nx = 0,
    nxy = 0;
  for (let i = 0, b = 0; i < count; i++, b += v) {
    if (rows[b + xo] === xv) {
      nx++;
      if (rows[b + yo] === yv) nxy++;
    }
  }
  const warnings = nx === 0 ? [`no world has variable ${xo} = ${xv}; the conditional probability is undefined`] : [];
  return {
    query_type: "observation",
    probability: nx === 0 ? null : nxy / nx,
    support: { rows_total: count, rows_matching_condition: nx, rows_matching_both: nxy },
    adjustment_set: [],
    adjusted_for: "none",
    warnings,
  };
}

/**
 * P(y | do(x)) = sum_z P(y | x, z) P(z) over the strata z of the adjustment set Z (X's parents when
 * the model has a graph, else every variable but X and Y). Strata with worlds but none with X=x
 * (positivity violations) are skipped, not renormalised: their population share is reported.
 */
function intervene(m: CausalModel, q: CausalQuery): CausalAnswer {
  const { rows, nVars: v, count } = m;
  const xo = q.condition_var,
    xv = q.condition_value,
    yo = q.query_var,
    yv = q.query_value;
  const graph = m.parents !== null;
  const z = graph ? [...m.parents![xo]!] : Array.from({ length: v }, (_, j) => j).filter((j) => j !== xo && j !== yo);
  // stratum key: mixed radix over Z's vocabularies; dense typed counters when the product is small
  let space = 1;
  for (const j of z) space *= m.vocab[j]!;
  const nz = z.length;
  const radix = z.map((j) => m.vocab[j]!);
  let nx = 0,
    nxy = 0;
  const strata: Array<{ key: number | string; n: number; nx: number; nxy: number }> = [];
  if (space <= 1 << 22) {
    const cz = new Uint32Array(space),
      cx = new Uint32Array(space),
      cxy = new Uint32Array(space);
    for (let i = 0, b = 0; i < count; i++, b += v) {
      let key = 0;
      for (let k = 0; k < nz; k++) key = key * radix[k]! + rows[b + z[k]!]!;
      cz[key]!++;
      if (rows[b + xo] === xv) {
        cx[key]!++;
        nx++;
        if (rows[b + yo] === yv) {
          cxy[key]!++;
          nxy++;
        }
      }
    }
    for (let key = 0; key < space; key++) if (cz[key]! > 0) strata.push({ key, n: cz[key]!, nx: cx[key]!, nxy: cxy[key]! });
  } else {
    const exact = space <= Number.MAX_SAFE_INTEGER;
    const map = new Map<number | string, { key: number | string; n: number; nx: number; nxy: number }>();
    for (let i = 0, b = 0; i < count; i++, b += v) {
      let key: number | string;
      if (exact) {
        let k0 = 0;
        for (let k = 0; k < nz; k++) k0 = k0 * radix[k]! + rows[b + z[k]!]!;
        key = k0;
      } else {
        key = z.map((j) => rows[b + j]).join(",");
      }
      let s = map.get(key);
      if (s === undefined) map.set(key, (s = { key, n: 0, nx: 0, nxy: 0 }));
      s.n++;
      if (rows[b + xo] === xv) {
        s.nx++;
        nx++;
        if (rows[b + yo] === yv) {
          s.nxy++;
          nxy++;
        }
      }
    }
    // order by first appearance in the worlds: deterministic for the same model
    strata.push(...map.values());
  }
  let p = 0,
    used = 0,
    empty = 0,
    skipped = 0;
  for (const s of strata) {
    if (s.nx === 0) {
      empty++;
      skipped += s.n;
      continue;
    }
    used++;
    p += (s.nxy / s.nx) * (s.n / count);
  }
  const warnings: string[] = [];
  if (!graph)
    warnings.push(
      `no causal graph was uploaded: adjusted for all other variables (${z.length === 0 ? "none" : z.join(", ")}) except the query variable; upload 'parents' to adjust for variable ${xo}'s parents only`,
    );
  if (empty > 0) {
    warnings.push(
      `positivity: ${empty} of ${strata.length} strata of the adjustment set have no world with variable ${xo} = ${xv}; they were skipped, carrying weight ${skipped / count} (${skipped} of ${count} worlds), so the probability covers ${1 - skipped / count} of the population`,
    );
  }
  return {
    query_type: "intervention",
    probability: used === 0 ? null : p,
    support: {
      rows_total: count,
      rows_matching_condition: nx,
      rows_matching_both: nxy,
      strata_total: strata.length,
      strata_used: used,
      strata_empty: empty,
      skipped_weight: count === 0 ? 0 : skipped / count,
    },
    adjustment_set: z,
    adjusted_for: graph ? "parents" : "all_other_variables",
    warnings,
  };
}
