/**
 * End to end with the official Pinecone client (v8) against the built `svc serve`: indexes of metric `dotproduct` and
 * `euclidean` (issue 33 item 2) on vectors of norms 0.5-3. The metric is stored and described; query results are checked
 * against brute force computed here (recall@10, and each score is the metric's: q·x, or |q - x|² smaller first); an
 * unknown metric is a 400 naming the field, and creates nothing.
 */
import { Pinecone, type PineconeRecord } from "@pinecone-database/pinecone";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/kernels/random.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";
import { eventually } from "./until.js";

const DIM = 24;
const N = 600;
const K = 10;
const next = mulberry32(330002);
const rand = () => next() / 4294967296;
const f32 = (v: number[]): number[] => Array.from(Float32Array.from(v));

/** 30 directions, rows around them, each scaled to a norm in [0.5, 3]. */
const centres = Array.from({ length: 30 }, () => Array.from({ length: DIM }, () => rand() * 2 - 1));
function vec(): number[] {
  const c = centres[Math.floor(rand() * centres.length)]!;
  const v = c.map((x) => x + 0.3 * (rand() * 2 - 1));
  const norm = Math.hypot(...v);
  const want = 0.5 + 2.5 * rand();
  return f32(v.map((x) => (x * want) / norm));
}
const records: PineconeRecord[] = Array.from({ length: N }, (_, i) => ({ id: `v${i}`, values: vec() }));
const queries = Array.from({ length: 20 }, vec);

const dot = (a: number[], b: number[]) => a.reduce((s, x, j) => s + x * b[j]!, 0);
const sq = (a: number[], b: number[]) => a.reduce((s, x, j) => s + (x - b[j]!) ** 2, 0);
/** Pinecone's score of x for q under the metric, and whether smaller is better. */
const scoreOf = (metric: "dotproduct" | "euclidean", q: number[], x: number[]) => (metric === "dotproduct" ? dot(q, x) : sq(q, x));

describe("dotproduct and euclidean indexes through the official Pinecone v8 client", () => {
  let server: ServerProcess;
  let pc: Pinecone;

  beforeAll(async () => {
    server = await startServerProcess();
    pc = new Pinecone({ apiKey: server.adminKey!, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await server?.dispose();
  });

  for (const metric of ["dotproduct", "euclidean"] as const) {
    it(`${metric}: created, described with its metric, queried: recall@10 >= 0.99 against brute force, scores are the metric's`, async () => {
      const name = `m-${metric}`;
      const created = await pc.createIndex({
        name,
        dimension: DIM,
        metric,
        spec: { serverless: { cloud: "aws", region: "us-east-1" } },
        waitUntilReady: true,
        timeout: 10_000,
      });
      expect(created).toMatchObject({ name, dimension: DIM, metric });
      expect((await pc.describeIndex(name)).metric).toBe(metric);
      const index = pc.index({ name });
      for (let i = 0; i < N; i += 200) await index.upsert({ records: records.slice(i, i + 200) });
      await eventually(async () => expect((await index.describeIndexStats()).totalRecordCount).toBe(N));
      // The client drops `metric` from the stats it returns: read them over plain HTTP.
      const raw = await fetch(`${server.url}/v1/indexes/${name}/describe_index_stats`, { headers: { "api-key": server.adminKey! } });
      expect(((await raw.json()) as { metric: string }).metric).toBe(metric);

      let hits = 0;
      for (const q of queries) {
        const got = await index.query({ vector: q, topK: K });
        const truth = records
          .map((r) => ({ id: r.id, s: scoreOf(metric, q, r.values!) }))
          .sort((a, b) => (metric === "euclidean" ? a.s - b.s : b.s - a.s));
        const want = new Set(truth.slice(0, K).map((t) => t.id));
        hits += got.matches.filter((m) => want.has(m.id)).length;
        const byId = new Map(records.map((r) => [r.id, r.values!]));
        for (const m of got.matches) expect(m.score).toBeCloseTo(scoreOf(metric, q, byId.get(m.id)!), 3);
        const scores = got.matches.map((m) => m.score!);
        expect(scores).toEqual([...scores].sort((a, b) => (metric === "euclidean" ? a - b : b - a)));
      }
      expect(hits / (queries.length * K)).toBeGreaterThanOrEqual(0.99);
      await pc.deleteIndex(name);
    });
  }

  it("an unknown metric is a 400 naming the field, and no index is created", async () => {
    const res = await fetch(`${server.url}/v1/indexes`, {
      method: "POST",
      headers: { "api-key": server.adminKey!, "content-type": "application/json" },
      body: JSON.stringify({
        name: "m-bad",
        dimension: 8,
        metric: "manhattan",
        spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; field?: string; message: string } };
    expect(body.error).toMatchObject({ code: "E_BAD_REQUEST", field: "metric" });
    expect(body.error.message).toMatch(/cosine, dotproduct, euclidean/);
    expect((await pc.listIndexes()).indexes?.map((i) => i.name) ?? []).not.toContain("m-bad");
    // The client itself refuses it before sending; a metric in another case is what it sends as given: accepted, stored lowercase.
    const mixed = await pc.createIndex({
      name: "m-mixed",
      dimension: 8,
      metric: "Euclidean" as "euclidean",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    });
    expect(mixed?.metric ?? (await pc.describeIndex("m-mixed")).metric).toBe("euclidean");
  });
});
