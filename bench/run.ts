/** @module run — `npm run bench [-- --quick] [-- --only scan|engine|http|encoder|records|hd|directory|ann|mcp|hook|render]`: kernels, scans and peers, collections, the HTTP server, the text encoder, records, the HD layer; writes bench/results/*.json and bench/RESULTS.md. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { runEncoderBench } from "./encoder-bench.js";
import { runEngineBench } from "./engine-bench.js";
import { runHttpBench } from "./http-bench.js";
import { runKernelBench } from "./kernels-bench.js";
import { runProcessBench } from "./process-bench.js";
import { describeMachine } from "./machine.js";
import { runAnalogyBench } from "./hd-analogy-bench.js";
import { runHdCausalBench } from "./hd-causal-bench.js";
import { runKgBench } from "./hd-kg-bench.js";
import { runRecordsBench } from "./records-bench.js";
import { renderResults, type EncoderRun, type EngineRun, type HdRun, type HttpRun, type RecordsRun, type Results } from "./report.js";
import { runScanBench } from "./scan-bench.js";
import { renderDirectorySection, runDirectoryBench, type DirectoryRun } from "./directory-bench.js";
import { renderAnnSection, runAnnBench, runCranfieldRecall, type AnnBenchRun } from "./ann-bench.js";
import { keepSections, spliceSection } from "./stats.js";
import { renderMcpSection, runMcpBench, type McpRun } from "./mcp-bench.js";
import { renderHookSection, runHookBench, type HookRun } from "./hook-bench.js";

const here = (p: string) => new URL(p, import.meta.url);
const quick = process.argv.includes("--quick");
const onlyAt = process.argv.indexOf("--only");
// "scan" | "engine" | "http" | "encoder" | "records" | "hd" runs one suite; "render" re-renders RESULTS.md from the saved results (after editing ANALYSIS.md)
const only = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined;
const runs = (suite: "scan" | "engine" | "http" | "encoder" | "records" | "hd") => only === undefined || only === suite;
const log = (line: string) => process.stdout.write(`${line}\n`);
const stem = quick ? "quick" : "latest";
mkdirSync(here("results/"), { recursive: true });

async function runScans(): Promise<Results> {
  log(quick ? "svc bench (quick: N = 100k only)" : "svc bench: N = 100k and 1M x 1024 bits (takes a few minutes)");
  const machine = describeMachine();
  log(`${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`);
  log("\n# kernels");
  const kernels = await runKernelBench(log, quick ? 100 : 400);
  const { scans, probes, crossover } = await runScanBench({
    sizes: quick ? [100_000] : [100_000, 1_000_000],
    dimBits: 1024,
    k: 10,
    batch: 32,
    seed: 20261122,
    calls: quick ? 20 : 60,
    slowCalls: quick ? 4 : 12,
    log,
  });

  log("\n# whole process");
  const processRun = runProcessBench(quick ? 100_000 : 1_000_000, log);
  return { command: quick ? "npm run bench -- --quick" : "npm run bench", machine, scans, probes, crossover, kernels, processRun };
}

let results: Results | undefined;
if (runs("scan")) {
  results = await runScans();
  writeFileSync(here(`results/${stem}.json`), `${JSON.stringify(results, null, 2)}\n`);
} else if (existsSync(here(`results/${stem}.json`))) results = JSON.parse(readFileSync(here(`results/${stem}.json`), "utf8")) as Results;

let engine: EngineRun | undefined;
if (runs("engine")) {
  log("\n# collections (durable ingest, restart, filtered queries)");
  const n = quick ? 100_000 : 1_000_000;
  const result = await runEngineBench({ n, dim: 1024, recallQueries: quick ? 10 : 20, log });
  engine = {
    command: quick ? "npm run bench -- --quick --only engine" : "npm run bench -- --only engine",
    date: new Date().toISOString(),
    result,
  };
  writeFileSync(here(`results/engine-${stem}.json`), `${JSON.stringify(engine, null, 2)}\n`);
} else if (existsSync(here(`results/engine-${stem}.json`)))
  engine = JSON.parse(readFileSync(here(`results/engine-${stem}.json`), "utf8")) as EngineRun;

let http: HttpRun | undefined;
if (runs("http")) {
  log("\n# HTTP: svc serve in a child process under autocannon; durable ingest per wire format");
  const result = await runHttpBench({
    n: 100_000,
    ingestN: quick ? 20_000 : 100_000,
    dim: 1024,
    connections: 32,
    seconds: quick ? 3 : 15,
    warmupSeconds: quick ? 1 : 5,
    lanes: ["index", "hello", "msgpack"],
    peer: true,
    log,
  });
  http = { command: quick ? "npm run bench -- --quick --only http" : "npm run bench -- --only http", machine: describeMachine(), result };
  writeFileSync(here(`results/http-${stem}.json`), `${JSON.stringify(http, null, 2)}\n`);
} else if (existsSync(here(`results/http-${stem}.json`)))
  http = JSON.parse(readFileSync(here(`results/http-${stem}.json`), "utf8")) as HttpRun;

// The encoder suite is small (about 15 s) and identical in quick mode, so it always writes encoder-latest.json.
let encoder: EncoderRun | undefined;
if (runs("encoder")) {
  log("\n# text encoder (Cranfield nDCG@10: BM25, vectors, hybrid; texts/s; 1-bit recall)");
  const result = await runEncoderBench({ log });
  encoder = { command: "npm run bench -- --only encoder", machine: describeMachine(), result };
  writeFileSync(here("results/encoder-latest.json"), `${JSON.stringify(encoder, null, 2)}\n`);
} else if (existsSync(here("results/encoder-latest.json")))
  encoder = JSON.parse(readFileSync(here("results/encoder-latest.json"), "utf8")) as EncoderRun;

let records: RecordsRun | undefined;
if (runs("records")) {
  log("\n# records (ingest with embedding, query latency with and without filters, export/import)");
  const result = await runRecordsBench({
    sizes: quick ? [20_000] : [100_000, 1_000_000],
    queries: quick ? 50 : 200,
    exportUpTo: 100_000,
    log,
  });
  records = {
    command: quick ? "npm run bench -- --quick --only records" : "npm run bench -- --only records",
    machine: describeMachine(),
    result,
  };
  writeFileSync(here(`results/records-${stem}.json`), `${JSON.stringify(records, null, 2)}\n`);
} else if (existsSync(here(`results/records-${stem}.json`)))
  records = JSON.parse(readFileSync(here(`results/records-${stem}.json`), "utf8")) as RecordsRun;

let hd: HdRun | undefined;
if (runs("hd")) {
  log("\n# HD layer (knowledge graph accuracy and calibration, analogy latency, causal checks)");
  const kg = runKgBench(quick ? { sizes: [500, 1000, 2000, 5000] } : {});
  const kgPast = quick ? undefined : runKgBench({ sizes: [60_000], objects: 2000, queries: 300 });
  const analogy = await runAnalogyBench({ log });
  const causal = await runHdCausalBench(quick ? { worlds: 20_000 } : {});
  hd = {
    command: quick ? "npm run bench -- --quick --only hd" : "npm run bench -- --only hd",
    machine: describeMachine(),
    kg,
    kgPast,
    analogy,
    causal,
  };
  writeFileSync(here(`results/hd-${stem}.json`), `${JSON.stringify(hd, null, 2)}\n`);
} else if (existsSync(here(`results/hd-${stem}.json`))) hd = JSON.parse(readFileSync(here(`results/hd-${stem}.json`), "utf8")) as HdRun;

// `--only directory`: search p50/p99 at 100k generated profiles and profile-page render time; its section is spliced into RESULTS.md below.
let directory: DirectoryRun | undefined;
if (only === undefined || only === "directory") {
  log("\n# business directory (search at 100k generated profiles, profile pages, llms-full.txt)");
  const result = await runDirectoryBench({ n: quick ? 20_000 : 100_000, queries: quick ? 800 : 4000, log });
  directory = {
    command: quick ? "npm run bench -- --quick --only directory" : "npm run bench -- --only directory",
    machine: describeMachine(),
    result,
  };
  writeFileSync(here(`results/directory-${stem}.json`), `${JSON.stringify(directory, null, 2)}\n`);
} else if (existsSync(here(`results/directory-${stem}.json`)))
  directory = JSON.parse(readFileSync(here(`results/directory-${stem}.json`), "utf8")) as DirectoryRun;

// `--only ann`: the approximate index against usearch HNSW on the same clustered rows (add `--ann-1m` for N = 1M too); its section is spliced into RESULTS.md below.
let ann: AnnBenchRun | undefined;
if (only === undefined || only === "ann") {
  log("\n# approximate search (svc IVF vs usearch HNSW, recall@10 vs QPS, filters, build, memory, freshness)");
  const sizes = quick ? [20_000] : process.argv.includes("--ann-1m") ? [100_000, 1_000_000] : [100_000];
  const annRuns = [];
  // tight clusters, then overlapping ones (spread 2: where a fixed probe loses recall and the calibration must look further)
  for (const n of sizes)
    for (const spread of quick ? [1] : [1, 2]) annRuns.push(await runAnnBench({ n, queries: 200, seed: 20261123, spread, log }));
  const cranfield = await runCranfieldRecall(log);
  ann = {
    command: quick ? "npm run bench -- --quick --only ann" : `npm run bench -- --only ann${sizes.length > 1 ? " --ann-1m" : ""}`,
    date: new Date().toISOString(),
    runs: annRuns,
    cranfield,
  };
  writeFileSync(here(`results/ann-${stem}.json`), `${JSON.stringify(ann, null, 2)}\n`);
} else if (existsSync(here(`results/ann-${stem}.json`)))
  ann = JSON.parse(readFileSync(here(`results/ann-${stem}.json`), "utf8")) as AnnBenchRun;

// `--only mcp`: a tool call over /mcp and over stdio against the REST call it runs; its section is spliced into RESULTS.md below.
let mcp: McpRun | undefined;
if (only === undefined || only === "mcp") {
  log("\n# MCP tool calls (records_query over /mcp and stdio vs REST)");
  mcp = await runMcpBench({ calls: quick ? 100 : 500, log });
  writeFileSync(here(`results/mcp-${stem}.json`), `${JSON.stringify(mcp, null, 2)}\n`);
} else if (existsSync(here(`results/mcp-${stem}.json`))) mcp = JSON.parse(readFileSync(here(`results/mcp-${stem}.json`), "utf8")) as McpRun;

// `--only hook`: spawn-to-exit of `svc hook <kind>` against bare node (what a synchronous hook costs the agent); its section is spliced into RESULTS.md below.
let hook: HookRun | undefined;
if (only === undefined || only === "hook") {
  log("\n# svc hook latency (spawn to exit, vs bare node)");
  hook = await runHookBench({ runs: quick ? 10 : 30, log });
  writeFileSync(here(`results/hook-${stem}.json`), `${JSON.stringify(hook, null, 2)}\n`);
} else if (existsSync(here(`results/hook-${stem}.json`)))
  hook = JSON.parse(readFileSync(here(`results/hook-${stem}.json`), "utf8")) as HookRun;

if (!quick && results) {
  const previous = existsSync(here("RESULTS.md")) ? readFileSync(here("RESULTS.md"), "utf8") : "";
  writeFileSync(
    here("RESULTS.md"),
    keepSections(previous, renderResults(results, readFileSync(here("ANALYSIS.md"), "utf8"), engine, http, encoder, records, hd)),
  );
  log("\nwrote bench/results/*.json and bench/RESULTS.md");
} else {
  log("\nwrote bench/results/*.json (RESULTS.md is only regenerated by a full run)");
}
if (!quick && directory && existsSync(here("RESULTS.md"))) {
  writeFileSync(
    here("RESULTS.md"),
    spliceSection(readFileSync(here("RESULTS.md"), "utf8"), "directory", renderDirectorySection(directory)),
  );
  log("spliced the directory section into bench/RESULTS.md");
}
if (!quick && ann && existsSync(here("RESULTS.md"))) {
  writeFileSync(here("RESULTS.md"), spliceSection(readFileSync(here("RESULTS.md"), "utf8"), "ann", renderAnnSection(ann)));
  log("spliced the ann section into bench/RESULTS.md");
}
if (!quick && mcp && existsSync(here("RESULTS.md"))) {
  writeFileSync(here("RESULTS.md"), spliceSection(readFileSync(here("RESULTS.md"), "utf8"), "mcp", renderMcpSection(mcp)));
  log("spliced the mcp section into bench/RESULTS.md");
}
if (!quick && hook && existsSync(here("RESULTS.md"))) {
  writeFileSync(here("RESULTS.md"), spliceSection(readFileSync(here("RESULTS.md"), "utf8"), "hook", renderHookSection(hook)));
  log("spliced the hook section into bench/RESULTS.md");
}
