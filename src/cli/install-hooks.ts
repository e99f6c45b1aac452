/**
 * @module install-hooks — `svc install-hooks`: merge svc's ten lifecycle hooks into a Claude Code
 * settings.json (project or user scope), or take them out again (--uninstall). Writes a
 * timestamped backup before any change, keeps the user's own hooks, is idempotent, and an
 * uninstall right after an install gives back the original file byte for byte.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { fileURLToPath } from "node:url";
import { SvcError } from "../errors.js";
import { DEFAULT_URL } from "../recorders/send.js";
import { checkServiceUrl } from "../service-url.js";
import { mergeHooks, mergeMcpServer, parseAutoRecord, removeHooks, removeMcpServer, serialize, type HookKind } from "../recorders/hooks.js";
import { positiveInt, say as sayLine, type Command } from "./command.js";
import { keyFile } from "./hook.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));
const BACKUP = ".svc-backup-";

export function settingsPath(values: Record<string, string | boolean | undefined>): string {
  if (typeof values.settings === "string") return resolve(values.settings);
  const scope = (values.scope as string | undefined) ?? "project";
  if (scope === "project") return resolve(".claude", "settings.json");
  if (scope === "user") return join(homedir(), ".claude", "settings.json");
  throw new SvcError("E_BAD_REQUEST", `--scope must be project or user, got ${scope}`, { field: "scope" });
}

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : JSON.stringify(s));

export const installHooksCommand: Command = {
  name: "install-hooks",
  usage: `svc install-hooks [--scope project|user] [--settings PATH] [--yes] [--no-mcp]
                  [--mcp-config PATH] [--namespace NS] [--ttl DAYS] [--url URL]
                  [--api-key KEY] [--uninstall]
      Merge 10 Claude Code lifecycle hooks (each runs \`svc hook <kind>\`) into
      ./.claude/settings.json (project) or ~/.claude/settings.json (user), after a
      timestamped backup. Without --yes it shows the change and asks (refuses when
      not on a terminal). --uninstall removes exactly what was added. --api-key is
      kept in $SVC_HOME/api-key (0600), not in the settings. Namespace and ttl
      default to SVC_AUTO_RECORD=<namespace>:<ttl_days>. Unless --no-mcp it also
      registers \`svc mcp\` as the MCP server "svc" in ./.mcp.json (project) or
      ~/.claude.json (user), or --mcp-config; --uninstall takes that out too.
      --json (with --yes): the changes, backups and outcome as JSON.`,
  options: {
    scope: { type: "string" },
    settings: { type: "string" },
    yes: { type: "boolean" },
    "no-mcp": { type: "boolean" },
    "mcp-config": { type: "string" },
    namespace: { type: "string" },
    ttl: { type: "string" },
    url: { type: "string" },
    "api-key": { type: "string" },
    uninstall: { type: "boolean" },
  },
  async run(values) {
    const json = values.json === true;
    // --json: what changed (or would), the backups and the outcome as one JSON document; it needs --yes (no prompt).
    if (json && values.yes !== true)
      throw new SvcError("E_BAD_REQUEST", "--json needs --yes (there is no prompt in JSON mode)", { field: "yes" });
    const say = json ? () => undefined : sayLine;
    const backups: string[] = [];
    const notes: string[] = [];
    const path = settingsPath(values);
    const settings = readJsonFile(path, "settings");
    const mcpPath = mcpConfigPath(values, path);
    const mcp = existsSync(mcpPath) || values.uninstall !== true ? readJsonFile(mcpPath, "mcp-config") : null;

    const targets: Target[] = [];
    if (values.uninstall === true) {
      const plan = removeHooks(settings.value);
      targets.push({ path, original: settings.original, changes: plan.changes, next: uninstalled(path, plan.settings, settings.original) });
      if (mcp) {
        const m = removeMcpServer(mcp.value);
        targets.push({ path: mcpPath, original: mcp.original, changes: m.changes, next: uninstalled(mcpPath, m.settings, mcp.original) });
      }
    } else {
      const auto = parseAutoRecord(process.env.SVC_AUTO_RECORD);
      const namespace = (values.namespace as string | undefined) ?? auto?.namespace;
      if (namespace !== undefined && !/^[\w.-]+$/.test(namespace))
        throw new SvcError("E_BAD_REQUEST", "--namespace may hold letters, digits, _ . - only", { field: "namespace" });
      const ttl = values.ttl !== undefined ? positiveInt("ttl", values.ttl, 0) : auto?.ttlDays;
      const url = values.url as string | undefined;
      if (url !== undefined && !/^https?:\/\/[^\s"'`$\\]+$/.test(url))
        throw new SvcError("E_BAD_REQUEST", "--url must be an http(s) URL", { field: "url" });
      // The hooks and `svc mcp` will send the key there: refuse plain http to a remote host now, with the reason.
      checkServiceUrl(url ?? (process.env.SVC_URL || DEFAULT_URL), { field: url !== undefined ? "url" : "SVC_URL" });
      const command = (kind: HookKind) =>
        [
          quote(process.execPath),
          quote(MAIN),
          "hook",
          kind,
          ...(namespace ? ["--namespace", namespace] : []),
          ...(ttl ? ["--ttl", String(ttl)] : []),
          ...(url ? ["--url", url] : []),
        ].join(" ");
      // Same flags again: nothing to add. Other flags: replace svc's entries, keep the user's.
      let plan = mergeHooks(settings.value, command);
      if (plan.changes.length > 0) {
        const cleared = removeHooks(settings.value);
        const merged = mergeHooks(cleared.settings, command);
        plan = { settings: merged.settings, changes: [...cleared.changes, ...merged.changes] };
      }
      targets.push({ path, original: settings.original, changes: plan.changes, next: serialize(plan.settings, settings.original) });
      if (mcp && values["no-mcp"] !== true) {
        // The key is not written here: `svc mcp` reads SVC_API_KEY or the key file, as the hooks do.
        const m = mergeMcpServer(mcp.value, {
          type: "stdio",
          command: process.execPath,
          args: [MAIN, "mcp", ...(url ? ["--url", url] : [])],
        });
        targets.push({
          path: mcpPath,
          original: mcp.original,
          changes: m.changes.filter((c) => !c.startsWith("!")),
          next: serialize(m.settings, mcp.original),
        });
        for (const c of m.changes.filter((x) => x.startsWith("!"))) {
          notes.push(`${mcpPath}: ${c}`);
          say(`${mcpPath}: ${c}`);
        }
      }
    }

    const keyChange = typeof values["api-key"] === "string" && values.uninstall !== true;
    const changed = targets.filter((t) => t.changes.length > 0);
    const summary = (applied: boolean) =>
      JSON.stringify({
        applied,
        uninstall: values.uninstall === true,
        files: changed.map((t) => ({ path: t.path, changes: t.changes })),
        apiKeyFile: keyChange ? keyFile() : undefined,
        backups,
        notes,
      });
    if (changed.length === 0 && !keyChange) {
      if (json) sayLine(summary(false));
      say(`${path}: nothing to change (${values.uninstall === true ? "no svc hooks present" : "svc hooks already installed"})`);
      return 0;
    }
    for (const t of changed) {
      say(`${t.path}:`);
      for (const c of t.changes) say(`  ${c}`);
    }
    if (keyChange) say(`  + api key -> ${keyFile()} (0600)`);
    if (values.yes !== true) {
      if (!process.stdin.isTTY || !process.stdout.isTTY)
        throw new SvcError("E_BAD_REQUEST", "not a terminal: pass --yes to apply these changes", { field: "yes" });
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      const answer = await rl.question("Apply? [y/N] ");
      rl.close();
      if (!/^y(es)?$/i.test(answer.trim())) {
        say("nothing changed");
        return 1;
      }
    }
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    for (const t of changed) {
      mkdirSync(dirname(t.path), { recursive: true });
      if (t.original !== null) {
        const backup = `${t.path}${BACKUP}${stamp}`;
        writeFileSync(backup, t.original, { flag: "wx" });
        backups.push(backup);
        say(`backup: ${backup}`);
      }
      if (t.next === null) unlinkSync(t.path);
      else writeFileSync(t.path, t.next);
    }
    if (keyChange) {
      const f = keyFile();
      mkdirSync(dirname(f), { recursive: true, mode: 0o700 });
      writeFileSync(f, `${values["api-key"] as string}\n`, { mode: 0o600 });
      chmodSync(f, 0o600);
    }
    if (json) sayLine(summary(true));
    say(values.uninstall === true ? "svc hooks removed" : "svc hooks installed");
    return 0;
  },
};

interface Target {
  path: string;
  /** The file's text before (null: it did not exist). */
  original: string | null;
  /** null: remove the file (svc created it and nothing else is left in it). */
  next: string | null;
  changes: string[];
}

