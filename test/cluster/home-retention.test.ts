/**
 * Retention of the home stores' stream `svc_home` (issue 31 item 6; app/home-stores.ts) with real
 * processes: 3 nats-servers and 3 `svc serve --cluster` nodes. Steady overwrites of the directory
 * (an owner's fields), the commons (agent profiles), a knowledge graph (facts added and deleted) and causal models (dropped and made again)
 * keep the stream at most 4x the stores' live bytes (their snapshots in `svc_snapshots`, each at
 * least the snapshot threshold); then the leader is killed (-9) and a node whose data dir was wiped
 * becomes the leader: it starts from the snapshots plus the tails and serves the same state.
 *
 * HOME_RETENTION_OVERWRITES (default 1000) sets the overwrites per store; HOME_RETENTION_BASELINE=1
 * runs the same with snapshots off (the stream keeps every frame; the new leader folds it all), for
 * bench/RESULTS.md's comparison.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callNode, startSvcCluster, until, type SvcCluster } from "./svc-cluster.js";

const BASELINE = process.env.HOME_RETENTION_BASELINE === "1";
const OVERWRITES = Number(process.env.HOME_RETENTION_OVERWRITES ?? 1000);
/** The snapshot threshold the nodes run with (SVC_SNAPSHOT_MIN_BYTES): small, so a test-sized store snapshots and purges. */
const MIN_BYTES = 32 << 10;
const config = {
  commons: { rateLimits: { trust: { count: 1_000_000, windowSeconds: 600 }, writes: { count: 1_000_000, windowSeconds: 600 } } },
};

let c: SvcCluster;
let nc: NatsConnection;

beforeAll(async () => {
  // inherited by the svc processes
  process.env.SVC_SNAPSHOT_MIN_BYTES = BASELINE ? "999999999999999" : String(MIN_BYTES); // at most 15 digits (snapshotPolicyFromEnv)
  process.env.SVC_SNAPSHOT_CHECK_MS = "300";
  c = await startSvcCluster(3, { config });
  nc = await connect({ servers: c.nats.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
}, 180_000);

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await c?.stop();
});

const call = (i: number, method: string, path: string, body?: unknown) => callNode(c.urls[i]!, method, path, body, c.adminKey, 30_000);

/** The leader every node of `nodes` names (`want`: until it is that one). */
async function leader(nodes: number[], want?: string): Promise<{ id: string; term: number }> {
  return until(
    "an agreed leader",
    async () => {
      const views = await Promise.all(
        nodes.map(async (i) => (await call(i, "GET", "/v1/health")).body?.cluster as { leader: string | null; term: number }),
      );
      const l = views[0]?.leader;
      if (want !== undefined && l !== want) return undefined;
      return l && views.every((v) => v?.leader === l && v.term === views[0]!.term) ? { id: l, term: views[0]!.term } : undefined;
    },
    60_000,
  );
}

/** svc_home's bytes and the messages on each home subject now. */
async function homeStream(): Promise<{ bytes: number; messages: number; subjects: Record<string, number> }> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info("svc_home", { subjects_filter: ">" });
  return { bytes: info.state.bytes, messages: info.state.messages, subjects: (info.state.subjects ?? {}) as Record<string, number> };
}

/** The newest snapshot's size per home subject (the stores' live bytes), from the object store's listing. */
async function liveBytes(): Promise<Map<string, number>> {
  const os = await new Objm(nc).open("svc_snapshots");
  const out = new Map<string, { seq: number; size: number }>();
  for (const e of await os.list()) {
    if (!e.name.startsWith("svc_home.") || e.deleted) continue;
    const subject = e.name.slice(0, e.name.lastIndexOf("~"));
    const seq = Number(e.metadata?.seq);
    if ((out.get(subject)?.seq ?? -1) < seq) out.set(subject, { seq, size: e.size });
  }
  return new Map([...out].map(([k, v]) => [k, v.size]));
}

const GRAPH = "retention_kg";
const biz: string[] = [];

