/**
 * @module tools/catalog — THE tool catalog: every MCP tool, defined once, served by both transports (stdio `svc mcp`
 * and streamable HTTP at /mcp). A tool runs REST operations through an `Api` (in-process on the server, HTTP from
 * the stdio process), so authentication, validation, metering and errors are REST's own. Adding a tool is one entry.
 */
import { commonsTools } from "./commons.js";
import { hdTools } from "./hd.js";
import { indexTools } from "./indexes.js";
import { recordTools } from "./records.js";
import type { Tool } from "./tool.js";

export const CATALOG: readonly Tool[] = [...recordTools, ...indexTools, ...hdTools, ...commonsTools];

/**
 * REST operations no tool runs, and why (the catalog test checks every other operation is covered).
 * upsert_namespace and describe_index_stats_get are the same operations as upsert and describe_index_stats.
 */
export const NOT_TOOLS: Readonly<Record<string, string>> = {
  health: "liveness probe",
  metrics: "Prometheus scrape",
  openapi: "describes the REST API itself",
  upsert_namespace: "same operation as upsert",
  describe_index_stats_get: "same operation as describe_index_stats",
};

export function toolByName(name: string): Tool | undefined {
  return CATALOG.find((t) => t.name === name);
}
