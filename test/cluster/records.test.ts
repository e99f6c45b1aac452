/**
 * Records in cluster mode, with real processes (svc-cluster.ts: 3 nats-servers, 3 `svc serve --cluster`
 * nodes): a tenant's records are shards on the log served by every node (cluster/sharded-records.ts).
 * The answers through any node equal those of one RecordService on one node over the same records
 * (cosine and hybrid rankings and scores, timeline pages, stats), an export and import (replace, run on
 * the home node: shard by shard moves) copy a namespace exactly, and after kill -9 of the home node
 * records ingest and query go on through the other two within 15 s with every acknowledged record readable.
 * First, read-your-writes tokens with shards on several log streams.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { Kernels } from "../../src/kernels/abi.js";
import { RecordService } from "../../src/memory/records.js";
import { timelineRequest } from "../../src/http/routes/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

let c: SvcCluster;
const root = mkdtempSync(join(tmpdir(), "svc-records-cluster-"));
const kernels = Kernels.create();
const pool = new ScanPool(kernels, { threads: 1, inlineBelow: 1000 });
const local = new RecordService(root, { kernels, pool, encoder: TextEncoder1024.load(), durability: "none" });

beforeAll(async () => {
  c = await startSvcCluster(3);
  const me = await callNode(c.urls[0]!, "GET", "/v1/wallet", undefined, c.adminKey);
  expect((await callNode(c.urls[0]!, "POST", `/v1/admin/tenants/${me.body.tenant}/credit`, { usd: 100 }, c.adminKey)).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await c?.stop();
  await local.close();
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

const call = (node: number, method: string, path: string, body?: unknown, after?: number) =>
  callNode(c.urls[node]!, method, path, body, c.adminKey, 45_000, after === undefined ? {} : { "x-svc-after": String(after) });

const WORDS = [
  "river",
  "bank",
  "loan",
  "fish",
  "stream",
  "money",
  "water",
  "credit",
  "boat",
  "interest",
  "current",
  "flow",
  "rate",
  "net",
  "deposit",
  "mountain",
  "forest",
  "engine",
  "wing",
  "pressure",
  "heat",
  "surface",
  "layer",
  "shock",
  "wave",
  "speed",
  "flight",
  "metal",
  "stress",
  "crack",
  "garden",
  "winter",
  "market",
  "coffee",
  "letter",
  "window",
  "doctor",
  "music",
  "planet",
  "silver",
];
/**
 * Record i: 5 + i words drawn by a seeded generator, a kind, tags and a ts shared by groups of three. No two texts alike
 * and no two of one length, so neither ranking has ties (BM25 breaks ties by insertion order, the shards' merge by id).
 */
function item(i: number) {
  let x = (i + 1) * 2654435761;
  const next = () => ((x = (Math.imul(x ^ (x >>> 15), 2246822519) + 0x9e3779b9) >>> 0), x);
  const text = Array.from({ length: 5 + i }, () => WORDS[next() % WORDS.length]).join(" ");
  return { kind: i % 2 === 0 ? "fact" : "event", text, tags: [`t${i % 4}`], ts: 1_700_000_000_000 + Math.floor(i / 3) * 1000 };
}

/** Two answers of one cluster over the same records (same ids): equal ids and scores. */
function sameRankingIds(got: Array<{ id: string; score: number }>, want: Array<{ id: string; score: number }>): void {
  expect(got.map((r) => r.id)).toEqual(want.map((r) => r.id));
  got.forEach((r, k) => expect(r.score).toBeCloseTo(want[k]!.score, 9));
}

/** call with a raw x-svc-after token (as the header carries it). */
const callS = (node: number, method: string, path: string, body?: unknown, after?: string) =>
  callNode(c.urls[node]!, method, path, body, c.adminKey, 30_000, after === undefined ? {} : { "x-svc-after": after });

/**
 * Read-your-writes across log streams (issue 31): an index's shards are spread over several log
 * streams (svc_log, svc_log_1, svc_log_2), each with its own sequence. A write's x-svc-log-seq token
 * sent back in x-svc-after must make every read through any node see that write, at once; and a
 * token that covers several writes (tokens joined by commas) must see all of them. Before tokens named
 * their stream, a query carrying a sequence of one stream waited on the shards of the others for a
 * sequence they had not reached: 503 E_NOT_CAUGHT_UP for good.
 */
