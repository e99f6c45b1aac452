/** @module directory-bench — business directory: search p50/p99 at 100k generated profiles (query mix by kind), index build, profile-page render, llms-full.txt. */
import { applyImport, checkImport, isoDate, type Business } from "../src/directory/identity.js";
import { checkBooking } from "../src/directory/booking.js";
import { llmsFull, renderProfile } from "../src/directory/page.js";
import { SearchIndex, type SearchQuery } from "../src/directory/search.js";
import { generateBusinesses, rng } from "../scripts/directory-demo.js";
import { loadavg } from "node:os";
import type { Machine } from "./machine.js";
import { summarize, type Latency } from "./stats.js";

export interface DirectoryResult {
  n: number;
  seed: number;
  generateMs: number;
  buildMs: number;
  queries: number;
  search: Latency;
  byKind: Array<{ kind: string; example: string; meanTotal: number; latency: Latency }>;
  render: Latency & { meanBytes: number };
  llmsFull: { ms: number; bytes: number };
  /** 1-minute load average when the search timing ended (the VM is shared: p99 follows it). */
  loadAvg: number;
}

export interface DirectoryRun {
  command: string;
  machine: Machine;
  result: DirectoryResult;
}

/** Businesses exactly as `svc directory import` would build them from the generator's lines. */
export function generatedBusinesses(n: number, seed: number): Business[] {
  const today = isoDate(Date.parse("2026-11-23T00:00:00Z"));
  return generateBusinesses(n, seed).map((raw) => {
    const rec = checkImport(raw, today);
    let b = applyImport(undefined, rec.id!, rec, "2026-11-23T00:00:00.000Z");
    if (rec.owner) b = { ...b, claim: { state: "claimed", date: today, owner: rec.owner } };
    if (rec.booking) b = { ...b, booking: checkBooking(rec.booking) };
    return b;
  });
}

type Kind = { kind: string; make: (b: Business, r: () => number) => SearchQuery };
const KINDS: Kind[] = [
  {
    kind: "category + town (all words)",
    make: (b) => ({ q: `${b.fields.category.value} ${b.fields.address!.value.locality}`, limit: 20, offset: 0 }),
  },
  {
    kind: "service phrase",
    make: (b, r) => ({ q: b.fields.services!.value[Math.floor(r() * b.fields.services!.value.length)]!, limit: 20, offset: 0 }),
  },
  {
    kind: "service word + town",
    make: (b) => ({ q: `${b.fields.services!.value[0]!.split(" ")[0]} ${b.fields.areas!.value.at(-1)}`, limit: 20, offset: 0 }),
  },
  { kind: "prefix (4 letters of the category)", make: (b) => ({ q: b.fields.category.value.slice(0, 4), limit: 20, offset: 0 }) },
  {
    kind: "partial fallback (one word matches nothing)",
    make: (b) => ({ q: `${b.fields.category.value} xylophone`, limit: 20, offset: 0 }),
  },
  {
    kind: "category filter + town",
    make: (b) => ({ q: b.fields.address!.value.locality, category: b.fields.category.value, limit: 20, offset: 0 }),
  },
  { kind: "name words (2)", make: (b) => ({ q: b.fields.name.value.split(" ").slice(0, 2).join(" "), limit: 20, offset: 0 }) },
  { kind: "empty query, page 50", make: () => ({ q: "", limit: 20, offset: 1000 }) },
];

