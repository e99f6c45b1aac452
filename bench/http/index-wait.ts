/** @module index-wait — wait until a served namespace's approximate index covers (nearly) all its rows and no build is under way, by reading the data dir (FORMAT.md: parts/p<gen>/ivf.bin). */
import { openSync, readSync, closeSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface IndexState {
  /** Partition generations on disk (a build or compaction in flight writes a second one). */
  generations: number;
  /** indexedRows of the newest ivf.bin, 0 without one. */
  indexedRows: number;
}

/** The partition generations under `dir` and the rows the newest ivf.bin indexes (header: magic, version, lists, words, indexedRows: u32 LE). */
export function indexState(dir: string): IndexState {
  const entries = readdirSync(dir, { recursive: true, encoding: "utf8" });
  const gens = entries
    .filter((f) => /(^|\/)parts\/p\d+$/.test(f))
    .sort((a, b) => Number(/p(\d+)$/.exec(a)![1]) - Number(/p(\d+)$/.exec(b)![1]));
  const ivf = gens.map((g) => join(g, "ivf.bin")).filter((f) => entries.includes(f));
  let indexedRows = 0;
  if (ivf.length > 0) {
    const fd = openSync(join(dir, ivf[ivf.length - 1]!), "r");
    const head = Buffer.alloc(20);
    readSync(fd, head, 0, 20, 0);
    closeSync(fd);
    indexedRows = head.readUInt32LE(16);
  }
  return { generations: gens.length, indexedRows };
}

/**
 * Resolve once one generation is left and its index holds at least (1 - ANN_IDLE_DELTA_FRACTION) of the `rows`
 * (a smaller delta is never merged: ivf.ts), then wait `settleMs` for the swap's checkpoint. The builds during a
 * load and the idle merge 5 s after it (ANN_IDLE_MS) take minutes at 1M rows; `timeoutMs` bounds the wait.
 */
export async function waitForIndex(
  dir: string,
  rows: number,
  timeoutMs: number,
  settleMs = 1000,
): Promise<{ seconds: number; state: IndexState }> {
  const t0 = performance.now();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (;;) {
    const state = indexState(dir);
    if (state.generations === 1 && state.indexedRows >= 0.98 * rows) {
      await sleep(settleMs);
      return { seconds: (performance.now() - t0) / 1000, state: indexState(dir) };
    }
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`no index over ${rows} rows after ${timeoutMs / 1000} s: ${JSON.stringify(state)}`);
    await sleep(250);
  }
}
