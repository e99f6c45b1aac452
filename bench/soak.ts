/**
 * Soak: a real `svc serve` (dist/) under a steady mixed load, to tell data growth from a leak.
 *
 *   npx tsx bench/soak.ts --minutes 10 [--rate 120] [--clients 4] [--dim 384] [--live 10000] [--snapshots]
 *
 * The load, paced to `rate` requests/s over `clients` concurrent loops: index queries (top-10),
 * upserts that overwrite ids of a fixed pool of `live` ids, deletes of a few of them (re-upserted
 * later, so the index holds about `live` vectors all along), record ingests, record text queries,
 * record timelines, board reads; every 30 s records older than 2 minutes are forgotten, so the
 * record count is steady too. Every 10 s the server's RSS (/proc) is sampled with what makes it
 * up: the main isolate's V8 heap used and committed, its external memory and array buffers, the
 * scan workers' V8 heaps committed, the kernels' shared WebAssembly memory (all from its
 * /metrics), and the resident part of glibc malloc (from /proc/<pid>/smaps); progress is printed
 * every 30 s, and at the end the curve and the least-squares slope of the last half (MB/min). `--snapshots` starts the server with --heapsnapshot-signal and writes
 * a heap snapshot after the warm-up and one at the end into the data dir's `snapshots/` (kept).
 * `--record` splices the curve (one row a minute) into bench/RESULTS.md between `<!-- soak -->`
 * markers. Not part of `npm test`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startChild } from "./http/child.js";
import { describeMachine } from "./machine.js";
import { spliceSection } from "./stats.js";

const MAIN = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const SAMPLE_MS = 10_000;
const PROGRESS_MS = 30_000;
const INDEX = "soak";
const NS = "soak";
const WORDS =
  "memory agent vector index query record timeline board note decision plan error retry cache latency budget tenant wallet graph causal analogy encoder shard commit checkpoint compaction".split(
    " ",
  );

const { values: a } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    rate: { type: "string", default: "120" },
    clients: { type: "string", default: "4" },
    dim: { type: "string", default: "384" },
    live: { type: "string", default: "10000" },
    snapshots: { type: "boolean", default: false },
    record: { type: "boolean", default: false },
  },
});
const minutes = Number(a.minutes);
const rate = Number(a.rate);
const clients = Number(a.clients);
const dim = Number(a.dim);
const live = Number(a.live);

interface Sample {
  t: number;
  rssMB: number;
  mallocMB: number;
  heapMB: number;
  /** The main isolate's committed V8 heap (used + free pages it keeps). */
  committedMB: number;
  externalMB: number;
  arrayBuffersMB: number;
  /** The scan workers' committed V8 heaps, summed. */
  workersMB: number;
  /** The kernels' shared WebAssembly memory (it never shrinks). */
  wasmMB: number;
  requests: number;
  failed: number;
  vectors: number;
  records: number;
}

