/**
 * @module app/product-service — what the composition root (start-server.ts) asks of each product service, and what it gives them.
 * A service's factory (app/services/*.ts) makes the one choice between a single node and cluster mode; the root opens the
 * factories in a list and knows neither.
 */
import type { Logger } from "pino";
import type { KeyBook } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import type { CommonsConfig } from "../commons/config.js";
import type { TextEncoder1024 } from "../encoder/encoder.js";
import type { Route } from "../http/route.js";
import type { Kernels } from "../kernels/abi.js";
import type { ImportConfig } from "../memory/imports.js";
import type { ScanPool } from "../pool/scan-pool.js";
import type { KeptReports } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import type { ClusterNode } from "./cluster-node.js";
import type { HomeStores } from "./home-stores.js";

/** What every service may use: the process's shared parts, opened before any service and closed after all of them. */
export interface ServiceContext {
  dataDir: string;
  durability?: Durability;
  /** Business directory seed file (ServerOptions.directorySeed). */
  directorySeed?: string | null;
  config: { commons: CommonsConfig; imports: ImportConfig };
  logger: Logger;
  /** The one sink of storage damage and background failures. */
  reporter: KeptReports;
  kernels: Kernels;
  pool: ScanPool;
  encoder: TextEncoder1024;
  keys: KeyBook;
  wallets: WalletBook;
  /** Cluster mode: this node (joined); null on a single node. */
  cluster: ClusterNode | null;
  /** Cluster mode: the replicated home stores (the directory, the commons, the knowledge graphs, the causal models); null on a single node. */
  home: HomeStores | null;
}

/** A store that could not be opened at startup (readiness lists it; the server serves the rest). */
export interface FailedStore {
  store: string;
  error: unknown;
}

/**
 * One product service (indexes, records, hd, directory, commons, helpers) as the composition root sees it. Opened by its factory,
 * `(ctx, ...the services it needs) => Promise<ProductService>`; `routes` go into the one route table; `close` after the listener.
 */
export interface ProductService {
  /** For logs. */
  readonly name: string;
  readonly routes: readonly Route[];
  /**
   * Of `routes`, those served by the leader of the home stores in cluster mode (the other nodes forward them): the leader-held
   * stores' routes, and whatever else reads or writes them (a records export carries the tenant's graphs and models).
   */
  readonly homeRoutes?: readonly Route[];
  /**
   * Open (replay) the service's stores on disk, after the listener is up (/v1/ready waits for it); `onOpened` counts each store
   * opened. What failed is returned, not thrown: the server serves the rest, and `svc repair` salvages the damaged store offline.
   */
  recover?(onOpened: () => void): Promise<FailedStore[]>;
  /** Close its stores; once, after the listener closed. */
  close(): Promise<void>;
}

/**
 * Close services in reverse order of opening: a service is opened after those it uses (records after hd, whose graphs its
 * exports carry; imports after indexes, which they write), so each closes while what it uses is still open.
 */
export async function closeInReverse(services: readonly ProductService[]): Promise<void> {
  for (const s of [...services].reverse()) await s.close();
}
