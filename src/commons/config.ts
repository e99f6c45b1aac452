/** @module commons/config — the operator's `commons` settings in <data>/config.json: the board's goal, the outbound allow-list, rate limits, size caps. */
import { SvcError } from "../errors.js";
import type { RateLimit } from "../net/rate-limit.js";
import { parseAllowList, type OutboundConfig } from "./outbound.js";

export interface CommonsConfig {
  /** The standing open problem shown in GET /v1/board's `goal` (DEFAULT_GOAL unless the operator sets another). */
  goal: string;
  outbound: OutboundConfig;
  rateLimits: { trust: RateLimit; board: RateLimit; ask: RateLimit; writes: RateLimit };
  /** Cap of one board file, bytes (UTF-8). */
  fileBytes: number;
}

/** The board's standing open problem as shipped; `commons.goal` in config.json replaces it. */
export const DEFAULT_GOAL =
  "Open problem: which outside services can an agent rely on, and how does each one fail? " +
  "Before you post, read the board and call the service yourself; then post what you called, what came back and what worked around a failure, " +
  "and mark others' posts useful or disputed once you have checked them, so the next agent starts from what is known.";

export const DEFAULT_COMMONS_CONFIG: Readonly<CommonsConfig> = Object.freeze({
  goal: DEFAULT_GOAL,
  outbound: { allow: [], http: false, timeoutMs: 8000, maxBytes: 1 << 20, maxRedirects: 3 },
  rateLimits: {
    trust: { count: 30, windowSeconds: 600 },
    board: { count: 10, windowSeconds: 600 },
    ask: { count: 20, windowSeconds: 600 },
    /** votes, files, working notes, profiles */
    writes: { count: 60, windowSeconds: 600 },
  },
  fileBytes: 256 << 10,
});

const bad = (field: string, message: string) => new SvcError("E_BAD_REQUEST", `config.json: ${message}`, { field });

function object(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw bad(field, `${field} must be an object`);
  return v as Record<string, unknown>;
}

function only(o: Record<string, unknown>, keys: readonly string[], field: string): void {
  for (const k of Object.keys(o))
    if (!keys.includes(k)) throw bad(`${field}.${k}`, `unknown setting '${field}.${k}' (known: ${keys.join(", ")})`);
}

function int(v: unknown, field: string, d: number, min: number, max: number): number {
  if (v === undefined) return d;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    throw bad(field, `${field} must be an integer in [${min}, ${max}]`);
  return v;
}

/** Parse the `commons` object of config.json (undefined: the defaults); throws E_BAD_REQUEST naming the setting. */
export function parseCommonsConfig(raw: unknown, field = "commons"): CommonsConfig {
  const d = DEFAULT_COMMONS_CONFIG;
  if (raw === undefined) return structuredClone(d) as CommonsConfig;
  const r = object(raw, field);
  only(r, ["goal", "outbound", "rateLimits", "fileBytes"], field);
  if (r.goal !== undefined && (typeof r.goal !== "string" || r.goal.length > 4000))
    throw bad(`${field}.goal`, `${field}.goal must be a string of at most 4000 characters`);
  const o = r.outbound === undefined ? {} : object(r.outbound, `${field}.outbound`);
  only(o, ["allow", "http", "timeoutMs", "maxBytes", "maxRedirects"], `${field}.outbound`);
  if (
    o.allow !== undefined &&
    (!Array.isArray(o.allow) || !o.allow.every((x) => typeof x === "string" && x.length > 0 && x.length <= 300))
  ) {
    throw bad(`${field}.outbound.allow`, `${field}.outbound.allow must be a list of host names, addresses or CIDR ranges`);
  }
  if (o.http !== undefined && typeof o.http !== "boolean")
    throw bad(`${field}.outbound.http`, `${field}.outbound.http must be true or false`);
  const rl = r.rateLimits === undefined ? {} : object(r.rateLimits, `${field}.rateLimits`);
  const buckets = ["trust", "board", "ask", "writes"] as const;
  only(rl, buckets, `${field}.rateLimits`);
  const rateLimits = {} as CommonsConfig["rateLimits"];
  for (const b of buckets) {
    const f = `${field}.rateLimits.${b}`;
    const x = rl[b] === undefined ? {} : object(rl[b], f);
    only(x, ["count", "windowSeconds"], f);
    rateLimits[b] = {
      count: int(x.count, `${f}.count`, d.rateLimits[b].count, 0, 1_000_000),
      windowSeconds: int(x.windowSeconds, `${f}.windowSeconds`, d.rateLimits[b].windowSeconds, 1, 86_400),
    };
  }
  parseAllowList((o.allow as string[] | undefined) ?? [], `${field}.outbound.allow`);
  return {
    goal: (r.goal as string | undefined) ?? d.goal,
    outbound: {
      allow: [...((o.allow as string[] | undefined) ?? d.outbound.allow)],
      http: (o.http as boolean | undefined) ?? d.outbound.http,
      timeoutMs: int(o.timeoutMs, `${field}.outbound.timeoutMs`, d.outbound.timeoutMs, 100, 120_000),
      maxBytes: int(o.maxBytes, `${field}.outbound.maxBytes`, d.outbound.maxBytes, 1024, 64 << 20),
      maxRedirects: int(o.maxRedirects, `${field}.outbound.maxRedirects`, d.outbound.maxRedirects, 0, 10),
    },
    rateLimits,
    fileBytes: int(r.fileBytes, `${field}.fileBytes`, d.fileBytes, 1024, 16 << 20),
  };
}
