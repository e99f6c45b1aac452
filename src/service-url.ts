/**
 * @module service-url — the one check every client of svc applies to the service URL before it
 * sends an API key there (svc mcp's REST client, the LLM-client recorder, the hooks, svc
 * export/import, install-hooks --url): http(s) only, and plain http only to a loopback host
 * unless the user opts in with SVC_ALLOW_INSECURE=1. Dependency-free, so the hook stays light.
 */
import { isIP } from "node:net";
import { SvcError } from "./errors.js";

/** localhost, 127.0.0.0/8 or ::1 (with or without brackets). */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}

/** The parsed URL, or SvcError E_BAD_REQUEST (not an http(s) URL) / E_INSECURE_URL (plain http to a non-loopback host without SVC_ALLOW_INSECURE=1), `field` naming the option. */
export function checkServiceUrl(raw: string, opts: { field?: string; env?: NodeJS.ProcessEnv } = {}): URL {
  const field = opts.field ?? "url";
  const env = opts.env ?? process.env;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SvcError("E_BAD_REQUEST", `${field} must be an http(s) URL, got ${JSON.stringify(raw)}`, { field });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new SvcError("E_BAD_REQUEST", `${field} must be an http(s) URL, got ${url.protocol}`, { field });
  if (url.protocol === "http:" && !isLoopback(url.hostname) && env.SVC_ALLOW_INSECURE !== "1") {
    throw new SvcError(
      "E_INSECURE_URL",
      `refusing to send the API key over plain http to ${url.host}: use https:// (svc serve --tls-cert/--tls-key), or set SVC_ALLOW_INSECURE=1 to allow it (the key can then be read on the network)`,
      { field },
    );
  }
  return url;
}
