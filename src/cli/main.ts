#!/usr/bin/env node
/** @module main — the `svc` command line: dispatches to one Command per subcommand. */
import { parseArgs } from "node:util";
import { SvcError } from "../errors.js";
import { VERSION } from "../version.js";
import type { Command } from "./command.js";

/**
 * Each command's module is imported only when that command runs (or for --help): `svc hook`, run
 * by the agent on every lifecycle event, must not pay for loading the server, the engine and the
 * MCP SDK. A command name maps to its module's loader.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => (await import("./serve.js")).serveCommand,
  keys: async () => (await import("./keys.js")).keysCommand,
  export: async () => (await import("./container.js")).exportCommand,
  import: async () => (await import("./container.js")).importCommand,
  demo: async () => (await import("./demo.js")).demoCommand,
  repair: async () => (await import("./repair.js")).repairCommand,
  build: async () => (await import("./build.js")).buildCommand,
  "install-hooks": async () => (await import("./install-hooks.js")).installHooksCommand,
  hook: async () => (await import("./hook.js")).hookCommand,
  mcp: async () => (await import("./mcp.js")).mcpCommand,
  directory: async () => (await import("./directory.js")).directoryCommand,
};

async function help(): Promise<string> {
  const all = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  return `svc — self-hosted memory substrate for AI agents

Usage:
${all.map((c) => `  ${c.usage}`).join("\n")}
  svc --version
      The version (svc X.Y.Z).
  svc --help
      This text.
Every command that prints data takes --json: one JSON document on stdout instead of text.`;
}

/** Documented exit codes: 0 ok, 1 server-side failure, 2 bad input; `svc serve` refusing to start: 3 port taken, 4 data dir in use. */
const EXIT_CODES: Partial<Record<string, number>> = { E_ADDRESS_IN_USE: 3, E_DATA_LOCKED: 4 };

async function main(argv: string[]): Promise<number> {
  const name = argv.find((a) => !a.startsWith("-"));
  if (name === undefined && (argv.includes("--version") || argv.includes("-V"))) {
    process.stdout.write(argv.includes("--json") ? `${JSON.stringify({ version: VERSION })}\n` : `svc ${VERSION}\n`);
    return 0;
  }
  const load = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    if (name === undefined || name === "help" || argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(`${await help()}\n`);
      return 0;
    }
    process.stderr.write(`svc: unknown command '${name}'\n\n${await help()}\n`);
    return 2;
  }
  const command = await load();
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: "boolean" }, ...command.options, help: { type: "boolean", short: "h" } },
    });
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", (err as Error).message, { cause: err });
  }
  if (parsed.values.help) {
    process.stdout.write(`Usage:\n  ${command.usage}\n`);
    return 0;
  }
  return command.run(parsed.values, parsed.positionals.slice(1));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof SvcError) process.stderr.write(`svc: ${err.code}: ${err.message}\n`);
    else process.stderr.write(`svc: ${(err as Error).message ?? String(err)}\n`);
    process.exit(err instanceof SvcError ? (EXIT_CODES[err.code] ?? (err.status < 500 ? 2 : 1)) : 1);
  },
);
