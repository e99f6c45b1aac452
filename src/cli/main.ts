#!/usr/bin/env node
/** @module main — the `svc` command line. */
import { parseArgs } from "node:util";
import { SvcError } from "../errors.js";
import { runDemo } from "./demo.js";

const HELP = `svc — self-hosted memory substrate for AI agents

Usage:
  svc demo [--n 100000] [--dim 1024] [--queries 100] [--threads 2] [--seed 42]
      Encode seeded float vectors to 1-bit rows, run exact top-10 queries
      in-thread and across worker threads, print timings.
  svc --help
      This text.

The HTTP server (svc serve) arrives with the HTTP front.`;

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new SvcError("E_BAD_REQUEST", `--${name} must be a positive integer, got ${value}`, { field: name });
  return n;
}

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  n: { type: "string" },
  dim: { type: "string" },
  queries: { type: "string" },
  threads: { type: "string" },
  seed: { type: "string" },
} as const;

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", (err as Error).message, { cause: err });
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  const command = positionals[0];
  if (values.help || command === undefined || command === "help") {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (command === "demo") {
    await runDemo({
      n: positiveInt("n", values.n, 100_000),
      dim: positiveInt("dim", values.dim, 1024),
      queries: positiveInt("queries", values.queries, 100),
      threads: positiveInt("threads", values.threads, 2),
      seed: positiveInt("seed", values.seed, 42),
      out: (line) => process.stdout.write(`${line}\n`),
    });
    return 0;
  }
  process.stderr.write(`svc: unknown command '${command}'\n\n${HELP}\n`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof SvcError) process.stderr.write(`svc: ${err.code}: ${err.message}\n`);
    else process.stderr.write(`svc: ${(err as Error).message ?? String(err)}\n`);
    process.exit(err instanceof SvcError && err.status < 500 ? 2 : 1);
  },
);
