/** @module test/http/src-text — how many times a piece of text is written in src/*.ts (the one-schema tests: a rule written once). */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const SRC = resolve(import.meta.dirname, "../../src");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Occurrences of `needle` over every .ts file below src/. */
export function countInSrc(needle: string): number {
  return files(SRC).reduce((n, f) => n + readFileSync(f, "utf8").split(needle).length - 1, 0);
}
