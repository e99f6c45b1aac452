/** @module prices — the price table: USD per operation, per 1k vectors written and per 1k vectors scanned; costs in integer nano-USD. */
import { SvcError } from "../errors.js";

export interface PriceTable {
  /** USD charged per call of each metered operation; operations not listed cost `defaultRequest`. */
  requests: Record<string, number>;
  defaultRequest: number;
  /** USD per 1,000 vectors written (upsert, update). */
  per1kWritten: number;
  /** USD per 1,000 vectors a query scanned (the namespace's live rows, or the rows its filter matched). */
  per1kScanned: number;
  /** USD credited to a tenant the first time it is seen. */
  signupCredit: number;
}

export const DEFAULT_PRICES: PriceTable = {
  requests: { query: 0.000002, create_index: 0.0001 },
  defaultRequest: 0.000001,
  per1kWritten: 0.0001,
  per1kScanned: 0.0000001,
  signupCredit: 5,
};

export const NANO_PER_USD = 1e9;

export interface Usage {
  written?: number;
  scanned?: number;
}

/** Cost of one operation in nano-USD (integer, rounded up: a charged operation never costs 0 unless its prices are 0). */
export function costOf(prices: PriceTable, op: string, usage: Usage): number {
  const usd =
    (prices.requests[op] ?? prices.defaultRequest) +
    ((usage.written ?? 0) / 1000) * prices.per1kWritten +
    ((usage.scanned ?? 0) / 1000) * prices.per1kScanned;
  return Math.max(0, Math.ceil(usd * NANO_PER_USD - 1e-6)); // max: never -0 for a free operation
}

/** A price table from config (partial: missing entries keep their defaults), checked field by field. */
export function parsePrices(raw: unknown, field = "prices"): PriceTable {
  if (raw === undefined) return DEFAULT_PRICES;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new SvcError("E_BAD_REQUEST", `${field} must be an object`, { field });
  const r = raw as Record<string, unknown>;
  const usd = (v: unknown, f: string, d: number): number => {
    if (v === undefined) return d;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
      throw new SvcError("E_BAD_REQUEST", `${f} must be a non-negative number of USD`, { field: f });
    return v;
  };
  const requests: Record<string, number> = { ...DEFAULT_PRICES.requests };
  if (r.requests !== undefined) {
    if (typeof r.requests !== "object" || r.requests === null || Array.isArray(r.requests))
      throw new SvcError("E_BAD_REQUEST", `${field}.requests must be an object`, { field: `${field}.requests` });
    for (const [op, v] of Object.entries(r.requests)) requests[op] = usd(v, `${field}.requests.${op}`, 0);
  }
  for (const k of Object.keys(r)) {
    if (!Object.hasOwn(DEFAULT_PRICES, k)) throw new SvcError("E_BAD_REQUEST", `unknown price '${k}'`, { field: `${field}.${k}` });
  }
  return {
    requests,
    defaultRequest: usd(r.defaultRequest, `${field}.defaultRequest`, DEFAULT_PRICES.defaultRequest),
    per1kWritten: usd(r.per1kWritten, `${field}.per1kWritten`, DEFAULT_PRICES.per1kWritten),
    per1kScanned: usd(r.per1kScanned, `${field}.per1kScanned`, DEFAULT_PRICES.per1kScanned),
    signupCredit: usd(r.signupCredit, `${field}.signupCredit`, DEFAULT_PRICES.signupCredit),
  };
}
