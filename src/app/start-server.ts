/** @module app — one serving process: opens the data dir (keys, wallets, indexes), builds the route table, starts HTTP. */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { KeyStore, type KeyBook } from "../account/keys.js";
import { parsePrices } from "../account/prices.js";
import { Wallets } from "../account/wallet.js";
import type { WalletBook } from "../account/wallet-book.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { lockDir } from "../engine/collection-files.js";
import { Kernels } from "../kernels/abi.js";
import { TextEncoder1024 } from "../encoder/encoder.js";
import { openRegistry } from "../helpers/registry.js";
import { IndexService, type IndexCatalog } from "../memory/indexes.js";
import { RecordService } from "../memory/records.js";
import { recordStores } from "../cluster/sharded-records.js";
import { ScanPool } from "../pool/scan-pool.js";
import { KeptReports } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { HttpMetrics } from "../http/metrics.js";
import type { Route } from "../http/route.js";
import { commonsRoutes } from "../http/routes/commons.js";
import { kgRoutes } from "../http/routes/hd-kg.js";
import { KnowledgeGraphs } from "../hd/kg/service.js";
import { hdAnalogyRoutes } from "../http/routes/hd-analogy.js";
import { AnalogyService } from "../hd/analogy/service.js";
import { indexRoutes } from "../http/routes/indexes.js";
import { backupRoutes } from "../http/routes/backups.js";
import { importRoutes } from "../http/routes/imports.js";
import { BackupService, type Backups } from "../memory/backups.js";
import { ImportService, parseImportConfig, type ImportConfig } from "../memory/imports.js";
import { Outbound } from "../commons/outbound.js";
import { opsRoutes, type Readiness } from "../http/routes/ops.js";
import { recordRoutes } from "../http/routes/records.js";
import { embedRoutes } from "../http/routes/embed.js";
import { causalRoutes } from "../http/routes/hd-causal.js";
import { hdRolesRoutes } from "../http/routes/hd-roles.js";
import { CausalService } from "../hd/causal/service.js";
import { openDirectory } from "../directory/import.js";
import { directoryRoutes } from "../http/routes/directory.js";
import { adminRoutes } from "../http/routes/admin.js";
import { dashboardRoutes } from "../http/routes/dashboard.js";
import { startHttp, DEFAULT_BODY_LIMIT, type HttpServer, type TlsFiles } from "../http/server.js";
import { mcpEndpoint } from "../mcp/streamable-http.js";
import { parseCommonsConfig, type CommonsConfig } from "../commons/config.js";
import { Commons } from "../commons/service.js";
import type { SessionLimits } from "../mcp/sessions.js";
import { askRoutes } from "../http/routes/ask.js";
import { boardRoutes } from "../http/routes/board.js";
import { trustRoutes } from "../http/routes/trust.js";
import type { ClusterNode, ClusterOptions } from "./cluster-node.js";
import type { HomeStores } from "./home-stores.js";
import type { TracingOptions } from "./tracing.js";

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
  indexes: IndexCatalog;
  records: RecordService;
  kg: KnowledgeGraphs;
  /** The agent commons (trust records, board, profiles, ask bridge) under <data>/commons. */
  commons: Commons;
  routes: readonly Route[];
  /** Cluster mode: this node's place in the cluster (null on a single node). */
  cluster: ClusterNode | null;
}

/**
 * `<data>/config.json` (optional): `{"prices": {...}}` overrides entries of the price table
 * (src/account/prices.ts), e.g. `{"prices": {"signupCredit": 10, "per1kWritten": 0.0002}}`.
 * `{"commons": {...}}` sets the agent commons: goal, outbound allow-list, rate limits (src/commons/config.ts).
 * `{"imports": {"root": "/srv/imports", "maxUrlBytes": 268435456}}`: where bulk imports may read local files, and the
 * largest file fetched from a URL (src/memory/imports.ts).
 */
