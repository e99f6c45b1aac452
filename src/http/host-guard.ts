/**
 * @module host-guard — the Host/Origin allow-list against DNS rebinding and cross-site requests: applied to /mcp
 * always and, with `--no-auth` (where a request needs no key), to every route.
 */
import { SvcError } from "../errors.js";

export class HostGuard {
  private names: Set<string> | null = null;

  /**
   * `host` is the listen address, `port()` the listening port (known once listening), `extra` Host values allowed
   * besides the loopback names on that port (e.g. "svc.example.com", from serve --mcp-allowed-hosts).
   */
  constructor(
    private readonly host: string,
    private readonly port: () => number,
    private readonly extra: readonly string[] = [],
  ) {}

  /** The allowed `host[:port]` values, lowercase. */
  allowed(): ReadonlySet<string> {
    if (this.names) return this.names;
    const h = this.host;
    const local = [
      "localhost",
      "127.0.0.1",
      "[::1]",
      ...(h === "0.0.0.0" || h === "::" ? [] : [h.includes(":") && !h.startsWith("[") ? `[${h}]` : h]),
    ];
    return (this.names = new Set([...local.map((n) => `${n}:${this.port()}`), ...this.extra].map((x) => x.toLowerCase())));
  }

  /** Throws E_HOST_NOT_ALLOWED (403) unless the Host header is allowed and the Origin, when sent, names an allowed host. */
  check(hostHeader: string, origin: string | null): void {
    const hosts = this.allowed();
    const host = hostHeader.toLowerCase();
    if (!hosts.has(host)) {
      throw new SvcError(
        "E_HOST_NOT_ALLOWED",
        `Host '${hostHeader}' is not allowed (DNS-rebinding protection); allowed: ${[...hosts].join(", ")} (serve --mcp-allowed-hosts adds more)`,
        { field: "host" },
      );
    }
    if (origin !== null && origin !== "" && !hosts.has(origin.replace(/^https?:\/\//i, "").toLowerCase())) {
      throw new SvcError("E_HOST_NOT_ALLOWED", `Origin '${origin}' is not allowed (cross-site request or DNS rebinding)`, {
        field: "origin",
      });
    }
  }
}
