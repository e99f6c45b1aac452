/**
 * A knowledge-graph shard past its capacity says so: the confidence stays calibrated when the candidates
 * outnumber the k nearest the kernel returns (simulated from the signal model, seeded), and over real HTTP an
 * overloaded shard answers mostly null with low confidence while stats report capacity, load and overloaded.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { confidence, MIN_CONFIDENCE, POSTERIOR_K, separation, theoreticalAccuracy } from "../../src/hd/kg/calibration.js";
import { KG_DIM } from "../../src/hd/kg/vectors.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { startServer, type Server } from "../../src/app/start-server.js";
import { call } from "../e2e/client.js";

/** Seeded standard normals (Box-Muller over mulberry32). */
function normals(seed: number): () => number {
  const next = mulberry32(seed);
  const u = () => (next() + 0.5) / 2 ** 32;
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/**
 * Queries against the signal model: the right object's z ~ N(mu, 1), the m - 1 others N(0, 1); the kernel's
 * k nearest distances go into `confidence` with the candidate count, as the graph calls it.
 */
function simulate(n: number, m: number, trials: number, seed: number): { accuracy: number; meanConfidence: number; nulls: number } {
  const mu = separation(n, KG_DIM);
  const z = normals(seed);
  const toDist = (x: number) => KG_DIM / 2 - (x * Math.sqrt(KG_DIM)) / 2;
  let right = 0,
    sumC = 0,
    nulls = 0;
  const d = new Float64Array(m);
  for (let t = 0; t < trials; t++) {
    d[0] = toDist(mu + z()); // candidate 0 is the object
    for (let i = 1; i < m; i++) d[i] = toDist(z());
    const order = Array.from({ length: m }, (_, i) => i)
      .sort((a, b) => d[a]! - d[b]!)
      .slice(0, Math.min(POSTERIOR_K, m));
    const c = confidence(
      order.map((i) => d[i]!),
      n,
      KG_DIM,
      m,
    );
    sumC += c;
    if (c < MIN_CONFIDENCE) nulls++;
    else if (order[0] === 0) right++; // a null answer is wrong
  }
  return { accuracy: right / trials, meanConfidence: sumC / trials, nulls };
}

describe("calibration past capacity (signal model)", () => {
  it.each([
    // [facts, candidates]: within capacity, at the edge, far past it (the 60k facts over 2,000 objects)
    [5_000, 256],
    [20_000, 256],
    [60_000, 2_000],
    [40_000, 1_000],
  ])("%i facts over %i candidates: mean confidence matches accuracy", (n, m) => {
    const r = simulate(n, m, 1000, n + m);
    const theory = theoreticalAccuracy(n, m, KG_DIM);
    // answers below the floor count as wrong, so the confident answers' accuracy is at most the theory's
    expect(r.accuracy).toBeLessThanOrEqual(theory + 0.03);
    expect(Math.abs(r.meanConfidence - theory)).toBeLessThan(0.03);
    if (theory < 0.1) expect(r.nulls).toBeGreaterThan(1000 / 2); // an overloaded shard mostly says "don't know"
  });
});

describe("an overloaded shard over HTTP", () => {
  let dir: string;
  let server: Server;
  let key: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-kg-past-"));
    server = await startServer({ dataDir: dir, port: 0, durability: "none" });
    key = (await server.keys.create({ tenant: "t" })).key;
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("20k facts over 2,000 objects: stats say overloaded (capacity, load); confidence is calibrated, object null below the floor", async () => {
    const N = 20_000,
      M = 2_000;
    const rnd = mulberry32(21);
    const objectOf = (i: number) => `o${(Math.imul(i, 2654435761) >>> 0) % M}`;
    for (let start = 0; start < N; start += 10_000) {
      const facts = Array.from({ length: 10_000 }, (_, j) => ({ subject: `s${start + j}`, relation: "rel", object: objectOf(start + j) }));
      const r = await call(server.url, key, "POST", "/v1/hd/kg/big/facts", { facts });
      expect(r.status, r.raw.toString()).toBe(200);
    }
    const st = await call(server.url, key, "GET", "/v1/hd/kg/big/stats");
    const shard = st.body.relations[0];
    expect(shard).toMatchObject({ relation: "rel", facts: N, objects: M, capacityLeft: 0, overloaded: true });
    expect(shard.capacity).toBeGreaterThan(1000);
    expect(shard.capacity).toBeLessThan(N);
    expect(shard.load).toBeCloseTo(N / shard.capacity, 4);

    let right = 0,
      sumC = 0;
    const Q = 40;
    for (let q = 0; q < Q; q++) {
      const i = rnd() % N;
      const a = await call(server.url, key, "POST", "/v1/hd/kg/big/query", { subject: `s${i}`, relation: "rel" });
      expect(a.status).toBe(200);
      sumC += a.body.confidence;
      if (a.body.object === null) expect(a.body.confidence).toBeLessThan(MIN_CONFIDENCE);
      else {
        expect(a.body.confidence).toBeGreaterThanOrEqual(MIN_CONFIDENCE);
        if (a.body.object === objectOf(i)) right++;
      }
    }
    const theory = theoreticalAccuracy(N, M, KG_DIM);
    expect(theory).toBeLessThan(0.5);
    // calibrated: the mean confidence is the expected accuracy (40 queries: s.d. of the mean about 0.06)
    expect(Math.abs(sumC / Q - theory)).toBeLessThan(0.15);
    expect(Math.abs(right / Q - theory)).toBeLessThan(0.25);

    // within capacity the same graph's small relation is not overloaded
    await call(server.url, key, "POST", "/v1/hd/kg/big/facts", { facts: [{ subject: "a", relation: "small", object: "b" }] });
    const small = (await call(server.url, key, "GET", "/v1/hd/kg/big/stats")).body.relations.find(
      (r: { relation: string }) => r.relation === "small",
    );
    expect(small).toMatchObject({ facts: 1, overloaded: false });
    expect(small.load).toBeLessThan(1);
  }, 60_000);
});