/** What the stores hold now, read through node i: the businesses' descriptions, the agents' profiles, the graph's answers. */
async function state(i: number): Promise<unknown> {
  const businesses: unknown[] = [];
  for (const id of biz) {
    const r = await call(i, "GET", `/api/businesses/${id}`);
    if (r.status !== 200) throw new Error(`business ${id}: ${r.status} ${JSON.stringify(r.body)}`);
    businesses.push(r.body);
  }
  const agents = await call(i, "GET", "/v1/board/agents?limit=1000");
  if (agents.status !== 200) throw new Error(`agents: ${agents.status}`);
  const answers: unknown[] = [];
  for (let s = 0; s < 8; s++) {
    const r = await call(i, "POST", `/v1/hd/kg/${GRAPH}/query`, { subject: `s${s}`, relation: "holds" });
    if (r.status !== 200) throw new Error(`kg query: ${r.status} ${JSON.stringify(r.body)}`);
    answers.push(r.body);
  }
  const stats = await call(i, "GET", `/v1/hd/kg/${GRAPH}/stats`);
  const models = await call(i, "GET", "/v1/hd/causal");
  if (models.status !== 200) throw new Error(`causal models: ${models.status}`);
  return { businesses, agents: agents.body, answers, facts: stats.body?.facts ?? stats.body, models: models.body };
}

