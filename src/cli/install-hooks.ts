/**
 * @module install-hooks — `svc install-hooks`: merge svc's ten lifecycle hooks into a Claude Code
 * settings.json (project or user scope), or take them out again (--uninstall). Writes a
 * timestamped backup before any change, keeps the user's own hooks, is idempotent, and an
 * uninstall right after an install gives back the original file byte for byte.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { fileURLToPath } from "node:url";
import { SvcError } from "../errors.js";
import { mergeHooks, parseAutoRecord, removeHooks, serialize, type HookKind } from "../recorders/hooks.js";
import { positiveInt, say, type Command } from "./command.js";
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
                  [--namespace NS] [--ttl DAYS] [--url URL] [--api-key KEY] [--uninstall]
      Merge 10 Claude Code lifecycle hooks (each runs \`svc hook <kind>\`) into
      ./.claude/settings.json (project) or ~/.claude/settings.json (user), after a
      timestamped backup. Without --yes it shows the change and asks (refuses when
      not on a terminal). --uninstall removes exactly what was added. --api-key is
      kept in $SVC_HOME/api-key (0600), not in the settings. Namespace and ttl
      default to SVC_AUTO_RECORD=<namespace>:<ttl_days>.`,
  options: {
    scope: { type: "string" }, settings: { type: "string" }, yes: { type: "boolean" }, "no-mcp": { type: "boolean" },
    namespace: { type: "string" }, ttl: { type: "string" }, url: { type: "string" }, "api-key": { type: "string" }, uninstall: { type: "boolean" },
  },
  async run(values) {
    const path = settingsPath(values);
    const original = existsSync(path) ? readFileSync(path, "utf8") : null;
    let settings: Record<string, unknown> = {};
    if (original !== null && original.trim() !== "") {
      try {
        settings = JSON.parse(original) as Record<string, unknown>;
      } catch (err) {
        throw new SvcError("E_BAD_REQUEST", `${path} is not valid JSON: ${(err as Error).message}`, { field: "settings" });
      }
      if (typeof settings !== "object" || settings === null || Array.isArray(settings)) throw new SvcError("E_BAD_REQUEST", `${path} does not hold a JSON object`, { field: "settings" });
    }

    let next: string;
    let changes: string[];
    if (values.uninstall === true) {
      const plan = removeHooks(settings);
      changes = plan.changes;
      next = restoredText(path, plan.settings) ?? serialize(plan.settings, original);
    } else {
      const auto = parseAutoRecord(process.env.SVC_AUTO_RECORD);
      const namespace = (values.namespace as string | undefined) ?? auto?.namespace;
      if (namespace !== undefined && !/^[\w.-]+$/.test(namespace)) throw new SvcError("E_BAD_REQUEST", "--namespace may hold letters, digits, _ . - only", { field: "namespace" });
      const ttl = values.ttl !== undefined ? positiveInt("ttl", values.ttl, 0) : auto?.ttlDays;
      const url = values.url as string | undefined;
      if (url !== undefined && !/^https?:\/\/[^\s"'`$\\]+$/.test(url)) throw new SvcError("E_BAD_REQUEST", "--url must be an http(s) URL", { field: "url" });
      const command = (kind: HookKind) =>
        [quote(process.execPath), quote(MAIN), "hook", kind, ...(namespace ? ["--namespace", namespace] : []), ...(ttl ? ["--ttl", String(ttl)] : []), ...(url ? ["--url", url] : [])].join(" ");
      // Same flags again: nothing to add. Other flags: replace svc's entries, keep the user's.
      let plan = mergeHooks(settings, command);
      if (plan.changes.length > 0) {
        const cleared = removeHooks(settings);
        const merged = mergeHooks(cleared.settings, command);
        plan = { settings: merged.settings, changes: [...cleared.changes, ...merged.changes] };
      }
      changes = plan.changes;
      next = serialize(plan.settings, original);
      if (values["no-mcp"] !== true) say("note: MCP server not registered: `svc mcp` is not part of this release (pass --no-mcp to silence this)");
    }

    const keyChange = typeof values["api-key"] === "string" && values.uninstall !== true;
    const fileChange = changes.length > 0;
    if (!fileChange && !keyChange) {
      say(`${path}: nothing to change (${values.uninstall === true ? "no svc hooks present" : "svc hooks already installed"})`);
      return 0;
    }
    say(`${path}:`);
    for (const c of changes) say(`  ${c}`);
    if (keyChange) say(`  + api key -> ${keyFile()} (0600)`);
    if (values.yes !== true) {
      if (!process.stdin.isTTY || !process.stdout.isTTY) throw new SvcError("E_BAD_REQUEST", "not a terminal: pass --yes to apply these changes", { field: "yes" });
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      const answer = await rl.question("Apply? [y/N] ");
      rl.close();
      if (!/^y(es)?$/i.test(answer.trim())) {
        say("nothing changed");
        return 1;
      }
    }
    if (fileChange) {
      mkdirSync(dirname(path), { recursive: true });
      if (original !== null) {
        const backup = `${path}${BACKUP}${new Date().toISOString().replace(/[:.]/g, "-")}`;
        writeFileSync(backup, original, { flag: "wx" });
        say(`backup: ${backup}`);
      }
      writeFileSync(path, next);
    }
    if (keyChange) {
      const f = keyFile();
      mkdirSync(dirname(f), { recursive: true, mode: 0o700 });
      writeFileSync(f, `${values["api-key"] as string}\n`, { mode: 0o600 });
      chmodSync(f, 0o600);
    }
    say(values.uninstall === true ? "svc hooks removed" : "svc hooks installed");
    return 0;
  },
};

/** The newest backup whose content is exactly `settings`: uninstall writes its bytes back, so an install + uninstall round trip is byte-identical. */
function restoredText(path: string, settings: Record<string, unknown>): string | undefined {
  const dir = dirname(path);
  const prefix = basename(path) + BACKUP;
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(prefix)).sort().reverse();
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
