/**
 * @module query-cpu — engine CPU per top-10 query in-process (no HTTP), for one or more builds on a collection loaded by
 * `bench/http-bench.ts --data DIR`: each build's dist opens its collection dir in turn (builds alternate round by
 * round), runs `--warm` then `--amount` default queries of the load's held-out query vectors one at a time, and prints
 * process CPU (user + system, includes the scan workers) / queries, the lists probed and recall@10 on the load's
 * verify queries, and with `--holdout N` recall@10 on N more held-out queries against `exact: true` (the exact float
 * top-10). Cheaper to trust than served CPU on a loaded machine: no client, no HTTP, fewer threads. `--prof DIR`
 * writes a V8 CPU profile of each build's measured queries only (node:inspector) to DIR/<round>-<build>.cpuprofile.
 *
 *   npx tsx bench/engine/query-cpu.ts --state DIR/bench-state.json --build a/dist=COLLECTION_DIR,b/dist=COLLECTION_DIR2 [--amount 4000] [--warm 1000] [--rounds 3] [--holdout 200] [--prof DIR]
 *
 * COLLECTION_DIR: DIR/svc/tenants/<tenant>/indexes/query (the index's collection; a copy per build if a build changes it).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { parseArgs } from "node:util";
import { ClusteredVectors } from "./vectors.js";

const { values: o } = parseArgs({
  options: {
    state: { type: "string" },
    build: { type: "string" },
    amount: { type: "string", default: "4000" },
    warm: { type: "string", default: "1000" },
    rounds: { type: "string", default: "3" },
    holdout: { type: "string", default: "0" },
    prof: { type: "string" },
  },
});
if (o.state === undefined || o.build === undefined) throw new Error("--state and --build are required");
const state = JSON.parse(readFileSync(o.state, "utf8")) as { n: number; dim: number; truth: number[][] };
const data = new ClusteredVectors(state.dim, 20261122);
// the queries bench/http-bench.ts and cpu-drive.ts send (held-out points of the same clusters)
const queries = Array.from({ length: 256 }, (_, j) => data.get(state.n + 1_000_000 + j));
// further held-out points, never sent by the load loop, for --holdout's recall against exact: true
const holdout = Array.from({ length: Number(o.holdout) }, (_, j) => data.get(state.n + 2_000_000 + j));
const session = o.prof === undefined ? null : new Session();
if (session !== null) {
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
}

/** Read syscalls and bytes of this process so far (/proc/self/io; zeros where there is none). */
function io(): { syscr: number; rchar: number } {
  try {
    const t = readFileSync("/proc/self/io", "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, "m").exec(t)?.[1] ?? 0);
    return { syscr: field("syscr"), rchar: field("rchar") };
  } catch {
    return { syscr: 0, rchar: 0 };
  }
}

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
    if (session !== null) await session.post("Profiler.start");
    const io0 = io();
    const c0 = process.cpuUsage();
    await run(Number(o.amount));
    const cpu = process.cpuUsage(c0);
    const io1 = io();
    if (session !== null) {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(`${o.prof}/${round}-${builds.indexOf(b)}.cpuprofile`, JSON.stringify(profile));
    }
    let hits = 0;
    for (const [j, truth] of state.truth.entries()) {
      const ids = new Set((await c.query("", { vector: queries[j]!, topK: 10 })).matches.map((m: { id: string }) => Number(m.id)));
      hits += truth.filter((t) => ids.has(t)).length;
    }
    let held = 0;
    for (const v of holdout) {
      const truth = new Set((await c.query("", { vector: v, topK: 10, exact: true })).matches.map((m: { id: string }) => m.id));
      held += (await c.query("", { vector: v, topK: 10 })).matches.filter((m: { id: string }) => truth.has(m.id)).length;
    }
    const per = (us: number) => (us / 1000 / Number(o.amount)).toFixed(4);
    process.stdout.write(
      `round ${round} ${b.dist}: ${per(cpu.user + cpu.system)} ms CPU/q (user ${per(cpu.user)}), ${(lists / Number(o.amount)).toFixed(1)} lists probed/q, recall@10 ${(hits / (10 * state.truth.length)).toFixed(3)} on ${state.truth.length} verify queries, ${(io1.syscr - io0.syscr) / Number(o.amount)} reads of ${((io1.rchar - io0.rchar) / 1024 / Number(o.amount)).toFixed(1)} KiB/q${holdout.length > 0 ? `, ${(held / (10 * holdout.length)).toFixed(4)} on ${holdout.length} held-out against exact` : ""}\n`,
    );
    await c.close();
    await pool.close();
  }
process.exit(0);
