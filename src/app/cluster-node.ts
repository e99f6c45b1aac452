/**
 * @module app/cluster-node — what `svc serve --cluster` adds to a server: the NATS connection (reconnects
 * forever, logged), the shared log stream, this node's registration, the leader lease of the replicated
 * home stores, the forwarding secret, and the forwarding rule (routes of the home stores go to the
 * lease holder; see docs/ARCHITECTURE.md "Cluster mode").
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { ensureLogStreams } from "../cluster/jetstream-log.js";
import { ClusterBackups } from "../cluster/backups.js";
import { ClusterIndexes } from "../cluster/catalog.js";
import { BuildFiles } from "../cluster/build-files.js";
import { forwardToken } from "../cluster/forward-token.js";
import { LeaderLease } from "../cluster/leader-lease.js";
import { ClusterKeys } from "../cluster/keys.js";
import { ClusterWallets } from "../cluster/wallet.js";
import { NODE_ID_RE, NodeRegistry } from "../cluster/nodes.js";
import { snapshotPolicyFromEnv } from "../cluster/shard-snapshots.js";
import { Snapshots } from "../cluster/snapshots.js";
import type { PriceTable } from "../account/prices.js";
import { SvcError } from "../errors.js";
import type { Reporter } from "../store/reporter.js";
import type { Kernels } from "../kernels/abi.js";
import type { ScanPool } from "../pool/scan-pool.js";
import { homeUnavailable, type Forwarder } from "../http/forward.js";
import type { Route } from "../http/route.js";
import type { ClusterView } from "../http/routes/ops.js";

export interface ClusterOptions {
  /** NATS server URLs (`nats://host:4222`); any one reachable is enough to start. */
  servers: string[];
  /** This node's id (`--node-id`, default the host name). */
  nodeId: string;
  /** The URL other nodes reach this node's HTTP API at (default `http://<host>:<port>` of the listener). */
  advertise?: string;
  /** `--take-home`: deprecated, ignored (every store is replicated and fails over by itself); a warning is logged. */
  takeHome?: boolean;
}

/** The NATS client's ping interval (ms) and the pings it may have unanswered before it counts the server lost and reconnects. */
const PING_INTERVAL_MS = 1000;
const MAX_PING_OUT = 3;

const CONNECT_TIMEOUT_MS = 2000;
/** The first nats-server release whose KV compare-and-set holds under concurrency (nats-server#4320). */
export const CAS_SAFE_NATS = "2.9.21";

/** `version` (x.y.z) is below `min`; false when it does not parse. */
export function olderThan(version: string, min: string): boolean {
  const v = version.split(/[.-]/).slice(0, 3).map(Number);
  const m = min.split(".").map(Number);
  if (v.length < 3 || v.some((x) => !Number.isInteger(x))) return false;
  for (let i = 0; i < 3; i++) if (v[i] !== m[i]) return v[i]! < m[i]!;
  return false;
}

/** A stream and the buckets are replicated on this many servers: 3 where 3 exist. */
export function replicasFor(servers: readonly string[]): number {
  return Math.min(3, servers.length);
}

export class ClusterNode {
  /** False between a NATS disconnect and the reconnect (svc_nats_connected). */
  natsUp = true;

  private registry: NodeRegistry | null = null;
  /** The cluster's forwarding secret (cluster/forward-token.ts), once joined. */
  private token = "";
  /** The lease of the replicated home stores (directory, commons, graphs, causal models): folded from a stream, moves by itself. */
  leader: LeaderLease | null = null;
  private keys: ClusterKeys | null = null;