export async function runDirectoryBench(opts: {
  n: number;
  queries: number;
  seed?: number;
  log: (line: string) => void;
}): Promise<DirectoryResult> {
  const seed = opts.seed ?? 20261123;
  const { log } = opts;
  let t0 = performance.now();
  const bs = generatedBusinesses(opts.n, seed);
  const generateMs = performance.now() - t0;
  t0 = performance.now();
  const index = new SearchIndex(bs);
  const buildMs = performance.now() - t0;
  log(`generated ${opts.n.toLocaleString("en-US")} profiles in ${generateMs.toFixed(0)} ms; index built in ${buildMs.toFixed(0)} ms`);

  const r = rng(seed ^ 0x5eed);
  const plan = Array.from({ length: opts.queries }, (_, i) => {
    const k = KINDS[i % KINDS.length]!;
    return { kind: k.kind, q: k.make(bs[Math.floor(r() * bs.length)]!, r) };
  });
  for (const p of plan.slice(0, 200)) index.search(p.q); // warm-up
  const times = new Map<string, number[]>();
  const totals = new Map<string, number>();
  const all: number[] = [];
  for (const p of plan) {
    const s = process.hrtime.bigint();
    const res = index.search(p.q);
    const ms = Number(process.hrtime.bigint() - s) / 1e6;
    all.push(ms);
    (times.get(p.kind) ?? times.set(p.kind, []).get(p.kind)!).push(ms);
    totals.set(p.kind, (totals.get(p.kind) ?? 0) + res.total);
  }
  const search = summarize(all);
  const loadAvg = Math.round(loadavg()[0]! * 100) / 100;
  log(`search over ${opts.queries} queries: p50 ${search.p50.toFixed(3)} ms, p99 ${search.p99.toFixed(3)} ms`);
  const byKind = KINDS.map((k) => {
    const latency = summarize(times.get(k.kind)!);
    const example = plan.find((p) => p.kind === k.kind)!.q;
    log(`  ${k.kind}: p50 ${latency.p50.toFixed(3)} ms, p99 ${latency.p99.toFixed(3)} ms`);
    return {
      kind: k.kind,
      example: JSON.stringify({ q: example.q, ...(example.category ? { category: example.category } : {}) }),
      meanTotal: Math.round(totals.get(k.kind)! / latency.samples),
      latency,
    };
  });

  const base = "http://127.0.0.1:8080";
  const renderTimes: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 2200; i++) {
    const b = bs[Math.floor(r() * bs.length)]!;
    const s = process.hrtime.bigint();
    const html = renderProfile(b, base);
    if (i >= 200) {
      renderTimes.push(Number(process.hrtime.bigint() - s) / 1e6);
      bytes += html.length;
    }
  }
  const render = { ...summarize(renderTimes), meanBytes: Math.round(bytes / renderTimes.length) };
  log(`profile page render: p50 ${render.p50.toFixed(3)} ms, p99 ${render.p99.toFixed(3)} ms, ${render.meanBytes} bytes`);
  t0 = performance.now();
  const text = llmsFull(
    bs.filter((b) => b.listed),
    base,
  );
  const llms = { ms: performance.now() - t0, bytes: Buffer.byteLength(text) };
  log(`llms-full.txt of ${opts.n.toLocaleString("en-US")} profiles: ${llms.ms.toFixed(0)} ms, ${(llms.bytes / 2 ** 20).toFixed(1)} MiB`);
  return { n: opts.n, seed, generateMs, buildMs, queries: opts.queries, search, byKind, render, llmsFull: llms, loadAvg };
}

const f = (x: number, d = 3) => x.toFixed(d);

export function renderDirectorySection(run: DirectoryRun): string {
  const r = run.result;
  const m = run.machine;
  const lines = [
    "<!-- directory -->",
    `## Business directory: search and profile pages at N = ${r.n.toLocaleString("en-US")} generated profiles`,
    "",
    `Generated by \`${run.command}\` on ${m.date.slice(0, 10)} (${m.cpu}, ${m.cores} cores, Node ${m.node}). Profiles from \`scripts/directory-demo.ts\` (seed ${r.seed});`,
    `in-process \`SearchIndex.search\` (src/directory/search.ts), limit 20, one query at a time after 200 warm-up queries; index build ${f(r.buildMs, 0)} ms.`,
    `1-minute load average at the end of the search timing: ${r.loadAvg ?? "not recorded"} on ${m.cores} cores (the p99 column is mostly other processes and GC pauses when that exceeds the core count).`,
    "",
    "| target | goal | reached |",
    "|---|---|---|",
    `| search p50, ${r.queries} mixed queries | <= 2 ms | ${f(r.search.p50)} ms (p99 ${f(r.search.p99)} ms) |`,
    "",
    "| query kind | example | mean matches | p50 ms | p99 ms |",
    "|---|---|---:|---:|---:|",
    ...r.byKind.map(
      (k) =>
        `| ${k.kind} | \`${k.example.replace(/\|/g, "\\|")}\` | ${k.meanTotal.toLocaleString("en-US")} | ${f(k.latency.p50)} | ${f(k.latency.p99)} |`,
    ),
    "",
    `Profile page (GET /businesses/{id} body: HTML + JSON-LD), ${r.render.samples} random profiles: p50 ${f(r.render.p50)} ms, p99 ${f(r.render.p99)} ms, ${r.render.meanBytes.toLocaleString("en-US")} bytes on average.`,
    `llms-full.txt over all ${r.n.toLocaleString("en-US")} profiles: ${f(r.llmsFull.ms, 0)} ms, ${(r.llmsFull.bytes / 2 ** 20).toFixed(1)} MiB.`,
    "<!-- /directory -->",
    "",
  ];
  return lines.join("\n");
}
