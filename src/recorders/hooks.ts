/**
 * @module recorders/hooks — the pure part of `svc install-hooks` and `svc hook`: which Claude Code
 * hook events map to which record kinds, merging svc's hook entries into a settings object and
 * taking exactly those out again, and turning one hook payload into one record.
 */

/** Claude Code hook event -> record kind. All ten are Claude Code hook events (see docs/RECORDERS.md). */
export const HOOK_EVENTS = [
  ["UserPromptSubmit", "user_prompt"],
  ["PreToolUse", "tool_call"],
  ["PostToolUseFailure", "tool_failure"],
  ["Stop", "assistant_turn"],
  ["SessionStart", "session_start"],
  ["SessionEnd", "session_end"],
  ["SubagentStart", "subagent_start"],
  ["SubagentStop", "subagent_stop"],
  ["TaskCreated", "task_created"],
  ["TaskCompleted", "task_completed"],
] as const;

export type HookKind = (typeof HOOK_EVENTS)[number][1];
export const HOOK_KINDS: readonly string[] = HOOK_EVENTS.map(([, k]) => k);
/** Events whose matcher is the tool name: svc registers "*" (every tool). */
const TOOL_EVENTS = new Set(["PreToolUse", "PostToolUseFailure"]);

type Json = Record<string, unknown>;
/** `async: true`: Claude Code runs the command in the background and never waits for it (the seed: hooks run asynchronously). */
interface HookEntry {
  type: "command";
  command: string;
  async?: boolean;
}
interface HookGroup {
  matcher?: string;
  hooks: HookEntry[];
}

