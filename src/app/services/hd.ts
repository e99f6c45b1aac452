/** @module app/services/hd — the hyperdimensional layer: knowledge graphs and causal models (the data dir's, or the replicated home stores' in cluster mode), analogy and roles. */
import { AnalogyService } from "../../hd/analogy/service.js";
import { CausalService } from "../../hd/causal/service.js";
import { KnowledgeGraphs } from "../../hd/kg/service.js";
import { hdAnalogyRoutes } from "../../http/routes/hd-analogy.js";
import { causalRoutes } from "../../http/routes/hd-causal.js";
import { kgRoutes } from "../../http/routes/hd-kg.js";
import { hdRolesRoutes } from "../../http/routes/hd-roles.js";
import type { ProductService, ServiceContext } from "../product-service.js";

export interface HdService extends ProductService {
  readonly kg: KnowledgeGraphs;
  readonly causal: CausalService;
}

export async function openHd(ctx: ServiceContext): Promise<HdService> {
  const { home, kernels, pool } = ctx;
  const kg = home?.kg ?? new KnowledgeGraphs(ctx.dataDir, { kernels, durability: ctx.durability, reporter: ctx.reporter });
  const causal = home?.causal ?? new CausalService(ctx.dataDir, { reporter: ctx.reporter });
  // Graphs and models are leader-held in cluster mode: their routes go to the leader.
  const held = [...kgRoutes(kg), ...causalRoutes(causal)];
  return {
    name: "hd",
    kg,
    causal,
    routes: [...held, ...hdAnalogyRoutes(new AnalogyService({ kernels, pool })), ...hdRolesRoutes()],
    homeRoutes: held,
    async close() {
      if (home !== null) return; // the home stores close them
      await causal.close();
      await kg.close();
    },
  };
}
