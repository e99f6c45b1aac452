/** @module machine — what the benchmark ran on, stated in every result file. */
import { cpus, totalmem } from "node:os";
import { readFileSync } from "node:fs";

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  v8: string;
  flags: string;
  date: string;
}

export function describeMachine(): Machine {
  let flags = "";
  try {
    const info = readFileSync("/proc/cpuinfo", "utf8");
    const f = /^flags\s*:\s*(.*)$/m.exec(info)?.[1]?.split(" ") ?? [];
    flags = ["popcnt", "avx2", "avx512f", "avx512_vpopcntdq", "avx512_bitalg"].filter((x) => f.includes(x)).join(" ");
  } catch {
    flags = "unknown";
  }
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    v8: process.versions.v8,
    flags,
    date: new Date().toISOString(),
  };
}
