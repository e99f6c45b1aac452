/** @module command — the shape of one `svc` subcommand and the argument checks they share. */
import type { ParseArgsConfig } from "node:util";
import { SvcError } from "../errors.js";

export interface Command {
  name: string;
  /** Usage lines for --help: the synopsis, then indented description lines. */
  usage: string;
  options: NonNullable<ParseArgsConfig["options"]>;
  /** Returns the process exit code. `values` holds the parsed options, `args` the positionals after the command name. */
  run(values: Record<string, string | boolean | undefined>, args: string[]): Promise<number>;
}

export function positiveInt(name: string, value: string | boolean | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== "string" || !Number.isInteger(n) || n <= 0)
    throw new SvcError("E_BAD_REQUEST", `--${name} must be a positive integer, got ${value}`, { field: name });
  return n;
}

/** Write one line to stdout. */
export function say(line: string): void {
  process.stdout.write(`${line}\n`);
}
