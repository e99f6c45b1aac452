/** @module app/services/commons — the agent commons (trust records, board, profiles, ask bridge): <data>/commons, or the replicated home store in cluster mode. */
import { Commons } from "../../commons/service.js";
import { askRoutes } from "../../http/routes/ask.js";
import { boardRoutes } from "../../http/routes/board.js";
import { trustRoutes } from "../../http/routes/trust.js";
import type { ProductService, ServiceContext } from "../product-service.js";

export interface CommonsService extends ProductService {
  readonly commons: Commons;
}

export async function openCommons(ctx: ServiceContext): Promise<CommonsService> {
  const { home } = ctx;
  const commons =
    home?.commons ??
    (await Commons.open(ctx.dataDir, {
      config: ctx.config.commons,
      encoder: ctx.encoder,
      durability: ctx.durability,
      reporter: ctx.reporter,
    }));
  const routes = [...trustRoutes(commons), ...boardRoutes(commons), ...askRoutes(commons)];
  return {
    name: "commons",
    commons,
    routes,
    homeRoutes: routes,
    close: async () => {
      if (home === null) await commons.close(); // else the home stores close it
    },
  };
}
