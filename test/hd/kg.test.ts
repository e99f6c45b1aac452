/** The knowledge graph service (src/hd/kg) in-process: exact add/query, exact delete_fact, determinism, restart, tenants, bad input, accuracy. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { confidence, separation, theoreticalAccuracy } from "../../src/hd/kg/calibration.js";
import { Graph, type Fact } from "../../src/hd/kg/graph.js";
import { decodeHdkg, encodeHdkg } from "../../src/hd/kg/hdkg-file.js";
import { KnowledgeGraphs } from "../../src/hd/kg/service.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/hd/kg/snapshot.js";
import { KG_DEFAULT_SEED, KG_DIM, vectorOf } from "../../src/hd/kg/vectors.js";
import { kgRoutes } from "../../src/http/routes/hd-kg.js";
import { refusal } from "./route-check.js";

const kernels = Kernels.create();
const fact = (subject: string, relation: string, object: string): Fact => ({ subject, relation, object });
const dirs: string[] = [];
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "svc-kg-"));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("vectors and calibration", () => {
  it("vectors are deterministic in (seed, role, name), distinct across roles, names and seeds, and balanced", () => {
    const a = vectorOf(1, "subject", "paris");
    expect(Buffer.from(vectorOf(1, "subject", "paris")).equals(Buffer.from(a))).toBe(true);
    for (const other of [vectorOf(1, "object", "paris"), vectorOf(1, "subject", "rome"), vectorOf(2, "subject", "paris")]) {
      let diff = 0;
      for (let i = 0; i < a.length; i++) diff += popcount8(a[i]! ^ other[i]!);
      expect(Math.abs(diff / KG_DIM - 0.5)).toBeLessThan(0.01);
    }
    let ones = 0;
    for (const b of a) ones += popcount8(b);
    expect(Math.abs(ones / KG_DIM - 0.5)).toBeLessThan(0.01);
  });

  it("the separation follows sqrt(2D/(pi n)) and the theoretical accuracy falls with load", () => {
    expect(separation(1, KG_DIM)).toBeCloseTo(Math.sqrt(KG_DIM), 6);
    expect(separation(5001, KG_DIM) / Math.sqrt((2 * KG_DIM) / (Math.PI * 5001))).toBeCloseTo(1, 3);
    const acc = [500, 5000, 20000, 100000].map((n) => theoreticalAccuracy(n, 256, KG_DIM));
    for (let i = 1; i < acc.length; i++) expect(acc[i]!).toBeLessThan(acc[i - 1]!);
    expect(acc[1]!).toBeGreaterThan(0.99);
    // a clear winner is confident; a tie is a coin toss between the two
    expect(confidence([100000, 131072], 10, KG_DIM)).toBeCloseTo(1, 6);
    expect(confidence([130000, 130000], 5000, KG_DIM)).toBeCloseTo(0.5, 6);
  });
});

describe("Graph", () => {
  it("answers every fact of a small graph exactly, with role-distinct vectors (no symmetric answers)", () => {
    const g = new Graph(kernels, KG_DEFAULT_SEED);
    try {
      const facts = [
        fact("france", "capital", "paris"),
        fact("italy", "capital", "rome"),
        fact("spain", "capital", "madrid"),
        fact("paris", "capital", "france"),
        fact("rome", "in", "italy"),
      ];
      expect(g.add(facts)).toHaveLength(5);
      expect(g.add([facts[0]!])).toHaveLength(0); // present: skipped
      for (const f of facts) {
        const a = g.query(f.subject, f.relation);
        expect(a.object).toBe(f.object);
        expect(a.confidence).toBeGreaterThan(0.999);
      }
      // subject without a fact in the relation, unknown relation
      expect(g.query("germany", "capital")).toMatchObject({ object: null, confidence: 0 });
      expect(g.query("france", "no-such")).toMatchObject({ object: null, confidence: 0 });
      expect(g.stats()).toMatchObject({
        facts: 5,
        entities: 6,
        relations: [
          { relation: "capital", facts: 4, objects: 4 },
          { relation: "in", facts: 1, objects: 1 },
        ],
      });
    } finally {
      g.dispose();
    }
  });

  it("delete_fact subtracts exactly: the counters after add + delete equal those without the fact", () => {
    const rnd = mulberry32(3);
    const facts = Array.from({ length: 60 }, (_, i) => fact(`s${i}`, "r", `o${rnd() % 7}`));
    const with_ = new Graph(kernels, KG_DEFAULT_SEED);
    const without = new Graph(kernels, KG_DEFAULT_SEED);
    try {
      with_.add(facts);
      expect(with_.delete([facts[17]!, facts[42]!, fact("nobody", "r", "o1"), fact("s1", "other", "o1")])).toHaveLength(2);
      without.add(facts.filter((_, i) => i !== 17 && i !== 42));
      expect(Buffer.from(with_.counters("r")!.buffer).equals(Buffer.from(without.counters("r")!.buffer))).toBe(true);
      expect(with_.query("s17", "r")).toMatchObject({ object: null, confidence: 0 });
      expect(with_.query("s18", "r").object).toBe(facts[18]!.object);
      // deleting every fact returns the counters to zero
      with_.delete(facts);
      expect(with_.counters("r")!.every((c) => c === 0)).toBe(true);
      expect(with_.stats().entities).toBe(0);
    } finally {
      with_.dispose();
      without.dispose();
    }
  });

  it("statistical accuracy: >= 99% of 1,000 facts in one shard (256 candidate objects) are answered right", () => {
    const rnd = mulberry32(11);
    const facts = Array.from({ length: 1000 }, (_, i) => fact(`subj-${i}`, "likes", `obj-${rnd() % 256}`));
    const g = new Graph(kernels, KG_DEFAULT_SEED);
    try {
      g.add(facts);
      let right = 0;
      let conf = 0;
      for (const f of facts) {
        const a = g.query(f.subject, "likes");
        if (a.object === f.object) right++;
        conf += a.confidence;
      }
      expect(right / facts.length).toBeGreaterThanOrEqual(0.99);
      // calibrated: mean confidence close to the accuracy
      expect(Math.abs(conf / facts.length - right / facts.length)).toBeLessThan(0.02);
    } finally {
      g.dispose();
    }
  });
});

describe(".hdkg", () => {
  it("round-trips and refuses damage", () => {
    const g = {
      seed: 42,
      relations: [
        {
          name: "r",
          facts: [
            ["a", "b"],
            ["ü", "x"],
          ] as Array<[string, string]>,
        },
        { name: "empty", facts: [] },
      ],
    };
    const bytes = encodeHdkg(g);
    expect(decodeHdkg(bytes)).toEqual(g);
    const bad = Buffer.from(bytes);
    bad[bad.length - 6]! ^= 1;
    expect(() => decodeHdkg(bad)).toThrow(/CRC/);
    expect(() => decodeHdkg(Buffer.from("nope"))).toThrow(/too short/);
    expect(() => decodeHdkg(Buffer.concat([Buffer.from("XXXX"), bytes.subarray(4)]))).toThrow(/magic/);
  });
});

describe("KnowledgeGraphs", () => {
  const open: KnowledgeGraphs[] = [];
  const svc = (dir: string) => {
    const s = new KnowledgeGraphs(dir, { kernels, durability: "none" });
    open.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  const facts = {
    facts: [
      { subject: "alice", relation: "knows", object: "bob" },
      { subject: "bob", relation: "knows", object: "carol" },
      { subject: "alice", relation: "born_in", object: "paris" },
    ],
  };

  it("adds, queries, stats, and keeps data under <data>/tenants/<tenant>/hd/kg/<name>/", async () => {
    const dir = await tmp();
    const kg = svc(dir);
    expect(await kg.addFacts("t1", "g", facts)).toEqual({ added: 3, relations: ["knows", "born_in"] });
    expect(await kg.addFacts("t1", "g", facts)).toEqual({ added: 0, relations: ["knows", "born_in"] });
    expect(await kg.query("t1", "g", { subject: "alice", relation: "knows" })).toEqual({ object: "bob", confidence: 1 });
    const st = await kg.stats("t1", "g");
    expect(st).toMatchObject({ name: "g", facts: 3, entities: 4 });
    expect(st.relations.map((r) => [r.relation, r.facts])).toEqual([
      ["knows", 2],
      ["born_in", 1],
    ]);
    expect(st.relations[0]!.capacityLeft).toBeGreaterThan(1000);
    expect(existsSync(join(dir, "tenants", "t1", "hd", "kg", "g", "graph.json"))).toBe(true);
  });

  it("same requests, same bytes: two fresh services export identical .hdkg files", async () => {
    const a = svc(await tmp());
    const b = svc(await tmp());
    for (const kg of [a, b]) {
      await kg.addFacts("t", "g", facts);
      await kg.deleteFacts("t", "g", { facts: [facts.facts[1]!] });
      await kg.addFacts("t", "g", { facts: [{ subject: "dan", relation: "knows", object: "erin" }] });
    }
    const ea = await a.export("t", "g");
    expect(ea.equals(await b.export("t", "g"))).toBe(true);
    expect(ea.subarray(0, 4).toString()).toBe("HDKG");
  });

  it("survives a restart (WAL replay), including deletes; import replaces a graph", async () => {
    const dir = await tmp();
    const kg = svc(dir);
    await kg.addFacts("t", "g", facts);
    expect(await kg.deleteFacts("t", "g", { facts: [facts.facts[0]!, { subject: "x", relation: "knows", object: "y" }] })).toEqual({
      deleted: 1,
    });
    const before = await kg.export("t", "g");
    await kg.close();
    const again = svc(dir);
    expect((await again.export("t", "g")).equals(before)).toBe(true);
    expect(await again.query("t", "g", { subject: "bob", relation: "knows" })).toEqual({ object: "carol", confidence: 1 });
    expect(await again.query("t", "g", { subject: "alice", relation: "knows" })).toEqual({ object: null, confidence: 0 });
    // import into another name, then restart: same content
    expect(await again.import("t", "copy", before)).toEqual({ imported: 2, relations: 2 });
    await again.close();
    const third = svc(dir);
    expect((await third.export("t", "copy")).equals(before)).toBe(true);
    expect(await third.delete("t", "copy")).toEqual({ deleted: true });
    await expect(third.stats("t", "copy")).rejects.toMatchObject({ code: "E_NOT_FOUND", field: "name" });
    expect(existsSync(join(dir, "tenants", "t", "hd", "kg", "copy"))).toBe(false);
  });

  describe("checkpoints", () => {
    const batch = (from: number, n: number) => ({
      facts: Array.from({ length: n }, (_, i) => ({
        subject: `s${from + i}`,
        relation: `r${(from + i) % 3}`,
        object: `o${(from + i) % 17}`,
      })),
    });
    const answers = async (kg: KnowledgeGraphs, n: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => kg.query("t", "g", { subject: `s${i}`, relation: `r${i % 3}` })));
    const gdir = (dir: string) => join(dir, "tenants", "t", "hd", "kg", "g");
    const small = (dir: string) => {
      const s = new KnowledgeGraphs(dir, { kernels, durability: "none", checkpointBytes: 2048 });
      open.push(s);
      return s;
    };

    it("reopen after a checkpoint plus later WAL frames gives identical answers and export bytes", async () => {
      const dir = await tmp();
      const ref = svc(await tmp()); // never checkpoints before close: plain replay semantics
      const kg = small(dir);
      for (const k of [kg, ref]) {
        await k.addFacts("t", "g", batch(0, 200));
        await k.deleteFacts("t", "g", { facts: batch(10, 5).facts });
      }
      const snap = decodeSnapshot(readFileSync(join(gdir(dir), "snapshot.hdks")), "x");
      for (const k of [kg, ref]) await k.addFacts("t", "g", { facts: [{ subject: "late", relation: "r1", object: "o3" }] }); // after the checkpoint
      const want = await answers(ref, 200);
      const wantBytes = await ref.export("t", "g");
      expect(want.filter((a) => a.object !== null).length).toBe(195);
      expect(await answers(kg, 200)).toEqual(want);
      await kg.close();
      const again = svc(dir);
      expect(await answers(again, 200)).toEqual(want);
      expect((await again.export("t", "g")).equals(wantBytes)).toBe(true);
      expect(await again.query("t", "g", { subject: "late", relation: "r1" })).toEqual({ object: "o3", confidence: 1 });
      // close checkpointed past the mid-run snapshot; snapshots are deterministic (re-encoding gives the same bytes)
      const now = readFileSync(join(gdir(dir), "snapshot.hdks"));
      expect(encodeSnapshot(decodeSnapshot(now, "x")).equals(now)).toBe(true);
      expect(decodeSnapshot(now, "x").wal.offset).toBeGreaterThan(snap.wal.offset);
      // its counters are those of a graph built from its facts alone
      const dec = decodeSnapshot(now, "x");
      const fresh = new Graph(kernels, dec.graph.seed);
      try {
        for (const r of dec.graph.relations) fresh.add(r.facts.map(([su, o]) => fact(su, r.name, o)));
        dec.graph.relations.forEach((r, i) =>
          expect(Buffer.from(dec.counters[i]!.buffer).equals(Buffer.from(fresh.counters(r.name)!.buffer))).toBe(true),
        );
      } finally {
        fresh.dispose();
      }
    });

    it("a crash-like reopen (snapshot from before, WAL frames after, no close) is exact", async () => {
      const dir = await tmp();
      const crashed = new KnowledgeGraphs(dir, { kernels, durability: "none", checkpointBytes: 1024 }); // never closed
      const ref = svc(await tmp());
      for (const k of [crashed, ref]) {
        await k.addFacts("t", "g", batch(0, 150));
        await k.deleteFacts("t", "g", { facts: batch(20, 3).facts });
      }
      const snapBefore = readFileSync(join(gdir(dir), "snapshot.hdks"));
      const snapPos = decodeSnapshot(snapBefore, "x").wal;
      for (const k of [crashed, ref]) {
        await k.addFacts("t", "g", batch(150, 3));
        await k.deleteFacts("t", "g", { facts: [batch(0, 1).facts[0]!] });
      }
      // those writes stayed below the threshold: the snapshot is still the old one, the WAL has frames after it
      expect(readFileSync(join(gdir(dir), "snapshot.hdks")).equals(snapBefore)).toBe(true);
      const after = svc(dir);
      expect(await answers(after, 153)).toEqual(await answers(ref, 153));
      expect((await after.export("t", "g")).equals(await ref.export("t", "g"))).toBe(true);
      expect(snapPos.offset).toBeGreaterThan(0);
    });

    it("a damaged snapshot takes the graph offline with E_STORE_OFFLINE naming the file and the damage (no silent fallback)", async () => {
      const dir = await tmp();
      const kg = small(dir);
      await kg.addFacts("t", "g", batch(0, 100));
      await kg.close();
      const path = join(gdir(dir), "snapshot.hdks");
      const bytes = readFileSync(path);
      const bad = Buffer.from(bytes);
      bad[bad.length - 100]! ^= 1;
      writeFileSync(path, bad);
      const again = svc(dir);
      await expect(again.stats("t", "g")).rejects.toMatchObject({
        code: "E_STORE_OFFLINE",
        status: 503,
        message: expect.stringMatching(/snapshot.*damaged.*CRC/),
      });
      await expect(again.stats("t", "g")).rejects.toMatchObject({ code: "E_STORE_OFFLINE" }); // stays offline, not re-read
      await again.close();
      writeFileSync(path, bytes.subarray(0, 30));
      const third = svc(dir);
      await expect(third.stats("t", "g")).rejects.toMatchObject({ code: "E_STORE_OFFLINE", message: expect.stringMatching(/too short/) });
      await third.close();
      writeFileSync(path, bytes); // restored: opens again
      const fourth = svc(dir);
      expect((await fourth.stats("t", "g")).facts).toBe(100);
      await fourth.close();
    });
  });

  it("is tenant-scoped: another tenant's graph is 404", async () => {
    const kg = svc(await tmp());
    await kg.addFacts("a", "g", facts);
    await expect(kg.query("b", "g", { subject: "alice", relation: "knows" })).rejects.toMatchObject({ code: "E_NOT_FOUND", status: 404 });
    await expect(kg.stats("b", "g")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(kg.export("b", "g")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(kg.delete("b", "g")).rejects.toMatchObject({ code: "E_NOT_FOUND" });
    await expect(kg.deleteFacts("b", "g", facts)).rejects.toMatchObject({ code: "E_NOT_FOUND" });
  });

  it("refuses bad input with a code and the field", async () => {
    const kg = svc(await tmp());
    const bad = async (p: Promise<unknown>, field: string) =>
      expect(p).rejects.toMatchObject({ code: "E_BAD_REQUEST", status: 400, field });
    await bad(kg.addFacts("t", "", facts), "name");
    await bad(kg.addFacts("t", "../x", facts), "name");
    // the bodies: the routes' schemas (tools/hd-ops.ts), run as a request runs them
    const routes = Object.fromEntries(kgRoutes(kg).map((r) => [r.operationId, r]));
    const refused = (op: string, body: unknown, field: string) =>
      expect(refusal(routes[op]!, body), JSON.stringify(body)).toEqual({ code: "E_BAD_REQUEST", status: 400, field });
    refused("hd_kg_add", {}, "facts");
    refused("hd_kg_add", undefined, "facts");
    refused("hd_kg_add", { facts: [] }, "facts");
    refused("hd_kg_add", [], "body");
    refused("hd_kg_add", { facts: [{ subject: "", relation: "r", object: "o" }] }, "facts[0].subject");
    refused("hd_kg_add", { facts: [{ subject: "s", relation: 3, object: "o" }] }, "facts[0].relation");
    refused("hd_kg_add", { facts: [{ subject: "s", relation: "r", object: "é".repeat(257) }] }, "facts[0].object");
    refused("hd_kg_delete_fact", { facts: [null] }, "facts[0]");
    await kg.addFacts("t", "g", facts);
    refused("hd_kg_query", { subject: "alice" }, "relation");
    refused("hd_kg_query", { subject: "", relation: "knows" }, "subject");
    await bad(kg.import("t", "g", Buffer.from("garbage bytes here, not hdkg")), "body");
    await expect(kg.query("t", "nope", { subject: "a", relation: "b" })).rejects.toMatchObject({ code: "E_NOT_FOUND", field: "name" });
  });
});

function popcount8(x: number): number {
  let c = 0;
  for (; x; x &= x - 1) c++;
  return c;
}
