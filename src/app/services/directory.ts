/** @module app/services/directory — the business directory: <data>/directory, or the replicated home store in cluster mode. */
import { openDirectory as openDirectoryStore } from "../../directory/import.js";
import { directoryRoutes } from "../../http/routes/directory.js";
import type { ProductService, ServiceContext } from "../product-service.js";

export async function openDirectory(ctx: ServiceContext): Promise<ProductService> {
  const { home } = ctx;
  const directory =
    home?.directory ??
    (await openDirectoryStore(ctx.dataDir, { durability: ctx.durability, seed: ctx.directorySeed, reporter: ctx.reporter })).directory;
  const routes = directoryRoutes(directory);
  return {
    name: "directory",
    routes,
    homeRoutes: routes,
    close: async () => {
      if (home === null) await directory.close(); // else the home stores close it
    },
  };
}