let seed = 0x50a4;
const rnd = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (n: number) => Math.floor(rnd() * n);
const vector = () => Array.from({ length: dim }, () => rnd() * 2 - 1);
const text = (n: number) => Array.from({ length: n }, () => WORDS[int(WORDS.length)]).join(" ");
const mb = (bytes: number) => bytes / 2 ** 20;
const clock = (ms: number) => `${Math.floor(ms / 60_000)}:${String(Math.floor((ms % 60_000) / 1000)).padStart(2, "0")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Least-squares slope of y over t (ms), per minute. */
function slopePerMinute(points: { t: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return (num / den) * 60_000;
}

function rssMB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Resident MB of glibc malloc (native allocations: addons, Node internals): the main arena
 * ([heap]) plus the per-thread arenas, anonymous mappings starting on a 64 MiB boundary.
 */
function mallocMB(pid: number): number {
  let kb = 0;
  let counting = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = BigInt(`0x${m[1]}`);
      const size = BigInt(`0x${m[2]}`) - start;
      counting = m[3] === "[heap]" || (m[3] === "" && start % (64n << 20n) === 0n && size <= 64n << 20n);
    } else if (counting && line.startsWith("Rss:")) kb += Number(line.split(/\s+/)[1]);
  }
  return kb / 1024;
}

function metric(text: string, name: string, labels = ""): number {
  let sum = 0;
  let found = false;
  for (const line of text.split("\n")) {
    if ((line.startsWith(`${name} `) || line.startsWith(`${name}{`)) && line.includes(labels)) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
      found = true;
    }
  }
  return found ? sum : NaN;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "svc-soak-"));
  const snapDir = join(dir, "snapshots");
  mkdirSync(snapDir);
  const nodeFlags = a.snapshots ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${snapDir}`] : [];
  const svc = await startChild([...nodeFlags, MAIN, "serve", "--port", "0", "--data", join(dir, "data"), "--log-level", "silent"]);
  const key = svc.adminKey;
  if (key === undefined) throw new Error("no admin key in the server's banner");
  const headers = { "api-key": key, "content-type": "application/json" };
  let requests = 0;
  let failed = 0;
  const failures = new Map<string, number>();
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(svc.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const raw = await res.text();
    requests++;
    if (!res.ok) {
      failed++;
      const k = `${method} ${path.replace(/\?.*/, "")} ${res.status}`;
      failures.set(k, (failures.get(k) ?? 0) + 1);
      return null;
    }
    return raw === "" ? {} : JSON.parse(raw);
  };

  console.log(
    `soak: svc pid ${svc.pid}, ${minutes} min, ${rate} req/s over ${clients} clients, index of ${live} x ${dim}-d live vectors, data ${dir}`,
  );
  await call("POST", "/v1/indexes", { name: INDEX, dimension: dim });
  for (let s = 0; s < live; s += 1000) {
    await call("POST", `/v1/indexes/${INDEX}/vectors/upsert`, {
      vectors: Array.from({ length: Math.min(1000, live - s) }, (_, i) => ({
        id: `v${s + i}`,
        values: vector(),
        metadata: { g: (s + i) % 10 },
      })),
    });
  }
  const deleted = new Set<number>();

  const ops: [number, () => Promise<unknown>][] = [
    [35, () => call("POST", `/v1/indexes/${INDEX}/query`, { vector: vector(), topK: 10, includeMetadata: true })],
    [5, () => call("POST", `/v1/indexes/${INDEX}/query`, { vector: vector(), topK: 10, filter: { g: { $eq: int(10) } } })],
    [
      20,
      () => {
        const ids = Array.from({ length: 50 }, () => int(live));
        for (const i of ids) deleted.delete(i);
        return call("POST", `/v1/indexes/${INDEX}/vectors/upsert`, {
          vectors: ids.map((i) => ({ id: `v${i}`, values: vector(), metadata: { g: i % 10 } })),
        });
      },
    ],
    [
      4,
      () => {
        const ids = Array.from({ length: 10 }, () => int(live));
        for (const i of ids) deleted.add(i);
        return call("POST", `/v1/indexes/${INDEX}/vectors/delete`, { ids: ids.map((i) => `v${i}`) });
      },
    ],
    [
      16,
      () =>
        call("POST", `/v1/records/${NS}`, {
          items: Array.from({ length: 5 }, () => ({
            kind: int(2) === 0 ? "note" : "decision",
            text: text(12 + int(30)),
            tags: [WORDS[int(WORDS.length)]!],
          })),
        }),
    ],
    [8, () => call("POST", `/v1/records/${NS}/query`, { text: text(4), topK: 10 })],
    [4, () => call("GET", `/v1/records/${NS}/timeline?limit=20`)],
    [8, () => call("GET", "/v1/board")],
  ];
  const total = ops.reduce((s, [w]) => s + w, 0);
  const pick = () => {
    let r = int(total);
    for (const [w, f] of ops) if ((r -= w) < 0) return f;
    return ops[0]![1];
  };

  const t0 = Date.now();
  const end = t0 + minutes * 60_000;
  const samples: Sample[] = [];
  const sample = async () => {
    const text = (await (await fetch(`${svc.url}/metrics`)).text()) as string;
    const stats = await call("GET", `/v1/indexes/${INDEX}/describe_index_stats`);
    const rs = await call("GET", `/v1/records/${NS}/stats`);
    samples.push({
      t: Date.now() - t0,
      rssMB: rssMB(svc.pid),
      mallocMB: mallocMB(svc.pid),
      heapMB: mb(metric(text, "svc_nodejs_heap_size_used_bytes")),
      committedMB: mb(metric(text, "svc_nodejs_heap_size_total_bytes")),
      externalMB: mb(metric(text, "svc_nodejs_external_memory_bytes")),
      arrayBuffersMB: mb(metric(text, "svc_process_array_buffers_bytes")),
      workersMB: mb(metric(text, "svc_pool_worker_heap_bytes", 'kind="total"')),
      wasmMB: mb(metric(text, "svc_kernels_shared_memory_bytes", 'kind="size"')),
      requests,
      failed,
      vectors: stats?.totalVectorCount ?? NaN,
      records: rs?.count ?? NaN,
    });
  };
  const row = (s: Sample) =>
    `${clock(s.t).padStart(6)} | ${s.rssMB.toFixed(0).padStart(6)} | ${s.mallocMB.toFixed(0).padStart(9)} | ${s.heapMB.toFixed(0).padStart(7)} | ${s.committedMB.toFixed(0).padStart(9)} | ${s.externalMB.toFixed(0).padStart(6)} | ${s.arrayBuffersMB.toFixed(0).padStart(5)} | ${s.workersMB.toFixed(0).padStart(10)} | ${s.wasmMB.toFixed(0).padStart(7)} | ${String(s.requests).padStart(8)} | ${String(s.failed).padStart(6)} | ${String(s.vectors).padStart(7)} | ${String(s.records).padStart(7)}`;
  const HEAD = `  time | RSS MB | malloc MB | heap MB | commit MB | ext MB | AB MB | workers MB | wasm MB | requests | failed | vectors | records`;

  await sample();
  console.log(HEAD);
  console.log(row(samples[0]!));
  if (a.snapshots) process.kill(svc.pid, "SIGUSR2");

  const interval = (1000 * clients) / rate;
  const loops = Array.from({ length: clients }, async () => {
    let next = Date.now();
    while (Date.now() < end) {
      await pick()().catch(() => {
        failed++;
      });
      next += interval;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  });
  const sampler = (async () => {
    let lastProgress = Date.now();
    while (Date.now() < end) {
      await sleep(Math.min(SAMPLE_MS, Math.max(0, end - Date.now())));
      await sample();
      if (Date.now() - lastProgress >= PROGRESS_MS - 1000) {
        lastProgress = Date.now();
        console.log(row(samples.at(-1)!));
      }
    }
  })();
  const forgetter = (async () => {
    while (Date.now() < end) {
      await sleep(PROGRESS_MS);
      await call("POST", `/v1/records/${NS}/forget`, { tsLt: Date.now() - 120_000 });
    }
  })();
  await Promise.all([...loops, sampler, forgetter]);
  if (a.snapshots) {
    process.kill(svc.pid, "SIGUSR2");
    await sleep(5000);
  }

  console.log(`\ncurve (every ${SAMPLE_MS / 1000} s):\n${HEAD}`);
  for (const s of samples) console.log(row(s));
  const half = samples.filter((s) => s.t >= (minutes * 60_000) / 2);
  const rssSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.rssMB })));
  const heapSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.heapMB })));
  const mallocSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.mallocMB })));
  const committedSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.committedMB })));
  const workersSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.workersMB })));
  const wasmSlope = slopePerMinute(half.map((s) => ({ t: s.t, y: s.wasmMB })));
  const first = samples[0]!;
  const last = samples.at(-1)!;
  console.log(
    `\nRSS ${first.rssMB.toFixed(0)} -> ${last.rssMB.toFixed(0)} MB, heap ${first.heapMB.toFixed(0)} -> ${last.heapMB.toFixed(0)} MB; slope of the last half: RSS ${rssSlope.toFixed(2)} MB/min, malloc ${mallocSlope.toFixed(2)} MB/min, heap ${heapSlope.toFixed(2)} MB/min, heap committed ${committedSlope.toFixed(2)} MB/min, workers ${workersSlope.toFixed(2)} MB/min, wasm ${wasmSlope.toFixed(2)} MB/min`,
  );
  console.log(
    `${requests} requests (${(requests / ((last.t || 1) / 1000)).toFixed(0)}/s), ${failed} failed${failures.size ? ": " + [...failures].map(([k, n]) => `${k} x${n}`).join(", ") : ""}`,
  );
  await svc.stop();
  if (a.record) {
    const results = fileURLToPath(new URL("RESULTS.md", import.meta.url));
    const perMinute = samples.filter(
      (s, i) => i === 0 || i === samples.length - 1 || Math.floor(s.t / 60_000) > Math.floor(samples[i - 1]!.t / 60_000),
    );
    const section = [
      "<!-- soak -->",
      `## Soak: memory under a steady mixed load (\`npx tsx bench/soak.ts --minutes ${minutes}\`)`,
      "",
      `${new Date().toISOString().slice(0, 10)}, ${describeMachine().cpu}. One \`svc serve\` (dist/), ${clients} clients paced to ${rate} req/s (achieved ${(last.requests / (last.t / 1000)).toFixed(0)}/s): index queries, overwriting upserts and deletes on a pool of ${live} ids (${dim}-d), record ingest/query/timeline (records older than 2 min forgotten every 30 s), board reads. malloc = resident glibc arenas (native memory); heap / commit = the main isolate's V8 heap used / committed; ext = its external memory, AB = its array buffers (part of ext); workers = the scan workers' V8 heaps committed; wasm = the kernels' shared WebAssembly memory.`,
      "",
      "| time | RSS MB | malloc MB | heap MB | commit MB | ext MB | AB MB | workers MB | wasm MB | requests | failed | vectors | records |",
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
      ...perMinute.map(
        (s) =>
          `| ${clock(s.t)} | ${s.rssMB.toFixed(0)} | ${s.mallocMB.toFixed(0)} | ${s.heapMB.toFixed(0)} | ${s.committedMB.toFixed(0)} | ${s.externalMB.toFixed(0)} | ${s.arrayBuffersMB.toFixed(0)} | ${s.workersMB.toFixed(0)} | ${s.wasmMB.toFixed(0)} | ${s.requests} | ${s.failed} | ${s.vectors} | ${s.records} |`,
      ),
      "",
      `Slope of the last half (least squares over the 10 s samples): RSS ${rssSlope.toFixed(2)} MB/min, malloc ${mallocSlope.toFixed(2)} MB/min, heap ${heapSlope.toFixed(2)} MB/min, heap committed ${committedSlope.toFixed(2)} MB/min, workers ${workersSlope.toFixed(2)} MB/min, wasm ${wasmSlope.toFixed(2)} MB/min.`,
      "<!-- /soak -->",
      "",
    ].join("\n");
    writeFileSync(results, spliceSection(readFileSync(results, "utf8"), "soak", section));
    console.log("spliced the soak section into bench/RESULTS.md");
  }
  if (a.snapshots) console.log(`heap snapshots kept in ${snapDir}`);
  else rmSync(dir, { recursive: true, force: true });
}

await main();
