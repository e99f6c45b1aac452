/** @module process-bench — a whole-process run of the shipped CLI (`svc demo`): timings and peak RSS as a user sees them. */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface ProcessResult {
  command: string;
  n: number;
  wallSeconds: number;
  encodeVectorsPerSec: number;
  inThreadP50Ms: number;
  workersP50Ms: number;
  peakRssMB: number;
}

const num = (text: string, re: RegExp): number => {
  const m = re.exec(text);
  if (!m?.[1]) throw new Error(`svc demo output lacks ${re}:\n${text}`);
  return Number(m[1].replace(/,/g, ""));
};

export function runProcessBench(n: number, log: (line: string) => void): ProcessResult {
  const main = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
  const args = ["demo", "--n", String(n), "--queries", "100", "--threads", "2"];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [main, ...args], { encoding: "utf8" });
  const wallSeconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`svc demo failed (${r.status}): ${r.stderr}`);
  const res: ProcessResult = {
    command: `node dist/cli/main.js ${args.join(" ")}`,
    n,
    wallSeconds,
    encodeVectorsPerSec: num(r.stdout, /\(([\d,]+) vectors\/s/),
    inThreadP50Ms: num(r.stdout, /in-thread\s+p50 ([\d.]+) ms/),
    workersP50Ms: num(r.stdout, /workers \(striped\)\s+p50 ([\d.]+) ms/),
    peakRssMB: num(r.stdout, /peak RSS (\d+) MB/),
  };
  log(
    `${res.command}: ${wallSeconds.toFixed(1)} s wall, in-thread p50 ${res.inThreadP50Ms} ms, 2 workers p50 ${res.workersP50Ms} ms, peak RSS ${res.peakRssMB} MB`,
  );
  return res;
}
