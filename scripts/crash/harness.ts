/** @module harness — SIGKILL a writer at random moments, reopen, and prove the collection holds exactly an acknowledged prefix. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Collection } from "../../src/engine/collection.js";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { NS, applyBatch, batchOp, valuesFor } from "./workload.js";

const CHILD = fileURLToPath(new URL("./child.ts", import.meta.url));

export interface CrashOptions {
  dir: string;
  cycles: number;
  seed: number;
  /** Longest wait after the writer is ready before the kill, ms. */
  maxDelayMs?: number;
  log?: (line: string) => void;
}

export interface CrashSummary {
  cycles: number;
  /** Batches acknowledged in total, and the final prefix the collection holds. */
  acked: number;
  prefix: number;
  ids: number;
  /** Cycles where the kill landed before the writer was ready (during open/recovery). */
  killedDuringOpen: number;
  /** Cycles whose recovery cut a torn tail. */
  tornTails: number;
  /** Batches sent but lost (never acknowledged): allowed, since they were never acknowledged. */
  unacknowledgedLost: number;
}

interface ChildRun {
  ready: boolean;
  sent: number;
  acked: number;
}

/** Run the writer until it is killed `delay` ms after ready (or, with `early`, `delay` ms after spawn). */
function runChild(dir: string, first: number, delay: number, early: boolean): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, dir, String(first)], { stdio: ["ignore", "pipe", "pipe"] });
    const run: ChildRun = { ready: false, sent: first - 1, acked: first - 1 };
    let buf = "";
    let err = "";
    const kill = () => child.kill("SIGKILL");
    if (early) setTimeout(kill, delay);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const [word, n] = buf.slice(0, nl).split(" ");
        buf = buf.slice(nl + 1);
        if (word === "ready") {
          run.ready = true;
          if (!early) setTimeout(kill, delay);
        } else if (word === "sent") run.sent = Math.max(run.sent, Number(n));
        else if (word === "ack") run.acked = Math.max(run.acked, Number(n));
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("exit", (code, signal) => {
      if (signal === "SIGKILL") resolve(run);
      else reject(new Error(`writer exited with ${code ?? signal} before the kill:\n${err}`));
    });
  });
}

function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

export async function runCrashCycles(o: CrashOptions): Promise<CrashSummary> {
  const log = o.log ?? (() => {});
  const next = mulberry32(o.seed);
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 1 });
  const state = new Map<string, number>(); // id -> batch, for the verified prefix
  let prefix = -1;
  const summary: CrashSummary = { cycles: 0, acked: 0, prefix: -1, ids: 0, killedDuringOpen: 0, tornTails: 0, unacknowledgedLost: 0 };
  try {
    for (let cycle = 0; cycle < o.cycles; cycle++) {
      const start = prefix;
      const early = next() % 10 === 0;
      const delay = early ? 150 + (next() % 600) : next() % (o.maxDelayMs ?? 250);
      const run = await runChild(o.dir, prefix + 1, delay, early);
      if (!run.ready) summary.killedDuringOpen++;

      const c = await Collection.open(o.dir, { kernels, pool });
      if (c.recovery.tornTail) summary.tornTails++;
      // Batches up to run.acked must be there; any later sent batch may be. Find the prefix.
      const lo = Math.max(prefix, run.acked);
      for (let b = prefix + 1; b <= lo; b++) applyBatch(state, b);
      const touched = new Set<string>();
      for (let b = lo + 1; b <= run.sent; b++) for (const id of batchOp(b).ids) touched.add(id);
      const count = c.stats().namespaces[NS]?.vectorCount ?? 0;
      // Ids no later batch touched must hold exactly what the acknowledged prefix says.
      const stable = [...state.keys()].filter((id) => !touched.has(id));
      const got = new Map(c.fetch(NS, stable).map((v) => [v.id, v]));
      for (const id of stable) {
        const v = got.get(id);
        const b = state.get(id)!;
        if (v === undefined) throw new Error(`cycle ${cycle}: acknowledged id ${id} (batch ${b}) is missing`);
        if (v.metadata.b !== b || !sameValues(v.values, valuesFor(id, b)))
          throw new Error(`cycle ${cycle}: id ${id} holds batch ${String(v.metadata.b)}'s record, expected batch ${b}`);
      }
      // null: no prefix matched yet (-1 is a prefix: nothing acknowledged before the kill in the first cycle)
      let matched: number | null = null;
      const candidate = new Map(state);
      for (let p = lo; p <= run.sent && matched === null; p++) {
        if (p > lo) applyBatch(candidate, p);
        if (candidate.size !== count) continue;
        const ids = [...touched];
        const fetched = new Map(c.fetch(NS, ids).map((v) => [v.id, v]));
        const ok = ids.every((id) => {
          const want = candidate.get(id);
          const v = fetched.get(id);
          if (want === undefined) return v === undefined;
          return v !== undefined && v.metadata.b === want && sameValues(v.values, valuesFor(id, want));
        });
        if (ok) matched = p;
      }
      if (matched === null)
        throw new Error(
          `cycle ${cycle}: the collection (${count} ids) matches no prefix between acknowledged batch ${lo} and sent batch ${run.sent}`,
        );
      for (let b = lo + 1; b <= matched; b++) applyBatch(state, b);
      summary.unacknowledgedLost += run.sent - matched;
      prefix = matched;
      if (state.size > 0) {
        // The recovered rows are searchable: a stored vector finds itself first.
        const ids = [...state.keys()];
        const id = ids[next() % ids.length]!;
        const top = await c.query(NS, { vector: valuesFor(id, state.get(id)!), topK: 1 });
        if (top.matches[0]?.score === undefined || top.matches[0].score < 0.9999)
          throw new Error(`cycle ${cycle}: query for ${id} found ${JSON.stringify(top.matches)}`);
      }
      await c.close();
      summary.cycles++;
      summary.acked += Math.max(0, run.acked - start);
      log(
        `cycle ${cycle + 1}/${o.cycles}: ${run.ready ? `killed ${delay} ms after ready` : `killed ${delay} ms after spawn (during open)`}; acked through ${run.acked}, sent through ${run.sent}, recovered prefix ${matched}, ${state.size} ids${c.recovery.tornTail ? `, torn tail cut at ${c.recovery.tornTail.offset}` : ""}`,
      );
    }
  } finally {
    await pool.close();
  }
  summary.prefix = prefix;
  summary.ids = state.size;
  return summary;
}
