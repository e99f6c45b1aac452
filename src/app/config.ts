/** @module app/config — `<data>/config.json`: the price table, the commons' settings and the bulk imports' limits. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parsePrices } from "../account/prices.js";
import { parseCommonsConfig, type CommonsConfig } from "../commons/config.js";
import { SvcError } from "../errors.js";
import { parseImportConfig, type ImportConfig } from "../memory/imports.js";
import { parseStoredJson } from "../safe-values.js";

/**
 * `<data>/config.json` (optional): `{"prices": {...}}` overrides entries of the price table
 * (src/account/prices.ts), e.g. `{"prices": {"signupCredit": 10, "per1kWritten": 0.0002}}`.
 * `{"commons": {...}}` sets the agent commons: goal, outbound allow-list, rate limits (src/commons/config.ts).
 * `{"imports": {"root": "/srv/imports", "maxUrlBytes": 268435456}}`: where bulk imports may read local files, and the
 * largest file fetched from a URL (src/memory/imports.ts).
 */
export function loadConfig(dataDir: string): { prices: ReturnType<typeof parsePrices>; commons: CommonsConfig; imports: ImportConfig } {
  const path = join(dataDir, "config.json");
  if (!existsSync(path))
    return { prices: parsePrices(undefined), commons: parseCommonsConfig(undefined), imports: parseImportConfig(undefined) };
  let raw: Record<string, unknown>;
  try {
    raw = parseStoredJson(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${path} is not valid JSON: ${(err as Error).message}`, { field: "config" });
  }
  for (const k of Object.keys(raw))
    if (k !== "prices" && k !== "commons" && k !== "imports")
      throw new SvcError("E_BAD_REQUEST", `${path}: unknown setting '${k}'`, { field: k });
  return { prices: parsePrices(raw.prices), commons: parseCommonsConfig(raw.commons), imports: parseImportConfig(raw.imports) };
}
