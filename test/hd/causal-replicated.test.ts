/**
 * CausalService on logs given by `openLog` (cluster mode's replicated causal models, app/home-stores.ts):
 * no local files; a node with an empty data dir folds every model, append, import and delete from the
 * logs alone and lists the models from them. The log here is the WAL opener on a directory shared by
 * the "nodes" (the JetStream log: test/cluster/home-failover.test.ts).
 */
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CausalService } from "../../src/hd/causal/service.js";
import { Wal } from "../../src/store/wal.js";

const dirs: string[] = [];
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "svc-causal-repl-"));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A "node": its own data dir, the shared logs under `logs`. */
function node(dataDir: string, logs: string): CausalService {
  return new CausalService(dataDir, {
    openLog: (t, m) => Wal.opener(join(logs, t, m), {}),
    logNames: async (t) => (existsSync(join(logs, t)) ? readdirSync(join(logs, t)) : []),
  });
}

const Q = { query_type: "intervention" as const, condition_var: 0, condition_value: 1, query_var: 1, query_value: 1 };

describe("replicated causal models (openLog)", () => {
  it("a node with an empty data dir answers every model from the logs alone, byte for byte", async () => {
    const logs = await tmp();
    const aDir = await tmp();
    const a = node(aDir, logs);
    await a.uploadWorlds("t1", "m", {
      n_vars: 2,
      vocab_per_var: [2, 3],
      seed: 7,
      worlds: [
        [0, 1],
        [1, 2],
      ],
    });
    await a.uploadWorlds("t1", "m", { n_vars: 2, vocab_per_var: [2, 3], worlds: [[1, 1]], parents: [[], [0]] });
    await expect(a.uploadWorlds("t1", "m", { n_vars: 3, vocab_per_var: [2, 2, 2], worlds: [[0, 0, 0]] })).rejects.toMatchObject({
      code: "E_CONFLICT",
    });
    await a.uploadWorlds("t1", "gone", { n_vars: 1, vocab_per_var: [2], worlds: [[1]] });
    await a.deleteModel("t1", "gone");
    const copy = await a.exportModel("t1", "m");
    await a.importModel("t1", "imp", copy);
    await a.uploadWorlds("t1", "again", { n_vars: 1, vocab_per_var: [2], worlds: [[1]] });
    await a.deleteModel("t1", "again");
    await a.uploadWorlds("t1", "again", { n_vars: 1, vocab_per_var: [4], worlds: [[3], [2]] });
    const answer = await a.query("t1", "m", Q);
    await a.close();
    expect(readdirSync(aDir)).toEqual([]); // no local files
    const b = node(await tmp(), logs);
    expect(await b.names("t1")).toEqual(["again", "imp", "m"]);
    expect(await b.names("t2")).toEqual([]);
    expect(await b.describe("t1", "m")).toEqual({ n_vars: 2, vocab_per_var: [2, 3], rows_total: 3, has_graph: true });
    expect(Buffer.compare(await b.exportModel("t1", "m"), copy)).toBe(0);
    expect(Buffer.compare(await b.exportModel("t1", "imp"), copy)).toBe(0);
    expect(await b.query("t1", "m", Q)).toEqual(answer);
    expect((await b.describe("t1", "again")).vocab_per_var).toEqual([4]);
    await expect(b.describe("t1", "gone")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    // b writes on: a third node sees both nodes' writes
    await b.uploadWorlds("t1", "m", { n_vars: 2, vocab_per_var: [2, 3], worlds: [[0, 0]] });
    await b.close();
    const c = node(await tmp(), logs);
    expect((await c.describe("t1", "m")).rows_total).toBe(4);
    await c.close();
  });

  it("reads and deletes of names the logs never held are 404 without opening a log (no subject per unknown name)", async () => {
    const logs = await tmp();
    const a = node(await tmp(), logs);
    await a.uploadWorlds("t1", "m", { n_vars: 1, vocab_per_var: [2], worlds: [[1]] });
    for (let i = 0; i < 20; i++) {
      await expect(a.query("t1", `unknown-${i}`, Q)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
      await expect(a.describe("t1", `unknown-${i}`)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
      await expect(a.exportModel("t1", `unknown-${i}`)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    }
    await expect(a.deleteModel("t1", "unknown-0")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(a.query("t1", "bad name!", Q)).rejects.toMatchObject({ code: "E_BAD_REQUEST", field: "name" });
    expect(readdirSync(join(logs, "t1"))).toEqual(["m"]);
    await a.close();
  });
});
