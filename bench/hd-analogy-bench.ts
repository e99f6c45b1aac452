/** @module hd-analogy-bench — analogy latency (p50/p99, tables cached) at n_feat 10, 16, 20, and item-table build time. */
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { AnalogyService } from "../src/hd/analogy/service.js";

export interface AnalogyBenchRow {
  nFeat: number;
  items: number;
  dimBits: number;
  tableMiB: number;
  buildMs: number;
  p50Ms: number;
  p99Ms: number;
  calls: number;
  correct: number;
}

export interface AnalogyBenchRun {
  threads: number;
  rows: AnalogyBenchRow[];
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** Sequential calls (one in flight) per n_feat after a warm-up; build time is the first (uncached) call's table build. */
export async function runAnalogyBench(
  opts: { feats?: number[]; calls?: number; seed?: number; threads?: number; dimBits?: number; log?: (line: string) => void } = {},
): Promise<AnalogyBenchRun> {
  const feats = opts.feats ?? [10, 16, 20];
  const calls = opts.calls ?? 200;
  const log = opts.log ?? (() => {});
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: opts.threads });
  const svc = new AnalogyService({ kernels, pool }, { dimBits: opts.dimBits });
  const rows: AnalogyBenchRow[] = [];
  try {
    for (const nFeat of feats) {
      const items = 2 ** nFeat;
      const seed = opts.seed ?? 7;
      const t0 = performance.now();
      svc.table(nFeat, seed);
      const buildMs = performance.now() - t0;
      const next = mulberry32(nFeat * 1000 + 1);
      const pick = () => next() % items;
      for (let i = 0; i < 10; i++) await svc.analogy({ n_feat: nFeat, a: pick(), b: pick(), c: pick(), seed });
      const times: number[] = [];
      let correct = 0;
      for (let i = 0; i < calls; i++) {
        const [a, b, c] = [pick(), pick(), pick()];
        const s = performance.now();
        const r = await svc.analogy({ n_feat: nFeat, a, b, c, seed });
        times.push(performance.now() - s);
        if (r.candidate === (a ^ b ^ c)) correct++;
      }
      times.sort((x, y) => x - y);
      const row: AnalogyBenchRow = {
        nFeat,
        items,
        dimBits: svc.dimBits,
        tableMiB: (items * svc.dimBits) / 8 / 2 ** 20,
        buildMs,
        p50Ms: pct(times, 0.5),
        p99Ms: pct(times, 0.99),
        calls,
        correct,
      };
      log(
        `n_feat ${nFeat}: build ${buildMs.toFixed(1)} ms, p50 ${row.p50Ms.toFixed(2)} ms, p99 ${row.p99Ms.toFixed(2)} ms, ${correct}/${calls} correct`,
      );
      rows.push(row);
    }
  } finally {
    await pool.close();
  }
  return { threads: pool.threads, rows };
}

/** A markdown table of one run. */
export function renderAnalogyBench(run: AnalogyBenchRun): string {
  const lines = [
    `### HD analogy (POST /v1/hd/analogy service path, ${run.threads} scan workers, one call in flight)`,
    "",
    "| n_feat | items | D bits | table MiB | build ms | p50 ms | p99 ms | correct |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...run.rows.map(
      (r) =>
        `| ${r.nFeat} | ${r.items.toLocaleString("en-US")} | ${r.dimBits} | ${r.tableMiB.toFixed(1)} | ${r.buildMs.toFixed(1)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.correct}/${r.calls} |`,
    ),
  ];
  return lines.join("\n") + "\n";
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dimBits = process.argv.includes("--dim") ? Number(process.argv[process.argv.indexOf("--dim") + 1]) : undefined;
  const run = await runAnalogyBench({ log: (l) => process.stdout.write(`${l}\n`), dimBits });
  process.stdout.write(renderAnalogyBench(run));
}
