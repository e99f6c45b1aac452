/**
 * Failover of the replicated home stores (the commons and the directory; app/home-stores.ts) with real
 * processes: 3 nats-servers and 3 `svc serve --cluster` nodes. kill -9 of the leader: within 15 s the
 * commons' and the directory's routes answer through the other nodes, and every acknowledged write
 * (trust records, a directory claim) is readable; a leader frozen past its lease (SIGSTOP) is replaced,
 * and once thawed (SIGCONT) it cannot write: every write answered 200 anywhere is readable afterwards,
 * and the thawed node serves no stale read. The knowledge graphs and the causal models (one fenced
 * subject each) fail over the same way: kill -9 of the leader (and of the node that started first,
 * once the home of unreplicated state), every acknowledged fact and world answered; helper outputs
 * (object store svc_build) stay usable as inputs through the other nodes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSvcCluster, type SvcCluster } from "./svc-cluster.js";

let c: SvcCluster;
const config = {
  commons: { rateLimits: { trust: { count: 100_000, windowSeconds: 600 }, writes: { count: 100_000, windowSeconds: 600 } } },
};

beforeAll(async () => {
  c = await startSvcCluster(3, { config });
}, 180_000);

afterAll(async () => {
  await c?.stop();
});

async function req(
  i: number,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
  timeoutMs = 20_000,
): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(c.urls[i] + path, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(key ? { "api-key": key } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, body: text.startsWith("{") ? JSON.parse(text) : text };
  } catch (e) {
    return { status: 0, body: String(e) };
  }
}

/** The leader every live node names (polls until they agree). */
async function leader(nodes: number[], ms = 30_000): Promise<{ id: string; term: number }> {
  const until = Date.now() + ms;
  for (;;) {
    const views = await Promise.all(
      nodes.map((i) => req(i, "GET", "/v1/health").then((r) => r.body?.cluster as { leader: string | null; term: number } | undefined)),
    );
    const l = views[0]?.leader;
    if (l && views.every((v) => v?.leader === l && v.term === views[0]!.term)) return { id: l, term: views[0]!.term };
    if (Date.now() > until) throw new Error(`no agreed leader: ${JSON.stringify(views)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const acked: string[] = [];
/** Writes whose answer the client never got (its timeout): they may or may not have taken effect. */
let unknown = 0;
let n = 0;
/** One trust record through node i; its id is kept when answered 200 (a client that gives up after `timeoutMs` sees 0). */
async function record(i: number, timeoutMs?: number): Promise<number> {
  const r = await req(
    i,
    "POST",
    "/v1/trust",
    { agent: "ledger", target: "https://failover.example/x", outcome: "worked", note: `Write number ${n++} of the failover test.` },
    undefined,
    timeoutMs,
  );
  if (r.status === 200) acked.push(r.body.id);
  if (r.status === 0) unknown++;
  return r.status;
}

/** Every acknowledged write is in `seen`, and nothing else but writes of unknown outcome. */
function holdsAcked(seen: string[] | null): void {
  expect(seen).not.toBeNull();
  const got = new Set(seen);
  expect(acked.filter((id) => !got.has(id))).toEqual([]);
  expect(got.size).toBeLessThanOrEqual(acked.length + unknown);
}

/** The trust record ids node i reads (the newest 100: the test writes fewer). */
async function readIds(i: number): Promise<string[] | null> {
  const r = await req(i, "GET", "/v1/trust?target=failover.example&limit=100");
  return r.status === 200 ? (r.body.records as Array<{ id: string }>).map((x) => x.id) : null;
}

describe("failover of the replicated home stores", () => {
  it("kill -9 of the leader: the routes work through the others within 15 s, nothing acknowledged lost", async () => {
    const l0 = await leader([0, 1, 2]);
    const li = c.ids.indexOf(l0.id);
    const others = [0, 1, 2].filter((i) => i !== li);
    for (let k = 0; k < 12; k++) expect(await record(k % 3)).toBe(200);
    const biz = "foxglovewood-print-leicester";
    const claim = await req(
      others[0]!,
      "POST",
      `/api/admin/businesses/${biz}/claim`,
      { owner: { name: "Ann Owner", email: "ann@foxglove.example" } },
      c.adminKey,
    );
    expect(claim.status).toBe(200);

    const t0 = Date.now();
    await c.kill(li);
    // writes and reads through the other nodes until both work again
    let back = 0;
    while (Date.now() - t0 < 30_000) {
      const w = await record(others[n % 2]!);
      const r = await readIds(others[(n + 1) % 2]!);
      if (w === 200 && r !== null) {
        back = Date.now() - t0;
        break;
      }
      expect([503, 0]).toContain(w === 200 ? 503 : w); // while failing over: 503 with Retry-After, never 404/500
      await new Promise((res) => setTimeout(res, 200));
    }
    console.log(`home stores back through the other nodes ${back} ms after kill -9 of the leader ${l0.id}`);
    expect(back).toBeGreaterThan(0);
    expect(back).toBeLessThan(15_000);
    const l1 = await leader(others);
    expect(l1.id).not.toBe(l0.id);
    expect(l1.term).toBeGreaterThan(l0.term);
    for (let k = 0; k < 6; k++) expect(await record(others[k % 2]!)).toBe(200);
    for (const i of others) holdsAcked(await readIds(i));
    const b = await req(others[1]!, "GET", `/api/businesses/${biz}/trust`);
    expect(b.status).toBe(200);
    expect(JSON.stringify(b.body)).toMatch(/claimed/);
    await c.start(li);
  }, 180_000);

  it("a frozen leader is replaced; thawed, it cannot write and serves no stale read", async () => {
    const l0 = await leader([0, 1, 2]);
    const li = c.ids.indexOf(l0.id);
    const others = [0, 1, 2].filter((i) => i !== li);
    c.pause(li);
    const t0 = Date.now();
    // a write sent at once through another node is forwarded to the frozen leader: it is given up when
    // the lease moves (503 E_OUTCOME_UNKNOWN, Retry-After 1), not at the forward timeout (60 s)
    const first = await fetch(c.urls[others[0]!] + "/v1/trust", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        agent: "ledger",
        target: "https://failover.example/x",
        outcome: "worked",
        note: `Write number ${n++} of the failover test.`,
      }),
      signal: AbortSignal.timeout(30_000),
    });
    const firstBody = (await first.json()) as { id?: string; error?: { code: string } };
    const answered = Date.now() - t0;
    console.log(
      `a write through ${c.ids[others[0]!]} answered ${first.status} ${firstBody.error?.code ?? ""} ${answered} ms after SIGSTOP of the leader ${l0.id}`,
    );
    if (first.status === 200) acked.push(firstBody.id!);
    else {
      unknown++;
      expect(first.status).toBe(503);
      expect(Number(first.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect(answered).toBeLessThan(10_000); // issue 31 item 3: within 8 s (margin for a loaded machine)
    let back = 0;
    while (Date.now() - t0 < 40_000) {
      // a client with a 20 s timeout: nothing hangs past the lease's move
      if ((await record(others[n % 2]!, 20_000)) === 200) {
        back = Date.now() - t0;
        break;
      }
      await new Promise((res) => setTimeout(res, 200));
    }
    console.log(`home stores back ${back} ms after SIGSTOP of the leader ${l0.id}`);
    expect(back).toBeGreaterThan(0);
    expect(back).toBeLessThan(10_000);
    for (let k = 0; k < 4; k++) expect(await record(others[k % 2]!)).toBe(200);
    // thawed: writes and reads sent to it at once either reach the new leader, or are refused (503)
    c.resume(li);
    const statuses: number[] = [];
    for (let k = 0; k < 10; k++) {
      statuses.push(await record(li));
      const seen = await readIds(li);
      if (seen !== null) holdsAcked(seen); // never a stale read
    }
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    const l1 = await leader([0, 1, 2]);
    expect(l1.id).not.toBe(l0.id);
    for (const i of [0, 1, 2]) holdsAcked(await readIds(i));
  }, 180_000);

  it("kill -9 of the leader: knowledge graph routes work through the others within 15 s, every acknowledged fact readable", async () => {
    const l0 = await leader([0, 1, 2]);
    const li = c.ids.indexOf(l0.id);
    // node 0 is the home node (records, causal models): the graphs must not depend on it either, so it
    // goes too when it is not the leader (before the graphs were replicated they were served by it alone)
    const victims = li === 0 ? [0] : [li, 0];
    const others = [0, 1, 2].filter((i) => !victims.includes(i));
    const graph = "fail.over_kg"; // '.' and '_' are encoded into one subject token
    const facts: Array<{ subject: string; relation: string; object: string }> = [];
    let k = 0;
    const add = async (i: number): Promise<number> => {
      const f = { subject: `city${k}`, relation: k % 2 ? "capital_of" : "twin_of", object: `land${k}` };
      k++;
      const r = await req(i, "POST", `/v1/hd/kg/${graph}/facts`, { facts: [f] }, c.adminKey);
      if (r.status === 200) facts.push(f);
      return r.status;
    };
    const readable = async (i: number): Promise<string[]> => {
      const wrong: string[] = [];
      for (const f of facts) {
        const r = await req(i, "POST", `/v1/hd/kg/${graph}/query`, { subject: f.subject, relation: f.relation }, c.adminKey);
        if (r.status !== 200 || r.body.object !== f.object) wrong.push(`${f.subject}:${r.status}:${JSON.stringify(r.body)}`);
      }
      return wrong;
    };
    for (let j = 0; j < 10; j++) expect(await add(j % 3)).toBe(200);
    expect(await readable(others[0]!)).toEqual([]);
    const t0 = Date.now();
    for (const v of victims) await c.kill(v);
    let back = 0;
    while (Date.now() - t0 < 30_000) {
      const w = await add(others[k % others.length]!);
      const r = await req(
        others[(k + 1) % others.length]!,
        "POST",
        `/v1/hd/kg/${graph}/query`,
        { subject: "city0", relation: "twin_of" },
        c.adminKey,
      );
      if (w === 200 && r.status === 200) {
        back = Date.now() - t0;
        break;
      }
      expect([503, 0]).toContain(w === 200 ? r.status : w); // while failing over: 503 or a client timeout, never 404/500
      await new Promise((res) => setTimeout(res, 200));
    }
    console.log(
      `knowledge graphs back through ${others.map((i) => c.ids[i]).join(", ")} ${back} ms after kill -9 of ${victims.map((i) => c.ids[i]).join(" and ")} (the leader ${l0.id})`,
    );
    expect(back).toBeGreaterThan(0);
    expect(back).toBeLessThan(15_000);
    for (let j = 0; j < 4; j++) expect(await add(others[j % others.length]!)).toBe(200);
    for (const i of others) expect(await readable(i)).toEqual([]);
    const st = await req(others[others.length - 1]!, "GET", `/v1/hd/kg/${graph}/stats`, undefined, c.adminKey);
    expect(st.status).toBe(200);
    expect(st.body.facts).toBe(facts.length);
    for (const v of victims) await c.start(v);
  }, 180_000);

  it("kill -9 of the leader: causal models and helper outputs work through the others within 15 s, nothing acknowledged lost", async () => {
    const l0 = await leader([0, 1, 2]);
    const li = c.ids.indexOf(l0.id);
    // node 0 started first (it was the home node of unreplicated state): it goes too when it is not the leader
    const victims = li === 0 ? [0] : [li, 0];
    const others = [0, 1, 2].filter((i) => !victims.includes(i));
    const model = "fail.over-model";
    /** Rows acknowledged (one world per upload: world j is [j % 2, (j >> 1) % 2]). */
    let rows = 0;
    let unsure = 0;
    let j = 0;
    const upload = async (i: number): Promise<number> => {
      const w = [j % 2, (j >> 1) % 2];
      j++;
      const r = await req(i, "POST", `/v1/hd/causal/${model}/worlds`, { n_vars: 2, vocab_per_var: [2, 2], worlds: [w] }, c.adminKey);
      if (r.status === 200) rows++;
      else if (r.status === 0) unsure++; // the outcome of a write the client gave up on is unknown
      return r.status;
    };
    const described = async (i: number): Promise<number | null> => {
      const r = await req(i, "GET", "/v1/hd/causal", undefined, c.adminKey);
      if (r.status !== 200) return null;
      const m = (r.body.models as Array<{ name: string; rows_total: number }>).find((x) => x.name === model);
      return m?.rows_total ?? -1;
    };
    // a helper output built through one node, used as the input of a build through another
    const rungs = (await req(others[0]!, "GET", "/v1/commons/rungs")).body.rungs as Array<{ id: string; module: string }>;
    const idOf = (module: string) => rungs.find((r) => r.module === module)!.id;
    const sheet = {
      header: "Quarter",
      merge_start_row: 0,
      merge_start_col: 0,
      merge_end_row: 0,
      merge_end_col: 1,
      cells: { "1,0": "a", "1,1": 2 },
    };
    const built = await req(
      li,
      "POST",
      `/v1/commons/rungs/${idOf("merged-header-sheet")}/build`,
      { ...sheet, output_path: "sheets/q.xlsx" },
      c.adminKey,
    );
    expect(built.status, JSON.stringify(built.body)).toBe(200);
    for (let k = 0; k < 9; k++) expect(await upload(k % 3)).toBe(200);
    expect(await described(others[0]!)).toBe(rows);
    const t0 = Date.now();
    for (const v of victims) await c.kill(v);
    let back = 0;
    while (Date.now() - t0 < 30_000) {
      const w = await upload(others[j % others.length]!);
      const r = await described(others[(j + 1) % others.length]!);
      if (w === 200 && r !== null) {
        back = Date.now() - t0;
        break;
      }
      expect([503, 0]).toContain(w === 200 ? 503 : w); // while failing over: 503 or a client timeout, never 404/500
      await new Promise((res) => setTimeout(res, 200));
    }
    console.log(
      `causal models back through ${others.map((i) => c.ids[i]).join(", ")} ${back} ms after kill -9 of ${victims.map((i) => c.ids[i]).join(" and ")} (the leader ${l0.id})`,
    );
    expect(back).toBeGreaterThan(0);
    expect(back).toBeLessThan(15_000);
    for (let k = 0; k < 3; k++) expect(await upload(others[k % others.length]!)).toBe(200);
    for (const i of others) {
      const total = (await described(i))!;
      expect(total).toBeGreaterThanOrEqual(rows);
      expect(total).toBeLessThanOrEqual(rows + unsure);
    }
    // every acknowledged world is scanned by a query
    const q = await req(
      others[0]!,
      "POST",
      `/v1/hd/causal/${model}/query`,
      { query_type: "observation", condition_var: 0, condition_value: 1, query_var: 1, query_value: 1 },
      c.adminKey,
    );
    expect(q.status).toBe(200);
    expect(q.body.support.rows_total).toBe(await described(others[0]!));
    // the output built through the killed leader is an input through the others
    const grid = await req(
      others[others.length - 1]!,
      "POST",
      `/v1/commons/rungs/${idOf("merged-cell-grid-reader")}/build`,
      { input_path: "sheets/q.xlsx", output_path: "grid.json" },
      c.adminKey,
    );
    expect(grid.status, JSON.stringify(grid.body)).toBe(200);
    expect(typeof grid.body === "string" ? JSON.parse(grid.body) : grid.body).toEqual([
      ["Quarter", "Quarter"],
      ["a", 2],
    ]);
    // a model listed from the replicated state by the new leader (no local dir there): the graphs too
    const graphs = await req(others[0]!, "GET", "/v1/hd/kg", undefined, c.adminKey);
    expect(graphs.status).toBe(200);
    expect(graphs.body.graphs).toContain("fail.over_kg");
    for (const v of victims) await c.start(v);
  }, 180_000);
});
