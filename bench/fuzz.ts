/**
 * Long hostile-request run against a real `svc serve` (the built dist/): the generators of
 * test/http/route-fuzz.test.ts over every route of the route table, round after round with
 * new seeds, until the time is up; then the victim tenant's snapshot must be unchanged.
 *
 *   npx tsx bench/fuzz.ts --minutes 10 [--seed 8198] [--concurrency 4]
 *
 * Prints requests, routes, answers by status, 5xx, hangs, dropped connections and each
 * distinct failure (route + reason) with one example request; exits 1 when anything failed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import fc from "fast-check";
import { startServerProcess } from "../test/e2e/server-process.js";
import { buildWorld, FUZZ_CONFIG, hostileRequest, send, targetsFrom, violation } from "../test/http/hostile-requests.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "1" },
    seed: { type: "string", default: String(0x2006) },
    concurrency: { type: "string", default: "4" },
  },
});
const minutes = Number(values.minutes);
const seed = Number(values.seed);
const concurrency = Number(values.concurrency);
if (!(minutes > 0) || !Number.isInteger(seed) || !(concurrency >= 1))
  throw new Error("usage: npx tsx bench/fuzz.ts --minutes N [--seed S] [--concurrency C]");

const dataDir = mkdtempSync(join(tmpdir(), "svc-fuzz-"));
writeFileSync(join(dataDir, "config.json"), JSON.stringify(FUZZ_CONFIG));
const server = await startServerProcess({ dataDir });
const base = new URL(server.url);
const targets = targetsFrom(await (await fetch(`${server.url}/v1/openapi.json`)).json());
const world = await buildWorld(server.url, server.adminKey!, dataDir);
const before = await world.snapshot();
const deadline = Date.now() + minutes * 60_000;
const byStatus = new Map<string, number>();
const failures = new Map<string, { count: number; example: string }>();
let requests = 0;
let round = 0;
const started = Date.now();

while (Date.now() < deadline) {
  // One round: 8 requests per route, routes in a shuffled order, `concurrency` in flight.
  const batch = targets.flatMap((t, i) => fc.sample(hostileRequest(t, world), { seed: seed + round * 1000 + i, numRuns: 8 }));
  fc.sample(
    fc.shuffledSubarray(
      batch.map((_, i) => i),
      { minLength: batch.length },
    ),
    { seed: seed + round, numRuns: 1 },
  )[0]!.forEach((j, k) => ([batch[k], batch[j]] = [batch[j]!, batch[k]!]));
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batch.length && Date.now() < deadline) {
        const req = batch[next++]!;
        const a = await send(base, req);
        requests++;
        const key = typeof a === "string" ? a : String(a.status);
        byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
        const why = violation(a);
        if (why !== null) {
          const id = `${req.route}: ${why.replace(/"message":"[^"]*"/, "").slice(0, 160)}`;
          const f = failures.get(id) ?? {
            count: 0,
            example: `${req.method} ${req.target.slice(0, 300)} ${JSON.stringify(req.headers)} body ${req.body?.toString("utf8", 0, 300) ?? "(none)"}`,
          };
          f.count++;
          failures.set(id, f);
        }
      }
    }),
  );
  round++;
  if (round % 5 === 0) await world.reseed();
  process.stderr.write(
    `\rround ${round}: ${requests} requests, ${failures.size} distinct failures, ${Math.round((Date.now() - started) / 1000)} s`,
  );
}
process.stderr.write("\n");
const after = await world.snapshot();
const changed = Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
const alive = (await fetch(`${server.url}/v1/health`)).status === 200;
const exit = await server.stop();
rmSync(dataDir, { recursive: true, force: true });

const count = (k: string) => byStatus.get(k) ?? 0;
const fivexx = [...byStatus].filter(([k]) => Number(k) >= 500).reduce((s, [, n]) => s + n, 0);
console.log(`command: npx tsx bench/fuzz.ts --minutes ${minutes} --seed ${seed} --concurrency ${concurrency}`);
console.log(
  `requests ${requests} over ${targets.length} routes in ${Math.round((Date.now() - started) / 1000)} s (${round} rounds), concurrency ${concurrency}`,
);
console.log(
  `answers: ${[...byStatus]
    .sort()
    .map(([k, n]) => `${k} x${n}`)
    .join(", ")}`,
);
console.log(`5xx ${fivexx}, hangs ${count("hang")}, dropped ${count("dropped")}, distinct failures ${failures.size}`);
console.log(
  `victim snapshot ${changed.length === 0 ? "unchanged" : `CHANGED: ${changed.join(", ")}`}; alive after: ${alive}; exit on SIGTERM: ${exit}`,
);
for (const [id, f] of failures) console.log(`- ${id} (x${f.count})\n    e.g. ${f.example}`);
process.exit(failures.size === 0 && changed.length === 0 && alive && exit === 0 ? 0 : 1);
