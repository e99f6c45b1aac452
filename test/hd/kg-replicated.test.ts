/**
 * KnowledgeGraphs on a log given by `openLog` (cluster mode's replicated graphs, app/home-stores.ts):
 * the log alone says which graphs exist and with which seed (FRAME_CREATE / FRAME_DROP frames, no
 * graph.json), so a node with an empty data dir (a new leader) opens the same graph from the log; a
 * local checkpoint only shortens the replay. The log here is the WAL opener on a directory shared
 * by the "nodes" (the JetStream log is tested in test/cluster/home-failover.test.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { existsSync, readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { KnowledgeGraphs } from "../../src/hd/kg/service.js";
import { encodeHdkg } from "../../src/hd/kg/hdkg-file.js";
import { Wal } from "../../src/store/wal.js";

const kernels = Kernels.create();
const dirs: string[] = [];
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "svc-kg-repl-"));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A "node": its own data dir, the shared logs under `logs`. */
function node(dataDir: string, logs: string, checkpointBytes?: number): KnowledgeGraphs {
  return new KnowledgeGraphs(dataDir, {
    kernels,
    checkpointBytes,
    openLog: (t, g) => Wal.opener(join(logs, t, g), {}),
    // the names with a log (as home-stores.ts lists the subjects of svc_home)
    logNames: async (t) => (existsSync(join(logs, t)) ? readdirSync(join(logs, t)) : []),
  });
}

const facts = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ subject: `s${from + i}`, relation: i % 2 ? "r1" : "r2", object: `o${from + i}` }));

describe("replicated knowledge graphs (openLog)", () => {
  it("a node with an empty data dir opens every graph, fact and delete from the log alone", async () => {
    const logs = await tmp();
    const a = node(await tmp(), logs, 200); // small checkpoints: a's snapshots hold stream positions
    expect((await a.addFacts("t1", "g.one", { facts: facts(30) })).added).toBe(30);
    await a.deleteFacts("t1", "g.one", { facts: facts(1) });
    await a.addFacts("t1", "gone", { facts: facts(3) });
    await a.delete("t1", "gone");
    await a.close();
    const b = node(await tmp(), logs);
    expect((await b.stats("t1", "g.one")).facts).toBe(29);
    expect((await b.query("t1", "g.one", { subject: "s7", relation: "r1" })).object).toBe("o7");
    expect((await b.query("t1", "g.one", { subject: "s0", relation: "r2" })).object).toBeNull();
    await expect(b.stats("t1", "gone")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(b.stats("t1", "never")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    // a graph created again after its drop starts empty
    await b.addFacts("t1", "gone", { facts: facts(2, 100) });
    await b.close();
    const c = node(await tmp(), logs);
    expect((await c.stats("t1", "gone")).facts).toBe(2);
    await c.close();
  });

  it("a node with an empty data dir lists the graphs from the logs: dropped ones left out", async () => {
    const logs = await tmp();
    const a = node(await tmp(), logs);
    await a.addFacts("t1", "kept", { facts: facts(2) });
    await a.addFacts("t1", "b.two", { facts: facts(2) });
    await a.addFacts("t1", "dropped", { facts: facts(2) });
    await a.delete("t1", "dropped");
    await a.addFacts("t2", "other", { facts: facts(1) });
    expect(await a.names("t1")).toEqual(["b.two", "kept"]);
    await a.close();
    const b = node(await tmp(), logs);
    expect(await b.names("t1")).toEqual(["b.two", "kept"]);
    expect(await b.names("t2")).toEqual(["other"]);
    expect(await b.names("t3")).toEqual([]);
    await b.close();
  });

  it("reads and deletes of names the logs never held are 404 without opening a log (no subject per unknown name)", async () => {
    const logs = await tmp();
    const a = node(await tmp(), logs);
    await a.addFacts("t1", "kept", { facts: facts(1) });
    for (let i = 0; i < 20; i++) {
      await expect(a.stats("t1", `unknown-${i}`)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
      await expect(a.query("t1", `unknown-${i}`, { relation: "r0", subject: "s0" })).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    }
    await expect(a.delete("t1", "unknown-0")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    expect(readdirSync(join(logs, "t1"))).toEqual(["kept"]);
    expect((a as unknown as { graphs: Map<string, unknown> }).graphs.size).toBe(1);
    await a.close();
  });

  it("an import's seed is in the log: another node answers the same", async () => {
    const logs = await tmp();
    const a = node(await tmp(), logs);
    const file = encodeHdkg({
      seed: 12345,
      relations: [
        {
          name: "r",
          facts: [
            ["x", "y"],
            ["u", "v"],
          ],
        },
      ],
    } as never);
    expect((await a.import("t", "imp", file)).imported).toBe(2);
    const ea = await a.export("t", "imp");
    await a.close();
    const b = node(await tmp(), logs);
    expect(Buffer.compare(await b.export("t", "imp"), ea)).toBe(0);
    expect((await b.query("t", "imp", { subject: "u", relation: "r" })).object).toBe("v");
    await b.close();
  });
});
