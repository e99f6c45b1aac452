/** @module commons/outbound — the one SSRF-safe outbound fetch: https by default, every resolved address checked (private, loopback, link-local, metadata refused unless allow-listed), redirects re-checked, time-out and size cap. */
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { SvcError } from "../errors.js";
import { embeddedIPv4 } from "../net/ip.js";

export interface OutboundConfig {
  /**
   * Hosts the outbound fetch may reach although they resolve to private, loopback, link-local or
   * metadata addresses: host names, IP addresses or CIDR ranges, each optionally with `:port`
   * (IPv6 as `[addr]:port`). Everything else on those ranges is refused.
   */
  allow: string[];
  /** true: an explicit `http://` site or url is fetched over plain http (https stays the default). */
  http: boolean;
  /** Per request (connect + answer), milliseconds. */
  timeoutMs: number;
  /** Answer bodies beyond this many bytes are refused. */
  maxBytes: number;
  /** Redirects followed (each one re-checked). */
  maxRedirects: number;
}

export interface FetchOptions {
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** The request field the target came from (named in errors). */
  field: string;
}

export interface FetchResult {
  /** The URL that answered (after redirects). */
  url: URL;
  status: number;
  contentType: string;
  body: Buffer;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (tests pass their own to simulate DNS). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Ranges never fetched unless allow-listed: "this network", private, CGNAT, loopback, link-local (cloud metadata), documentation, benchmark, multicast, reserved. */
const BLOCKED_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
];
/** ::/96 covers ::, ::1 and IPv4-compatible; mapped and NAT64 addresses are checked as the IPv4 they carry. */
const BLOCKED_V6 = [
  "::/96",
  "64:ff9b:1::/48",
  "100::/64",
  "2001::/23",
  "2001:db8::/32",
  "2002::/16",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

const blocked = new BlockList();
for (const c of BLOCKED_V4) blocked.addSubnet(c.split("/")[0]!, Number(c.split("/")[1]), "ipv4");
for (const c of BLOCKED_V6) blocked.addSubnet(c.split("/")[0]!, Number(c.split("/")[1]), "ipv6");

/** True when `address` is on a range the server never fetches by default. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family !== 6) return true;
  const v4 = embeddedIPv4(address);
  return v4 !== null ? blocked.check(v4, "ipv4") : blocked.check(address.split("%")[0]!, "ipv6");
}

interface AllowEntry {
  /** A host name as written in URLs (lowercase), or null for an address range. */
  host: string | null;
  net: BlockList | null;
  port: number | null;
}

