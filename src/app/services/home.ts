/** @module app/services/home — cluster mode's replicated home stores (home-stores.ts), opened before the services that serve them (hd, directory, commons) and closed after them; nothing on a single node. */
import type { HomeStores } from "../home-stores.js";
import type { ProductService, ServiceContext } from "../product-service.js";

export interface HomeService extends ProductService {
  /** The replicated stores; null on a single node (each service opens its own store in the data dir). */
  readonly stores: HomeStores | null;
}

export async function openHome(ctx: Omit<ServiceContext, "home">): Promise<HomeService> {
  const { cluster } = ctx;
  if (cluster === null) return { name: "home", stores: null, routes: [], close: async () => {} };
  // Loaded only in cluster mode: the NATS clients are not loaded on a single node.
  const stores = await (
    await import("../home-stores.js")
  ).HomeStores.start({
    nc: cluster.nc,
    lease: cluster.leader!,
    dataDir: ctx.dataDir,
    replicas: cluster.replicas,
    durability: ctx.durability,
    directorySeed: ctx.directorySeed,
    commons: { config: ctx.config.commons, encoder: ctx.encoder, reporter: ctx.reporter },
    kernels: ctx.kernels,
    logger: ctx.logger,
    snapshots: await cluster.homeSnapshots(),
    reporter: ctx.reporter,
  });
  return { name: "home", stores, routes: [], close: () => stores.close() };
}