describe("x-svc-after with shards on several log streams", () => {
  it("each write's token, and the highest token, make reads through the other nodes see the writes at once", async () => {
    const made = await callS(0, "POST", "/v1/indexes", {
      name: "ryw",
      dimension: 4,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    for (const n of [1, 2])
      await until(`the index on node ${n}`, async () =>
        (await callS(n, "GET", "/v1/indexes/ryw/describe_index_stats")).status === 200 ? true : undefined,
      );
    // Writes through node 0, one id each: the ids land on every shard, so the streams' sequences diverge.
    const tokens: string[] = [];
    for (let i = 0; i < 24; i++) {
      const r = await callS(0, "POST", "/v1/indexes/ryw/vectors/upsert", { vectors: [{ id: `v${i}`, values: [1, i + 1, 1, 1] }] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      tokens.push(r.headers.get("x-svc-log-seq")!);
    }
    // One write's token: a query (every shard) and a fetch of that id through node 1 and 2 answer 200 and see it.
    for (const [i, token] of tokens.entries()) {
      const node = 1 + (i % 2);
      const q = await callS(node, "POST", "/v1/indexes/ryw/query", { vector: [1, i + 1, 1, 1], topK: 30 }, token);
      expect(q.status, `query after v${i}'s token ${token} through n${node}: ${JSON.stringify(q.body)}`).toBe(200);
      expect(q.body.matches.map((m: { id: string }) => m.id)).toContain(`v${i}`);
      const f = await callS(node, "GET", `/v1/indexes/ryw/vectors/fetch?ids=v${i}`, undefined, token);
      expect(f.status).toBe(200);
      expect(Object.keys(f.body.vectors)).toEqual([`v${i}`]);
    }
    // The streams' sequences differ (a token of one is not a position in another), and the highest token sees all 24 writes.
    expect(new Set(tokens).size).toBeLessThan(tokens.length);
    const highest = String(Math.max(...tokens.map(Number)));
    const all = await callS(2, "POST", "/v1/indexes/ryw/query", { vector: [1, 1, 1, 1], topK: 30 }, highest);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.matches.map((m: { id: string }) => m.id).sort()).toEqual(tokens.map((_, i) => `v${i}`).sort());
  }, 240_000);
});

describe("records in cluster mode", () => {
  const ids = new Map<string, string>(); // cluster id -> local id (same record)
  let seq = 0;

  it("ingest, query (cosine and hybrid), timeline, stats, get and delete through three nodes answer as one node does", async () => {
    const items = Array.from({ length: 90 }, (_, i) => item(i));
    for (let b = 0; b < 3; b++) {
      const part = items.slice(b * 30, b * 30 + 30);
      const r = await call(b, "POST", "/v1/records/notes", { items: part });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      seq = Math.max(seq, Number(r.headers.get("x-svc-log-seq")));
      const mine = await local.ingest("t", "notes", part);
      r.body.ids.forEach((id: string, k: number) => ids.set(id, mine.ids[k]!));
    }
    expect(seq).toBeGreaterThan(0);
    const same = (records: Array<{ id: string }>) => records.map((r) => ids.get(r.id));
    /**
     * The same ranking as one node's: equal scores in order, and the same records at each score (records tied at a
     * score are ordered by id, and ids differ between the two; the last tie group may be cut by topK differently).
     */
    const sameRanking = (got: Array<{ id: string; score: number }>, want: Array<{ id: string; score?: number }>, digits: number) => {
      expect(got.length).toBe(want.length);
      got.forEach((r, k) => expect(r.score).toBeCloseTo(want[k]!.score!, digits));
      const groups = (rs: Array<{ id: string; score?: number }>, id: (x: string) => string | undefined) => {
        const out: string[][] = [];
        rs.forEach((r, k) => {
          if (k === 0 || Math.abs(r.score! - rs[k - 1]!.score!) > 10 ** -digits) out.push([]);
          out.at(-1)!.push(id(r.id)!);
        });
        return out.slice(0, -1).map((g) => g.sort());
      };
      expect(groups(got, (x) => ids.get(x))).toEqual(groups(want, (x) => x));
    };

    for (const [n, q] of [
      [1, { text: "river water flow", topK: 10 }],
      [2, { text: "loan interest rate", topK: 5, kind: ["fact"] }],
      [0, { text: "money bank", topK: 20, tagsAny: ["t1", "t2"], includeText: true }],
    ] as const) {
      const want = await local.query("t", "notes", { ...q });
      const got = await call(n, "POST", "/v1/records/notes/query", q, seq);
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      sameRanking(got.body.records, want.records, 5);
      expect(got.body.records.map((r: { text?: string }) => r.text).sort()).toEqual(want.records.map((r) => r.text).sort());
      // hybrid: the shards' BM25 scored with the namespace's statistics, fused once: the one-node ranking and fused scores
      const wantH = await local.query("t", "notes", { ...q, mode: "hybrid" });
      const gotH = await call((n + 1) % 3, "POST", "/v1/records/notes/query", { ...q, mode: "hybrid" }, seq);
      expect(gotH.status, JSON.stringify(gotH.body)).toBe(200);
      sameRanking(gotH.body.records, wantH.records, 9);
    }

    // timeline pages of 7 (groups of 3 records share a ts, across shards): the same pages as one node
    let until_: number | null | undefined;
    let pages = 0;
    do {
      const qs = `limit=7${until_ === undefined || until_ === null ? "" : `&until=${until_}`}`;
      const want = await local.timeline("t", "notes", timelineRequest(new URLSearchParams(qs)));
      const got = await call(pages % 3, "GET", `/v1/records/notes/timeline?${qs}`, undefined, seq);
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      // the same records on the page (within a ts group the order is by id, and the ids differ), in timeline order
      expect(same(got.body.records).sort()).toEqual(want.records.map((r) => r.id).sort());
      const order = got.body.records.map((r: { id: string; ts: number }) => [r.ts, r.id]);
      expect(order).toEqual([...order].sort((a: [number, string], b: [number, string]) => b[0] - a[0] || (a[1] < b[1] ? 1 : -1)));
      expect(got.body.nextCursor).toBe(want.nextCursor);
      until_ = got.body.nextCursor;
      pages++;
    } while (until_ !== null && pages < 30);
    expect(pages).toBeGreaterThan(10);

    const stats = await call(2, "GET", "/v1/records/notes/stats", undefined, seq);
    expect(stats.body).toEqual(await local.stats("t", "notes"));
    const ns = await call(1, "GET", "/v1/records", undefined, seq);
    expect(ns.body.namespaces).toEqual([{ namespace: "notes", count: 90 }]);

    const [victim] = [...ids.keys()];
    expect((await call(2, "GET", `/v1/records/notes/${victim}`, undefined, seq)).body.text).toBe(item(0).text);
    const del = await call(0, "DELETE", `/v1/records/notes/${victim}`, undefined, seq);
    expect(del.body).toEqual({ deleted: true });
    seq = Math.max(seq, Number(del.headers.get("x-svc-log-seq")));
    await local.delete("t", "notes", ids.get(victim!)!);
    ids.delete(victim!);
    expect((await call(1, "GET", `/v1/records/notes/${victim}`, undefined, seq)).status).toBe(404);
    // the deleted record is gone from BM25 on every replica too (the shards apply the delete's frame to their postings)
    const text = item(0).text;
    for (const n of [0, 1, 2]) {
      const h = await call(n, "POST", "/v1/records/notes/query", { text, mode: "hybrid", topK: 90 }, seq);
      expect(h.body.records.map((r: { id: string }) => r.id)).not.toContain(victim);
      sameRanking(h.body.records, (await local.query("t", "notes", { text, mode: "hybrid", topK: 90 })).records, 9);
    }
  }, 180_000);

  it("export through one node and import (replace, twice) through another: the copy holds the same records", async () => {
    const ex = await fetch(`${c.urls[1]}/v1/records/notes/export`, { headers: { "api-key": c.adminKey, "x-svc-after": String(seq) } });
    expect(ex.status).toBe(200);
    const zip = Buffer.from(await ex.arrayBuffer());
    for (const round of [1, 2]) {
      const form = new FormData();
      form.append("file", new Blob([zip]), "notes.svc");
      const im = await fetch(`${c.urls[2]}/v1/records/copy/import`, { method: "POST", headers: { "api-key": c.adminKey }, body: form });
      expect(im.status, `round ${round}: ${await im.clone().text()}`).toBe(200);
      expect((await im.json()).imported).toBe(89);
    }
    // the import ran on the home node: read through another until its shards applied it (milliseconds)
    const stats = await until("the copy through node 1", async () => {
      const r = await call(1, "GET", "/v1/records/copy/stats");
      return r.body.count === 89 ? r.body : undefined;
    });
    expect(stats).toEqual(await local.stats("t", "notes"));
    const a = await call(1, "GET", "/v1/records/copy/timeline?limit=500");
    const b = await call(1, "GET", "/v1/records/notes/timeline?limit=500", undefined, seq);
    expect(a.body.records).toEqual(b.body.records);
    const h = await call(0, "POST", "/v1/records/copy/query", { text: "river water flow", mode: "hybrid", topK: 10 });
    sameRankingIds(
      h.body.records,
      (await call(0, "POST", "/v1/records/notes/query", { text: "river water flow", mode: "hybrid", topK: 10 }, seq)).body.records,
    );
  }, 120_000);

  it("home node kill -9: records ingest and query go on through the other nodes within 15 s, nothing acknowledged lost", async () => {
    const acked: Array<{ id: string; seq: number }> = [];
    let stop = false;
    let killedAt = 0;
    let firstIngestAfter = 0;
    let firstQueryAfter = 0;
    const failures = new Map<string, number>();
    const note = (r: { status: number; body: any }) => {
      const k = `${r.status} ${r.body?.error?.code ?? ""}`;
      failures.set(k, (failures.get(k) ?? 0) + 1);
    };
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const node = 1 + (i % 2);
        const r = await call(node, "POST", "/v1/records/load", {
          items: [{ kind: "load", text: `load record ${i} ${WORDS[i % WORDS.length]}` }],
        }).catch(() => ({ status: 0, headers: new Headers(), body: null }));
        if (r.status === 200) {
          acked.push({ id: r.body.ids[0], seq: Number(r.headers.get("x-svc-log-seq")) });
          if (killedAt > 0 && firstIngestAfter === 0) firstIngestAfter = Date.now();
        } else if (killedAt > 0) note(r);
      }
    })();
    const reader = (async () => {
      for (let i = 0; !stop; i++) {
        const r = await call(2 - (i % 2), "POST", "/v1/records/load/query", {
          text: "load record",
          topK: 5,
          mode: i % 2 === 0 ? "hybrid" : "vector",
        }).catch(() => ({ status: 0, headers: new Headers(), body: null }));
        if (r.status === 200 && killedAt > 0 && firstQueryAfter === 0) firstQueryAfter = Date.now();
        else if (r.status !== 200 && killedAt > 0) note(r);
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    await until("acked writes before the kill", async () => (acked.length >= 20 ? true : undefined), 60_000);
    await c.kill(0); // node 0 started first: the home node
    killedAt = Date.now();
    await until("ingest and query after the kill", async () => (firstIngestAfter > 0 && firstQueryAfter > 0 ? true : undefined), 60_000);
    const ingestGapMs = firstIngestAfter - killedAt;
    const queryGapMs = firstQueryAfter - killedAt;
    // keep writing a little past recovery, then check every acknowledged record through both survivors
    await new Promise((res) => setTimeout(res, 3000));
    stop = true;
    await Promise.all([writer, reader]);
    const after = Math.max(...acked.map((a) => a.seq));
    const lost: string[] = [];
    for (const [k, a] of acked.entries()) {
      const r = await call(1 + (k % 2), "GET", `/v1/records/load/${a.id}`, undefined, after);
      if (r.status !== 200) lost.push(`${a.id}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const count = await call(1, "GET", "/v1/records/load/stats", undefined, after);
    console.log(
      `home kill -9: first ingest after ${ingestGapMs} ms, first query after ${queryGapMs} ms; ${acked.length} acked, ${lost.length} lost; failures meanwhile ${JSON.stringify([...failures])}`,
    );
    expect(lost).toEqual([]);
    expect(count.body.count).toBeGreaterThanOrEqual(acked.length);
    // issue 31: within 15 s (measured here a few seconds: a try of a dead replica times out, then the live one answers)
    expect(ingestGapMs).toBeLessThan(15_000);
    expect(queryGapMs).toBeLessThan(15_000);
    // no 404 or 500 for things that exist while a node is gone: only 503s (retry) at most
    for (const k of failures.keys()) expect(k.startsWith("503") || k.startsWith("0 "), k).toBe(true);
  }, 180_000);
});
