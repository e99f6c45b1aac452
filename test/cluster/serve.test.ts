/**
 * `svc serve --cluster` end to end: three real svc processes on a real 3-server NATS JetStream
 * cluster (svc-cluster.ts). Every node answers for itself and names the live nodes; records (sharded
 * on the log) and the replicated home stores (commons, directory, KG, causal models) work through every
 * node (forwarded over HTTP, REST and /mcp to the leader); with the first node (the leader) killed -9,
 * records are served by the others at once, and the home stores, causal models included, move to
 * another node within 15 s (503 E_HOME_UNAVAILABLE with Retry-After meanwhile, never a hang or a 500). Keys (KV svc_keys), wallets
 * (ledger stream) and the sharded indexes work through every node: the official Pinecone client, a
 * key issued on one node, one tenant's charges on several.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Pinecone } from "@pinecone-database/pinecone";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/kernels/random.js";
import { cosine, eventually } from "../e2e/until.js";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

let c: SvcCluster;
const A = 0; // started first: the first leader of the home stores
const B = 1;
const C = 2;

beforeAll(async () => {
  c = await startSvcCluster(3);
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

const call = (node: number, method: string, path: string, body?: unknown, key: string | null = c.adminKey) =>
  callNode(c.urls[node]!, method, path, body, key);

let recordId = "";

describe("svc serve --cluster", () => {
  it("every node answers /v1/health naming itself, the leader and the live nodes", async () => {
    for (const i of [A, B, C]) {
      const h = await until(`node ${i} to see 3 live nodes`, async () => {
        const r = await call(i, "GET", "/v1/health", undefined, null);
        return r.body.cluster?.live?.length === 3 ? r : undefined;
      });
      expect(h.status).toBe(200);
      // the first node started alone: it holds the lease of the replicated directory and commons too
      expect(h.body.cluster).toEqual({
        node: c.ids[i],
        leader: c.ids[A],
        term: expect.any(Number),
        live: [...c.ids].sort(),
      });
    }
  });

  it("a record written through node B is read through node C (both forwarded to the home node)", async () => {
    const put = await call(B, "POST", "/v1/records/notes", {
      items: [{ kind: "decision", text: "we keep the billing ledger in PostgreSQL", tags: ["db"] }],
    });
    expect(put.status).toBe(200);
    recordId = put.body.ids[0];
    const got = await call(C, "GET", `/v1/records/notes/${recordId}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: recordId, kind: "decision", text: "we keep the billing ledger in PostgreSQL" });
    const found = await call(A, "POST", "/v1/records/notes/query", { text: "where is the billing ledger", topK: 1 });
    expect(found.status).toBe(200);
    expect(found.body.records[0].id).toBe(recordId);
    // the query string goes along: a timeline page of 1 through node C
    const page = await call(C, "GET", "/v1/records/notes/timeline?limit=1");
    expect(page.status).toBe(200);
    expect(page.body.records).toHaveLength(1);
    // a download comes back byte for byte with its headers: the namespace as a .svc container (zip)
    const exported = await fetch(`${c.urls[C]}/v1/records/notes/export`, { headers: { "api-key": c.adminKey } });
    expect(exported.status).toBe(200);
    expect(exported.headers.get("content-disposition")).toContain(".svc");
    expect(
      Buffer.from(await exported.arrayBuffer())
        .subarray(0, 2)
        .toString("latin1"),
    ).toBe("PK");
    // an error from the home node comes back as it is
    const missing = await call(B, "GET", "/v1/records/notes/rec_00");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("E_NOT_FOUND");
  });

  it("board posts and directory calls through a non-home node reach the home node's state", async () => {
    const post = await call(
      C,
      "POST",
      "/v1/board",
      { agent: "ana", subject: "Arena sizes", message: "Which arena size works best for one million rows?", topic: "perf" },
      null,
    );
    expect(post.status).toBe(200);
    const board = await call(B, "GET", "/v1/board", undefined, null);
    expect(board.status).toBe(200);
    expect(JSON.stringify(board.body)).toContain("Which arena size works best for one million rows?");
    const onHome = await call(A, "GET", "/v1/board", undefined, null);
    expect(onHome.body).toEqual(board.body);

    const search = await call(B, "GET", "/api/businesses?q=dental", undefined, null);
    expect(search.status).toBe(200);
    expect(search.body).toEqual((await call(A, "GET", "/api/businesses?q=dental", undefined, null)).body);
    // the HTML page links to the node the client asked (the Host header goes along)
    const res = await fetch(`${c.urls[C]}/businesses`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
  });

  it("/mcp on a non-home node runs home-node tools", async () => {
    const client = new Client({ name: "svc-cluster-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${c.urls[C]}/mcp`), { requestInit: { headers: { "api-key": c.adminKey } } }),
    );
    try {
      const ingested = (await client.callTool({
        name: "records_ingest",
        arguments: { namespace: "mcp", items: [{ kind: "mistake", text: "the deploy failed because the TLS certificate had expired" }] },
      })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect(ingested.isError).toBeFalsy();
      expect(ingested.structuredContent!.count).toBe(1);
      // B reads its shard replica, which applies the acknowledged write a moment later (no x-svc-after here)
      const onB = await until("B to read the record written through C", async () => {
        const r = await call(B, "GET", `/v1/records/mcp/${(ingested.structuredContent!.ids as string[])[0]}`);
        return r.status === 200 ? r : undefined;
      });
      expect(onB.body.text).toContain("TLS certificate");
      const missing = (await client.callTool({ name: "records_get", arguments: { namespace: "mcp", id: "rec_00" } })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(missing.isError).toBe(true);
      expect(missing.content[0]!.text).toContain("E_NOT_FOUND");
    } finally {
      await client.close();
    }
  });

  it("a client cannot pass itself off as a forwarding node", async () => {
    // a made-up token is not the cluster's: the request is forwarded like any other and the home node serves it
    const res = await fetch(`${c.urls[B]}/v1/records/notes/${recordId}`, {
      headers: { "api-key": c.adminKey, "svc-forward-token": "guess", "svc-forwarded-for": "10.9.9.9" },
    });
    expect(res.status).toBe(200);
  });

  it("a key issued through node A authenticates on node C within 1 s; revoked through C, A refuses it", async () => {
    const made = await call(A, "POST", "/v1/admin/keys", { tenant: "acme", name: "cluster test" });
    expect(made.status).toBe(201);
    const key = made.body.key as string;
    const t0 = Date.now();
    const seen = await until(
      "node C to accept the new key",
      async () => ((await call(C, "GET", "/v1/indexes", undefined, key)).status === 200 ? Date.now() - t0 : undefined),
      1000,
    );
    expect(seen).toBeLessThanOrEqual(1000);
    expect((await call(C, "DELETE", `/v1/admin/keys/${made.body.id}`)).status).toBe(200);
    await until(
      "node A to refuse the revoked key",
      async () => ((await call(A, "GET", "/v1/indexes", undefined, key)).status === 401 ? true : undefined),
      1000,
    );
  });

  it("one wallet per tenant across nodes: charges made on B (local route) and through C (forwarded to the home node) show on every node", async () => {
    const key = (await call(A, "POST", "/v1/admin/keys", { tenant: "payer" })).body.key as string;
    await until(
      "node B to accept the key",
      async () => ((await call(B, "GET", "/v1/wallet", undefined, key)).status === 200 ? true : undefined),
      5000,
    );
    expect((await call(B, "POST", "/v1/embed", { texts: ["a metered call"] }, key)).status).toBe(200);
    expect((await call(C, "POST", "/v1/records/paid", { items: [{ kind: "note", text: "a metered write" }] }, key)).status).toBe(200);
    const views = await until("every node to show both charges", async () => {
      const vs = await Promise.all([A, B, C].map(async (i) => (await call(i, "GET", "/v1/wallet", undefined, key)).body));
      const ops = vs.map((v) =>
        (v.recent as Array<{ op: string }>)
          .map((r) => r.op)
          .filter((op) => !op.startsWith("credit:"))
          .sort()
          .join(","),
      );
      return ops.every((o) => o === "embed,records_ingest") ? vs : undefined;
    });
    expect(views[0].spentUsd).toBeGreaterThan(0);
    for (const v of views)
      expect({ balanceUsd: v.balanceUsd, spentUsd: v.spentUsd }).toEqual({ balanceUsd: views[0].balanceUsd, spentUsd: views[0].spentUsd });
    expect(views[0].balanceUsd).toBeCloseTo(views[0].creditedUsd - views[0].spentUsd, 9);
  });

  it("the official Pinecone client: create, upsert, query, fetch, update, delete and stats through nodes A, B and C", async () => {
    const DIM = 8;
    const next = mulberry32(20261126);
    const vec = () => Array.from({ length: DIM }, () => (next() / 4294967296) * 2 - 1);
    const f32 = (v: number[]) => Array.from(Float32Array.from(v));
    const records = Array.from({ length: 40 }, (_, i) => ({
      id: `v${String(i).padStart(2, "0")}`,
      values: vec(),
      metadata: { year: 2000 + i, genre: ["drama", "comedy", "scifi"][i % 3]! },
    }));
    const pcOn = (node: number) => new Pinecone({ apiKey: c.adminKey, controllerHostUrl: `${c.urls[node]}/v1`, maxRetries: 0 });
    const created = await pcOn(A).createIndex({
      name: "movies",
      dimension: DIM,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
      timeout: 20_000,
    });
    expect(created).toMatchObject({ name: "movies", dimension: DIM, metric: "cosine" });
    // the catalog is shared: every node lists and describes it, with a host on itself
    for (const i of [B, C]) {
      const d = await eventually(() => pcOn(i).describeIndex("movies"));
      expect(d.host).toBe(`${c.urls[i]}/v1/indexes/movies`);
    }
    const on = (node: number) => pcOn(node).index<{ year: number; genre: string }>({ host: `${c.urls[node]}/v1/indexes/movies` });
    await on(B).upsert({ records });

    // a query through C is exactly the brute-force top-k (cosine), filtered too
    const q = vec();
    const ranked = (keep: (m: { year: number; genre: string }) => boolean) =>
      records
        .filter((r) => keep(r.metadata))
        .map((r) => ({ id: r.id, score: cosine(f32(r.values), f32(q)) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 5)
        .map((r) => r.id);
    await eventually(
      async () => expect((await on(C).query({ vector: q, topK: 5 })).matches.map((m) => m.id)).toEqual(ranked(() => true)),
      10_000,
    );
    const filtered = await on(C).query({
      vector: q,
      topK: 5,
      filter: { $and: [{ year: { $gte: 2010 } }, { genre: { $ne: "comedy" } }] },
      includeMetadata: true,
    });
    expect(filtered.matches.map((m) => m.id)).toEqual(ranked((m) => m.year >= 2010 && m.genre !== "comedy"));

    const fetched = await on(A).fetch({ ids: ["v00", "v07"] });
    expect(fetched.records.v07!.values).toEqual(f32(records[7]!.values));
    expect(fetched.records.v00!.metadata).toEqual(records[0]!.metadata);

    await on(B).update({ id: "v07", metadata: { genre: "western" } });
    await eventually(
      async () => expect((await on(C).fetch({ ids: ["v07"] })).records.v07!.metadata).toEqual({ year: 2007, genre: "western" }),
      10_000,
    );

    await on(C).deleteMany({ ids: ["v00", "v01"] });
    await on(A).deleteMany({ filter: { genre: { $eq: "scifi" } } });
    const left = records.filter((r) => !["v00", "v01"].includes(r.id) && r.metadata.genre !== "scifi").length;
    const stats = await eventually(async () => {
      const st = await on(B).describeIndexStats();
      expect(st.totalRecordCount).toBe(left);
      return st;
    }, 10_000);
    expect(stats.dimension).toBe(DIM);
    expect(Object.keys((await on(A).fetch({ ids: ["v00", "v02"] })).records)).toEqual([]);

    await pcOn(C).deleteIndex("movies");
    await eventually(async () => expect((await pcOn(A).listIndexes()).indexes?.map((i) => i.name) ?? []).not.toContain("movies"), 10_000);
  });

  it("a non-home node killed -9 under upserts and queries: no acknowledged write lost, the others answer, the restarted node serves again", async () => {
    const DIM = 4;
    const pcOn = (node: number) => new Pinecone({ apiKey: c.adminKey, controllerHostUrl: `${c.urls[node]}/v1`, maxRetries: 0 });
    await pcOn(A).createIndex({
      name: "load",
      dimension: DIM,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
      timeout: 20_000,
    });
    const on = (node: number) => pcOn(node).index({ host: `${c.urls[node]}/v1/indexes/load` });
    await eventually(() => on(C).describeIndexStats(), 10_000);
    const acked: string[] = [];
    let failedWrites = 0;
    let answeredQueries = 0;
    let stop = false;
    const writer = (async () => {
      for (let batch = 0; !stop; batch++) {
        const ids = Array.from({ length: 10 }, (_, j) => `w${batch}-${j}`);
        try {
          await on(C).upsert({ records: ids.map((id, j) => ({ id, values: [1, batch % 7, j, 1] })) });
          acked.push(...ids);
        } catch {
          failedWrites++; // not acknowledged: may or may not be kept
        }
      }
    })();
    const reader = (async () => {
      while (!stop) {
        try {
          await on(A).query({ vector: [1, 1, 1, 1], topK: 3 });
          answeredQueries++;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();
    await until("some acknowledged writes", async () => (acked.length >= 50 ? true : undefined));
    const before = acked.length;
    await c.kill(B);
    await until("writes acknowledged after the kill", async () => (acked.length >= before + 50 ? true : undefined), 30_000);
    const queriesAfterKill = answeredQueries;
    await until("queries answered after the kill", async () => (answeredQueries > queriesAfterKill + 5 ? true : undefined), 30_000);
    stop = true;
    await Promise.all([writer, reader]);
    await c.start(B);
    // every acknowledged id is there, read through each node (the restarted one included)
    for (const i of [A, B, C]) {
      await eventually(async () => {
        for (let k = 0; k < acked.length; k += 100) {
          const ids = acked.slice(k, k + 100);
          expect(Object.keys((await on(i).fetch({ ids })).records).sort()).toEqual([...ids].sort());
        }
      }, 20_000);
    }
    expect(acked.length).toBeGreaterThan(before);
    console.log(`failover: ${acked.length} vectors acknowledged (${failedWrites} batches refused), ${answeredQueries} queries answered`);
    await pcOn(B).deleteIndex("load");
  });

  it("with the first node (the leader) killed -9, records are served at once and causal models within 15 s through the others (503 E_HOME_UNAVAILABLE with Retry-After meanwhile)", async () => {
    const worlds = {
      n_vars: 2,
      vocab_per_var: [2, 2],
      worlds: [
        [0, 1],
        [1, 1],
        [1, 0],
      ],
    };
    expect((await call(B, "POST", "/v1/hd/causal/kept/worlds", worlds)).status).toBe(200);
    expect((await call(A, "GET", "/v1/health", undefined, null)).body.cluster.leader).toBe(c.ids[A]);
    const killedAt = Date.now();
    /** What the causal route answered before it worked again: only 503 E_HOME_UNAVAILABLE with Retry-After. */
    const waited = new Set<string>();
    await c.kill(A);
    // at once (the registration has not expired yet: the connection is refused) and after it expired alike
    for (const phase of ["refused", "expired"]) {
      if (phase === "expired") {
        await until("node B to see the home node gone", async () =>
          (await call(B, "GET", "/v1/health", undefined, null)).body.cluster.live.includes(c.ids[A]) ? undefined : true,
        );
      }
      for (const i of [B, C]) {
        const t0 = Date.now();
        // records are sharded on the log (cluster/sharded-records.ts): the other nodes serve them
        const r = await call(i, "GET", `/v1/records/notes/${recordId}`);
        expect(Date.now() - t0).toBeLessThan(15_000);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        // causal models are replicated with the home stores: 503 with Retry-After until another node leads them
        const causal = await until(
          `the causal models through node ${i}`,
          async () => {
            const r = await call(i, "GET", "/v1/hd/causal");
            if (r.status === 200) return r;
            waited.add(`${r.status} ${r.body?.error?.code} retry-after>0:${Number(r.headers.get("retry-after")) > 0}`);
            return undefined;
          },
          15_000,
        );
        expect(causal.body.models).toEqual([{ name: "kept", n_vars: 2, vocab_per_var: [2, 2], rows_total: 3, has_graph: false }]);
      }
    }
    console.log(`causal models served through the others ${Date.now() - killedAt} ms after kill -9 of the leader`);
    expect([...waited].filter((x) => x !== "503 E_HOME_UNAVAILABLE retry-after>0:true")).toEqual([]);
    // the commons and the directory are replicated: another node took their lease (app/home-stores.ts)
    const meanwhile = new Set<string>();
    for (const i of [B, C]) {
      const post = await until(
        `a board post through node ${i}`,
        async () => {
          const r = await call(i, "POST", "/v1/board", { agent: "bo", message: "Is anyone there at all today?" }, null);
          if (r.status !== 200) meanwhile.add(`${r.status} ${r.body?.error?.code}`);
          return r.status === 200 ? r : undefined;
        },
        15_000,
      );
      expect(post.status).toBe(200);
    }
    expect([...meanwhile].filter((x) => x !== "503 E_HOME_UNAVAILABLE")).toEqual([]);
    expect(JSON.stringify((await call(B, "GET", "/v1/board", undefined, null)).body)).toContain(
      "Which arena size works best for one million rows?",
    );
    // the rest goes on: health, embedding
    expect((await call(B, "GET", "/v1/health", undefined, null)).status).toBe(200);
    expect((await call(C, "POST", "/v1/embed", { texts: ["still here"] })).status).toBe(200);

    await c.start(A);
    const back = await until("node C to serve the record with node A back", async () => {
      const r = await call(C, "GET", `/v1/records/notes/${recordId}`);
      return r.status === 200 ? r : undefined;
    });
    expect(back.body.text).toBe("we keep the billing ledger in PostgreSQL");
    const health = await until("node A to see the new leader", async () => {
      const r = await call(A, "GET", "/v1/health", undefined, null);
      return r.body.cluster?.leader ? r : undefined;
    });
    expect(health.body.cluster.leader).not.toBe(c.ids[A]); // the lease stays where it moved
  });

  it("SIGTERM: a node stops cleanly (exit 0) and the others drop it from the live nodes at once", async () => {
    expect(await c.terminate(C)).toBe(0);
    expect(c.output(C)).toContain("svc stopped");
    const live = await until(
      "node A to drop node C",
      async () => {
        const l = (await call(A, "GET", "/v1/health", undefined, null)).body.cluster.live as string[];
        return l.includes(c.ids[C]!) ? undefined : l;
      },
      3000,
    );
    expect(live).toEqual([c.ids[A], c.ids[B]]);
  });
});
