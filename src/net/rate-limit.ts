/** @module net/rate-limit — sliding-window request limits per client address (IPv4 as is, IPv6 by /64), refusing with 429 `rate_limited` and the seconds to wait. */
import { isIP } from "node:net";
import { embeddedIPv4, ipv6Bytes } from "./ip.js";
import { SvcError } from "../errors.js";

export interface RateLimit {
  /** Requests allowed per window, per client address. 0 turns the limit off. */
  count: number;
  windowSeconds: number;
}

/** Addresses tracked per limiter at most; past it the least recently seen is forgotten first. */
const MAX_CLIENTS = 100_000;

/**
 * The key an address is counted under: IPv4 as is, IPv4-mapped (::ffff:a.b.c.d, any spelling) and NAT64
 * (64:ff9b::/96) as the IPv4 they carry, other IPv6 by its /64 (one subscriber usually holds a whole /64,
 * so single addresses would be free to rotate). Brackets, case, zone ids and leading zeros do not matter.
 */
export function clientKey(address: string | undefined): string {
  const a = (address ?? "")
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1");
  if (a === "") return "unknown";
  if (isIP(a) !== 6) return a;
  const v4 = embeddedIPv4(a);
  if (v4 !== null) return v4;
  const b = ipv6Bytes(a);
  const groups = [0, 1, 2, 3].map((i) => ((b[i * 2]! << 8) | b[i * 2 + 1]!).toString(16));
  return `${groups.join(":")}::/64`;
}

/** One limit (e.g. "board posts"): the times of each client's recent requests, in memory (a restart forgets them). */
export class RateLimiter {
  /** Per client key: request times (ms), oldest first, at most `count`. Map order = least recently used first. */
  private readonly hits = new Map<string, number[]>();

  constructor(
    /** What is counted, plural, for the message: "board posts", "business writes". */
    readonly name: string,
    private readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
  ) {}

  /** Count one request from `address`; past the limit throws 429 `rate_limited` with details.retryAfterSeconds. Refused requests are not counted. */
  take(address: string | undefined): void {
    if (this.limit.count === 0) return;
    const key = clientKey(address);
    const t = this.now();
    const windowMs = this.limit.windowSeconds * 1000;
    const list = (this.hits.get(key) ?? []).filter((x) => x > t - windowMs);
    if (list.length >= this.limit.count) {
      this.hits.set(key, list);
      const retryAfterSeconds = Math.max(1, Math.ceil((list[0]! + windowMs - t) / 1000));
      throw new SvcError(
        "rate_limited",
        `too many ${this.name} from this client address: at most ${this.limit.count} per ${this.limit.windowSeconds} s; retry in ${retryAfterSeconds} s`,
        {
          field: "client",
          details: { retryAfterSeconds },
        },
      );
    }
    list.push(t);
    this.hits.delete(key);
    this.hits.set(key, list);
    if (this.hits.size > MAX_CLIENTS) this.hits.delete(this.hits.keys().next().value!);
  }
}
