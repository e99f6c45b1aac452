/** @module load — a closed-loop HTTP load run with autocannon (warm-up, then the measured run), with both processes' CPU use. */
import autocannon from "autocannon";
import { cpuSeconds, ownCpuSeconds } from "./child.js";

export interface LoadRun {
  connections: number;
  pipelining: number;
  seconds: number;
  requests: number;
  qps: number;
  /** Milliseconds, whole (autocannon's histogram resolution); 2xx responses only. */
  latency: { mean: number; p50: number; p90: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU cores busy in the server process and in the load generator (this process) during the measured run. */
  serverCores: number;
  clientCores: number;
}

export interface LoadOptions {
  url: string;
  path: string;
  headers: Record<string, string>;
  /** Cycled through by every connection. */
  bodies: Buffer[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
  serverPid: number;
}

export async function loadRun(o: LoadOptions): Promise<LoadRun> {
  const requests = o.bodies.map((body) => ({ method: "POST", path: o.path, headers: o.headers, body }));
  const run = (duration: number) => autocannon({ url: o.url, connections: o.connections, pipelining: 1, duration, requests });
  const warm = await run(o.warmupSeconds);
  if (warm.non2xx + warm.errors > 0) throw new Error(`${o.url}${o.path}: ${warm.non2xx} non-2xx and ${warm.errors} errors in the warm-up`);
  const cpu0 = cpuSeconds(o.serverPid);
  const own0 = ownCpuSeconds();
  const t0 = performance.now();
  const r = await run(o.seconds);
  const wall = (performance.now() - t0) / 1000;
  const serverCores = (cpuSeconds(o.serverPid) - cpu0) / wall;
  const clientCores = (ownCpuSeconds() - own0) / wall;
  const l = r.latency;
  return {
    connections: o.connections,
    pipelining: 1,
    seconds: r.duration,
    requests: r.requests.total,
    qps: r["2xx"] / r.duration,
    latency: { mean: l.mean, p50: l.p50, p90: l.p90, p99: l.p99, max: l.max },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    serverCores,
    clientCores,
  };
}
