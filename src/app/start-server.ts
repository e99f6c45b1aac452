/** @module app — one serving process: opens the data dir (keys, wallets, indexes), builds the route table, starts HTTP. */
import { mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import type { KeyBook } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import { TextEncoder1024 } from "../encoder/encoder.js";
import { lockDir } from "../engine/collection-files.js";
import { SvcError } from "../errors.js";
import { HttpMetrics } from "../http/metrics.js";
import type { Route } from "../http/route.js";
import { dashboardRoutes } from "../http/routes/dashboard.js";
import { embedRoutes } from "../http/routes/embed.js";
import { opsRoutes, type Readiness } from "../http/routes/ops.js";
import { startHttp, DEFAULT_BODY_LIMIT, type HttpServer, type TlsFiles } from "../http/server.js";
import { Kernels } from "../kernels/abi.js";
import type { SessionLimits } from "../mcp/sessions.js";
import { mcpEndpoint } from "../mcp/streamable-http.js";
import { ScanPool } from "../pool/scan-pool.js";
import { KeptReports } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import type { ClusterNode, ClusterOptions } from "./cluster-node.js";
import { loadConfig } from "./config.js";
import { closeInReverse, type FailedStore, type ProductService, type ServiceContext } from "./product-service.js";
import { openAccounts, type AccountsService } from "./services/accounts.js";
import { openCommons, type CommonsService } from "./services/commons.js";
import { openDirectory } from "./services/directory.js";
import { openHd, type HdService } from "./services/hd.js";
import { openHelpers } from "./services/helpers.js";
import { openHome } from "./services/home.js";
import { openIndexes, type IndexesService } from "./services/indexes.js";
import { openRecords, type RecordsService } from "./services/records.js";
import type { TracingOptions } from "./tracing.js";

export { loadConfig } from "./config.js";

export interface ServerOptions {
  dataDir: string;
  host?: string;
  port?: number;
  auth?: boolean;
  bodyLimit?: number;
  threads?: number;
  durability?: Durability;
  logger?: Logger;
  /** Business directory file (JSON Lines or CSV) imported when <data>/directory holds no business; default the shipped demo (data/directory/businesses.jsonl); null: none. */
  directorySeed?: string | null;
  /** Host header values /mcp accepts besides loopback names on the listening port (DNS-rebinding protection). */
  mcpAllowedHosts?: string[];
  /** Caps on open /mcp sessions (default DEFAULT_SESSION_LIMITS: 1000, 32 keyless per address, 200 per key). */
  mcpSessions?: SessionLimits;
  /** Serve HTTPS with these PEM files (REST, /mcp and the dashboard alike). */
  tls?: TlsFiles;
  /** Cluster mode (`svc serve --cluster`): join the NATS JetStream cluster; absent: single node. */
  cluster?: ClusterOptions;
  /** OpenTelemetry traces (app/tracing.ts, loaded only then); absent: off. One traced server per process. */
  tracing?: TracingOptions;
}

export interface Server extends HttpServer {
  keys: KeyBook;
  wallets: WalletBook;
  indexes: IndexesService["indexes"];
  records: RecordsService["records"];
  kg: HdService["kg"];
  /** The agent commons (trust records, board, profiles, ask bridge) under <data>/commons. */
  commons: CommonsService["commons"];
  routes: readonly Route[];
  /** Cluster mode: this node's place in the cluster (null on a single node). */
  cluster: ClusterNode | null;
}

/** One server per data dir: <data>/LOCK (exclusive create, the owner's pid; a dead owner's lock is taken over). */
function lockDataDir(dataDir: string): () => void {
  try {
    lockDir(dataDir);
  } catch (err) {
    if (err instanceof SvcError && err.code === "E_CONFLICT")
      throw new SvcError("E_DATA_LOCKED", `${err.message}: another svc serve uses this --data directory`, {
        field: "data",
        details: err.details,
      });
    throw err;
  }
  return () => rmSync(join(dataDir, "LOCK"), { force: true });
}

export async function startServer(opts: ServerOptions): Promise<Server> {
  mkdirSync(opts.dataDir, { recursive: true });
  const unlock = lockDataDir(opts.dataDir);
  try {
    return await openServer(opts, unlock);
  } catch (err) {
    unlock();
    throw err;
  }
}

async function openServer(opts: ServerOptions, unlock: () => void): Promise<Server> {
  const config = loadConfig(opts.dataDir);
  const logger = opts.logger ?? pino({ level: "silent" });
  // Traces only when configured: OpenTelemetry is not loaded otherwise.
  const tracing = opts.tracing ? (await import("./tracing.js")).startTracing(opts.tracing) : null;
  let cluster: ClusterNode | null = null;
  try {
    // Cluster mode only: the NATS clients are not loaded on a single node.
    cluster = opts.cluster ? await (await import("./cluster-node.js")).ClusterNode.connect(opts.cluster, logger) : null;
    const server = await openServices(opts, config, logger, cluster, unlock);
    if (tracing === null) return server;
    logger.info({ endpoint: opts.tracing?.endpoint }, "tracing: OpenTelemetry spans exported over OTLP");
    return {
      ...server,
      close: async () => {
        await server.close();
        await tracing.shutdown(); // the spans still pending are exported
      },
    };
  } catch (err) {
    await cluster?.close();
    await tracing?.shutdown();
    throw err;
  }
}

async function openServices(
  opts: ServerOptions,
  config: ReturnType<typeof loadConfig>,
  logger: Logger,
  cluster: ClusterNode | null,
  unlock: () => void,
): Promise<Server> {
  const host = opts.host ?? "127.0.0.1";
  // Cluster mode: the node registers (with the URL it will listen at) before it opens the shared
  // stores, so placement of the index shards it serves knows it; --port 0 is resolved first.
  const port = cluster && opts.port === 0 ? await freePort(host) : (opts.port ?? 8080);
  await cluster?.join(advertisedUrl(opts.tls ? "https" : "http", host, port));
  // The one sink of storage damage and background failures, passed to every store: health and metrics read its findings, the log gets each.
  const reporter = new KeptReports({
    damage: (r) => logger.error({ damage: r }, `storage damage in ${r.store}${r.file ? ` (${r.file})` : ""}: ${r.detail}`),
    background: (err, task) => logger.error({ err }, `background ${task} failed (tried again later)`),
  });
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: opts.threads });
  const encoder = TextEncoder1024.load();
  // The product services, in order of opening: each after those it uses; they close in reverse (closeInReverse).
  const services: ProductService[] = [];
  const open = async <S extends ProductService>(service: Promise<S>): Promise<S> => {
    const s = await service;
    services.push(s);
    return s;
  };
  let accounts: AccountsService, indexes: IndexesService, records: RecordsService, hd: HdService, commons: CommonsService;
  try {
    accounts = await open(openAccounts(opts.dataDir, config.prices, cluster, reporter));
    const { dataDir, durability, directorySeed } = opts;
    const shared = {
      dataDir,
      durability,
      directorySeed,
      config,
      logger,
      reporter,
      kernels,
      pool,
      encoder,
      keys: accounts.keys,
      wallets: accounts.wallets,
      cluster,
    };
    indexes = await open(openIndexes(shared));
    const ctx: ServiceContext = { ...shared, home: (await open(openHome(shared))).stores };
    hd = await open(openHd(ctx));
    records = await open(openRecords(ctx, indexes, hd));
    await open(openDirectory(ctx));
    commons = await open(openCommons(ctx));
    await open(openHelpers(ctx));
  } catch (err) {
    // what opened closes (its locks and connections released); the failure to open is what the caller hears of
    await closeInReverse(services).catch((closeErr: unknown) => logger.error({ err: closeErr }, "closing after a failed start failed"));
    await pool.close();
    throw err;
  }
  const { keys, wallets } = accounts;
  const metrics = new HttpMetrics({
    workerHeaps: () => pool.workerHeaps(),
    sharedMemory: () => ({ size: kernels.heap.memory.buffer.byteLength, used: kernels.heap.used }),
    indexRows: indexes.rowCounts,
    damage: () => reporter.reports(),
  });
  if (cluster) metrics.watchCluster({ natsConnected: () => cluster.natsUp && !cluster.nc.isClosed() });
  const readiness: Readiness = { ready: false, opened: 0, failed: [] };
  const routes: Route[] = [
    ...opsRoutes({
      wallets,
      metrics,
      routes: () => routes,
      readiness: () => readiness,
      damage: () => reporter.reports(),
      cluster: cluster ? () => cluster.health() : undefined,
    }),
    ...embedRoutes(encoder),
    ...services.flatMap((s) => s.routes),
    ...dashboardRoutes(),
  ];
  // The home stores' routes (directory, commons, KG, causal, records export and import): in cluster mode the other nodes forward
  // them to the leader of the replicated home stores.
  const forward = cluster?.forwarder(new Set(services.flatMap((s) => s.homeRoutes ?? [])));
  /** Services close after the listener: the metrics first, then the services newest first, the pool last (collections release it). */
  const closeServices = async () => {
    metrics.close();
    await closeInReverse(services);
    await pool.close();
    unlock();
  };
  let http: HttpServer;
  try {
    const mcp = mcpEndpoint(
      routes,
      { keys, wallets, metrics, auth: opts.auth ?? true, forward },
      { bodyLimit: opts.bodyLimit ?? DEFAULT_BODY_LIMIT, log: logger, sessionLimits: opts.mcpSessions },
    );
    http = await startHttp(
      routes,
      { keys, wallets, metrics, mcp, forward },
      {
        host,
        port,
        auth: opts.auth ?? true,
        bodyLimit: opts.bodyLimit,
        logger,
        allowedHosts: opts.mcpAllowedHosts,
        tls: opts.tls,
      },
    );
  } catch (err) {
    await closeServices();
    throw err;
  }
  // Readiness: every store on disk (index and records collections) is opened (its WAL replayed) after the
  // listener is up; /v1/health answers at once, /v1/ready once this is done.
  void (async () => {
    const opened = () => void readiness.opened++;
    const failed: FailedStore[] = [];
    for (const s of services) failed.push(...((await s.recover?.(opened)) ?? []));
    for (const f of failed) logger.error({ store: f.store, err: f.error }, `could not open ${f.store}`);
    readiness.failed = failed.map((f) => f.store);
    readiness.ready = true;
    logger.info({ failed: readiness.failed }, "ready: every store is open");
  })().catch((err: unknown) => logger.error({ err }, "opening the stores failed"));
  return {
    ...http,
    keys,
    wallets,
    indexes: indexes.indexes,
    records: records.records,
    kg: hd.kg,
    commons: commons.commons,
    routes,
    cluster,
    async close() {
      await http.close();
      await closeServices();
      await cluster?.close();
    },
  };
}

/** The listener's URL as other nodes reach it: a wildcard address (0.0.0.0, ::) is replaced by the host name. */
function advertisedUrl(scheme: string, host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? hostname() : host.includes(":") ? `[${host}]` : host;
  return `${scheme}://${name}:${port}`;
}

/** A port free on `host` now (bound and released); cluster mode with --port 0 advertises it before listening. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