  private constructor(
    readonly opts: ClusterOptions,
    readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  /** Connect (waiting for a first server as long as it takes) and ensure the log stream. */
  static async connect(opts: ClusterOptions, log: Logger): Promise<ClusterNode> {
    if (!NODE_ID_RE.test(opts.nodeId))
      throw new SvcError("E_BAD_REQUEST", `--node-id '${opts.nodeId}' must be 1-64 letters, digits, _ or -`, { field: "node-id" });
    if (opts.servers.length === 0) throw new SvcError("E_BAD_REQUEST", "--cluster needs at least one nats:// URL", { field: "cluster" });
    log.info({ servers: opts.servers, node: opts.nodeId }, `cluster: connecting to NATS (${opts.servers.join(", ")})`);
    // A server that stalls (SIGSTOP, a hung VM) keeps the socket open: pings every second, and a
    // server three pings behind counts as lost (~3-4 s) so the node moves to another server while a
    // new stream leader is elected (the defaults, 2 min x 2, left nodes hanging on a frozen server).
    // A frozen server also accepts TCP connections and never says hello: a try to connect gives up
    // after CONNECT_TIMEOUT_MS (default 20 s, which kept a reconnecting node away that long).
    const nc = await connect({
      servers: opts.servers,
      name: `svc-${opts.nodeId}`,
      maxReconnectAttempts: -1,
      waitOnFirstConnect: true,
      reconnectTimeWait: 1000,
      pingInterval: PING_INTERVAL_MS,
      maxPingOut: MAX_PING_OUT,
      timeout: CONNECT_TIMEOUT_MS,
    });
    log.info({ server: nc.getServer() }, `cluster: connected to NATS at ${nc.getServer()}`);
    const version = nc.info?.version ?? "";
    if (olderThan(version, CAS_SAFE_NATS)) {
      log.warn(
        { version, minimum: CAS_SAFE_NATS },
        `cluster: nats-server ${version} is older than ${CAS_SAFE_NATS}: concurrent KV compare-and-set can all succeed there (nats-server#4320); svc does not rely on it (leases, the catalog and the forwarding secret are folds of streams), but upgrading the servers to ${CAS_SAFE_NATS} or later is advised`,
      );
    }
    const node = new ClusterNode(opts, nc, log);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") log.warn({ server: s.server }, `cluster: lost NATS server ${s.server}; reconnecting`);
        else if (s.type === "reconnect") log.info({ server: s.server }, `cluster: reconnected to NATS at ${s.server}`);
        if (s.type === "disconnect" || s.type === "reconnect") node.natsUp = s.type === "reconnect";
        else if (s.type === "error") log.error({ err: s.error }, `cluster: NATS error: ${s.error.message}`);
      }
    })();
    await node.retrying("create the log streams", () => ensureLogStreams(nc, { replicas: replicasFor(opts.servers) }));
    return node;
  }

  /** Replicas of the streams and buckets this node creates. */
  get replicas(): number {
    return replicasFor(this.opts.servers);
  }

  /** Register this node at `url` (its advertised HTTP address), follow the leader lease and read the forwarding secret. */
  async join(url: string): Promise<void> {
    const replicas = replicasFor(this.opts.servers);
    const self = { id: this.opts.nodeId, url: this.opts.advertise ?? url, startedAt: Date.now() };
    this.registry = await this.retrying("join the node registry", () => NodeRegistry.join(this.nc, self, { replicas }));
    this.registry.on("change", (live: string[]) => this.log.info({ live }, `cluster: live nodes ${live.join(", ")}`));
    if (this.opts.takeHome)
      this.log.warn(
        "cluster: --take-home is deprecated and ignored: every store is replicated and its leader moves by itself (docs/OPERATIONS.md)",
      );
    this.leader = await this.retrying("follow the leader lease", () => LeaderLease.open(this.nc, this.opts.nodeId, { replicas }));
    this.leader.on("change", (s: { holder: string | null; term: number }) =>
      this.log.warn(
        { leader: s.holder, term: s.term },
        `cluster: the leader of the home stores is now ${s.holder ?? "none"} (term ${s.term})`,
      ),
    );
    this.token = await this.retrying("read the forwarding secret", () => forwardToken(this.nc));
    this.log.info(
      { node: self.id, url: self.url, leader: this.leader.leader },
      `cluster: node ${self.id} at ${self.url} joined; leader of the home stores ${this.leader.leader ?? "none yet"}`,
    );
  }

  /** The shared API keys (KV svc_keys); the records of `dataDir`'s keys.json the bucket lacks are imported first. */
  async openKeys(dataDir: string): Promise<ClusterKeys> {
    this.keys = await this.retrying("open the keys bucket", () =>
      ClusterKeys.open(this.nc, { replicas: replicasFor(this.opts.servers), importFrom: dataDir }),
    );
    return this.keys;
  }

  /** The shared wallets (the ledger stream svc_ledger, folded by every node). */
  async openWallets(prices: PriceTable): Promise<ClusterWallets> {
    const store = await this.snapshotStore();
    return this.retrying("open the wallet ledger", () =>
      ClusterWallets.open(this.nc, prices, { replicas: replicasFor(this.opts.servers), snapshots: { store } }),
    );
  }

  /** The sharded vector indexes (catalog: the fold of the stream svc_catalog; this node serves the shards placed on it). Call after join. */
  async openIndexes(opts: { dataDir: string; kernels: Kernels; pool: ScanPool; reporter?: Reporter }): Promise<ClusterIndexes> {
    const registry = this.registry;
    if (registry === null) throw new Error("ClusterNode.openIndexes before join");
    // Shard snapshots in the object store svc_snapshots, and the log purged below them (OPERATIONS.md "Log retention and sizing").
    const snapshots = { store: await this.snapshotStore(), ...snapshotPolicyFromEnv() };
    return this.retrying("open the index catalog", () =>
      ClusterIndexes.open({ nc: this.nc, registry, ...opts, bucketReplicas: replicasFor(this.opts.servers), snapshots }),
    );
  }

  /** The snapshot store and policy of the home stores (app/home-stores.ts): the same store and environment as the shards'. */
  async homeSnapshots(): Promise<{ store: Snapshots; minBytes?: number; checkMs?: number }> {
    return { store: await this.snapshotStore(), ...snapshotPolicyFromEnv() };
  }

  /** The helper outputs (object store svc_build; cluster/build-files.ts). */
  openBuildFiles(): Promise<BuildFiles> {
    return this.retrying("open the helper outputs' store", () => BuildFiles.open(this.nc, { replicas: replicasFor(this.opts.servers) }));
  }

  /** The backups of the sharded indexes (records in the KV bucket svc_backups, copies in svc_snapshots). Call after openIndexes. */
  async openBackups(catalog: ClusterIndexes, opts: { dataDir: string; kernels: Kernels; pool: ScanPool }): Promise<ClusterBackups> {
    const registry = this.registry;
    if (registry === null) throw new Error("ClusterNode.openBackups before join");
    const store = await this.snapshotStore();
    return this.retrying("open the backup bucket", () =>
      ClusterBackups.open({
        nc: this.nc,
        catalog,
        store,
        ...opts,
        self: registry.self.id,
        isLive: (node) => registry.live.includes(node),
        replicas: replicasFor(this.opts.servers),
      }),
    );
  }

  private snapshotsOpen: Promise<Snapshots> | null = null;

  /** The snapshot store (object store svc_snapshots) of the shards and the ledger, opened once. */
  private snapshotStore(): Promise<Snapshots> {
    this.snapshotsOpen ??= this.retrying("open the snapshot store", () =>
      Snapshots.open(this.nc, { replicas: replicasFor(this.opts.servers) }),
    );
    return this.snapshotsOpen;
  }

  /** Requests for `leaderRoutes` (the replicated home stores, reads and writes alike) go to the lease holder, unless this node is it. */
  forwarder(leaderRoutes: ReadonlySet<Route>): Forwarder {
    const node = this;
    // One controller per lease state: aborted when the holder or term changes, so a request forwarded to
    // a leader that froze is given up when the next one takes over (~6 s), not at the forward timeout.
    let moved = new AbortController();
    this.leader?.on("change", () => {
      moved.abort();
      moved = new AbortController();
    });
    return {
      watch(route) {
        return leaderRoutes.has(route) ? moved.signal : undefined;
      },
      get token() {
        return node.token;
      },
      target(route) {
        if (!leaderRoutes.has(route)) return null;
        const leader = node.leader?.leader ?? null;
        if (leader === null) throw homeUnavailable("the home stores have no leader yet (one is elected within seconds); retry");
        if (leader === node.opts.nodeId) return null;
        const url = node.registry?.info(leader)?.url;
        if (url === undefined)
          throw homeUnavailable(`the leader of the home stores, ${leader}, is not live; another node takes over within seconds; retry`);
        return url;
      },
    };
  }

  health(): ClusterView {
    return {
      node: this.opts.nodeId,
      leader: this.leader?.leader ?? null,
      term: this.leader?.term ?? 0,
      live: this.registry?.live ?? [],
    };
  }

  /** Leave the registry (others see this node go at once) and close the connection. */
  async close(): Promise<void> {
    await this.leader?.close();
    await this.keys?.close();
    await this.registry?.leave();
    await this.nc.drain().catch(() => this.nc.close());
  }

  /** Run a start-up step until it succeeds (JetStream may still be electing leaders), logging each failure. */
  private async retrying<T>(what: string, step: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await step();
      } catch (err) {
        if (err instanceof SvcError && err.status < 500) throw err;
        this.log.warn({ err, attempt }, `cluster: could not ${what} (${(err as Error).message}); retrying in 1 s`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}
