/**
 * @module redis-served — a served peer of the HTTP bench: Redis + RediSearch (HNSW, cosine) in a throwaway
 * redis-server on loopback, loaded with the same rows (one hash per row, float32 blob), EF_RUNTIME raised until
 * recall@10 reaches each target on the verify queries, then queried by 32 connections (node-redis, FT.SEARCH KNN,
 * closed loop) while the CPU time of redis-server (all its threads) is read from /proc: server CPU per query.
 * Redis and RediSearch are not installed by this project (REDISEARCH_INSTALL says how): where either is missing the
 * lane says so and how to install them, and is skipped (never faked).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { cpuSeconds, ownCpuSeconds } from "../http/child.js";

/** One measured run at one recall target. */
export interface RedisPeerRun {
  recallTarget: number;
  /** Achieved recall@10 against exact float cosine on the verify queries, at `efRuntime`. */
  recallAt10: number;
  efRuntime: number;
  seconds: number;
  queries: number;
  qps: number;
  /** Client-side round trip, milliseconds (performance.now()). */
  latency: { p50: number; p99: number };
  /** CPU cores busy in redis-server (all its threads) during the measured run. */
  serverCores: number;
  /** Server CPU milliseconds per query (process CPU time / queries answered). */
  serverCpuMsPerQuery: number;
  /** CPU cores busy in this process (node-redis, the load generator). */
  clientCores: number;
  /** Load average (1 min) before the warm-up. */
  loadAverage: number;
}

export interface RedisPeerResult {
  peer: string;
  loadSeconds: number;
  indexSeconds: number;
  /** redis-server's used_memory after the index build. */
  usedMemoryMB: number;
  connections: number;
  /** At each EF_RUNTIME tried: recall@10 on the verify queries, and how many of them found none of their true top-10. */
  recallByEf: Array<{ efRuntime: number; recallAt10: number; lostQueries: number }>;
  runs: RedisPeerRun[];
}

export const REDISEARCH_INSTALL =
  "redis-server >= 6.2 and the RediSearch module (redisearch.so, 2.6 or later) are needed for this lane. Debian: `apt-get install redis-server` (bookworm: 7.0.15); RediSearch has no bookworm package: build its public source (with its VectorSimilarity submodule) as its README says, then set REDISEARCH_MODULE=/path/to/redisearch.so or install it as /usr/lib/redis/modules/redisearch.so (REDIS_SERVER names another redis-server). This lane ran on Redis 7.0.15 (bookworm's package) + RediSearch 2.6.37 built from source";

const MODULE_PATHS = ["/usr/lib/redis/modules/redisearch.so", "/usr/local/lib/redisearch.so", "/opt/redis-stack/lib/redisearch.so"];

/** redis-server and the RediSearch module, or a sentence saying what is missing. */
export function findRedis(): { server: string; module: string; version: string } | { missing: string } {
  const server = process.env.REDIS_SERVER ?? "redis-server";
  let version: string;
  try {
    version = /v=(\S+)/.exec(execFileSync(server, ["--version"], { encoding: "utf8" }))?.[1] ?? "?";
  } catch {
    return { missing: `${server} not found. ${REDISEARCH_INSTALL}` };
  }
  const module = process.env.REDISEARCH_MODULE ?? MODULE_PATHS.find((p) => existsSync(p));
  if (module === undefined || !existsSync(module))
    return {
      missing: `the RediSearch module is not installed (${module ?? `none of ${MODULE_PATHS.join(", ")}`}; REDISEARCH_MODULE unset or wrong). ${REDISEARCH_INSTALL}`,
    };
  return { server, module, version };
}

export interface RedisPeerOptions {
  server: string;
  module: string;
  version: string;
  n: number;
  dim: number;
  row(i: number): Float32Array;
  /** Verify queries and their exact top-10 (row numbers); the load queries cycle through `queries`. */
  verify: { queries: Float32Array[]; truth: number[][] };
  queries: Float32Array[];
  /** One measured run per target, at the least EF_RUNTIME of the ladder that reaches it. */
  recallTargets: number[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
  log: (line: string) => void;
}

/** RediSearch's HNSW build parameters: its defaults (M 16, EF_CONSTRUCTION 200). */
const M = 16;
const EF_CONSTRUCTION = 200;
/** EF_RUNTIME tried in turn (RediSearch's default is 10). */
const EF_LADDER = [10, 15, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280];
const BATCH = 1000;

const blob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
/** FT.INFO's flat [name, value, ...] reply as a map of its scalar entries. */
const infoMap = (reply: unknown) => {
  const a = reply as unknown[];
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < a.length; i += 2) if (!Array.isArray(a[i + 1])) m.set(String(a[i]), String(a[i + 1]));
  return m;
};

