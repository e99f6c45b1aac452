/**
 * A real svc cluster on loopback for tests: a 3-server NATS JetStream cluster (nats-cluster.ts) and
 * N `svc serve --cluster` processes from dist/ (run `npm run build:ts` first), each with its own data
 * dir and a fixed port (so a restarted node comes back at the same URL), stopped by PID.
 *
 * Node 0 starts first, so it is the first leader of the home stores. One admin key is issued
 * with `svc keys create --admin` into node 0's data dir before the first start; node 0 imports it
 * into the shared keys bucket (svc_keys), so it authenticates on every node.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAIN } from "../e2e/server-process.js";
import { freePort, startNatsCluster, type NatsCluster } from "./nats-cluster.js";

export interface SvcCluster {
  nats: NatsCluster;
  /** Node i's base URL (`http://127.0.0.1:<port>`). */
  urls: string[];
  /** Node i's id (`n0`, `n1`, ...). */
  ids: string[];
  dataDirs: string[];
  /** The admin key every node accepts. */
  adminKey: string;
  /** SIGKILL node i (no clean shutdown: no registry leave, no log flush). */
  kill(i: number): Promise<void>;
  /** SIGTERM node i (clean shutdown) and wait; resolves with its exit code. */
  terminate(i: number): Promise<number | null>;
  /** SIGSTOP node i (a frozen process: its sockets and NATS subscriptions stay, it answers nothing). */
  pause(i: number): void;
  /** SIGCONT node i. */
  resume(i: number): void;
  /** The index (in nats.urls) of the NATS server node i is connected to now, from its log lines; -1 when unknown. */
  natsServerOf(i: number): number;
  /** Start node i again (same id, port and data dir); resolves once /v1/ready answers 200. */
  start(i: number): Promise<void>;
  /** What node i wrote to stdout and stderr so far (this run of it; every run of it is appended to `$SVC_CLUSTER_LOG_DIR/n<i>.log` when that is set). */
  output(i: number): string;
  /** Kill every node and NATS server and remove the data. */
  stop(): Promise<void>;
}

/** `args`: more `svc serve` arguments for every node; `config`: written to every data dir as config.json (the same prices everywhere). */
export async function startSvcCluster(n = 3, opts: { args?: string[]; config?: Record<string, unknown> } = {}): Promise<SvcCluster> {
  const nats = await startNatsCluster(3, `svc-cluster-${process.pid}`);
  const root = mkdtempSync(join(tmpdir(), "svc-cluster-"));
  const ids = Array.from({ length: n }, (_, i) => `n${i}`);
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  const dataDirs = ids.map((id) => join(root, id));
  for (const d of dataDirs) {
    mkdirSync(d, { recursive: true });
    if (opts.config) writeFileSync(join(d, "config.json"), JSON.stringify(opts.config));
  }
  const made = spawnSync(
    process.execPath,
    [MAIN, "keys", "create", "--admin", "--json", "--name", "cluster test admin", "--data", dataDirs[0]!],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`svc keys create failed: ${made.stderr}`);
  const adminKey = (JSON.parse(made.stdout.trim().split("\n").pop()!) as { key: string }).key;

  const procs: Array<ChildProcess | null> = ids.map(() => null);
  const outs = ids.map(() => "");
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);

  const start = async (i: number): Promise<void> => {
    if (procs[i]) return;
    outs[i] = "";
    const args = [
      MAIN,
      "serve",
      "--port",
      String(ports[i]),
      "--data",
      dataDirs[i]!,
      "--log-level",
      "info",
      "--cluster",
      nats.urls.join(","),
      "--node-id",
      ids[i]!,
      ...(opts.args ?? []),
    ];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    procs[i] = child;
    const keep = (b: Buffer) => {
      outs[i] = (outs[i] + b.toString()).slice(-200_000);
      if (process.env.SVC_CLUSTER_LOG_DIR) appendFileSync(`${process.env.SVC_CLUSTER_LOG_DIR}/n${i}.log`, b);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    child.once("exit", () => {
      if (procs[i] === child) procs[i] = null;
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (procs[i] !== child) throw new Error(`node ${ids[i]} exited while starting:\n${outs[i]}`);
      const ok = await fetch(`${urls[i]}/v1/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`node ${ids[i]} not ready in 60 s:\n${outs[i]}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const kill = async (i: number): Promise<void> => {
    const p = procs[i];
    if (!p) return;
    procs[i] = null;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await exited;
  };

  const terminate = async (i: number): Promise<number | null> => {
    const p = procs[i];
    if (!p) return null;
    const exited = new Promise<number | null>((r) => p.once("exit", (code) => r(code)));
    p.kill("SIGTERM");
    const code = await exited;
    procs[i] = null;
    return code;
  };

  const cluster: SvcCluster = {
    nats,
    urls,
    ids,
    dataDirs,
    adminKey,
    kill,
    terminate,
    start,
    pause: (i) => void procs[i]?.kill("SIGSTOP"),
    resume: (i) => void procs[i]?.kill("SIGCONT"),
    natsServerOf(i) {
      const seen = [...outs[i]!.matchAll(/connected to NATS at (?:nats:\/\/)?[^\s":]+:(\d+)/g)].pop();
      return seen === undefined ? -1 : nats.urls.findIndex((u) => u.endsWith(`:${seen[1]}`));
    },
    output: (i) => outs[i]!,
    async stop() {
      await Promise.all(ids.map((_, i) => kill(i)));
      await nats.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await start(0);
    await Promise.all(ids.slice(1).map((_, j) => start(j + 1)));
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP call to a node (`key`: the api-key header, null for none; `extra`: more headers); the body parsed as JSON when it is. */
export async function callNode(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  key: string | null = null,
  timeoutMs = 20_000,
  extra: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...extra, ...(key ? { "api-key": key } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (HTML, text)
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Poll `f` every 200 ms until it returns a value (errors count as not yet). */
export async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