/** Does this command run `svc hook <kind>` (ours, from any install path)? */
export function isSvcHookCommand(command: unknown): boolean {
  if (typeof command !== "string") return false;
  const m = /(?:^|[\s"'/\\])(?:svc|main\.js)["']?\s+hook\s+([a-z_]+)(?:\s|$)/.exec(command);
  return m !== null && HOOK_KINDS.includes(m[1]!);
}

export interface Plan {
  /** The settings after the change. */
  settings: Json;
  /** Human-readable lines: one per hook added or removed. */
  changes: string[];
}

/** `command(kind)` is the full command line of one hook. Adds only the entries not already present. */
export function mergeHooks(settings: Json, command: (kind: HookKind) => string): Plan {
  const out = structuredClone(settings);
  const changes: string[] = [];
  const hooks = (isPlain(out.hooks) ? out.hooks : {}) as Record<string, unknown>;
  for (const [event, kind] of HOOK_EVENTS) {
    const cmd = command(kind);
    const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : [];
    const present = groups
      .flatMap((g) => (isPlain(g) && Array.isArray(g.hooks) ? g.hooks : []))
      .filter((h): h is Json => isPlain(h) && h.command === cmd);
    if (present.length > 0) {
      // An entry from an older install runs synchronously: mark it async (one change line per entry).
      for (const h of present)
        if (h.async !== true) {
          h.async = true;
          changes.push(`~ hooks.${event}: async ${cmd}`);
        }
      continue;
    }
    const group: HookGroup = {
      ...(TOOL_EVENTS.has(event) ? { matcher: "*" } : {}),
      hooks: [{ type: "command", command: cmd, async: true }],
    };
    hooks[event] = [...groups, group];
    changes.push(`+ hooks.${event}: ${cmd}`);
  }
  if (changes.length > 0) out.hooks = hooks;
  return { settings: out, changes };
}

/** Removes every svc hook entry (and the arrays / hooks object that become empty); keeps everything else in order. */
export function removeHooks(settings: Json): Plan {
  const out = structuredClone(settings);
  const changes: string[] = [];
  if (!isPlain(out.hooks)) return { settings: out, changes };
  const hooks = out.hooks as Record<string, unknown>;
  for (const event of Object.keys(hooks)) {
    const groups = hooks[event];
    if (!Array.isArray(groups)) continue;
    const kept: unknown[] = [];
    for (const g of groups) {
      if (!isPlain(g) || !Array.isArray(g.hooks)) {
        kept.push(g);
        continue;
      }
      const ours = g.hooks.filter((h) => isPlain(h) && isSvcHookCommand(h.command));
      for (const h of ours) changes.push(`- hooks.${event}: ${(h as HookEntry).command}`);
      if (ours.length === 0) kept.push(g);
      else if (ours.length < g.hooks.length) kept.push({ ...g, hooks: g.hooks.filter((h) => !ours.includes(h)) });
    }
    if (kept.length === 0) delete hooks[event];
    else hooks[event] = kept;
  }
  if (Object.keys(hooks).length === 0) delete out.hooks;
  return { settings: out, changes };
}

// ---- the MCP server entry (Claude Code: .mcp.json in the project, ~/.claude.json for the user) ----

/** The name svc's tool server is registered under; Claude Code then calls its tools mcp__svc__<tool>. */
export const MCP_SERVER_NAME = "svc";

export interface McpServerEntry {
  type: "stdio";
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** Is this mcpServers entry ours (runs `svc mcp` / `main.js mcp`)? */
export function isSvcMcpEntry(entry: unknown): boolean {
  return (
    isPlain(entry) &&
    Array.isArray(entry.args) &&
    entry.args.includes("mcp") &&
    [entry.command, ...entry.args].some((a) => typeof a === "string" && /(?:^|[/\\])(?:svc|main\.js)$/.test(a))
  );
}

/** Adds (or updates) mcpServers.svc; a user's own server of that name is left alone and reported. */
export function mergeMcpServer(config: Json, entry: McpServerEntry): Plan {
  const out = structuredClone(config);
  const servers = (isPlain(out.mcpServers) ? out.mcpServers : {}) as Record<string, unknown>;
  const current = servers[MCP_SERVER_NAME];
  if (current !== undefined && !isSvcMcpEntry(current))
    return { settings: out, changes: [`! mcpServers.${MCP_SERVER_NAME} exists and is not svc's: left as it is`] };
  if (JSON.stringify(current) === JSON.stringify(entry)) return { settings: out, changes: [] };
  servers[MCP_SERVER_NAME] = entry;
  out.mcpServers = servers;
  return { settings: out, changes: [`+ mcpServers.${MCP_SERVER_NAME}: ${[entry.command, ...entry.args].join(" ")}`] };
}

/** Removes mcpServers.svc when it is ours (and mcpServers when that leaves it empty). */
export function removeMcpServer(config: Json): Plan {
  const out = structuredClone(config);
  if (!isPlain(out.mcpServers) || !isSvcMcpEntry(out.mcpServers[MCP_SERVER_NAME])) return { settings: out, changes: [] };
  const servers = out.mcpServers as Record<string, unknown>;
  delete servers[MCP_SERVER_NAME];
  if (Object.keys(servers).length === 0) delete out.mcpServers;
  return { settings: out, changes: [`- mcpServers.${MCP_SERVER_NAME}`] };
}

/** The indentation a JSON text uses (for writing it back the same way); 2 when unknown. */
export function detectIndent(text: string): string | number {
  const m = /^[{[][^\n]*\n([ \t]+)\S/.exec(text);
  return m ? m[1]! : 2;
}

export function serialize(settings: Json, like: string | null): string {
  const indent = like === null ? 2 : detectIndent(like);
  const trailing = like === null || like.endsWith("\n") ? "\n" : "";
  return JSON.stringify(settings, null, indent) + trailing;
}

function isPlain(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---- payload -> record ---------------------------------------------------------------------

/** Calls into svc's own tool server (mcp__svc__<tool>) are not recorded; another server whose name starts with "svc" (mcp__svcnow__...) is. */
export function isOwnTool(payload: Json): boolean {
  return typeof payload.tool_name === "string" && payload.tool_name.startsWith(`mcp__${MCP_SERVER_NAME}__`);
}

const MAX_TEXT = 8000;
const clip = (s: string, n = MAX_TEXT) => (s.length > n ? `${s.slice(0, n)}…` : s);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The tool input in a line: its command, path, url or pattern when it has one, else its JSON. */
export function inputSummary(input: unknown): string {
  if (!isPlain(input)) return input === undefined ? "" : clip(JSON.stringify(input) ?? "", 500);
  const main =
    str(input.command) ??
    str(input.file_path) ??
    str(input.url) ??
    str(input.pattern) ??
    str(input.path) ??
    str(input.query) ??
    str(input.prompt) ??
    str(input.description);
  return clip(main ?? JSON.stringify(input), 500);
}

export interface HookRecord {
  kind: string;
  text: string;
  tags: string[];
  meta: Json;
  ts: number;
  ttlDays?: number;
}

/** The meta fields worth keeping from any hook payload (never the whole tool input or response). */
const META_FIELDS = [
  "session_id",
  "hook_event_name",
  "cwd",
  "permission_mode",
  "tool_name",
  "tool_use_id",
  "source",
  "reason",
  "agent_id",
  "agent_type",
  "task_id",
  "task_subject",
  "stop_hook_active",
  "is_interrupt",
  "transcript_path",
];

/** One hook payload as a record. `assistantText` is the reply of a Stop payload that lacks last_assistant_message (read from the transcript). */
export function hookRecord(
  kind: HookKind,
  payload: Json,
  opts: { ttlDays?: number; assistantText?: string; now?: number } = {},
): HookRecord {
  const tool = str(payload.tool_name);
  let text: string;
  switch (kind) {
    case "user_prompt":
      text = str(payload.prompt) ?? "";
      break;
    case "tool_call":
      text = `${tool ?? "tool"} ${inputSummary(payload.tool_input)}`.trim();
      break;
    case "tool_failure":
      text = `${tool ?? "tool"} ${inputSummary(payload.tool_input)} failed: ${clip(str(payload.error) ?? JSON.stringify(payload.tool_response) ?? "", 2000)}`;
      break;
    case "assistant_turn":
    case "subagent_stop":
      text =
        str(payload.last_assistant_message) ??
        opts.assistantText ??
        (kind === "subagent_stop" ? `subagent ${str(payload.agent_type) ?? ""} stopped`.replace("  ", " ") : "");
      break;
    case "session_start":
      text = `session start${str(payload.source) ? ` (${payload.source as string})` : ""}`;
      break;
    case "session_end":
      text = `session end${str(payload.reason) ? ` (${payload.reason as string})` : ""}`;
      break;
    case "subagent_start":
      text = `subagent ${str(payload.agent_type) ?? ""} started`.replace("  ", " ");
      break;
    case "task_created":
    case "task_completed":
      text =
        [str(payload.task_subject) ?? str(payload.subject), str(payload.task_description) ?? str(payload.description)]
          .filter(Boolean)
          .join(": ") || `${kind.replace("_", " ")} ${str(payload.task_id) ?? ""}`.trim();
      break;
  }
  const meta: Json = {};
  for (const f of META_FIELDS) if (payload[f] !== undefined) meta[f] = payload[f];
  const tags = ["claude-code", kind, ...(tool ? [tool] : [])];
  return {
    kind,
    text: clip(text),
    tags,
    meta,
    ts: opts.now ?? Date.now(),
    ...(opts.ttlDays !== undefined ? { ttlDays: opts.ttlDays } : {}),
  };
}

/** `<namespace>:<ttl_days>` (ttl optional) -> parts; undefined when unset or malformed. */
export function parseAutoRecord(v: string | undefined): { namespace: string; ttlDays?: number } | undefined {
  if (!v) return undefined;
  const m = /^([^:]+)(?::(\d+))?$/.exec(v.trim());
  if (!m) return undefined;
  const ttl = m[2] === undefined ? undefined : Number(m[2]);
  return { namespace: m[1]!, ...(ttl !== undefined && ttl > 0 ? { ttlDays: ttl } : {}) };
}
