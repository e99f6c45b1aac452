/**
 * @module recall.test — the records pipeline (encoder -> seeded rotation -> 1-bit scan -> estimate
 * -> float rescoring) against exact float cosine over the same encoder vectors, on the real
 * Cranfield collection: recall@10 must be at least 0.97 (the bar), and text queries
 * through the HTTP-less service must rank as the exact search does at the top.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { docText, loadCranfield } from "../../bench/cranfield.js";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { Kernels } from "../../src/kernels/abi.js";
import { RecordService } from "../../src/memory/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const dir = mkdtempSync(join(tmpdir(), "svc-recall-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 2 });
const encoder = TextEncoder1024.load();
const svc = new RecordService(dir, { kernels, pool, encoder, durability: "none" });
afterAll(async () => {
  await svc.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

it("recall@10 of the 1-bit pipeline vs exact float cosine is >= 0.97 on Cranfield (1,400 docs, 225 queries)", async () => {
  const { docs, queries } = loadCranfield();
  const texts = docs.map(docText).filter((t) => t.trim() !== "");
  const ids: string[] = [];
  for (let i = 0; i < texts.length; i += 1000) {
    ids.push(
      ...(
        await svc.ingest(
          "t",
          "cran",
          texts.slice(i, i + 1000).map((text) => ({ kind: "doc", text })),
        )
      ).ids,
    );
  }
  const dim = encoder.dimension;
  const docVecs = encoder.encodeBatch(texts);
  let hit = 0;
  for (const q of queries) {
    const qv = encoder.encodeBatch([q.text]);
    const exact = texts
      .map((_, i) => {
        let dot = 0;
        for (let j = 0; j < dim; j++) dot += docVecs[i * dim + j]! * qv[j]!;
        return { id: ids[i]!, dot };
      })
      .sort((a, b) => b.dot - a.dot)
      .slice(0, 10)
      .map((e) => e.id);
    const got = (await svc.query("t", "cran", { text: q.text, topK: 10, mode: "vector" })).records.map((r) => r.id);
    expect(got).toHaveLength(10);
    hit += got.filter((id) => exact.includes(id)).length;
  }
  const recall = hit / (10 * queries.length);
  expect(queries.length).toBe(225);
  expect(recall).toBeGreaterThanOrEqual(0.97);
});
