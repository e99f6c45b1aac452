/** @module child — the HTTP bench's servers run as child processes: start one, wait for its URL line, read its CPU time, stop it. */
import { execFileSync, spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";

export interface Child {
  pid: number;
  /** e.g. http://127.0.0.1:40123 */
  url: string;
  /** Everything the process wrote to stdout so far. */
  output(): string;
  /** The first admin key `svc serve` printed (on stderr) on a first start, else undefined. */
  adminKey: string | undefined;
  /** SIGTERM and wait for the exit; returns the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawn `node args` and resolve once its output has a line with `<word> serving http://...` (the URL is taken from it).
 * `outFile`: stdout and stderr go to that file instead of a pipe to this process, as a server's log goes to a file or
 * journal in use (a pipe makes the reader, often the load generator itself, wake for every log line).
 */
export async function startChild(args: string[], timeoutMs = 60_000, outFile?: string): Promise<Child> {
  const fd = outFile === undefined ? null : openSync(outFile, "w");
  const child = spawn(process.execPath, args, { stdio: fd === null ? ["ignore", "pipe", "pipe"] : ["ignore", fd, fd] });
  if (fd !== null) closeSync(fd);
  let out = "";
  let err = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
  const output = () => (outFile === undefined ? out : readFileSync(outFile, "utf8"));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args.join(" ")} did not start in ${timeoutMs} ms:\n${output()}\n${err}`)),
      timeoutMs,
    );
    const look = () => {
      const m = /serving (http:\/\/\S+)/.exec(output());
      if (m) {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(m[1]!);
      }
    };
    child.stdout?.on("data", look);
    const poll = setInterval(() => outFile !== undefined && look(), 50);
    void exited.then((code) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`${args.join(" ")} exited with ${code}:\n${output()}\n${err}`));
    });
  });
  // svc serve prints the first admin key on stderr only; stdout says one was created.
  const keyRe = /^ {2}(svc_\S+)/m;
  const stderr = () => (outFile === undefined ? err : output());
  for (const end = Date.now() + 10_000; /first admin key \S+ created/.test(output()) && !keyRe.test(stderr()) && Date.now() < end;)
    await new Promise((r) => setTimeout(r, 20));
  return {
    pid: child.pid!,
    url,
    output,
    adminKey: keyRe.exec(stderr())?.[1],
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

const TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** User + system CPU seconds of a process, all its threads (from /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

/** This process's user + system CPU seconds. */
export function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds (user, system) and minor page faults per thread of a process, keyed by thread name (/proc/<pid>/task/<tid>/comm; same-named threads summed). */
export function threadCpu(pid: number): Map<string, { user: number; system: number; minflt: number }> {
  const out = new Map<string, { user: number; system: number; minflt: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string, comm: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    } catch {
      continue; // the thread ended meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const name = tid === String(pid) ? "main" : process.env.SVC_TID ? `${comm} ${tid}` : comm;
    const t = out.get(name) ?? { user: 0, system: 0, minflt: 0 };
    t.user += Number(f[11]) / TICKS;
    t.system += Number(f[12]) / TICKS;
    t.minflt += Number(f[7]);
    out.set(name, t);
  }
  return out;
}
