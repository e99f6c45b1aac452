/**
 * @module tools/catalog — THE tool catalog: every MCP tool, defined once, served by both transports (stdio `svc mcp`
 * and streamable HTTP at /mcp). A tool runs REST operations through an `Api` (in-process on the server, HTTP from
 * the stdio process), so authentication, validation, metering and errors are REST's own. Adding a tool is one entry.
 */
import { boardTools } from "./board.js";
import { commonsTools } from "./commons.js";
import { directoryTools } from "./directory.js";
import { hdTools } from "./hd.js";
import { indexTools } from "./indexes.js";
import { recordTools } from "./records.js";
import type { Tool } from "./tool.js";

export const CATALOG: readonly Tool[] = [...recordTools, ...indexTools, ...hdTools, ...commonsTools, ...boardTools, ...directoryTools];

/**
 * REST operations no tool runs, and why (the catalog test checks every other operation is covered).
 */
export const NOT_TOOLS: Readonly<Record<string, string>> = {
  health: "liveness probe",
  ready: "readiness probe (for load balancers and orchestrators)",
  metrics: "Prometheus scrape",
  openapi: "describes the REST API itself",
  upsert_namespace: "same operation as upsert",
  describe_index_stats_get: "same operation as describe_index_stats",
  admin_create_key: "answers a secret key: issue keys on the dashboard or with `svc keys`, not to a model",
  dashboard: "the dashboard web page",
  dashboard_slash: "the dashboard web page",
  dashboard_file: "the dashboard's static files",
  directory_health: "liveness probe of the directory front",
  directory_page: "HTML view of directory_get",
  directory_page_search: "HTML view of directory_search",
};
