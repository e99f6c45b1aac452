/** @module server-process — run the built `svc serve` as a real child process on a free port and a temp data dir. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const MAIN = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:40123 (https:// with --tls-cert/--tls-key) */
  url: string;
  /** The first admin key printed on first start (null with --no-auth or a reused data dir). */
  adminKey: string | null;
  dataDir: string;
  /** Everything the process wrote to stdout so far. */
  output(): string;
  /** Everything the process wrote to stderr so far. */
  errorOutput(): string;
  /** SIGTERM and wait for the exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** stop() and remove the data dir (unless it was passed in). */
  dispose(): Promise<void>;
}

/** Start `svc serve --port 0`; resolves once it printed its URL (and first admin key). */
export async function startServerProcess(opts: { dataDir?: string; args?: string[] } = {}): Promise<ServerProcess> {
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), "svc-http-")));
  const child = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--data", dataDir, "--log-level", "warn", ...(opts.args ?? [])], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // The banner's last line is the URL; the first admin key (on first start) comes before it.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc serve did not start in 30 s:\n${out}\n${err}`)), 30_000);
    child.stdout!.on("data", () => {
      if (/svc serving https?:\/\/\S+/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`svc serve exited with ${code}:\n${out}\n${err}`));
    });
  });
  const url = /svc serving (https?:\/\/\S+)/.exec(out)![1]!;
  // The first admin key is printed on stderr only (stdout is the JSON log stream); stdout says one was created.
  const adminKeyRe = /^ {2}(svc_\S+)/m;
  if (/first admin key \S+ created/.test(out)) await untilText(() => err, adminKeyRe, 10_000);
  const adminKey = adminKeyRe.exec(err)?.[1] ?? null;
  let stopped: Promise<number | null> | null = null;
  const stop = () => {
    stopped ??= (async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    })();
    return stopped;
  };
  return {
    child,
    url,
    adminKey,
    dataDir,
    output: () => out,
    errorOutput: () => err,
    stop,
    async dispose() {
      await stop();
      if (opts.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Wait (polling, at most `ms`) until `text()` matches `re`. */
async function untilText(text: () => string, re: RegExp, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !re.test(text());) {
    if (Date.now() > end) throw new Error(`did not see ${re} in:\n${text()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
