/**
 * @module tools/catalog — THE tool catalog: every MCP tool, defined once, served by both transports (stdio `svc mcp`
 * and streamable HTTP at /mcp). A tool runs REST operations through an `Api` (in-process on the server, HTTP from
 * the stdio process), so authentication, validation, metering and errors are REST's own. Adding a tool is one entry.
 */
import { SvcError } from "../errors.js";
import { backupTools } from "./backups.js";
import { boardTools } from "./board.js";
import { adminTools, helperTools, walletTools } from "./commons.js";
import { directoryAdminTools, directoryTools } from "./directory.js";
import { causalTools, hdTools, kgTools } from "./hd.js";
import { indexTools } from "./indexes.js";
import { recordTools } from "./records.js";
import type { Tool } from "./tool.js";

/** The catalog in groups, the unit a client serves a subset by (`svc mcp --tools records,indexes`, `/mcp?tools=...`). */
export const GROUPS: Readonly<Record<string, readonly Tool[]>> = {
  records: recordTools,
  indexes: indexTools,
  backups: backupTools,
  kg: kgTools,
  causal: causalTools,
  hd: hdTools,
  helpers: helperTools,
  wallet: walletTools,
  commons: boardTools,
  directory: directoryTools,
  admin: [...adminTools, ...directoryAdminTools],
};

export const CATALOG: readonly Tool[] = Object.values(GROUPS).flat();

/**
 * What a session serves when it names no subset: every group but `admin` (whose tools need an admin key) and `backups`
 * (index backups and bulk imports: operations work, asked for by name, kept out of every session's tools/list budget).
 */
export const DEFAULT_GROUPS: readonly string[] = Object.keys(GROUPS).filter((g) => g !== "admin" && g !== "backups");

/** Names tools used to have, for the error a client calling one gets (names are [A-Za-z0-9_-] now, and aliases are gone). */
export const RENAMED: Readonly<Record<string, string>> = {
  "kg.add_fact": "hd_kg_add_fact (facts: [{subject, relation, object}])",
  "kg.delete_fact": "hd_kg_delete_fact (facts: [{subject, relation, object}])",
  "kg.query": "hd_kg_query",
  "kg.export": "hd_kg_export",
  "kg.import": "hd_kg_import",
  "causal.add_worlds": "hd_causal_add_worlds",
  "causal.query": "hd_causal_query",
  "causal.export": "hd_causal_export",
  "causal.import": "hd_causal_import",
  analogy: "hd_analogy",
};

/**
 * The tools a `--tools` / `?tools=` list names: comma-separated group names or tool names; `all` is every tool;
 * empty or absent: DEFAULT_GROUPS. An unknown entry is E_BAD_REQUEST (field `tools`) naming the groups.
 */
export function selectTools(spec: string | null | undefined): readonly Tool[] {
  const items = (spec ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  if (items.length === 0) return DEFAULT_GROUPS.flatMap((g) => GROUPS[g]!);
  if (items.includes("all")) return CATALOG;
  const picked = new Set<Tool>();
  for (const item of items) {
    const group = Object.hasOwn(GROUPS, item) ? GROUPS[item]! : null;
    const tool = group ? null : CATALOG.find((t) => t.name === item);
    if (!group && !tool)
      throw new SvcError(
        "E_BAD_REQUEST",
        `tools: '${item}' is neither a tool group (${Object.keys(GROUPS).join(", ")}, all) nor a tool name`,
        { field: "tools" },
      );
    for (const t of group ?? [tool!]) picked.add(t);
  }
  return CATALOG.filter((t) => picked.has(t)); // catalog order
}

/**
 * REST operations no tool runs, and why (the catalog test checks every other operation is covered).
 */
export const NOT_TOOLS: Readonly<Record<string, string>> = {
  health: "liveness probe",
  ready: "readiness probe (for load balancers and orchestrators)",
  metrics: "Prometheus scrape",
  openapi: "describes the REST API itself",
  upsert_namespace: "same operation as upsert",
  list_restore_jobs: "a restore completes before create_index_from_backup answers; the jobs are for the official client",
  describe_restore_job: "a restore completes before create_index_from_backup answers; the jobs are for the official client",
  describe_index_stats_get: "same operation as describe_index_stats",
  admin_create_key: "answers a secret key: issue keys on the dashboard or with `svc keys`, not to a model",
  dashboard: "the dashboard web page",
  dashboard_slash: "the dashboard web page",
  dashboard_file: "the dashboard's static files",
  directory_health: "liveness probe of the directory front",
  directory_page: "HTML view of directory_get",
  directory_page_search: "HTML view of directory_search",
};
