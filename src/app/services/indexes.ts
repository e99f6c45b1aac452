/** @module app/services/indexes — the vector indexes with their backups and bulk imports: the data dir's, or sharded on the log streams in cluster mode. */
import { Outbound } from "../../commons/outbound.js";
import { SvcError } from "../../errors.js";
import { backupRoutes } from "../../http/routes/backups.js";
import { importRoutes } from "../../http/routes/imports.js";
import { indexRoutes } from "../../http/routes/indexes.js";
import { BackupService, type Backups } from "../../memory/backups.js";
import { ImportService } from "../../memory/imports.js";
import { IndexService, type IndexCatalog } from "../../memory/indexes.js";
import type { ClusterIndexes } from "../../cluster/catalog.js";
import type { FailedStore, ProductService, ServiceContext } from "../product-service.js";

export interface IndexesService extends ProductService {
  readonly indexes: IndexCatalog;
  /** Cluster mode: the sharded indexes (records shards live beside them); null on a single node. */
  readonly sharded: ClusterIndexes | null;
  /** Rows per index on this node (metrics); absent in cluster mode. */
  readonly rowCounts?: () => Promise<Array<{ tenant: string; index: string; rows: number }>>;
}

export async function openIndexes(ctx: Omit<ServiceContext, "home">): Promise<IndexesService> {
  const { cluster, dataDir, kernels, pool, reporter } = ctx;
  // Sharded on the log streams in cluster mode (catalog: the stream svc_catalog), the data dir's otherwise.
  const local = cluster ? null : new IndexService(dataDir, { kernels, pool, durability: ctx.durability, reporter });
  const sharded = cluster ? await cluster.openIndexes({ dataDir, kernels, pool, reporter }) : null;
  const indexes: IndexCatalog & { close(): Promise<void> } = local ?? sharded!;
  // Backups: one node's copy its collections; the cluster's copy every shard at one cut (cluster/backups.ts).
  const backups: Backups =
    local !== null ? new BackupService(local, dataDir) : await cluster!.openBackups(sharded!, { dataDir, kernels, pool });
  // Imports write through the catalog, so both modes.
  const imports = new ImportService({
    indexes,
    config: ctx.config.imports,
    wallet: ctx.wallets,
    reporter,
    fetchUrl: importFetcher(ctx),
  });
  return {
    name: "indexes",
    indexes,
    sharded,
    ...(local ? { rowCounts: () => local.rowCounts() } : {}),
    routes: [...indexRoutes(indexes), ...backupRoutes(backups), ...importRoutes(imports)],
    recover: async (onOpened): Promise<FailedStore[]> => (local ? local.openAll(onOpened) : []),
    async close() {
      await imports.close();
      await backups.close();
      await indexes.close();
    },
  };
}

/** Fetches a bulk import's URL: the commons' outbound rules (SSRF-safe), with the imports' size cap and at least a minute. */
function importFetcher(ctx: Omit<ServiceContext, "home">): (uri: string, field: string) => Promise<Buffer> {
  const outbound = new Outbound({
    ...ctx.config.commons.outbound,
    maxBytes: ctx.config.imports.maxUrlBytes,
    timeoutMs: Math.max(ctx.config.commons.outbound.timeoutMs, 60_000),
  });
  return async (uri, field) => {
    const res = await outbound.fetch(outbound.parseTarget(uri, field), { field });
    if (res.status !== 200) throw new SvcError("E_UPSTREAM", `${field}: ${res.url.host} answered ${res.status}`, { field });
    return res.body;
  };
}