/** The file's text after an uninstall: a backup holding exactly what is left (byte-identical round trip), nothing when svc created the file, else re-serialized. */
function uninstalled(path: string, left: Record<string, unknown>, original: string | null): string | null {
  const restored = restoredText(path, left);
  if (restored !== undefined) return restored;
  if (Object.keys(left).length === 0 && !hasBackup(path)) return null;
  return serialize(left, original);
}

/** A JSON object file: its text (null when absent) and value ({} when absent or empty). */
function readJsonFile(path: string, field: string): { original: string | null; value: Record<string, unknown> } {
  const original = existsSync(path) ? readFileSync(path, "utf8") : null;
  if (original === null || original.trim() === "") return { original, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(original);
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${path} is not valid JSON: ${(err as Error).message}`, { field });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new SvcError("E_BAD_REQUEST", `${path} does not hold a JSON object`, { field });
  return { original, value: value as Record<string, unknown> };
}

/**
 * Where Claude Code reads MCP servers: --mcp-config, else the project's .mcp.json (beside the .claude
 * folder of the settings file) or, for --scope user, ~/.claude.json.
 */
export function mcpConfigPath(values: Record<string, string | boolean | undefined>, settings: string): string {
  if (typeof values["mcp-config"] === "string") return resolve(values["mcp-config"]);
  if (typeof values.settings !== "string" && values.scope === "user") return join(homedir(), ".claude.json");
  const dir = dirname(settings);
  return basename(dir) === ".claude" ? join(dirname(dir), ".mcp.json") : join(dir, ".mcp.json");
}

function hasBackup(path: string): boolean {
  try {
    return readdirSync(dirname(path)).some((n) => n.startsWith(basename(path) + BACKUP));
  } catch {
    return false;
  }
}

/** The newest backup whose content is exactly `settings`: uninstall writes its bytes back, so an install + uninstall round trip is byte-identical. */
function restoredText(path: string, settings: Record<string, unknown>): string | undefined {
  const dir = dirname(path);
  const prefix = basename(path) + BACKUP;
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.startsWith(prefix))
      .sort()
      .reverse();
  } catch {
    return undefined;
  }
  const want = JSON.stringify(settings);
  for (const n of names) {
    try {
      const text = readFileSync(join(dir, n), "utf8");
      const parsed: unknown = text.trim() === "" ? {} : JSON.parse(text);
      if (JSON.stringify(parsed) === want) return text;
    } catch {
      // not a usable backup
    }
  }
  return undefined;
}
