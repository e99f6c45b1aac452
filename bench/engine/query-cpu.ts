/**
 * @module query-cpu — engine CPU per top-10 query in-process (no HTTP), for one or more builds on a collection loaded by
 * `bench/http-bench.ts --data DIR`: each build's dist opens its collection dir in turn (builds alternate round by
 * round), runs `--warm` then `--amount` default queries of the load's held-out query vectors one at a time, and prints
 * process CPU (user + system, includes the scan workers) / queries, the lists probed and recall@10 on the load's
 * verify queries. Cheaper to trust than served CPU on a loaded machine: no client, no HTTP, fewer threads.
 *
 *   npx tsx bench/engine/query-cpu.ts --state DIR/bench-state.json --build a/dist=COLLECTION_DIR,b/dist=COLLECTION_DIR2 [--amount 4000] [--warm 1000] [--rounds 3]
 *
 * COLLECTION_DIR: DIR/svc/tenants/<tenant>/indexes/query (the index's collection; a copy per build if a build changes it).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ClusteredVectors } from "./vectors.js";

const { values: o } = parseArgs({
  options: {
    state: { type: "string" },
    build: { type: "string" },
    amount: { type: "string", default: "4000" },
    warm: { type: "string", default: "1000" },
    rounds: { type: "string", default: "3" },
  },
});
if (o.state === undefined || o.build === undefined) throw new Error("--state and --build are required");
const state = JSON.parse(readFileSync(o.state, "utf8")) as { n: number; dim: number; truth: number[][] };
const data = new ClusteredVectors(state.dim, 20261122);
// the queries bench/http-bench.ts and cpu-drive.ts send (held-out points of the same clusters)
const queries = Array.from({ length: 256 }, (_, j) => data.get(state.n + 1_000_000 + j));

interface Build {
  dist: string;
  dir: string;
}
const builds: Build[] = o.build.split(",").map((b) => ({ dist: b.split("=")[0]!, dir: b.split("=")[1]! }));

for (let round = 0; round < Number(o.rounds); round++)
  for (const b of builds) {
    const { Collection } = await import(`${b.dist}/engine/collection.js`);
    const { Kernels } = await import(`${b.dist}/kernels/abi.js`);
    const { ScanPool } = await import(`${b.dist}/pool/scan-pool.js`);
    const kernels = Kernels.create();
    const pool = new ScanPool(kernels, { threads: 2 });
    const c = await Collection.open(b.dir, { kernels, pool, annMinRows: Infinity });
    let lists = 0;
    const run = async (n: number) => {
      for (let i = 0; i < n; i++) lists += (await c.query("", { vector: queries[i % queries.length]!, topK: 10 })).probed ?? 0;
    };
    await run(Number(o.warm));
    lists = 0;
    const c0 = process.cpuUsage();
    await run(Number(o.amount));
    const cpu = process.cpuUsage(c0);
    let hits = 0;
    for (const [j, truth] of state.truth.entries()) {
      const ids = new Set((await c.query("", { vector: queries[j]!, topK: 10 })).matches.map((m: { id: string }) => Number(m.id)));
      hits += truth.filter((t) => ids.has(t)).length;
    }
    const per = (us: number) => (us / 1000 / Number(o.amount)).toFixed(4);
    process.stdout.write(
      `round ${round} ${b.dist}: ${per(cpu.user + cpu.system)} ms CPU/q (user ${per(cpu.user)}), ${(lists / Number(o.amount)).toFixed(1)} lists probed/q, recall@10 ${(hits / (10 * state.truth.length)).toFixed(3)} on ${state.truth.length} verify queries\n`,
    );
    await c.close();
    await pool.close();
  }
process.exit(0);
