#!/usr/bin/env node
/** @module main — the `svc` command line: dispatches to one Command per subcommand. */
import { parseArgs } from "node:util";
import { SvcError } from "../errors.js";
import { buildCommand } from "./build.js";
import type { Command } from "./command.js";
import { exportCommand, importCommand } from "./container.js";
import { hookCommand } from "./hook.js";
import { installHooksCommand } from "./install-hooks.js";
import { demoCommand } from "./demo.js";
import { keysCommand } from "./keys.js";
import { mcpCommand } from "./mcp.js";
import { repairCommand } from "./repair.js";
import { serveCommand } from "./serve.js";
import { directoryCommand } from "./directory.js";

const COMMANDS: Command[] = [serveCommand, keysCommand, exportCommand, importCommand, demoCommand, repairCommand, buildCommand, installHooksCommand, hookCommand, mcpCommand];
COMMANDS.push(directoryCommand);

const HELP = `svc — self-hosted memory substrate for AI agents

Usage:
${COMMANDS.map((c) => `  ${c.usage}`).join("\n")}
  svc --help
      This text.`;

/** Documented exit codes: 0 ok, 1 server-side failure, 2 bad input; `svc serve` refusing to start: 3 port taken, 4 data dir in use. */
const EXIT_CODES: Partial<Record<string, number>> = { E_ADDRESS_IN_USE: 3, E_DATA_LOCKED: 4 };

async function main(argv: string[]): Promise<number> {
  const name = argv.find((a) => !a.startsWith("-"));
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    if (name === undefined || name === "help" || argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    process.stderr.write(`svc: unknown command '${name}'\n\n${HELP}\n`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { ...command.options, help: { type: "boolean", short: "h" } } });
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