describe(`retention of svc_home${BASELINE ? " (baseline: snapshots off)" : ""}`, () => {
  let before: unknown;
  let written = 0;

  it("steady overwrites of the directory, the commons and a knowledge graph and causal models keep svc_home at most 4x their live bytes", async () => {
    await leader([0, 1, 2]);
    const list = await call(0, "GET", "/api/businesses?limit=8");
    expect(list.status).toBe(200);
    for (const h of list.body.results as Array<{ id: string }>) biz.push(h.id);
    expect(biz.length).toBeGreaterThan(0);
    // claimed (409: a seed business that is claimed already), so that its owner's fields can be written
    for (const id of biz)
      expect([200, 409]).toContain(
        (await call(1, "POST", `/api/admin/businesses/${id}/claim`, { owner: { name: "Ann Owner", email: "ann@example.com" } })).status,
      );
    const t0 = Date.now();
    // rounds of one overwrite per store, through every node (they forward to the leader), 3 at once
    const one = async (k: number): Promise<void> => {
      const i = k % 3;
      const id = biz[k % biz.length]!;
      const writes = await Promise.all([
        call(i, "PATCH", `/api/admin/businesses/${id}/fields`, {
          fields: { description: `Round ${k}: ${"a steady overwrite of the owner's words. ".repeat(4)}` },
        }),
        call(i, "POST", "/v1/board/profile", {
          agent: `agent-${k % 16}`,
          about: `Round ${k}: ${"the same agents saving their profile again. ".repeat(4)}`,
        }),
        // a fact added and, 8 rounds later, deleted: the graph holds about 8 facts
        call(i, "POST", `/v1/hd/kg/${GRAPH}/facts`, { facts: [{ subject: `s${k % 8}`, relation: "holds", object: `o${k}` }] }),
        ...(k >= 8
          ? [
              call(i, "POST", `/v1/hd/kg/${GRAPH}/facts/delete`, {
                facts: [{ subject: `s${(k - 8) % 8}`, relation: "holds", object: `o${k - 8}` }],
              }),
            ]
          : []),
        // a causal model dropped and made again (rounds running at once use different models)
        (async () => {
          const d = await call(i, "DELETE", `/v1/hd/causal/retention-m${k % 3}`);
          if (d.status !== 200 && d.status !== 404) return d;
          const worlds = Array.from({ length: 16 }, (_, j) => [(j + k) % 2, (j >> 1) % 2, (j >> 2) % 3]);
          return call(i, "POST", `/v1/hd/causal/retention-m${k % 3}/worlds`, { n_vars: 3, vocab_per_var: [2, 2, 3], worlds });
        })(),
      ]);
      for (const w of writes) if (w.status !== 200) throw new Error(`round ${k}: ${w.status} ${JSON.stringify(w.body)}`);
      written++;
    };
    for (let k = 0; k < OVERWRITES; k += 3) await Promise.all([k, k + 1, k + 2].filter((x) => x < OVERWRITES).map(one));
    console.log(`home retention: ${written} rounds (x3 stores) in ${Date.now() - t0} ms`);
    if (BASELINE) {
      const s = await homeStream();
      console.log(`home retention (baseline): svc_home ${s.bytes} bytes, ${s.messages} messages`, JSON.stringify(s.subjects));
      before = await state(0);
      expect(Object.values(s.subjects).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3 * OVERWRITES);
    } else {
      // every store's subject has its two snapshots, and the stream comes down to the bound
      let last = { bytes: 0, bound: 0, live: "" };
      await until(
        "svc_home within 4x the live bytes",
        async () => {
          const live = await liveBytes();
          const s = await homeStream();
          const bound = 4 * [...live.values()].reduce((a, b) => a + Math.max(MIN_BYTES, b), 0);
          last = { bytes: s.bytes, bound, live: [...live.keys()].join(", ") };
          const kg = [...live.keys()].some((k) => k.startsWith("svc_home.kg."));
          const causal = [...live.keys()].filter((k) => k.startsWith("svc_home.causal.")).length === 3;
          return live.has("svc_home.directory") && live.has("svc_home.commons") && kg && causal && s.bytes <= bound ? s : undefined;
        },
        60_000,
      ).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}: svc_home ${last.bytes} bytes, bound ${last.bound}, snapshots of ${last.live}`);
      });
      const s = await homeStream();
      const live = await liveBytes();
      const liveSum = [...live.values()].reduce((a, b) => a + b, 0);
      console.log(
        `home retention: svc_home ${s.bytes} bytes, ${s.messages} messages after ${written} x 3 overwrites; live (newest snapshots) ${liveSum} bytes`,
        JSON.stringify(Object.fromEntries(live)),
        JSON.stringify(s.subjects),
      );
      before = await state(0);
      // purged: each subject keeps fewer messages than frames were written to it (the graph: an add and a delete per round)
      expect(s.subjects["svc_home.directory"] ?? 0).toBeLessThan(OVERWRITES);
      expect(s.subjects["svc_home.commons"] ?? 0).toBeLessThan(OVERWRITES);
      const kg = Object.entries(s.subjects).find(([k]) => k.startsWith("svc_home.kg."))!;
      expect(kg[1]).toBeLessThan(2 * OVERWRITES - 8);
      const causal = Object.entries(s.subjects).filter(([k]) => k.startsWith("svc_home.causal."));
      expect(causal.length).toBe(3);
      for (const [, n] of causal) expect(n).toBeLessThan((2 * OVERWRITES) / 3 - 2);
    }
    before ??= await state(0);
    // the lease's stream is bounded by its own limit (its fold needs only the recent messages: leader-lease.ts)
    const lease = await (await jetstreamManager(nc)).streams.info("svc_home_lease");
    expect(lease.config.max_msgs_per_subject).toBe(600);
    expect(lease.state.messages).toBeLessThanOrEqual(600);
  }, 900_000);

  it("a node with an empty data dir that becomes leader after the purge serves the same state", async () => {
    const l0 = await leader([0, 1, 2]);
    const li = c.ids.indexOf(l0.id);
    const [e, t] = [0, 1, 2].filter((i) => i !== li) as [number, number];
    // e: stopped, its data dir wiped; t: stopped too, so that e is the only candidate; then the leader is killed
    await c.terminate(e);
    await c.terminate(t);
    rmSync(c.dataDirs[e]!, { recursive: true, force: true });
    mkdirSync(c.dataDirs[e]!, { recursive: true });
    writeFileSync(join(c.dataDirs[e]!, "config.json"), JSON.stringify(config));
    await c.kill(li);
    const t0 = Date.now();
    await c.start(e);
    const l1 = await leader([e], c.ids[e]);
    expect(l1.term).toBeGreaterThan(l0.term);
    const after = await until("the same state through the new leader", async () => state(e), 60_000);
    const ms = Date.now() - t0;
    const folded = [...c.output(e).matchAll(/folded in (\d+) ms/g)].map((m) => Number(m[1]));
    console.log(
      `home retention${BASELINE ? " (baseline)" : ""}: new leader ${c.ids[e]} (empty data dir) serves every store ${ms} ms after its start; directory+commons folded in ${folded.join(",")} ms`,
    );
    expect(after).toEqual(before);
  }, 300_000);
});