export async function runRedisPeer(o: RedisPeerOptions): Promise<RedisPeerResult> {
  const root = mkdtempSync(join(tmpdir(), "svc-redis-"));
  const logFile = join(root, "redis.log");
  const port = 20000 + Math.floor(Math.random() * 20000);
  let server: ChildProcess | undefined;
  type Client = ReturnType<typeof createClient<{}, {}, {}, 2>>;
  const pool: Client[] = [];
  try {
    // Loopback only, no persistence (a throwaway bench server); the module's query timeout off (its default, 500 ms,
    // returns partial results under load: counted as answers, they would flatter it).
    server = spawn(
      o.server,
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        root,
        "--logfile",
        logFile,
        "--loadmodule",
        o.module,
        "TIMEOUT",
        "0",
      ],
      { stdio: "ignore" },
    );
    const connect = async () => {
      const c: Client = createClient({ socket: { host: "127.0.0.1", port, reconnectStrategy: false }, RESP: 2 });
      c.on("error", () => undefined); // surfaced by the command that failed
      await c.connect();
      return c;
    };
    let admin: Client | undefined;
    for (const end = Date.now() + 30_000; admin === undefined;) {
      try {
        admin = await connect();
      } catch (err) {
        if (server.exitCode !== null || Date.now() > end) {
          const tail = existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").slice(-8).join("\n") : "";
          throw new Error(`redis-server with ${o.module} did not start (${String(err)}):\n${tail}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    pool.push(admin);
    const modules = (await admin.sendCommand(["MODULE", "LIST"])) as unknown[][];
    const search = modules.map((m) => infoMap(m)).find((m) => m.get("name") === "search");
    const ver = Number(search?.get("ver") ?? 0);
    const peer = `Redis ${o.version} + RediSearch ${Math.floor(ver / 10000)}.${Math.floor(ver / 100) % 100}.${ver % 100} HNSW (M ${M}, EF_CONSTRUCTION ${EF_CONSTRUCTION}, cosine)`;

    const t0 = performance.now();
    for (let b = 0; b < o.n; b += BATCH) {
      const sent: Promise<unknown>[] = [];
      for (let i = b; i < Math.min(o.n, b + BATCH); i++) sent.push(admin.sendCommand(["HSET", `d:${i}`, "v", blob(o.row(i))]));
      await Promise.all(sent); // node-redis pipelines the batch
    }
    const loadSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    // The index is built over the loaded hashes by the module's background scan.
    const hnsw = [
      "TYPE",
      "FLOAT32",
      "DIM",
      String(o.dim),
      "DISTANCE_METRIC",
      "COSINE",
      "M",
      String(M),
      "EF_CONSTRUCTION",
      String(EF_CONSTRUCTION),
    ];
    await admin.sendCommand([
      "FT.CREATE",
      "idx",
      "ON",
      "HASH",
      "PREFIX",
      "1",
      "d:",
      "SCHEMA",
      "v",
      "VECTOR",
      "HNSW",
      String(hnsw.length),
      ...hnsw,
    ]);
    for (;;) {
      const info = infoMap(await admin.sendCommand(["FT.INFO", "idx"]));
      if (info.get("indexing") === "0" && Number(info.get("num_docs")) === o.n) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const indexSeconds = (performance.now() - t1) / 1000;
    const usedMemoryMB = Number(/used_memory:(\d+)/.exec(String(await admin.sendCommand(["INFO", "memory"])))?.[1]) / 2 ** 20;
    o.log(
      `${peer}: ${o.n.toLocaleString("en-US")} rows loaded in ${loadSeconds.toFixed(1)} s, HNSW built in ${indexSeconds.toFixed(1)} s, used_memory ${usedMemoryMB.toFixed(0)} MB`,
    );

    const search10 = (c: Client, q: Buffer, ef: number) =>
      c.sendCommand<unknown[]>([
        "FT.SEARCH",
        "idx",
        `*=>[KNN 10 @v $B EF_RUNTIME ${ef} AS score]`,
        "PARAMS",
        "2",
        "B",
        q,
        "SORTBY",
        "score",
        "RETURN",
        "1",
        "score",
        "LIMIT",
        "0",
        "10",
        "DIALECT",
        "2",
      ]);
    const recallByEf: RedisPeerResult["recallByEf"] = [];
    const recallAt = async (ef: number) => {
      let hit = 0;
      let lostQueries = 0;
      for (let q = 0; q < o.verify.queries.length; q++) {
        // Reply: [total, key, [field, value], key, ...]; keys are d:<row>.
        const reply = await search10(admin!, blob(o.verify.queries[q]!), ef);
        const got = new Set<number>();
        for (let k = 1; k < reply.length; k += 2) got.add(Number(String(reply[k]).slice(2)));
        const found = o.verify.truth[q]!.slice(0, 10).filter((id) => got.has(id)).length;
        hit += found;
        if (found === 0) lostQueries++;
      }
      const recallAt10 = hit / (10 * o.verify.queries.length);
      recallByEf.push({ efRuntime: ef, recallAt10, lostQueries });
      return recallAt10;
    };
    // The least EF_RUNTIME of the ladder reaching each target (recall grows with it; the ladder is walked once).
    const targets = [...o.recallTargets].sort((a, b) => a - b);
    const at: Array<{ recallTarget: number; efRuntime: number; recallAt10: number }> = [];
    let step = 0;
    let recall = await recallAt(EF_LADDER[0]!);
    for (const target of targets) {
      while (recall < target && step + 1 < EF_LADDER.length) recall = await recallAt(EF_LADDER[++step]!);
      at.push({ recallTarget: target, efRuntime: EF_LADDER[step]!, recallAt10: recall });
      o.log(`${peer}: recall@10 ${recall.toFixed(3)} at EF_RUNTIME ${EF_LADDER[step]} (target ${target})`);
    }
    o.log(
      `recall@10 by EF_RUNTIME (queries that found none of their top-10): ${recallByEf.map((r) => `${r.efRuntime} ${r.recallAt10.toFixed(3)} (${r.lostQueries})`).join(", ")}`,
    );

    for (let i = 1; i < o.connections; i++) pool.push(await connect());
    const bodies = o.queries.map(blob);
    const run = async (ef: number, seconds: number) => {
      const end = performance.now() + seconds * 1000;
      const latencies: number[] = [];
      await Promise.all(
        pool.map(async (c, k) => {
          for (let j = k; performance.now() < end; j += pool.length) {
            const s = performance.now();
            await search10(c, bodies[j % bodies.length]!, ef);
            latencies.push(performance.now() - s);
          }
        }),
      );
      return latencies.sort((a, b) => a - b);
    };
    const runs: RedisPeerRun[] = [];
    // Highest target first: the figure the bench compares against.
    for (const { recallTarget, efRuntime, recallAt10 } of at.reverse()) {
      const same = runs.find((r) => r.efRuntime === efRuntime);
      if (same !== undefined) {
        runs.push({ ...same, recallTarget }); // both targets reached at one EF_RUNTIME: one run answers both
        continue;
      }
      const loadAverage = loadavg()[0]!;
      await run(efRuntime, o.warmupSeconds);
      const cpu0 = cpuSeconds(server.pid!);
      const own0 = ownCpuSeconds();
      const w0 = performance.now();
      const lat = await run(efRuntime, o.seconds);
      const wall = (performance.now() - w0) / 1000;
      const cpu = cpuSeconds(server.pid!) - cpu0;
      const queries = lat.length;
      runs.push({
        recallTarget,
        recallAt10,
        efRuntime,
        seconds: wall,
        queries,
        qps: queries / wall,
        latency: { p50: lat[Math.floor(queries * 0.5)]!, p99: lat[Math.floor(queries * 0.99)]! },
        serverCores: cpu / wall,
        serverCpuMsPerQuery: (cpu / queries) * 1000,
        clientCores: (ownCpuSeconds() - own0) / wall,
        loadAverage,
      });
    }
    return { peer, loadSeconds, indexSeconds, usedMemoryMB, connections: o.connections, recallByEf, runs };
  } finally {
    await Promise.all(pool.map((c) => c.close().catch(() => undefined))); // a connection that already failed has nothing to close
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGTERM"); // no persistence configured: exits at once
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
    }
    rmSync(root, { recursive: true, force: true });
  }
}
