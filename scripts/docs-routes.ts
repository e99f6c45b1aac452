/**
 * @module docs-routes — writes the route table into docs/API.md ("Every route"), from the route
 * table of a server started on a scratch data dir. test/docs.test.ts fails until it is rerun after
 * a route changes: `npx tsx scripts/docs-routes.ts`.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../src/app/start-server.js";
import { routesMarkdown, withRoutesTable } from "../src/http/openapi.js";

const file = join(import.meta.dirname, "..", "docs", "API.md");
const dir = await mkdtemp(join(tmpdir(), "svc-docs-"));
const server = await startServer({ dataDir: dir, port: 0, directorySeed: null });
try {
  await writeFile(file, withRoutesTable(await readFile(file, "utf8"), routesMarkdown(server.routes)));
  console.log(`docs/API.md: ${server.routes.length} routes`);
} finally {
  await server.close();
  await rm(dir, { recursive: true, force: true });
}
