/**
 * Overwrite-heavy load against a real `svc serve` process (issue 19.4): load N vectors, measure
 * query req/s, overwrite every id R times, measure again in a read-only phase, show the dead
 * fraction of the namespace's rows on disk, then time a clean stop (SIGTERM to exit).
 *
 *   npx tsx bench/overwrite-bench.ts [--main dist/cli/main.js] [--n 20000] [--dim 128] [--rounds 3] [--seconds 3]
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: o } = parseArgs({
  options: {
    main: { type: "string", default: "dist/cli/main.js" },
    n: { type: "string", default: "20000" },
    dim: { type: "string", default: "128" },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "3" },
  },
});
const N = Number(o.n),
  DIM = Number(o.dim),
  ROUNDS = Number(o.rounds),
  SECONDS = Number(o.seconds),
  BATCH = 500,
  CONCURRENCY = 4;
const data = mkdtempSync(join(tmpdir(), "svc-overwrite-bench-"));
const child = spawn(process.execPath, [o.main!, "serve", "--port", "0", "--data", data, "--no-auth", "--log-level", "warn"], {
  stdio: ["ignore", "pipe", "inherit"],
});
let out = "";
const url = await new Promise<string>((resolve) =>
  child.stdout!.on("data", (b: Buffer) => {
    out += b;
    const m = /svc serving (http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]!);
  }),
);
const exited = new Promise<void>((r) => child.once("exit", () => r()));

let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const vector = () => Array.from({ length: DIM }, rand);
async function post(path: string, body: unknown): Promise<any> {
  const r = await fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}
async function writeAll(round: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < N; i += BATCH)
    await post("/v1/indexes/bench/vectors/upsert", {
      vectors: Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => ({ id: `v${i + j}`, values: vector(), metadata: { round } })),
    });
  return (N / (performance.now() - t)) * 1000;
}
async function queries(): Promise<number> {
  const queryVectors = Array.from({ length: 64 }, vector);
  const end = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      for (let i = w; performance.now() < end; i += CONCURRENCY) {
        await post("/v1/indexes/bench/query", { vector: queryVectors[i % 64], topK: 10 });
        done++;
      }
    }),
  );
  return done / SECONDS;
}
/** Dead fraction of the namespace's rows: 1 - live / rows of its newest partition generation (bits.bin size / row bytes). */
async function deadFraction(): Promise<{ rows: number; live: number; dead: number }> {
  const live = (await post("/v1/indexes/bench/describe_index_stats", {})).totalVectorCount as number;
  const parts = join(data, "tenants/local/indexes/bench/parts");
  const gens = readdirSync(parts)
    .filter((d) => existsSync(join(parts, d, "bits.bin")))
    .sort((a, b) => Number(b.slice(1)) - Number(a.slice(1)));
  const rows = statSync(join(parts, gens[0]!, "bits.bin")).size / (Math.ceil(DIM / 128) * 16);
  return { rows, live, dead: 1 - live / rows };
}
const fmt = (x: number) => x.toFixed(0);

await post("/v1/indexes", { name: "bench", dimension: DIM });
console.log(
  `overwrite bench: ${o.main}, N=${N}, dim=${DIM}, ${ROUNDS} overwrite rounds, ${SECONDS} s query phases, ${CONCURRENCY} concurrent queries`,
);
console.log(`load:            ${fmt(await writeAll(0))} vectors/s`);
await new Promise((r) => setTimeout(r, 500));
const d0 = await deadFraction();
console.log(`before:          ${fmt(await queries())} queries/s, rows ${d0.rows}, live ${d0.live}, dead ${(d0.dead * 100).toFixed(0)}%`);
for (let r = 1; r <= ROUNDS; r++) console.log(`overwrite ${r}:     ${fmt(await writeAll(r))} vectors/s`);
const d1 = await deadFraction();
console.log(`after writes:    rows ${d1.rows}, live ${d1.live}, dead ${(d1.dead * 100).toFixed(0)}%`);
await new Promise((r) => setTimeout(r, 2000)); // a read-only pause: background compaction may finish
const q1 = await queries();
const d2 = await deadFraction();
console.log(`read-only:       ${fmt(q1)} queries/s, rows ${d2.rows}, live ${d2.live}, dead ${(d2.dead * 100).toFixed(0)}%`);
const t = performance.now();
child.kill("SIGTERM");
await exited;
console.log(`clean stop:      ${((performance.now() - t) / 1000).toFixed(2)} s`);
rmSync(data, { recursive: true, force: true });
