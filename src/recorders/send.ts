/** @module recorders/send — where recorders write: the service URL and key (options, then SVC_URL / SVC_API_KEY), checked by service-url.ts, and a POST that never throws. */
import { checkServiceUrl } from "../service-url.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";

export interface Target {
  url: string;
  apiKey?: string;
}

/**
 * Options first, then the environment; the URL loses any trailing slash. Throws E_INSECURE_URL for
 * plain http to a non-loopback host (unless SVC_ALLOW_INSECURE=1): the key would travel in clear.
 */
export function target(opts: { url?: string; apiKey?: string } = {}, env: NodeJS.ProcessEnv = process.env): Target {
  const url = (opts.url || env.SVC_URL || DEFAULT_URL).replace(/\/+$/, "");
  checkServiceUrl(url, { field: opts.url ? "url" : "SVC_URL", env });
  const apiKey = opts.apiKey || env.SVC_API_KEY || undefined;
  return { url, apiKey };
}

/** POST JSON to `t.url + path` with the key (only ever to that URL). Resolves the parsed body, or undefined on any failure. */
export async function postJson(t: Target, path: string, body: unknown, timeoutMs = 10_000): Promise<unknown> {
  try {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (t.apiKey) headers["api-key"] = t.apiKey;
    const res = await fetch(t.url + path, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (!res.ok) return undefined;
    return text === "" ? {} : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

/** The /v1/records/{ns} path. */
export function recordsPath(namespace: string): string {
  return `/v1/records/${encodeURIComponent(namespace)}`;
}
