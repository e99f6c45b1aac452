/** @module records-bench — the records layer in-process: ingest with embedding, query latency with and without filters at 100k and 1M, export/import MB/s. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TextEncoder1024 } from "../src/encoder/encoder.js";
import { Kernels } from "../src/kernels/abi.js";
import { mulberry32 } from "../src/kernels/random.js";
import { readContainer, writeContainer } from "../src/memory/container.js";
import { RecordService } from "../src/memory/records.js";
import { ScanPool } from "../src/pool/scan-pool.js";
import { docText, loadCranfield } from "./cranfield.js";
import { summarize, type Latency } from "./stats.js";

export interface RecordsScale {
  n: number;
  ingestPerSec: number;
  /** Main-thread share of ingest spent embedding. */
  embedSeconds: number;
  queries: Array<{ label: string; latency: Latency; meanResults: number }>;
  export?: { seconds: number; mb: number; mbPerSec: number };
  import?: { seconds: number; mb: number; mbPerSec: number };
}

export interface RecordsResult {
  scales: RecordsScale[];
  batch: number;
}

const KINDS = ["decision", "mistake", "handoff", "llm_turn", "tool_call", "note", "user_prompt", "assistant_turn"];
const TAGS = Array.from({ length: 50 }, (_, i) => `t${i}`);
const BATCH = 1000;

/**
 * Texts are 8-24 consecutive words from a random Cranfield document (real technical English),
 * kinds from 8 canonical kinds, 1-3 tags of 50, ts one second apart.
 */
function textSource(seed: number): (i: number) => { kind: string; text: string; tags: string[]; ts: number } {
  const words = loadCranfield()
    .docs.map((d) => docText(d).split(/\s+/).filter(Boolean))
    .filter((w) => w.length >= 8);
  const next = mulberry32(seed);
  return (i) => {
    const doc = words[next() % words.length]!;
    const len = 8 + (next() % 17);
    const start = next() % Math.max(1, doc.length - len);
    const tags = Array.from({ length: 1 + (next() % 3) }, () => TAGS[next() % TAGS.length]!);
    return {
      kind: KINDS[next() % KINDS.length]!,
      text: doc.slice(start, start + len).join(" "),
      tags: [...new Set(tags)],
      ts: 1_700_000_000_000 + i * 1000,
    };
  };
}