/** Parse the operator's allow-list; throws E_BAD_REQUEST naming the bad entry. */
export function parseAllowList(entries: readonly string[], field = "commons.outbound.allow"): AllowEntry[] {
  return entries.map((raw, i) => {
    const bad = () =>
      new SvcError(
        "E_BAD_REQUEST",
        `config.json: ${field}[${i}] '${raw}' is not a host name, IP address or CIDR range (optionally with :port)`,
        { field: `${field}[${i}]` },
      );
    let s = raw.trim().toLowerCase();
    let port: number | null = null;
    const v6port = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
    if (v6port) {
      s = v6port[1]!;
      port = v6port[2] === undefined ? null : Number(v6port[2]);
    } else if (/^[^:]+:\d+$/.test(s)) {
      port = Number(s.slice(s.lastIndexOf(":") + 1));
      s = s.slice(0, s.lastIndexOf(":"));
    }
    if (port !== null && (!Number.isInteger(port) || port < 1 || port > 65535)) throw bad();
    const [addr, bits] = s.split("/") as [string, string | undefined];
    const family = isIP(addr);
    if (family !== 0) {
      const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) throw bad();
      const net = new BlockList();
      net.addSubnet(addr, prefix, family === 4 ? "ipv4" : "ipv6");
      return { host: null, net, port };
    }
    if (
      bits !== undefined ||
      !/^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/.test(s)
    )
      throw bad();
    return { host: s, net: null, port };
  });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export class Outbound {
  private readonly allow: AllowEntry[];

  constructor(
    readonly config: OutboundConfig,
    private readonly resolver: Resolver = systemResolver,
  ) {
    this.allow = parseAllowList(config.allow);
  }

  /**
   * A caller's domain or URL as a URL: no scheme means https; http only when the operator turned
   * it on; no credentials. Throws E_BAD_REQUEST / E_OUTBOUND_BLOCKED naming `field`.
   */
  parseTarget(input: string, field: string): URL {
    const s = input.trim();
    if (s === "" || s.length > 2000)
      throw new SvcError("E_BAD_REQUEST", `${field} must be a domain or an https URL of at most 2000 characters`, { field });
    let url: URL;
    try {
      url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `https://${s}`);
    } catch {
      throw new SvcError("E_BAD_REQUEST", `${field} '${s.slice(0, 100)}' is not a domain or URL`, { field });
    }
    this.checkScheme(url, field);
    if (url.username !== "" || url.password !== "")
      throw new SvcError("E_BAD_REQUEST", `${field} must not carry a user name or password`, { field });
    if (url.hostname === "" || url.hostname.length > 253) throw new SvcError("E_BAD_REQUEST", `${field} has no valid host`, { field });
    return url;
  }

  /** Fetch `url` safely. Blocked targets: E_OUTBOUND_BLOCKED (400); unreachable, timed out, too large: E_UPSTREAM (400). */
  async fetch(url: URL, opts: FetchOptions): Promise<FetchResult> {
    let current = url;
    let method = opts.method ?? "GET";
    let body = opts.body;
    for (let hop = 0; ; hop++) {
      this.checkScheme(current, opts.field);
      const res = await this.once(current, method, opts.headers ?? {}, body, opts.field);
      if (!REDIRECTS.has(res.status) || res.location === undefined)
        return { url: current, status: res.status, contentType: res.contentType, body: res.body };
      if (hop >= this.config.maxRedirects)
        throw new SvcError("E_UPSTREAM", `${current.host} redirected more than ${this.config.maxRedirects} times`, { field: opts.field });
      let next: URL;
      try {
        next = new URL(res.location, current);
      } catch {
        throw new SvcError("E_UPSTREAM", `${current.host} redirected to an invalid URL`, { field: opts.field });
      }
      if (current.protocol === "https:" && next.protocol === "http:" && !this.config.http) {
        throw new SvcError("E_OUTBOUND_BLOCKED", `${current.host} redirected from https to plain http, which this server does not follow`, {
          field: opts.field,
        });
      }
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      current = next;
    }
  }

  private checkScheme(url: URL, field: string): void {
    if (url.protocol === "https:") return;
    if (url.protocol === "http:" && this.config.http) return;
    const why =
      url.protocol === "http:" ? "plain http is not fetched (use https)" : `the scheme ${url.protocol} is not fetched (use https)`;
    throw new SvcError("E_OUTBOUND_BLOCKED", `${field}: ${why}`, { field });
  }

  private port(url: URL): number {
    return url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  }

  /** Throws E_OUTBOUND_BLOCKED unless `address` is public or the allow-list names it (or the URL's host). */
  private checkAddress(url: URL, address: string, field: string): void {
    if (!isBlockedAddress(address)) return;
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    const port = this.port(url);
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    const v4 = family === "ipv6" ? embeddedIPv4(address) : null;
    for (const e of this.allow) {
      if (e.port !== null && e.port !== port) continue;
      if (e.host !== null && e.host === host) return;
      if (e.net !== null && (e.net.check(address, family) || (v4 !== null && e.net.check(v4, "ipv4")))) return;
    }
    throw new SvcError(
      "E_OUTBOUND_BLOCKED",
      `${field}: ${url.host} resolves to ${address}, a private, loopback, link-local or reserved address this server does not fetch`,
      { field },
    );
  }

  private async once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    field: string,
  ): Promise<{ status: number; contentType: string; location?: string; body: Buffer }> {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) !== 0) this.checkAddress(url, host, field);
    // Host names are resolved here and every address is checked; the socket connects to a checked address (no second lookup to rebind).
    let refusal: SvcError | null = null;
    const lookup: LookupFunction = (hostname, options, cb) => {
      this.resolver(hostname).then(
        (addrs) => {
          try {
            if (addrs.length === 0) throw new SvcError("E_UPSTREAM", `${field}: ${hostname} has no address`, { field });
            for (const a of addrs) this.checkAddress(url, a.address, field);
          } catch (e) {
            refusal = e as SvcError;
            return cb(e as NodeJS.ErrnoException, "", 0);
          }
          const wanted = options.family === 6 || options.family === 4 ? addrs.filter((a) => a.family === options.family) : addrs;
          const list = wanted.length > 0 ? wanted : addrs;
          if (options.all) (cb as unknown as (e: null, a: ResolvedAddress[]) => void)(null, list);
          else cb(null, list[0]!.address, list[0]!.family);
        },
        (err: NodeJS.ErrnoException) => cb(err, "", 0),
      );
    };
    const mod = url.protocol === "https:" ? https : http;
    const cap = this.config.maxBytes;
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (e: unknown, v?: { status: number; contentType: string; location?: string; body: Buffer }) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (e) reject(e);
        else resolve(v!);
      };
      const req = mod.request(url, {
        method,
        headers: {
          "user-agent": "svc-commons/1.0",
          accept: "application/json, text/event-stream;q=0.9, */*;q=0.5",
          ...headers,
          ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }),
        },
        lookup: isIP(host) === 0 ? lookup : undefined,
        agent: false,
      });
      const timer = setTimeout(() => {
        finish(new SvcError("E_UPSTREAM", `${url.host} did not answer within ${this.config.timeoutMs} ms`, { field }));
        req.destroy();
      }, this.config.timeoutMs);
      req.on("error", (err) => {
        if (refusal !== null) return finish(refusal);
        finish(new SvcError("E_UPSTREAM", `${url.host} is unreachable: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { field }));
      });
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        const contentType = String(res.headers["content-type"] ?? "");
        const location = res.headers.location;
        if (REDIRECTS.has(status) && location !== undefined) {
          res.resume();
          return finish(null, { status, contentType, location, body: Buffer.alloc(0) });
        }
        const declared = Number(res.headers["content-length"] ?? -1);
        if (declared > cap) {
          req.destroy();
          return finish(new SvcError("E_UPSTREAM", `${url.host} answered with ${declared} bytes; the limit is ${cap}`, { field }));
        }
        const chunks: Buffer[] = [];
        let len = 0;
        res.on("data", (c: Buffer) => {
          len += c.length;
          if (len > cap) {
            req.destroy();
            finish(new SvcError("E_UPSTREAM", `${url.host} answered with more than ${cap} bytes`, { field }));
          } else chunks.push(c);
        });
        res.on("end", () => finish(null, { status, contentType, body: Buffer.concat(chunks) }));
        res.on("error", (err) => finish(new SvcError("E_UPSTREAM", `${url.host} broke off its answer: ${err.message}`, { field })));
      });
      req.end(body);
    });
  }
}
