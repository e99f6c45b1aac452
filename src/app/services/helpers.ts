/** @module app/services/helpers — the document-building helpers: the signed registry and the build outputs (this node's files, or the object store svc_build in cluster mode). */
import { openRegistry } from "../../helpers/registry.js";
import { commonsRoutes } from "../../http/routes/commons.js";
import type { ProductService, ServiceContext } from "../product-service.js";

export async function openHelpers(ctx: ServiceContext): Promise<ProductService> {
  const registry = openRegistry({ dataDir: ctx.dataDir }); // the signing key: <data>/keys/signing-key.pem, as `svc build`
  const files = ctx.cluster ? await ctx.cluster.openBuildFiles() : undefined;
  return {
    name: "helpers",
    routes: commonsRoutes({ registry, dataDir: ctx.dataDir, ...(files ? { files } : {}) }),
    close: async () => {}, // the registry and the build files hold nothing open
  };
}
