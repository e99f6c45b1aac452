import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SvcError } from "../../src/errors.js";
import { decodeHdscm, encodeHdscm } from "../../src/hd/causal/format.js";
import { CausalService } from "../../src/hd/causal/service.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { causalRoutes } from "../../src/http/routes/hd-causal.js";
import { refusal } from "./route-check.js";

/**
 * A confounded SCM over binary Z, X, Y plus independent noise W (vars: 0=Z, 1=X, 2=Y, 3=W):
 * Z -> X, Z -> Y, X -> Y. CPT entries are multiples of 0.1 so replicating each assignment
 * N * P(z, x, y, w) times (N = 2000) gives worlds whose frequencies equal the model exactly.
 */
const PZ1 = 0.4;
const PX1_Z = [0.2, 0.8]; // P(X=1 | Z=z)
const PY1_XZ = [
  [0.1, 0.5],
  [0.3, 0.9],
]; // PY1_XZ[x][z] = P(Y=1 | X=x, Z=z)
const PW1 = 0.5;
const pz = (z: number) => (z ? PZ1 : 1 - PZ1);
const px = (x: number, z: number) => (x ? PX1_Z[z]! : 1 - PX1_Z[z]!);
const py = (y: number, x: number, z: number) => (y ? PY1_XZ[x]![z]! : 1 - PY1_XZ[x]![z]!);
const pw = (w: number) => (w ? PW1 : 1 - PW1);

/** Exact answers from the CPTs: P(y | x) by enumeration, P(y | do(x)) by the truncated factorization. */
function exact(x: number, y: number): { obs: number; int: number } {
  let num = 0,
    den = 0,
    int = 0;
  for (const z of [0, 1]) {
    num += pz(z) * px(x, z) * py(y, x, z);
    den += pz(z) * px(x, z);
    int += pz(z) * py(y, x, z);
  }
  return { obs: num / den, int };
}

function replicated(n = 2000): number[][] {
  const rows: number[][] = [];
  for (const z of [0, 1])
    for (const x of [0, 1])
      for (const y of [0, 1])
        for (const w of [0, 1]) {
          const k = Math.round(n * pz(z) * px(x, z) * py(y, x, z) * pw(w));
          for (let i = 0; i < k; i++) rows.push([z, x, y, w]);
        }
  return rows;
}

function sampled(n: number, seed: number): number[][] {
  const next = mulberry32(seed);
  const u = () => next() / 2 ** 32;
  return Array.from({ length: n }, () => {
    const z = u() < PZ1 ? 1 : 0;
    const x = u() < PX1_Z[z]! ? 1 : 0;
    const y = u() < PY1_XZ[x]![z]! ? 1 : 0;
    return [z, x, y, u() < PW1 ? 1 : 0];
  });
}

const GRAPH = [[], [0], [0, 1], []];
const q = (query_type: "observation" | "intervention", x = 1, y = 1) => ({
  query_type,
  condition_var: 1,
  condition_value: x,
  query_var: 2,
  query_value: y,
});

function code(fn: () => unknown): { code: string; field?: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof SvcError) return { code: err.code, field: err.field };
    throw err;
  }
  throw new Error("did not throw");
}
async function codeAsync(p: Promise<unknown>): Promise<{ code: string; field?: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SvcError) return { code: err.code, field: err.field };
    throw err;
  }
  throw new Error("did not throw");
}