export async function runRecordsBench(o: {
  sizes: number[];
  queries: number;
  exportUpTo: number;
  log: (line: string) => void;
}): Promise<RecordsResult> {
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const encoder = TextEncoder1024.load();
  const scales: RecordsScale[] = [];
  try {
    for (const n of o.sizes) {
      const dir = mkdtempSync(join(tmpdir(), "svc-records-bench-"));
      const svc = new RecordService(dir, { kernels, pool, encoder });
      try {
        const gen = textSource(n);
        let embed = 0;
        const t0 = performance.now();
        for (let i = 0; i < n; i += BATCH) {
          const items = Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => gen(i + j));
          const e0 = performance.now();
          encoder.encodeBatch(items.map((x) => x.text)); // the same work ingest does, timed alone
          embed += performance.now() - e0;
          await svc.ingest("t", "bench", items);
          if ((i / BATCH) % 50 === 0) process.stderr.write(`\r  ingest ${Math.round(((i + BATCH) / n) * 100)}%`);
        }
        process.stderr.write("\r");
        const wall = (performance.now() - t0 - embed) / 1000; // the timing pass above embeds twice; count ingest's own once
        const ingestPerSec = n / wall;
        o.log(
          `records n=${n.toLocaleString("en-US")}: ingest ${Math.round(ingestPerSec).toLocaleString("en-US")} records/s including embedding (embedding alone ${Math.round(n / (embed / 1000)).toLocaleString("en-US")} texts/s)`,
        );

        const q = textSource(n + 7);
        const texts = Array.from({ length: o.queries }, (_, j) => q(j).text);
        const cases: Array<[string, (j: number) => Record<string, unknown>]> = [
          ["text, no filter", (j) => ({ text: texts[j], topK: 10, mode: "vector" })],
          ["text + kind (1 of 8)", (j) => ({ text: texts[j], topK: 10, mode: "vector", kind: [KINDS[j % KINDS.length]] })],
          [
            "text + tagsAll (2 tags, ~0.1%)",
            (j) => ({ text: texts[j], topK: 10, mode: "vector", tagsAll: [TAGS[j % 50], TAGS[(j + 1) % 50]] }),
          ],
          [
            "text + last 10% by ts",
            (j) => ({ text: texts[j], topK: 10, mode: "vector", tsGte: 1_700_000_000_000 + Math.floor(n * 0.9) * 1000 }),
          ],
          ["no text, kind, newest first", (j) => ({ topK: 10, kind: [KINDS[j % KINDS.length]] })],
        ];
        const queries: RecordsScale["queries"] = [];
        for (const [label, body] of cases) {
          for (let j = 0; j < Math.min(10, o.queries); j++) await svc.query("t", "bench", body(j));
          const ms: number[] = [];
          let results = 0;
          for (let j = 0; j < o.queries; j++) {
            const s = performance.now();
            const r = await svc.query("t", "bench", body(j));
            ms.push(performance.now() - s);
            results += r.records.length;
          }
          const latency = summarize(ms);
          queries.push({ label, latency, meanResults: results / o.queries });
          o.log(
            `  query ${label.padEnd(32)} p50 ${latency.p50.toFixed(2)} ms  p99 ${latency.p99.toFixed(2)} ms  (${(results / o.queries).toFixed(1)} results)`,
          );
        }
        const scale: RecordsScale = { n, ingestPerSec, embedSeconds: embed / 1000, queries };
        if (n <= o.exportUpTo) {
          const e0 = performance.now();
          const { zip } = await writeContainer("bench", await svc.all("t", "bench"), "bench");
          const es = (performance.now() - e0) / 1000;
          const mb = zip.length / 2 ** 20;
          const i0 = performance.now();
          const { records } = await readContainer(zip);
          await svc.restore("t", "copy", records, "replace");
          const is = (performance.now() - i0) / 1000;
          scale.export = { seconds: es, mb, mbPerSec: mb / es };
          scale.import = { seconds: is, mb, mbPerSec: mb / is };
          o.log(
            `  export ${mb.toFixed(1)} MB in ${es.toFixed(2)} s (${(mb / es).toFixed(1)} MB/s); import ${is.toFixed(2)} s (${(mb / is).toFixed(1)} MB/s, includes re-embedding ${records.length.toLocaleString("en-US")} texts)`,
          );
        }
        scales.push(scale);
      } finally {
        await svc.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await pool.close();
  }
  return { scales, batch: BATCH };
}

export function renderRecords(r: RecordsResult, command: string): string {
  const lines = [
    "## Records: ingest with embedding, query latency, export/import",
    "",
    `Generated by ${command}. In-process RecordService (the HTTP layer is measured in the HTTP section); texts are 8-24 word snippets of Cranfield documents, 8 kinds, 1-3 of 50 tags, ts one second apart; ingest in batches of ${r.batch}.`,
    "",
    "| records | ingest records/s (with embedding) | query | p50 ms | p99 ms | mean results |",
    "|---:|---:|---|---:|---:|---:|",
  ];
  for (const s of r.scales) {
    s.queries.forEach((q, i) =>
      lines.push(
        `| ${i === 0 ? s.n.toLocaleString("en-US") : ""} | ${i === 0 ? Math.round(s.ingestPerSec).toLocaleString("en-US") : ""} | ${q.label} | ${q.latency.p50.toFixed(2)} | ${q.latency.p99.toFixed(2)} | ${q.meanResults.toFixed(1)} |`,
      ),
    );
  }
  const ex = r.scales.filter((s) => s.export);
  if (ex.length > 0) {
    lines.push(
      "",
      "| records | container MB | export s | export MB/s | import s (re-embeds) | import MB/s |",
      "|---:|---:|---:|---:|---:|---:|",
    );
    for (const s of ex)
      lines.push(
        `| ${s.n.toLocaleString("en-US")} | ${s.export!.mb.toFixed(1)} | ${s.export!.seconds.toFixed(2)} | ${s.export!.mbPerSec.toFixed(1)} | ${s.import!.seconds.toFixed(2)} | ${s.import!.mbPerSec.toFixed(1)} |`,
      );
  }
  return `${lines.join("\n")}\n`;
}
