/**
 * @module hook — `svc hook <kind>`: run by a Claude Code lifecycle hook. Reads the hook's JSON from
 * stdin, hands it to a detached sender process (payload in a 0600 spool file) and exits at once,
 * printing nothing, so the agent never waits on the network. The sender shapes one record and
 * POSTs it to /v1/records/{namespace}; every failure is swallowed.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, readSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { HOOK_KINDS, hookRecord, isOwnTool, parseAutoRecord, type HookKind } from "../recorders/hooks.js";
import { postJson, recordsPath, target } from "../recorders/send.js";
import type { Command } from "./command.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));
export const DEFAULT_HOOK_NAMESPACE = "claude-code";
const MAX_STDIN = 16 * 1024 * 1024;

/** Where `install-hooks --api-key` keeps the key (0600): $SVC_HOME/api-key, SVC_HOME default ~/.svc. */
export function keyFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.SVC_HOME || join(homedir(), ".svc"), "api-key");
}

export function storedApiKey(): string | undefined {
  if (process.env.SVC_API_KEY) return process.env.SVC_API_KEY;
  try {
    return readFileSync(keyFile(), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

interface Spool {
  kind: HookKind;
  payload: Record<string, unknown>;
  namespace: string;
  ttlDays?: number;
  url?: string;
}

export const hookCommand: Command = {
  name: "hook",
  usage: `svc hook <kind> [--namespace NS] [--ttl DAYS] [--url URL]
      Record one Claude Code hook event (JSON on stdin) and return at once;
      run by the hooks \`svc install-hooks\` adds. Kinds: ${HOOK_KINDS.join(", ")}.
      Namespace and ttl default to SVC_AUTO_RECORD=<namespace>:<ttl_days>.`,
  options: { namespace: { type: "string" }, ttl: { type: "string" }, url: { type: "string" }, "send-file": { type: "string" } },
  async run(values, args) {
    try {
      if (typeof values["send-file"] === "string") await send(values["send-file"]);
      else await handOff(values, args[0]);
    } catch {
      // a hook never fails the agent and prints nothing
    }
    return 0;
  },
};

async function handOff(values: Record<string, string | boolean | undefined>, kind: string | undefined): Promise<void> {
  if (kind === undefined || !HOOK_KINDS.includes(kind)) return;
  const raw = await readStdin();
  let payload: unknown;
  try {
    payload = JSON.parse(raw);
  } catch {
    return;
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return;
  if (isOwnTool(payload as Record<string, unknown>)) return;
  const auto = parseAutoRecord(process.env.SVC_AUTO_RECORD);
  const ttl = typeof values.ttl === "string" && /^\d+$/.test(values.ttl) && Number(values.ttl) > 0 ? Number(values.ttl) : auto?.ttlDays;
  const spool: Spool = {
    kind: kind as HookKind,
    payload: payload as Record<string, unknown>,
    namespace: (values.namespace as string | undefined) || auto?.namespace || DEFAULT_HOOK_NAMESPACE,
    ...(ttl !== undefined ? { ttlDays: ttl } : {}),
    ...(typeof values.url === "string" ? { url: values.url } : {}),
  };
  const file = join(tmpdir(), `svc-hook-${process.pid}-${randomBytes(6).toString("hex")}.json`);
  writeFileSync(file, JSON.stringify(spool), { mode: 0o600 });
  const key = storedApiKey();
  const child = spawn(process.execPath, [MAIN, "hook", kind, "--send-file", file], {
    detached: true,
    stdio: "ignore",
    env: { ...process.env, ...(key ? { SVC_API_KEY: key } : {}) },
  });
  child.on("error", () => undefined);
  child.unref();
}

async function send(file: string): Promise<void> {
  let spool: Spool;
  try {
    spool = JSON.parse(readFileSync(file, "utf8")) as Spool;
  } finally {
    try {
      unlinkSync(file);
    } catch {
      // gone already
    }
  }
  const p = spool.payload;
  const needsTranscript =
    (spool.kind === "assistant_turn" || spool.kind === "subagent_stop") && typeof p.last_assistant_message !== "string";
  const transcript = spool.kind === "subagent_stop" ? (p.agent_transcript_path ?? p.transcript_path) : p.transcript_path;
  const assistantText = needsTranscript && typeof transcript === "string" ? lastAssistantText(transcript) : undefined;
  const record = hookRecord(spool.kind, p, { ttlDays: spool.ttlDays, assistantText });
  await postJson(target({ url: spool.url }), recordsPath(spool.namespace), { items: [record] });
}

/** The text of the last assistant message in a Claude Code JSONL transcript (its last 1 MB). */
function lastAssistantText(path: string): string | undefined {
  try {
    const size = statSync(path).size;
    const n = Math.min(size, 1 << 20);
    const buf = Buffer.alloc(n);
    const fd = openSync(path, "r");
    try {
      readSync(fd, buf, 0, n, size - n);
    } finally {
      closeSync(fd);
    }
    const lines = buf.toString("utf8").split("\n");
    for (let i = lines.length - 1; i >= 0; i--) {
      let e: { type?: string; message?: { role?: string; content?: unknown } };
      try {
        e = JSON.parse(lines[i]!) as typeof e;
      } catch {
        continue;
      }
      if (e.type !== "assistant" && e.message?.role !== "assistant") continue;
      const c = e.message?.content;
      const text =
        typeof c === "string"
          ? c
          : Array.isArray(c)
            ? c
                .filter((b) => b?.type === "text")
                .map((b) => String(b.text ?? ""))
                .join("\n")
            : "";
      if (text !== "") return text;
    }
  } catch {
    // no transcript
  }
  return undefined;
}

function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return Promise.resolve("");
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    process.stdin.on("data", (b: Buffer) => {
      size += b.length;
      if (size <= MAX_STDIN) chunks.push(b);
    });
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", () => resolve(""));
  });
}