export function loadConfig(dataDir: string): { prices: ReturnType<typeof parsePrices>; commons: CommonsConfig; imports: ImportConfig } {
  const path = join(dataDir, "config.json");
  if (!existsSync(path))
    return { prices: parsePrices(undefined), commons: parseCommonsConfig(undefined), imports: parseImportConfig(undefined) };
  let raw: Record<string, unknown>;
  try {
    raw = parseStoredJson(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${path} is not valid JSON: ${(err as Error).message}`, { field: "config" });
  }
  for (const k of Object.keys(raw))
    if (k !== "prices" && k !== "commons" && k !== "imports")
      throw new SvcError("E_BAD_REQUEST", `${path}: unknown setting '${k}'`, { field: k });
  return { prices: parsePrices(raw.prices), commons: parseCommonsConfig(raw.commons), imports: parseImportConfig(raw.imports) };
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
  const registry = openRegistry({ dataDir: opts.dataDir }); // the signing key: <data>/keys/signing-key.pem, as `svc build`
  // Keys: the KV bucket svc_keys in cluster mode (this data dir's keys.json is imported into it).
  const keys: KeyBook = cluster ? await cluster.openKeys(opts.dataDir) : KeyStore.open(opts.dataDir, reporter);
  // Wallets: the ledger stream svc_ledger in cluster mode, the data dir's ledger WAL otherwise (it takes the data dir's writer lock).
  const wallets: WalletBook & { close(): Promise<void> } = cluster
    ? await cluster.openWallets(config.prices)
    : await Wallets.open(join(opts.dataDir, "wallet"), config.prices, reporter);
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: opts.threads });
  // Indexes: sharded on the log streams in cluster mode (catalog: the stream svc_catalog), the data dir's otherwise.
  const localIndexes = cluster ? null : new IndexService(opts.dataDir, { kernels, pool, durability: opts.durability, reporter });
  const clusterIndexes = cluster ? await cluster.openIndexes({ dataDir: opts.dataDir, kernels, pool, reporter }) : null;
  const indexes: IndexCatalog & { close(): Promise<void> } = localIndexes ?? clusterIndexes!;
  const encoder = TextEncoder1024.load();
  // Records: in cluster mode each tenant's are shards on the log, like an index's (cluster/sharded-records.ts).
  const stores = clusterIndexes ? recordStores(clusterIndexes, encoder.dimension) : undefined;
  const records = new RecordService(opts.dataDir, {
    kernels,
    pool,
    encoder,
    durability: opts.durability,
    reporter,
    ...(stores ? { stores } : {}),
  });
  // The directory, the commons, the knowledge graphs and the causal models: in cluster mode replicated on the stream svc_home and served by the lease holder (home-stores.ts).
  const homeStores: HomeStores | null = cluster
    ? await (
        await import("./home-stores.js")
      ).HomeStores.start({
        nc: cluster.nc,
        lease: cluster.leader!,
        dataDir: opts.dataDir,
        replicas: cluster.replicas,
        durability: opts.durability,
        directorySeed: opts.directorySeed,
        commons: { config: config.commons, encoder, reporter },
        kernels,
        logger,
        snapshots: await cluster.homeSnapshots(),
        reporter,
      })
    : null;
  const kg = homeStores?.kg ?? new KnowledgeGraphs(opts.dataDir, { kernels, durability: opts.durability, reporter });
  const causal = homeStores?.causal ?? new CausalService(opts.dataDir, { reporter });
  const directory =
    homeStores?.directory ??
    (await openDirectory(opts.dataDir, { durability: opts.durability, seed: opts.directorySeed, reporter })).directory;
  const metrics = new HttpMetrics({
    workerHeaps: () => pool.workerHeaps(),
    sharedMemory: () => ({ size: kernels.heap.memory.buffer.byteLength, used: kernels.heap.used }),
    indexRows: localIndexes ? () => localIndexes.rowCounts() : undefined,
    damage: () => reporter.reports(),
  });
  if (cluster) metrics.watchCluster({ natsConnected: () => cluster.natsUp && !cluster.nc.isClosed() });
  const routes: Route[] = [];
  const readiness: Readiness = { ready: false, opened: 0, failed: [] };
  const commons =
    homeStores?.commons ?? (await Commons.open(opts.dataDir, { config: config.commons, encoder, durability: opts.durability, reporter }));
  const recordRouteList = recordRoutes(records, { kg, causal });
  // The home stores' routes (directory, commons, KG, causal): in cluster mode the other nodes forward them to the leader
  // of the replicated home stores. Records are sharded and served where they arrive, but for export and import: a
  // container carries the tenant's graphs and models too. Helper outputs are an object store any node serves.
  const home = {
    records: recordRouteList.filter((r) => r.operationId === "records_export" || r.operationId === "records_import"),
    kg: kgRoutes(kg),
    causal: causalRoutes(causal),
    directory: directoryRoutes(directory),
    commons: [...trustRoutes(commons), ...boardRoutes(commons), ...askRoutes(commons)],
  };
  routes.push(
    ...opsRoutes({
      wallets,
      metrics,
      routes: () => routes,
      readiness: () => readiness,
      damage: () => reporter.reports(),
      cluster: cluster ? () => cluster.health() : undefined,
    }),
    ...indexRoutes(indexes),
    ...recordRouteList,
    ...embedRoutes(encoder),
    ...home.kg,
    ...home.causal,
    ...commonsRoutes({ registry, dataDir: opts.dataDir, ...(cluster ? { files: await cluster.openBuildFiles() } : {}) }),
    ...hdAnalogyRoutes(new AnalogyService({ kernels, pool })),
    ...hdRolesRoutes(),
  );
  // Backups: one node's copy its collections; the cluster's copy every shard at one cut (cluster/backups.ts). Imports write through the catalog, so both modes.
  const backups: Backups =
    localIndexes !== null
      ? new BackupService(localIndexes, opts.dataDir)
      : await cluster!.openBackups(clusterIndexes!, { dataDir: opts.dataDir, kernels, pool });
  const importOutbound = new Outbound({
    ...config.commons.outbound,
    maxBytes: config.imports.maxUrlBytes,
    timeoutMs: Math.max(config.commons.outbound.timeoutMs, 60_000),
  });
  const imports = new ImportService({
    indexes,
    config: config.imports,
    wallet: wallets,
    reporter,
    async fetchUrl(uri, field) {
      const res = await importOutbound.fetch(importOutbound.parseTarget(uri, field), { field });
      if (res.status !== 200) throw new SvcError("E_UPSTREAM", `${field}: ${res.url.host} answered ${res.status}`, { field });
      return res.body;
    },
  });
  routes.push(...backupRoutes(backups), ...importRoutes(imports));
  routes.push(...adminRoutes({ keys, wallets }), ...dashboardRoutes());
  routes.push(...home.directory, ...home.commons);
  const forward = cluster?.forwarder(new Set([...home.records, ...home.directory, ...home.commons, ...home.kg, ...home.causal]));
  /** Services close after the listener: newest first, the pool last (collections release it). */
  const closeServices = async () => {
    metrics.close();
    if (homeStores !== null) await homeStores.close();
    else {
      await commons.close();
      await directory.close();
    }
    if (homeStores === null) {
      // else closed with the home stores
      await causal.close();
      await kg.close();
    }
    await records.close();
    await imports.close();
    await backups.close();
    await indexes.close();
    await wallets.close();
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
  // Readiness: every index and records collection on disk is opened (its WAL replayed) after the
  // listener is up; /v1/health answers at once, /v1/ready once this is done.
  void (async () => {
    const opened = () => void readiness.opened++;
    const failed = [...((await localIndexes?.openAll(opened)) ?? []), ...(await records.openAll(opened))];
    for (const f of failed) logger.error({ store: f.store, err: f.error }, `could not open ${f.store}`);
    readiness.failed = failed.map((f) => f.store);
    readiness.ready = true;
    logger.info({ failed: readiness.failed }, "ready: every store is open");
  })().catch((err: unknown) => logger.error({ err }, "opening the stores failed"));
  return {
    ...http,
    keys,
    wallets,
    indexes,
    records,
    kg,
    commons,
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
