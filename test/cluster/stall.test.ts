/**
 * Cluster mode with stalled processes (issue 31, items 1-4), on real processes: three `svc serve
 * --cluster` nodes on a 3-server NATS JetStream cluster (svc-cluster.ts), frozen with SIGSTOP and
 * thawed with SIGCONT, as a stalled network or a paused VM does it.
 * - A write answered while its NATS server was frozen never lands after a later acknowledged
 *   delete of the same id, and its answer is never a 404 (the index exists).
 * - With one nats-server frozen (the one the nodes are connected to), or one svc node frozen while
 *   clients use the other two, writes and queries resume within a bounded gap; nothing answers
 *   404 or 500; every acknowledged write is readable afterwards; a node that comes back serves no
 *   stale read.
 * - With two nats-servers down, writes answer 503 E_NO_QUORUM (or E_OUTCOME_UNKNOWN) with Retry-After.
 * Gaps are measured by send time: the longest stretch of requests sent in which none succeeded.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callNode, startSvcCluster, until, type Answer, type SvcCluster } from "./svc-cluster.js";

let c: SvcCluster;

beforeAll(async () => {
  c = await startSvcCluster(3);
  const me = await callNode(c.urls[0]!, "GET", "/v1/wallet", undefined, c.adminKey);
  expect((await callNode(c.urls[0]!, "POST", `/v1/admin/tenants/${me.body.tenant}/credit`, { usd: 100 }, c.adminKey)).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

/** The bound on a gap asserted here: the goal of issue 31 (measured here: at most 1.0 s; the margin is for a loaded 2-core machine). */
const GAP_BOUND_MS = 8000;
const FREEZE_MS = 15_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const call = (node: number, method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<Answer> =>
  callNode(c.urls[node]!, method, path, body, c.adminKey, timeoutMs).catch((e: Error) => ({
    status: 0,
    headers: new Headers(),
    body: { error: { code: e.name } },
  }));
const upsert = (node: number, index: string, vectors: Array<{ id: string; values: number[] }>) =>
  call(node, "POST", `/v1/indexes/${index}/vectors/upsert`, { vectors });
const fetchIds = (node: number, index: string, ids: string[]) =>
  call(node, "GET", `/v1/indexes/${index}/vectors/fetch?${ids.map((id) => `ids=${encodeURIComponent(id)}`).join("&")}`);

async function createIndex(name: string): Promise<void> {
  const r = await call(0, "POST", "/v1/indexes", {
    name,
    dimension: 4,
    metric: "cosine",
    spec: { serverless: { cloud: "aws", region: "us-east-1" } },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  for (const n of [0, 1, 2])
    await until(
      `index ${name} on node ${n}`,
      async () => ((await upsert(n, name, [{ id: `warm-${n}`, values: [1, 0, 0, n] }])).status === 200 ? true : undefined),
      60_000,
    );
}

/** An answer other than 200 must be a 503 with Retry-After (unknown is never 404, never 500). */
function checkRefusal(r: Answer, what: string): void {
  if (r.status === 200 || r.status === 0) return;
  expect({ what, status: r.status, code: r.body?.error?.code }).toMatchObject({ status: 503 });
  expect(r.headers.get("retry-after"), `${what}: ${r.body?.error?.code} without Retry-After`).toMatch(/^\d+$/);
}

interface Sent {
  node: number;
  kind: "write" | "query";
  sentAt: number;
  answer?: Answer;
  ids?: string[];
}

/**
 * Open-loop load: every `everyMs`, on each node of `nodes`, one upsert of a fresh id and one query
 * are sent (not waiting for earlier ones) until stop() resolves; returns every request sent.
 */
function load(index: string, nodes: number[], everyMs = 300): { stop(): Promise<Sent[]> } {
  const sent: Sent[] = [];
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  const tick = setInterval(() => {
    for (const node of nodes) {
      const id = `l${node}-${n++}`;
      const w: Sent = { node, kind: "write", sentAt: Date.now(), ids: [id] };
      const q: Sent = { node, kind: "query", sentAt: Date.now() };
      sent.push(w, q);
      for (const [s, p] of [
        [w, upsert(node, index, [{ id, values: [1, (n % 7) + 1, node + 1, 1] }])],
        [q, call(node, "POST", `/v1/indexes/${index}/query`, { vector: [1, 1, 1, 1], topK: 3 })],
      ] as const) {
        const done = p.then((a) => void (s.answer = a));
        inFlight.add(done);
        void done.finally(() => inFlight.delete(done));
      }
    }
  }, everyMs);
  return {
    async stop() {
      clearInterval(tick);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      return sent;
    },
  };
}

/** Per node and kind, the longest stretch of send times from `from` on with no request that succeeded. */
function gaps(sent: Sent[], from: number, to: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of new Set(sent.map((s) => `${s.kind}@n${s.node}`))) {
    const ok = sent
      .filter((s) => `${s.kind}@n${s.node}` === key && s.answer?.status === 200 && s.sentAt >= from && s.sentAt <= to)
      .map((s) => s.sentAt);
    let prev = from;
    let gap = 0;
    for (const t of [...ok, to]) {
      gap = Math.max(gap, t - prev);
      prev = t;
    }
    out[key] = gap;
  }
  return out;
}

function summary(sent: Sent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of sent) {
    const k = `${s.kind} ${s.answer?.status ?? "none"} ${s.answer?.status === 200 ? "" : (s.answer?.body?.error?.code ?? "")}`.trim();
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Every id acknowledged in `sent` is there through every node (eventually: a replica may still be applying). */
async function allAckedThere(index: string, sent: Sent[]): Promise<void> {
  const acked = sent.filter((s) => s.kind === "write" && s.answer?.status === 200).flatMap((s) => s.ids!);
  for (const node of [0, 1, 2]) {
    await until(
      `every acknowledged write through node ${node}`,
      async () => {
        for (let k = 0; k < acked.length; k += 100) {
          const part = acked.slice(k, k + 100);
          const r = await fetchIds(node, index, part);
          if (r.status !== 200 || part.some((id) => r.body.vectors[id] === undefined)) return undefined;
        }
        return true;
      },
      60_000,
    );
  }
}

describe("cluster mode with stalled processes", () => {
  it("defect 1: an upsert through a node whose NATS server is frozen never lands after a later acknowledged delete, and never answers 404", async () => {
    await createIndex("stall1");
    // c (node 2) and a (another node) on different NATS servers: restart c until that holds (the client picks a server at random)
    let server = await until("node 2's NATS server", async () => (c.natsServerOf(2) >= 0 ? c.natsServerOf(2) : undefined));
    let a = [0, 1].find((i) => c.natsServerOf(i) !== server);
    for (let tries = 0; a === undefined && tries < 6; tries++) {
      await c.kill(2);
      await c.start(2);
      server = await until("node 2's NATS server", async () => (c.natsServerOf(2) >= 0 ? c.natsServerOf(2) : undefined));
      a = [0, 1].find((i) => c.natsServerOf(i) !== server);
    }
    expect(a, "a node on another NATS server than node 2").toBeDefined();
    await until(
      "node 2 serves the index",
      async () => ((await upsert(2, "stall1", [{ id: "other", values: [0, 1, 0, 0] }])).status === 200 ? true : undefined),
      30_000,
    );

    c.nats.pause(server);
    let up: Answer;
    let upMs: number;
    try {
      const t0 = Date.now();
      up = await upsert(2, "stall1", [{ id: "L", values: [1, 2, 3, 4] }]);
      upMs = Date.now() - t0;
      // an acknowledged delete through a (retried while the stream elects a leader, if the frozen server led it)
      const del = await until(
        "delete L through a",
        async () => {
          const r = await call(a!, "POST", "/v1/indexes/stall1/vectors/delete", { ids: ["L"] });
          checkRefusal(r, "delete");
          return r.status === 200 ? r : undefined;
        },
        60_000,
      );
      const after = del.headers.get("x-svc-log-seq")!;
      const seen = await until(
        "the delete visible through a",
        async () => {
          const r = await callNode(c.urls[a!]!, "GET", "/v1/indexes/stall1/vectors/fetch?ids=L", undefined, c.adminKey, 30_000, {
            "x-svc-after": after,
          });
          checkRefusal(r, "fetch after the delete");
          return r.status === 200 ? r : undefined;
        },
        30_000,
      );
      expect(seen.body.vectors.L).toBeUndefined();
    } finally {
      c.nats.resume(server);
    }
    // Thawed: for 15 s no node may show L again.
    const back: string[] = [];
    for (const end = Date.now() + 15_000; Date.now() < end; await sleep(300)) {
      for (const node of [0, 1, 2]) {
        const r = await fetchIds(node, "stall1", ["L"]);
        if (r.status === 200 && r.body.vectors.L !== undefined) back.push(`node ${node}`);
      }
    }
    console.log(
      `defect 1: the upsert through the frozen server's node answered ${up.status} ${up.body?.error?.code ?? ""} after ${upMs} ms; L seen again after the delete: ${back.length} times`,
    );
    expect(up.status, JSON.stringify(up.body)).not.toBe(404);
    checkRefusal(up, "upsert through the frozen server");
    expect(back).toEqual([]);
  }, 180_000);

  it("a frozen nats-server (the one node 0 is connected to): writes and queries through every node resume within the bound, never 404 or 500, nothing acknowledged lost", async () => {
    await createIndex("stall2");
    const server = await until("node 0's NATS server", async () => (c.natsServerOf(0) >= 0 ? c.natsServerOf(0) : undefined));
    const l = load("stall2", [0, 1, 2]);
    await sleep(2000);
    const from = Date.now();
    c.nats.pause(server);
    let to: number;
    try {
      await sleep(FREEZE_MS);
      to = Date.now();
    } finally {
      c.nats.resume(server);
    }
    await sleep(3000);
    const sent = await l.stop();
    for (const s of sent) checkRefusal(s.answer!, `${s.kind} through node ${s.node}`);
    const g = gaps(sent, from, to);
    console.log(
      `frozen nats-server n${server} for ${FREEZE_MS} ms: longest gaps ${JSON.stringify(g)}; answers ${JSON.stringify(summary(sent))}`,
    );
    for (const [k, ms] of Object.entries(g)) expect(ms, `${k}: longest gap`).toBeLessThan(GAP_BOUND_MS);
    await allAckedThere("stall2", sent);
  }, 180_000);

  it("a frozen svc node: writes and queries through the other two resume within the bound; thawed, it serves no stale read", async () => {
    await createIndex("stall3");
    expect((await upsert(0, "stall3", [{ id: "S", values: [1, 0, 0, 0] }])).status).toBe(200);
    // node 2 has read S = v1
    await until("S on node 2", async () => ((await fetchIds(2, "stall3", ["S"])).body?.vectors?.S?.values?.[0] === 1 ? true : undefined));
    const l = load("stall3", [0, 1]);
    await sleep(2000);
    const from = Date.now();
    c.pause(2);
    let to: number;
    let v2: Answer;
    try {
      await sleep(FREEZE_MS);
      to = Date.now();
      v2 = await until(
        "S = v2 acknowledged through node 0",
        async () => {
          const r = await upsert(0, "stall3", [{ id: "S", values: [0, 1, 0, 0] }]);
          return r.status === 200 ? r : undefined;
        },
        30_000,
      );
    } finally {
      c.resume(2);
    }
    // Thawed node 2 answers S as v2 or refuses (503): never the stale v1.
    const stale: number[] = [];
    let fresh = 0;
    for (const end = Date.now() + 8000; Date.now() < end; await sleep(100)) {
      const r = await fetchIds(2, "stall3", ["S"]);
      checkRefusal(r, "fetch through the thawed node");
      const x = r.body?.vectors?.S?.values?.[0];
      if (r.status === 200 && x !== 0) stale.push(x);
      if (r.status === 200 && x === 0) fresh++;
    }
    const sent = await l.stop();
    for (const s of sent) checkRefusal(s.answer!, `${s.kind} through node ${s.node}`);
    const g = gaps(sent, from, to);
    console.log(
      `frozen svc node n2 for ${FREEZE_MS} ms: longest gaps ${JSON.stringify(g)}; answers ${JSON.stringify(summary(sent))}; thawed: ${fresh} fresh reads, ${stale.length} stale (v2 at seq ${v2.headers.get("x-svc-log-seq")})`,
    );
    expect(stale).toEqual([]);
    expect(fresh).toBeGreaterThan(0);
    for (const [k, ms] of Object.entries(g)) expect(ms, `${k}: longest gap`).toBeLessThan(GAP_BOUND_MS);
    await allAckedThere("stall3", sent);
  }, 180_000);

  // E_NO_QUORUM when the shard's answer arrives; E_OUTCOME_UNKNOWN when every copy of the request was lost while the nodes
  // reconnected to the one server left (both say "may have taken effect", both with Retry-After). Never E_SHARD_UNAVAILABLE
  // ("not run"), which a write that may have run must not answer.
  it("two nats-servers down: upserts answer 503 E_NO_QUORUM (or E_OUTCOME_UNKNOWN) with Retry-After, not E_SHARD_UNAVAILABLE, not after 20 s", async () => {
    c.nats.kill(1);
    c.nats.kill(2);
    const answers = await Promise.all(
      [0, 1, 2].map(async (node) => {
        const t0 = Date.now();
        const r = await upsert(node, "stall2", [{ id: `nq-${node}`, values: [1, 1, 1, 1] }]);
        return { node, status: r.status, code: r.body?.error?.code, retryAfter: r.headers.get("retry-after"), ms: Date.now() - t0 };
      }),
    );
    console.log(`two nats-servers down: ${JSON.stringify(answers)}`);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(["E_NO_QUORUM", "E_OUTCOME_UNKNOWN"]).toContain(a.code);
      expect(a.retryAfter).toMatch(/^\d+$/);
      expect(a.ms).toBeLessThan(20_000);
    }
  }, 120_000);
});
