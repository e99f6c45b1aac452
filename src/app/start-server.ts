/** @module app — one serving process: opens the data dir (keys, wallets, indexes), builds the route table, starts HTTP. */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { KeyStore } from "../account/keys.js";
import { parsePrices } from "../account/prices.js";
import { Wallets } from "../account/wallet.js";
import { SvcError } from "../errors.js";
import { parseStoredJson } from "../safe-values.js";
import { lockDir } from "../engine/collection-files.js";
import { Kernels } from "../kernels/abi.js";
import { TextEncoder1024 } from "../encoder/encoder.js";
import { openRegistry } from "../helpers/registry.js";
import { IndexService } from "../memory/indexes.js";
import { RecordService } from "../memory/records.js";
import { ScanPool } from "../pool/scan-pool.js";
import type { Durability } from "../store/wal.js";
import { HttpMetrics } from "../http/metrics.js";
import type { Route } from "../http/route.js";
import { commonsRoutes } from "../http/routes/commons.js";
import { kgRoutes } from "../http/routes/hd-kg.js";
import { KnowledgeGraphs } from "../hd/kg/service.js";
import { hdAnalogyRoutes } from "../http/routes/hd-analogy.js";
import { AnalogyService } from "../hd/analogy/service.js";
import { indexRoutes } from "../http/routes/indexes.js";
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
}

export interface Server extends HttpServer {
  keys: KeyStore;
  wallets: Wallets;
  indexes: IndexService;
  records: RecordService;
  kg: KnowledgeGraphs;
  /** The agent commons (trust records, board, profiles, ask bridge) under <data>/commons. */
  commons: Commons;
  routes: readonly Route[];
}

/**
 * `<data>/config.json` (optional): `{"prices": {...}}` overrides entries of the price table
 * (src/account/prices.ts), e.g. `{"prices": {"signupCredit": 10, "per1kWritten": 0.0002}}`.
 * `{"commons": {...}}` sets the agent commons: goal, outbound allow-list, rate limits (src/commons/config.ts).
 */
export function loadConfig(dataDir: string): { prices: ReturnType<typeof parsePrices>; commons: CommonsConfig } {
  const path = join(dataDir, "config.json");
  if (!existsSync(path)) return { prices: parsePrices(undefined), commons: parseCommonsConfig(undefined) };
  let raw: Record<string, unknown>;
  try {
    raw = parseStoredJson(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${path} is not valid JSON: ${(err as Error).message}`, { field: "config" });
  }
  for (const k of Object.keys(raw)) if (k !== "prices" && k !== "commons") throw new SvcError("E_BAD_REQUEST", `${path}: unknown setting '${k}'`, { field: k });
  return { prices: parsePrices(raw.prices), commons: parseCommonsConfig(raw.commons) };
}

/** One server per data dir: <data>/LOCK (exclusive create, the owner's pid; a dead owner's lock is taken over). */
function lockDataDir(dataDir: string): () => void {
  try {
    lockDir(dataDir);
  } catch (err) {
    if (err instanceof SvcError && err.code === "E_CONFLICT") throw new SvcError("E_DATA_LOCKED", `${err.message}: another svc serve uses this --data directory`, { field: "data", details: err.details });
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
  const registry = openRegistry({ dataDir: opts.dataDir }); // the signing key: <data>/keys/signing-key.pem, as `svc build`
  const keys = KeyStore.open(opts.dataDir);
  const wallets = await Wallets.open(join(opts.dataDir, "wallet"), config.prices); // takes the data dir's writer lock
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: opts.threads });
  const indexes = new IndexService(opts.dataDir, { kernels, pool, durability: opts.durability });
  const encoder = TextEncoder1024.load();
  const records = new RecordService(opts.dataDir, { kernels, pool, encoder, durability: opts.durability });
  const kg = new KnowledgeGraphs(opts.dataDir, { kernels, durability: opts.durability });
  const causal = new CausalService(opts.dataDir);
  const { directory } = await openDirectory(opts.dataDir, { durability: opts.durability, seed: opts.directorySeed });
  const metrics = new HttpMetrics({ workerHeaps: () => pool.workerHeaps(), sharedMemory: () => ({ size: kernels.heap.memory.buffer.byteLength, used: kernels.heap.used }) });
  const routes: Route[] = [];
  const readiness: Readiness = { ready: false, opened: 0, failed: [] };
  routes.push(...opsRoutes({ wallets, metrics, routes: () => routes, readiness: () => readiness }), ...indexRoutes(indexes), ...recordRoutes(records, { kg, causal }), ...embedRoutes(encoder), ...kgRoutes(kg), ...causalRoutes(causal), ...commonsRoutes({ registry, dataDir: opts.dataDir }), ...hdAnalogyRoutes(new AnalogyService({ kernels, pool })), ...hdRolesRoutes());
  routes.push(...adminRoutes({ keys, wallets }), ...dashboardRoutes());
  routes.push(...directoryRoutes(directory));
  const commons = await Commons.open(opts.dataDir, { config: config.commons, encoder, durability: opts.durability });
  routes.push(...trustRoutes(commons), ...boardRoutes(commons), ...askRoutes(commons));
  /** Services close after the listener: newest first, the pool last (collections release it). */
  const closeServices = async () => {
    await commons.close();
    await directory.close();
    await causal.close();
    await kg.close();
    await records.close();
    await indexes.close();
    await wallets.close();
    await pool.close();
    unlock();
  };
  let http: HttpServer;
  try {
    const logger = opts.logger ?? pino({ level: "silent" });
    const mcp = mcpEndpoint(routes, { keys, wallets, metrics, auth: opts.auth ?? true }, { bodyLimit: opts.bodyLimit ?? DEFAULT_BODY_LIMIT, log: logger, sessionLimits: opts.mcpSessions });
    http = await startHttp(routes, { keys, wallets, metrics, mcp }, {
      host: opts.host ?? "127.0.0.1",
      port: opts.port ?? 8080,
      auth: opts.auth ?? true,
      bodyLimit: opts.bodyLimit,
      logger,
      allowedHosts: opts.mcpAllowedHosts,
      tls: opts.tls,
    });
  } catch (err) {
    await closeServices();
    throw err;
  }
  // Readiness: every index and records collection on disk is opened (its WAL replayed) after the
  // listener is up; /v1/health answers at once, /v1/ready once this is done.
  const logger = opts.logger ?? pino({ level: "silent" });
  void (async () => {
    const opened = () => void readiness.opened++;
    const failed = [...(await indexes.openAll(opened)), ...(await records.openAll(opened))];
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
    async close() {
      await http.close();
      await closeServices();
    },
  };
}
