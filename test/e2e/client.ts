/** @module client — the HTTP tests' fetch wrapper (`call`, returning a `Reply`) and a runner of the built CLI (`cli`). */
import { spawn } from "node:child_process";
import { MAIN } from "./server-process.js";
import { until } from "./until.js";

export interface Reply {
  status: number;
  headers: Headers;
  /** The body parsed as JSON, or undefined when it is not JSON (or empty). */
  body: any;
  raw: Buffer;
}

/**
 * One request. `key` null sends no api-key header. A FormData body goes as is (fetch sets the
 * multipart content type); a Uint8Array body goes raw as `contentType` (default
 * application/octet-stream); any other defined body goes as JSON with `contentType` (default
 * application/json). Times out after 20 s.
 */
export async function call(
  base: string,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<Reply> {
  const headers: Record<string, string> = key === null ? {} : { "api-key": key };
  let data: BodyInit | undefined;
  if (body instanceof FormData) data = body;
  else if (body instanceof Uint8Array) {
    headers["content-type"] = contentType ?? "application/octet-stream";
    data = body as unknown as BodyInit;
  } else if (body !== undefined) {
    headers["content-type"] = contentType ?? "application/json";
    data = JSON.stringify(body);
  }
  const res = await fetch(base + path, { method, headers, body: data, signal: AbortSignal.timeout(20_000) });
  const raw = Buffer.from(await res.arrayBuffer());
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, raw };
}

/** The variables `cli` blanks by default, so the caller's shell cannot leak into a test. */
export const CLI_CLEARED_ENV = ["SVC_PROGRESS", "SVC_API_KEY", "SVC_URL"] as const;

export interface CliOptions {
  /** Variables set to "" before `env` applies (default CLI_CLEARED_ENV). */
  clear?: readonly string[];
  /** SIGKILL the child after this many ms (default: never). */
  killAfterMs?: number;
}

/** Run the built CLI with `env` over the cleared process env; resolves with its exit code and output. */
export function cli(
  args: string[],
  env: Record<string, string> = {},
  opts: CliOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cleared = Object.fromEntries((opts.clear ?? CLI_CLEARED_ENV).map((k) => [k, ""]));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { ...process.env, ...cleared, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const timer = opts.killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A key for a new tenant, made with `svc keys create` on the server's data dir, returned once
 * the running server accepts it (it re-reads keys.json within about half a second).
 */
export async function newTenantKey(srv: { url: string; dataDir: string }): Promise<{ key: string; tenant: string; admin: boolean }> {
  const r = await cli(["keys", "create", "--data", srv.dataDir, "--json"]);
  if (r.code !== 0) throw new Error(`svc keys create exited ${r.code}: ${r.stderr}`);
  const k = JSON.parse(r.stdout) as { key: string; tenant: string; admin: boolean };
  await until(
    "the server to accept a new key",
    () => call(srv.url, k.key, "GET", "/v1/wallet"),
    (x) => x.status === 200,
  );
  return k;
}
