/** @module app/services/records — typed records: one collection per tenant in the data dir, or in cluster mode each tenant's shards on the log beside the indexes'. */
import { recordStores } from "../../cluster/sharded-records.js";
import { recordRoutes } from "../../http/routes/records.js";
import { RecordService } from "../../memory/records.js";
import type { ProductService, ServiceContext } from "../product-service.js";
import type { HdService } from "./hd.js";
import type { IndexesService } from "./indexes.js";

export interface RecordsService extends ProductService {
  readonly records: RecordService;
}

/** `hd`: the tenant's graphs and models, which a schema 2 container carries (export and import). */
export async function openRecords(ctx: ServiceContext, indexes: IndexesService, hd: HdService): Promise<RecordsService> {
  // In cluster mode each tenant's records are shards on the log, like an index's (cluster/sharded-records.ts).
  const stores = indexes.sharded ? recordStores(indexes.sharded, ctx.encoder.dimension) : undefined;
  const records = new RecordService(ctx.dataDir, {
    kernels: ctx.kernels,
    pool: ctx.pool,
    encoder: ctx.encoder,
    durability: ctx.durability,
    reporter: ctx.reporter,
    ...(stores ? { stores } : {}),
  });
  const routes = recordRoutes(records, { kg: hd.kg, causal: hd.causal });
  return {
    name: "records",
    records,
    routes,
    // Records are sharded and served where they arrive, but for export and import: a container carries the tenant's graphs and models too.
    homeRoutes: routes.filter((r) => r.operationId === "records_export" || r.operationId === "records_import"),
    recover: (onOpened) => records.openAll(onOpened),
    close: () => records.close(),
  };
}
