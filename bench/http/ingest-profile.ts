/** @module ingest-profile — a short ingest against `svc serve` (msgpack float32 bins, or --format json|msgpack|protobuf): prints acknowledged vectors/s, server CPU per vector, CPU and page faults per server thread and, with --prof DIR (under --cpu-prof), main-thread CPU per vector by write-path stage.
 * `npm run build:ts && npx tsx bench/http/ingest-profile.ts --n 40000 [--format json] [--prof DIR] [--perf FILE] [--settle MS] [--main other/dist/cli/main.js]` (SVC_TID=1: one line per thread id).
 * --warm N: first ingest N vectors into another index and delete it (JIT-compiles the write path: V8's compiler threads took ~4-5 µs a vector of a cold 40k ingest), then the timed one.
 * --settle MS: also the server's CPU per vector over the ingest and the MS after it (background work the ingest left: a depth calibration, an index build).
 * --perf FILE: `perf record -e cpu-clock -g` of the server over the ingest only (not its start), with node's --perf-basic-prof-only-functions so JavaScript frames have names; read it with `perf report -i FILE --tid <main pid>`. */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ClusteredVectors } from "../engine/vectors.js";
import { Api } from "./api.js";
import { FORMATS, upsertBodies, type Format } from "./bodies.js";
import { startChild, threadCpu } from "./child.js";
import { ingest } from "./ingest.js";
import { profileStages } from "./profile-stages.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : process.argv[i + 1]!;
};
const n = Number(arg("n", "60000")),
  dim = Number(arg("dim", "1024")),
  batch = Number(arg("batch", "1000")),
  clients = Number(arg("clients", "4"));
const format = arg("format", "msgpack-f32") as Format;
const profDir = arg("prof", "");
const perfFile = arg("perf", "");
const settleMs = Number(arg("settle", "0"));
const warm = Number(arg("warm", "0"));
const MAIN = arg("main", fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), "svc-ingest-profile-"));
const node = [...(profDir ? ["--cpu-prof", "--cpu-prof-dir", profDir] : []), ...(perfFile ? ["--perf-basic-prof-only-functions"] : [])];
const svc = await startChild([...node, MAIN, "serve", "--port", "0", "--data", dir, "--log-level", "silent"]);
try {
  const key = svc.adminKey!;
  const api = new Api(svc.url, key);
  const data = new ClusteredVectors(dim, 20261122);
  const bodies = upsertBodies(format, data, n, batch);
  const counts = bodies.map((_, i) => Math.min(batch, n - i * batch));
  if (warm > 0) {
    const warmBodies = upsertBodies(format, new ClusteredVectors(dim, 20261123), warm, batch);
    await api.createIndex("warm", dim);
    await ingest(
      api,
      "warm",
      warmBodies,
      warmBodies.map((_, i) => Math.min(batch, warm - i * batch)),
      FORMATS[format].contentType,
      clients,
      svc.pid,
    );
    await api.deleteIndex("warm"); // its depth calibration, waiting for quiet, is dropped
    await new Promise((r) => setTimeout(r, 1000));
  }
  await api.createIndex("ingest", dim);
  const perf = perfFile
    ? spawn("perf", ["record", "-e", "cpu-clock", "-F", "1999", "-g", "-o", perfFile, "-p", String(svc.pid)], { stdio: "ignore" })
    : null;
  if (perf) await new Promise((r) => setTimeout(r, 500)); // perf attaches
  // The WAL's fdatasyncs over the ingest (every WAL of the process), from /metrics: count and seconds.
  const fsyncs = async () => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    const v = (name: string) => Number(new RegExp(`^svc_wal_fsync_seconds_${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
    return { count: v("count"), seconds: v("sum") };
  };
  const fsync0 = await fsyncs();
  const before = threadCpu(svc.pid);
  const t = await ingest(api, "ingest", bodies, counts, FORMATS[format].contentType, clients, svc.pid);
  const after = threadCpu(svc.pid);
  const fsync1 = await fsyncs();
  if (perf) {
    perf.kill("SIGINT");
    await new Promise((r) => perf.once("exit", r));
    console.log(`perf: ${perfFile}, server main thread = tid ${svc.pid}`);
  }
  console.log(
    `${FORMATS[format].label}: ${n} x ${dim}-d, batch ${batch}, ${clients} in flight: ${Math.round(t.ackedPerSec)} acked/s, ${Math.round(t.visiblePerSec)} visible/s, server ${t.serverCores.toFixed(2)} cores (client ${t.clientCores.toFixed(2)}), ${((t.serverCores / t.ackedPerSec) * 1e6).toFixed(1)} µs server CPU per vector`,
  );
  const syncs = fsync1.count - fsync0.count,
    syncSeconds = fsync1.seconds - fsync0.seconds;
  console.log(
    `WAL fdatasyncs over the ingest (to visible): ${syncs}, ${((syncSeconds / syncs) * 1e3).toFixed(1)} ms each, ${((syncSeconds / t.visibleSeconds) * 100).toFixed(0)}% of the time in one`,
  );
  // Per thread over the whole ingest (acknowledged and applied): the main thread, the scan/encode workers, libuv's pool (WAL writes, fdatasync).
  for (const [name, a] of after) {
    const b = before.get(name) ?? { user: 0, system: 0, minflt: 0 };
    const us = (x: number) => ((x * 1e6) / n).toFixed(1);
    console.log(
      `thread ${name.padEnd(16)} user ${us(a.user - b.user).padStart(6)} µs/vector, system ${us(a.system - b.system).padStart(6)} µs/vector, ${((a.minflt - b.minflt) / n).toFixed(2)} minor faults/vector`,
    );
  }
  if (settleMs > 0) {
    await new Promise((r) => setTimeout(r, settleMs));
    const total = (m: Map<string, { user: number; system: number }>) => [...m.values()].reduce((a, t) => a + t.user + t.system, 0);
    console.log(
      `server CPU per vector over the ingest and ${settleMs} ms after: ${(((total(threadCpu(svc.pid)) - total(before)) * 1e6) / n).toFixed(1)} µs`,
    );
  }
} finally {
  await svc.stop(); // the profile is written on exit
  rmSync(dir, { recursive: true, force: true });
}
if (profDir) for (const [stage, us] of profileStages(profDir, n)) console.log(`${stage.padEnd(48)} ${us.toFixed(2).padStart(7)} µs/vector`);
