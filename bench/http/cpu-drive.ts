/**
 * @module cpu-drive — server CPU per served top-10 query for one or more builds on the same loaded data (made by
 * `bench/http-bench.ts --data DIR`): each build's `svc serve` is started on a copy-free reuse of DIR in turn,
 * warmed with `--warm` queries, then sent exactly `--amount` queries at 32 connections (autocannon); the server's
 * utime + stime (/proc, all threads, and the main thread alone) over the measured queries / queries. Rounds
 * alternate the builds so machine noise falls on each alike. `--node-args` is passed to node before the entry
 * (e.g. `--cpu-prof --cpu-prof-dir /tmp/p`).
 *
 *   npx tsx bench/http/cpu-drive.ts --data DIR[,DIR2] --main a/dist/cli/main.js,b/dist/cli/main.js [--lanes msgpack,json] [--amount 4000] [--warm 3000] [--rounds 2] [--perf DIR]
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { ClusteredVectors } from "../engine/vectors.js";
import { queryBody } from "./bodies.js";
import { cpuSeconds, startChild, threadCpu } from "./child.js";

const { values: o } = parseArgs({
  options: {
    data: { type: "string" },
    main: { type: "string" },
    lanes: { type: "string", default: "msgpack,json" },
    amount: { type: "string", default: "4000" },
    warm: { type: "string", default: "3000" },
    rounds: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    "node-args": { type: "string", default: "" },
    "log-level": { type: "string", default: "info" },
    perf: { type: "string" },
  },
});
if (o.data === undefined || o.main === undefined) throw new Error("--data and --main are required");
// --data a,b: one data dir per build of --main (the same load, e.g. with its index rebuilt by that build); one: all builds share it.
const datas = o.data.split(",");
const state = JSON.parse(readFileSync(join(datas[0]!, "bench-state.json"), "utf8")) as { n: number; dim: number; key: string };
const data = new ClusteredVectors(state.dim, 20261122);
const queries = Array.from({ length: 256 }, (_, j) => data.get(state.n + 1_000_000 + j));
const lanes = o.lanes.split(",") as Array<"msgpack" | "json">;
const bodies = {
  msgpack: queries.map((q) => queryBody(q, 10, { codec: "msgpack" })),
  json: queries.map((q) => queryBody(q)),
};
const mains = o.main.split(",");
if (datas.length !== 1 && datas.length !== mains.length) throw new Error("--data: one dir, or one per --main build");
const dataOf = (main: string) => datas[datas.length === 1 ? 0 : mains.indexOf(main)]!;
const nodeArgs = o["node-args"].split(" ").filter((s) => s !== "");
const amount = Number(o.amount);
const connections = Number(o.connections);

/** Bytes read and read syscalls of a process so far (/proc/<pid>/io). */
function io(pid: number): { rchar: number; syscr: number } {
  const t = readFileSync(`/proc/${pid}/io`, "utf8");
  return { rchar: Number(/rchar: (\d+)/.exec(t)![1]), syscr: Number(/syscr: (\d+)/.exec(t)![1]) };
}

async function fire(url: string, lane: "msgpack" | "json", n: number): Promise<number> {
  const headers = { "api-key": state.key, "content-type": lane === "msgpack" ? "application/msgpack" : "application/json" };
  const requests = bodies[lane].map((body) => ({ method: "POST", path: "/v1/indexes/query/query", headers, body }));
  const r = await autocannon({ url, connections, pipelining: 1, amount: n, requests });
  if (r.non2xx + r.errors > 0) throw new Error(`${lane}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r["2xx"];
}

for (let round = 0; round < Number(o.rounds); round++)
  for (const main of mains) {
    const svc = await startChild(
      [...nodeArgs, main, "serve", "--port", "0", "--data", join(dataOf(main), "svc"), "--log-level", o["log-level"]],
      300_000,
      join(dataOf(main), `drive-${process.pid}.log`),
    );
    try {
      const line: string[] = [];
      for (const lane of lanes) {
        await fire(svc.url, lane, Number(o.warm));
        const la = loadavg()[0]!;
        const io0 = io(svc.pid);
        const c0 = cpuSeconds(svc.pid);
        const m0 = threadCpu(svc.pid).get("main")!;
        const t0 = performance.now();
        // --perf DIR: `perf record` of the server over the measured queries (start node with --perf-basic-prof).
        const rec =
          o.perf === undefined
            ? null
            : spawn(
                "perf",
                ["record", "-F", "999", "-g", "-p", String(svc.pid), "-o", join(o.perf, `${lane}-${round}-${mains.indexOf(main)}.data`)],
                { stdio: "ignore" },
              );
        const done = await fire(svc.url, lane, amount);
        if (rec !== null) {
          rec.kill("SIGINT");
          await new Promise((r) => rec.once("exit", r));
        }
        const wall = (performance.now() - t0) / 1000;
        const all = ((cpuSeconds(svc.pid) - c0) / done) * 1000;
        const m1 = threadCpu(svc.pid).get("main")!;
        const io1 = io(svc.pid);
        const main1 = ((m1.user + m1.system - m0.user - m0.system) / done) * 1000;
        line.push(
          `${lane} ${all.toFixed(3)} ms/q (main ${main1.toFixed(3)}), ${((io1.rchar - io0.rchar) / done / 1024).toFixed(1)} KiB and ${((io1.syscr - io0.syscr) / done).toFixed(1)} reads/q, ${Math.round(done / wall)} QPS, load ${la.toFixed(1)}`,
        );
      }
      process.stdout.write(`round ${round} ${main}: ${line.join("; ")}\n`);
    } finally {
      await svc.stop();
    }
  }
