/** @module demo — `svc demo`: encode seeded float vectors, scan them in-thread and across workers, print timings. */
import { Kernels } from "../kernels/abi.js";
import { mulberry32 } from "../kernels/random.js";
import { Rotation } from "../kernels/rotation.js";
import { RowArena } from "../kernels/row-arena.js";
import { ScanPool } from "../pool/scan-pool.js";
import { positiveInt, say, type Command } from "./command.js";

export interface DemoOptions {
  n: number;
  dim: number;
  queries: number;
  threads: number;
  seed: number;
  out: (line: string) => void;
}

const NOISE = 1 << 16;

/**
 * Clustered seeded float vectors: a random centre plus uniform noise in [-0.4, 0.4). The
 * noise is read from a seeded table at a random offset per vector, which keeps generating
 * a million vectors fast.
 */
function makeVectors(count: number, dim: number, next: () => number, centres: Float32Array, noise: Float32Array): Float32Array {
  const clusters = centres.length / dim;
  const v = new Float32Array(count * dim);
  for (let i = 0; i < count; i++) {
    const c = (next() % clusters) * dim;
    const o = next() % NOISE;
    for (let j = 0; j < dim; j++) v[i * dim + j] = centres[c + j]! + noise[(o + j) % NOISE]!;
  }
  return v;
}

/** What a demo run measured (svc demo --json prints it). */
export interface DemoResult {
  n: number;
  dim: number;
  queries: number;
  encodeSeconds: number;
  /** p50/p99 in ms, Mvec/s at p50, per way of scanning. */
  scans: Array<{ label: string; p50Ms: number; p99Ms: number; mvecPerSecond: number }>;
  nearest: Array<{ row: number; distance: number }>;
  peakRssMb: number;
}

export async function runDemo(o: DemoOptions): Promise<DemoResult> {
  const kernels = Kernels.create();
  const rotation = new Rotation(kernels, o.dim, o.seed);
  const arena = new RowArena(kernels.heap, o.dim, o.n);
  const next = mulberry32(o.seed);
  const centres = new Float32Array(256 * o.dim).map(() => (next() / 2 ** 32) * 2 - 1);
  const noise = new Float32Array(NOISE).map(() => (next() / 2 ** 32 - 0.5) * 0.8);

  o.out(`svc demo: ${o.n.toLocaleString("en-US")} seeded ${o.dim}-d float vectors -> ${o.dim}-bit rows`);
  const batch = 4096;
  const t0 = performance.now();
  for (let done = 0; done < o.n; done += batch) {
    const count = Math.min(batch, o.n - done);
    rotation.encode(makeVectors(count, o.dim, next, centres, noise), arena.reserve(count));
    if ((done / batch) % 8 === 0) process.stderr.write(`\r  encoding ${Math.round((100 * (done + count)) / o.n)}%`);
  }
  process.stderr.write("\r");
  const encodeMs = performance.now() - t0;
  const result: DemoResult = {
    n: o.n,
    dim: o.dim,
    queries: o.queries,
    encodeSeconds: encodeMs / 1000,
    scans: [],
    nearest: [],
    peakRssMb: 0,
  };
  o.out(
    `  generated + encoded in ${(encodeMs / 1000).toFixed(2)} s (${Math.round(o.n / (encodeMs / 1000)).toLocaleString("en-US")} vectors/s incl. generation)`,
  );

  const queries = makeVectors(o.queries, o.dim, next, centres, noise);
  const qRows = kernels.heap.alloc(o.queries * arena.rowBytes);
  rotation.encode(queries, qRows);
  const pool = new ScanPool(kernels, { threads: o.threads });
  try {
    const time = async (label: string, run: (j: number) => unknown) => {
      for (let j = 0; j < Math.min(10, o.queries); j++) await run(j);
      const ms: number[] = [];
      for (let j = 0; j < o.queries; j++) {
        const s = performance.now();
        await run(j);
        ms.push(performance.now() - s);
      }
      ms.sort((a, b) => a - b);
      const p50 = ms[Math.floor(ms.length / 2)]!;
      result.scans.push({ label, p50Ms: p50, p99Ms: ms[Math.floor(ms.length * 0.99)]!, mvecPerSecond: o.n / p50 / 1000 });
      o.out(
        `  ${label.padEnd(26)} p50 ${p50.toFixed(3)} ms  p99 ${ms[Math.floor(ms.length * 0.99)]!.toFixed(3)} ms  ${(o.n / p50 / 1000).toFixed(1)} Mvec/s`,
      );
    };
    o.out(`exact top-10 over ${o.n.toLocaleString("en-US")} rows, ${o.queries} queries:`);
    await time("in-thread", (j) => kernels.topK(arena, 0, arena.count, qRows + j * arena.rowBytes, 10));
    await time(`${pool.threads} workers (striped)`, (j) => pool.topK(arena, qRows + j * arena.rowBytes, 10, { stripes: pool.threads }));
    const first = kernels.topK(arena, 0, arena.count, qRows, 5);
    result.nearest = Array.from(first.rows, (row, i) => ({ row, distance: first.dists[i]! }));
    result.peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
    o.out(
      `query 0 nearest rows: ${Array.from(first.rows)
        .map((r, i) => `${r} (d=${first.dists[i]})`)
        .join(", ")}`,
    );
    o.out(
      `peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB (rows: ${Math.round((arena.count * arena.rowBytes) / 2 ** 20)} MB in shared memory)`,
    );
  } finally {
    await pool.close();
  }
  return result;
}

export const demoCommand: Command = {
  name: "demo",
  usage: `svc demo [--n 100000] [--dim 1024] [--queries 100] [--threads 2] [--seed 42]
      Encode seeded float vectors to 1-bit rows, run exact top-10 queries
      in-thread and across worker threads, print timings (--json: as JSON).`,
  options: {
    n: { type: "string" },
    dim: { type: "string" },
    queries: { type: "string" },
    threads: { type: "string" },
    seed: { type: "string" },
  },
  async run(values) {
    const json = values.json === true;
    const result = await runDemo({
      n: positiveInt("n", values.n, 100_000),
      dim: positiveInt("dim", values.dim, 1024),
      queries: positiveInt("queries", values.queries, 100),
      threads: positiveInt("threads", values.threads, 2),
      seed: positiveInt("seed", values.seed, 42),
      out: json ? () => undefined : say,
    });
    if (json) say(JSON.stringify(result));
    return 0;
  },
};
