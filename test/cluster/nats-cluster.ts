/**
 * A real NATS JetStream cluster on loopback for tests: N nats-server processes (Debian's package,
 * `apt-get install -y nats-server`; `.ci/run` installs it), one config file each (server_name,
 * listen, jetstream store_dir, cluster routes to the others), started and stopped by PID.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";

export const NATS_SERVER =
  process.env.SVC_NATS_SERVER ??
  ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find(existsSync) ??
  "nats-server";

/** A port the kernel says is free now (bound and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface NatsCluster {
  /** Client URLs, one per server (`nats://127.0.0.1:<port>`). */
  urls: string[];
  /** SIGKILL server i. */
  kill(i: number): void;
  /** Start server i again with the same config and store. */
  start(i: number): void;
  /** SIGSTOP server i (it keeps its sockets and answers nothing: a stalled process, not a dead one). */
  pause(i: number): void;
  /** SIGCONT server i. */
  resume(i: number): void;
  /** Resolves once every running server answers and JetStream has a meta leader. */
  ready(timeoutMs?: number): Promise<void>;
  /** A client connection (reconnecting forever) to server `first` first, or to any; closed by stop(). */
  connect(first?: number): Promise<NatsConnection>;
  /** Close the connections connect() made, kill every server and remove the stores. */
  stop(): Promise<void>;
}

/** Wait for `cond`, running `step` (if any) before each check; throws after `ms`. */
export async function waitFor(cond: () => boolean, ms = 10_000, step?: () => Promise<void>): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await step?.();
    if (cond()) return;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Start n servers as one cluster. Ports are picked free and released before the servers bind them,
 * so test files starting clusters at the same moment can race for one: a server that could not
 * bind exits, and the cluster never places a stream. Then everything is stopped and started again
 * on new ports (up to 3 tries).
 */
export async function startNatsCluster(n = 3, name = "svc-test"): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    const cluster = await startOnce(n, name, attempt);
    try {
      await cluster.ready(30_000);
      if (cluster.running() === n) return cluster;
      throw new Error(`${n - cluster.running()} of ${n} nats-servers exited while starting`);
    } catch (err) {
      await cluster.stop();
      if (attempt >= 3) throw err;
    }
  }
}

async function startOnce(n: number, name: string, attempt: number): Promise<NatsCluster & { running(): number }> {
  const dir = join(tmpdir(), `svc-nats-${process.pid}-${Date.now()}-${attempt}`);
  mkdirSync(dir, { recursive: true });
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < n; i++) {
    clientPorts.push(await freePort());
    routePorts.push(await freePort());
  }
  const configs = clientPorts.map((port, i) => {
    const file = join(dir, `n${i}.conf`);
    const routes = routePorts.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`);
    writeFileSync(
      file,
      [
        `server_name: n${i}`,
        `listen: 127.0.0.1:${port}`,
        `jetstream { store_dir: "${join(dir, `store-${i}`)}", max_memory_store: 64MB, max_file_store: 1GB }`,
        `cluster { name: ${name}, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes.join(", ")}] }`,
      ].join("\n"),
    );
    return file;
  });
  const procs: Array<ChildProcess | null> = configs.map(() => null);
  const conns: NatsConnection[] = [];
  const start = (i: number) => {
    if (procs[i]) return;
    const p = spawn(NATS_SERVER, ["-c", configs[i]!], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    p.on("exit", () => {
      if (procs[i] === p) procs[i] = null;
    });
    p.on("error", (e) => {
      throw new Error(`${NATS_SERVER} did not start (${e.message}): apt-get install -y nats-server, or set SVC_NATS_SERVER`);
    });
    procs[i] = p;
  };
  const cluster: NatsCluster & { running(): number } = {
    running: () => procs.filter((p) => p !== null).length,
    urls: clientPorts.map((p) => `nats://127.0.0.1:${p}`),
    kill(i) {
      procs[i]?.kill("SIGKILL");
      procs[i] = null;
    },
    start,
    pause: (i) => void procs[i]?.kill("SIGSTOP"),
    resume: (i) => void procs[i]?.kill("SIGCONT"),
    async ready(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      const live = cluster.urls.filter((_, i) => procs[i] !== null);
      for (;;) {
        let nc: NatsConnection | undefined;
        try {
          nc = await connect({ servers: live, timeout: 1000, reconnect: false });
          const jsm = await jetstreamManager(nc, { timeout: 1000 });
          await jsm.getAccountInfo();
          // the meta leader answers before every peer is known: place (and drop) a stream on all live servers
          const probe = `ready_${process.pid}_${Date.now()}`;
          await jsm.streams.add({ name: probe, subjects: [`${probe}.>`], num_replicas: live.length, storage: StorageType.Memory });
          await jsm.streams.delete(probe);
          return;
        } catch (e) {
          if (Date.now() > deadline) throw new Error(`NATS cluster not ready after ${timeoutMs} ms: ${(e as Error).message}`);
          await new Promise((r) => setTimeout(r, 200));
        } finally {
          await nc?.close().catch(() => undefined);
        }
      }
    },
    async connect(first?: number) {
      const servers = first === undefined ? cluster.urls : [cluster.urls[first]!, ...cluster.urls.filter((_, j) => j !== first)];
      const nc = await connect({ servers, noRandomize: first !== undefined, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
      conns.push(nc);
      return nc;
    },
    async stop() {
      for (const nc of conns.splice(0)) await nc.close().catch(() => undefined);
      for (let i = 0; i < n; i++) cluster.kill(i);
      await new Promise((r) => setTimeout(r, 100));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < n; i++) start(i);
  return cluster;
}