describe("causal service", () => {
  let dir: string;
  let svc: CausalService;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-causal-"));
    svc = new CausalService(dir);
  });
  afterEach(async () => {
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("with the graph: observation and intervention differ and equal the exact values (adjustment = parents of X = {Z})", async () => {
    const worlds = replicated();
    const up = await svc.uploadWorlds("t1", "scm", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds, seed: 7, parents: GRAPH });
    expect(up).toMatchObject({ rows_added: worlds.length, rows_total: worlds.length, created: true, has_graph: true, seed: 7 });
    for (const x of [0, 1])
      for (const y of [0, 1]) {
        const e = exact(x, y);
        const obs = await svc.query("t1", "scm", q("observation", x, y));
        const int = await svc.query("t1", "scm", q("intervention", x, y));
        expect(obs.probability).toBeCloseTo(e.obs, 12);
        expect(int.probability).toBeCloseTo(e.int, 12);
        expect(Math.abs(e.obs - e.int)).toBeGreaterThan(0.05); // confounding matters
        expect(obs).toMatchObject({ adjustment_set: [], adjusted_for: "none", warnings: [] });
        expect(int).toMatchObject({ adjustment_set: [0], adjusted_for: "parents", warnings: [] });
        expect(int.support).toMatchObject({
          rows_total: worlds.length,
          strata_total: 2,
          strata_used: 2,
          strata_empty: 0,
          skipped_weight: 0,
        });
      }
    // P(Y=1 | X=1) = 0.324 / 0.44 = 0.736... vs P(Y=1 | do(X=1)) = 0.6 * 0.3 + 0.4 * 0.9 = 0.54
    expect((await svc.query("t1", "scm", q("observation"))).probability).toBeCloseTo(0.324 / 0.44, 12);
    expect((await svc.query("t1", "scm", q("intervention"))).probability).toBeCloseTo(0.54, 12);
    const obs = await svc.query("t1", "scm", q("observation"));
    expect(obs.support.rows_matching_condition).toBe(worlds.filter((r) => r[1] === 1).length);
    expect(obs.support.rows_matching_both).toBe(worlds.filter((r) => r[1] === 1 && r[2] === 1).length);
  });

  it("without a graph: adjusts for all other variables (Z and W), says so, and still matches the exact value", async () => {
    await svc.uploadWorlds("t1", "nog", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: replicated() });
    const int = await svc.query("t1", "nog", q("intervention"));
    expect(int.adjustment_set).toEqual([0, 3]);
    expect(int.adjusted_for).toBe("all_other_variables");
    expect(int.warnings.some((w) => w.includes("no causal graph"))).toBe(true);
    expect(int.probability).toBeCloseTo(exact(1, 1).int, 12);
    expect(int.support.strata_total).toBe(4);
  });

  it("sampled worlds (seeded) approach the exact values; the same request gives the same bytes", async () => {
    const worlds = sampled(100_000, 42);
    await svc.uploadWorlds("t1", "s", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds, parents: GRAPH });
    const obs = await svc.query("t1", "s", q("observation"));
    const int = await svc.query("t1", "s", q("intervention"));
    expect(Math.abs(obs.probability! - 0.324 / 0.44)).toBeLessThan(0.01);
    expect(Math.abs(int.probability! - 0.54)).toBeLessThan(0.01);
    expect(JSON.stringify(await svc.query("t1", "s", q("intervention")))).toBe(JSON.stringify(int));
    // an identical model elsewhere: identical answers and identical export bytes
    await svc.uploadWorlds("t1", "s2", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: sampled(100_000, 42), parents: GRAPH });
    expect(JSON.stringify(await svc.query("t1", "s2", q("intervention")))).toBe(JSON.stringify(int));
    expect((await svc.exportModel("t1", "s2")).equals(await svc.exportModel("t1", "s"))).toBe(true);
  });

  it("positivity: a stratum with no X=x worlds is skipped and reported with its weight", async () => {
    // Z=0 never has X=1
    const worlds = [
      [0, 0, 0],
      [0, 0, 1],
      [0, 0, 0],
      [1, 1, 1],
      [1, 0, 0],
      [1, 1, 0],
    ];
    await svc.uploadWorlds("t1", "pos", { n_vars: 3, vocab_per_var: [2, 2, 2], worlds, parents: [[], [0], [0, 1]] });
    const int = await svc.query("t1", "pos", q("intervention"));
    expect(int.support).toMatchObject({ strata_total: 2, strata_used: 1, strata_empty: 1, skipped_weight: 0.5 });
    expect(int.probability).toBeCloseTo(0.5 * 0.5, 12); // P(Y=1 | X=1, Z=1) * P(Z=1)
    expect(int.warnings.join(" ")).toMatch(/positivity: 1 of 2 strata .* weight 0.5/);
    // no X=1 world at all under X=... value with no rows: probability null
    await svc.uploadWorlds("t1", "none", {
      n_vars: 3,
      vocab_per_var: [2, 3, 2],
      worlds: [
        [0, 0, 0],
        [1, 1, 1],
      ],
    });
    const obs = await svc.query("t1", "none", { ...q("observation"), condition_value: 2 });
    expect(obs.probability).toBeNull();
    expect(obs.warnings).toHaveLength(1);
    expect((await svc.query("t1", "none", { ...q("intervention"), condition_value: 2 })).probability).toBeNull();
  });

  it("appending worlds: counts grow; the answer matches one upload of all rows; vocab mismatch is refused", async () => {
    const worlds = replicated();
    const half = Math.floor(worlds.length / 2);
    await svc.uploadWorlds("t1", "app", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: worlds.slice(0, half), parents: GRAPH });
    const r = await svc.uploadWorlds("t1", "app", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: worlds.slice(half) });
    expect(r).toMatchObject({ created: false, rows_added: worlds.length - half, rows_total: worlds.length, has_graph: true });
    expect((await svc.query("t1", "app", q("intervention"))).probability).toBeCloseTo(0.54, 12);
    expect(await codeAsync(svc.uploadWorlds("t1", "app", { n_vars: 4, vocab_per_var: [2, 3, 2, 2], worlds: [[0, 2, 0, 0]] }))).toEqual({
      code: "E_CONFLICT",
      field: "vocab_per_var[1]",
    });
    expect(await codeAsync(svc.uploadWorlds("t1", "app", { n_vars: 3, vocab_per_var: [2, 2, 2], worlds: [[0, 0, 0]] }))).toEqual({
      code: "E_CONFLICT",
      field: "n_vars",
    });
    expect(
      await codeAsync(
        svc.uploadWorlds("t1", "app", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: [[0, 0, 0, 0]], parents: [[], [], [], []] }),
      ),
    ).toEqual({ code: "E_CONFLICT", field: "parents" });
    expect((await svc.describe("t1", "app")).rows_total).toBe(worlds.length);
  });

  it("survives a restart; export/import round-trips byte for byte; delete removes the files", async () => {
    const worlds = replicated();
    await svc.uploadWorlds("t1", "dur", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds, parents: GRAPH, seed: 99 });
    await svc.uploadWorlds("t1", "dur", { n_vars: 4, vocab_per_var: [2, 2, 2, 2], worlds: [[1, 1, 1, 1]] });
    const before = await svc.query("t1", "dur", q("intervention"));
    const bytes = await svc.exportModel("t1", "dur");
    await svc.close();
    svc = new CausalService(dir);
    expect(await svc.query("t1", "dur", q("intervention"))).toEqual(before);
    expect((await svc.exportModel("t1", "dur")).equals(bytes)).toBe(true);
    expect(decodeHdscm(bytes)).toMatchObject({ nVars: 4, count: worlds.length + 1, seed: 99, parents: GRAPH });
    expect(encodeHdscm(decodeHdscm(bytes)).equals(bytes)).toBe(true);

    const imp = await svc.importModel("t1", "copy", bytes);
    expect(imp).toMatchObject({ imported: worlds.length + 1, n_vars: 4, has_graph: true });
    expect(await svc.query("t1", "copy", q("intervention"))).toEqual(before);
    // damaged files are refused with a 400
    const broken = Buffer.from(bytes);
    broken[40]! ^= 1;
    expect(await codeAsync(svc.importModel("t1", "copy", broken))).toEqual({ code: "E_BAD_REQUEST", field: "body" });
    expect(await codeAsync(svc.importModel("t1", "copy", bytes.subarray(0, 30)))).toEqual({ code: "E_BAD_REQUEST", field: "body" });

    expect(await svc.deleteModel("t1", "dur")).toEqual({ deleted: true });
    expect(await codeAsync(svc.query("t1", "dur", q("observation")))).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect(await codeAsync(svc.deleteModel("t1", "dur"))).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect((await readdir(join(dir, "tenants", "t1", "hd", "causal"))).sort()).toEqual(["copy"]);
    await svc.close();
    svc = new CausalService(dir);
    expect(await codeAsync(svc.query("t1", "dur", q("observation")))).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect(await svc.query("t1", "copy", q("intervention"))).toEqual(before);
  });

  it("tenants are isolated: another tenant's model is not found", async () => {
    await svc.uploadWorlds("alice", "m", { n_vars: 2, vocab_per_var: [2, 2], worlds: [[0, 1]] });
    expect(
      await codeAsync(
        svc.query("bob", "m", { query_type: "observation", condition_var: 0, condition_value: 0, query_var: 1, query_value: 1 }),
      ),
    ).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect(await codeAsync(svc.exportModel("bob", "m"))).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect(await codeAsync(svc.deleteModel("bob", "m"))).toEqual({ code: "E_NOT_FOUND", field: "name" });
    expect(await readdir(join(dir, "tenants"))).toEqual(["alice"]);
  });

  it("bad input: clear 400s naming the field", async () => {
    const base = { n_vars: 2, vocab_per_var: [2, 3], worlds: [[0, 2]] };
    // types, ranges and unknown fields: the routes' schemas (tools/hd-ops.ts), run as a request runs them
    const routes = Object.fromEntries(causalRoutes(svc).map((r) => [r.operationId, r]));
    const refused = (op: string, body: unknown) => refusal(routes[op]!, body);
    const worlds = (body: unknown) => refused("hd_causal_worlds", body);
    expect(worlds(base)).toBeNull();
    expect(worlds([])).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "body" });
    expect(worlds(undefined)).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "n_vars" });
    expect(worlds({ ...base, n_vars: 0 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "n_vars" });
    expect(worlds({ ...base, n_vars: 1.5 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "n_vars" });
    expect(worlds({ ...base, vocab_per_var: [2, 0] })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "vocab_per_var[1]" });
    expect(worlds({ ...base, worlds: [] })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "worlds" });
    expect(worlds({ ...base, worlds: "x" })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "worlds" });
    expect(worlds({ ...base, worlds: [[-1, 1]] })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "worlds[0][0]" });
    expect(worlds({ ...base, worlds: [["0", 1]] })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "worlds[0][0]" });
    expect(worlds({ ...base, seed: -1 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "seed" });
    expect(worlds({ ...base, extra: 1 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "extra" });
    // the path name, and what relates fields (lengths, values within vocab_per_var, parents a DAG): the service
    const up = (body: typeof base & { parents?: number[][] }, name = "m") => codeAsync(svc.uploadWorlds("t", name, body));
    expect(await up(base, "")).toEqual({ code: "E_BAD_REQUEST", field: "name" });
    expect(await up(base, "../x")).toEqual({ code: "E_BAD_REQUEST", field: "name" });
    expect(await up({ ...base, vocab_per_var: [2] })).toEqual({ code: "E_BAD_REQUEST", field: "vocab_per_var" });
    expect(await up({ ...base, worlds: [[0, 1], [0]] })).toEqual({ code: "E_BAD_REQUEST", field: "worlds[1]" });
    expect(
      await up({
        ...base,
        worlds: [
          [0, 1],
          [0, 3],
        ],
      }),
    ).toEqual({ code: "E_BAD_REQUEST", field: "worlds[1][1]" });
    expect(await up({ ...base, parents: [[1], [0]] })).toEqual({ code: "E_BAD_REQUEST", field: "parents" });
    expect(await up({ ...base, parents: [[0], []] })).toEqual({ code: "E_BAD_REQUEST", field: "parents[0][0]" });
    expect(await up({ ...base, parents: [[2], []] })).toEqual({ code: "E_BAD_REQUEST", field: "parents[0][0]" });
    expect(await up({ ...base, parents: [[]] })).toEqual({ code: "E_BAD_REQUEST", field: "parents" });
    await svc.uploadWorlds("t", "m", base);
    const good = { query_type: "observation" as const, condition_var: 0, condition_value: 1, query_var: 1, query_value: 2 };
    expect((await svc.query("t", "m", good)).probability).toBeNull();
    const refusedQuery = (body: unknown) => refused("hd_causal_query", body);
    expect(refusedQuery({ ...good, query_type: "do" })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "query_type" });
    expect(refusedQuery({ ...good, query_var: undefined })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "query_var" });
    expect(refusedQuery({ ...good, condition_var: -1 })).toEqual({ code: "E_BAD_REQUEST", status: 400, field: "condition_var" });
    // what depends on the model: the service
    const query = (body: typeof good) => codeAsync(svc.query("t", "m", body));
    expect(await query({ ...good, condition_var: 2 })).toEqual({ code: "E_BAD_REQUEST", field: "condition_var" });
    expect(await query({ ...good, condition_value: 2 })).toEqual({ code: "E_BAD_REQUEST", field: "condition_value" });
    expect(await query({ ...good, query_value: 3 })).toEqual({ code: "E_BAD_REQUEST", field: "query_value" });
    expect(await query({ ...good, query_var: 0 })).toEqual({ code: "E_BAD_REQUEST", field: "query_var" });
    expect(await codeAsync(svc.query("t", "unknown", good))).toEqual({ code: "E_NOT_FOUND", field: "name" });
  });
});
