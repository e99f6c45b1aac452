/**
 * End to end with the official Pinecone TypeScript client (v8) against the built `svc serve`
 * running as a child process: control plane, data plane, namespaces, tenancy and auth errors.
 * Every expectation about query results is computed independently here (brute-force cosine
 * over the records the test upserted), never read back from the server.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Errors, Pinecone, type PineconeRecord } from "@pinecone-database/pinecone";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAIN, startServerProcess, type ServerProcess } from "./server-process.js";
import { cosine, eventually } from "./until.js";
import { mulberry32 } from "../../src/kernels/random.js";

const run = promisify(execFile);

const DIM = 8;
const INDEX = "movies-e2e";
const GENRES = ["drama", "comedy", "horror", "scifi"] as const;
type Meta = { year: number; genre: string };

const next = mulberry32(20240611);
const rand = () => next() / 4294967296;
const vec = (): number[] => Array.from({ length: DIM }, () => rand() * 2 - 1);
/** What the server stores: float32. */
const f32 = (v: number[]): number[] => Array.from(Float32Array.from(v));

/** Brute-force top-k by cosine over `records` (those `keep` accepts), best first. */
function bruteForce(records: PineconeRecord<Meta>[], query: number[], k: number, keep: (m: Meta) => boolean = () => true) {
  const ranked = records
    .filter((r) => keep(r.metadata!))
    .map((r) => ({ id: r.id, score: cosine(f32(r.values!), f32(query)) }))
    .sort((a, b) => b.score - a.score);
  // Precondition for an exact ordering check: no near-ties inside the top k + 1.
  for (let i = 0; i + 1 < Math.min(ranked.length, k + 1); i++) expect(ranked[i]!.score - ranked[i + 1]!.score).toBeGreaterThan(1e-4);
  return ranked.slice(0, k);
}

// A dozen records in the default namespace: year 2000..2022 step 2, genres cycling.
const records: PineconeRecord<Meta>[] = Array.from({ length: 12 }, (_, i) => ({
  id: `r${String(i).padStart(2, "0")}`,
  values: vec(),
  metadata: { year: 2000 + 2 * i, genre: GENRES[i % GENRES.length]! },
}));
const byId = new Map(records.map((r) => [r.id, r]));
const query = vec();
const filter = { $and: [{ year: { $gte: 2004, $lt: 2020 } }, { genre: { $nin: ["horror", "comedy"] } }] };
const matchesFilter = (m: Meta) => m.year >= 2004 && m.year < 2020 && m.genre !== "horror" && m.genre !== "comedy";
// ns1: one record per genre with the query itself among them, all matching the filter's year
// range; one reuses the id r00 with different values and metadata. If namespaces leaked,
// "n-exact" (cosine 1 with the query) would top every default-namespace query.
const ns1Records: PineconeRecord<Meta>[] = [
  { id: "n-exact", values: [...query], metadata: { year: 2010, genre: "drama" } },
  { id: "n-1", values: vec(), metadata: { year: 2012, genre: "scifi" } },
  { id: "n-2", values: vec(), metadata: { year: 2014, genre: "drama" } },
  { id: "r00", values: vec(), metadata: { year: 1999, genre: "western" } },
];

describe("the official Pinecone v8 client against svc serve", () => {
  let server: ServerProcess;
  let pc: Pinecone;
  let host: string;

  beforeAll(async () => {
    server = await startServerProcess();
    expect(server.adminKey).toMatch(/^svc_/);
    pc = new Pinecone({ apiKey: server.adminKey!, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it("creates an index (waitUntilReady), lists and describes it", async () => {
    const created = await pc.createIndex({
      name: INDEX,
      dimension: DIM,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
      timeout: 10_000,
    });
    expect(created).toMatchObject({ name: INDEX, dimension: DIM, metric: "cosine", status: { ready: true } });

    const listed = await pc.listIndexes();
    expect(listed.indexes?.map((i) => i.name)).toEqual([INDEX]);

    const described = await pc.describeIndex(INDEX);
    expect(described.name).toBe(INDEX);
    expect(described.dimension).toBe(DIM);
    expect(described.metric).toBe("cosine");
    expect(described.status.ready).toBe(true);
    expect((described.spec as { serverless?: unknown }).serverless).toMatchObject({ cloud: "aws", region: "us-east-1" });
    expect(described.vectorType).toBe("dense");
    expect(described.host.endsWith(`/v1/indexes/${INDEX}`)).toBe(true);
    expect(described.host).toBe(`${server.url}/v1/indexes/${INDEX}`);
    host = described.host;

    // A second create with the same name is a conflict, and leaves the first one alone.
    await expect(
      pc.createIndex({ name: INDEX, dimension: 4, metric: "cosine", spec: { serverless: { cloud: "aws", region: "us-east-1" } } }),
    ).rejects.toBeInstanceOf(Errors.PineconeConflictError);
    expect((await pc.describeIndex(INDEX)).dimension).toBe(DIM);
  });

  it("upserts into the default namespace and ns1, which stay separate", async () => {
    const index = pc.index<Meta>({ name: INDEX }); // host resolved through describeIndex
    await index.upsert({ records });
    await index.namespace("ns1").upsert({ records: ns1Records });

    const stats = await eventually(async () => {
      const s = await index.describeIndexStats();
      expect(s.totalRecordCount).toBe(records.length + ns1Records.length);
      return s;
    });
    expect(stats.dimension).toBe(DIM);
    expect(stats.namespaces).toEqual({ __default__: { recordCount: records.length }, ns1: { recordCount: ns1Records.length } });

    // The same id in two namespaces holds two different records.
    const dflt = await index.fetch({ ids: ["r00"] });
    const other = await index.namespace("ns1").fetch({ ids: ["r00"] });
    expect(dflt.records.r00!.metadata).toEqual(records[0]!.metadata);
    expect(other.records.r00!.metadata).toEqual({ year: 1999, genre: "western" });
    expect(other.records.r00!.values).toEqual(f32(ns1Records[3]!.values!));
    // ns1-only ids are not in the default namespace.
    expect(Object.keys((await index.fetch({ ids: ["n-exact", "n-1"] })).records)).toEqual([]);

    // A vector of the wrong dimension is refused as a bad request.
    await expect(index.upsert({ records: [{ id: "bad", values: [1, 2, 3] }] })).rejects.toBeInstanceOf(Errors.PineconeBadRequestError);
  });

  it("queries with a $and / range / $nin filter: exactly the brute-force top k", async () => {
    const index = pc.index<Meta>({ host });
    const topK = 3;
    const expected = bruteForce(records, query, topK, matchesFilter);
    expect(records.filter((r) => matchesFilter(r.metadata!)).length).toBeGreaterThan(topK); // topK actually cuts

    const res = await index.query({ vector: query, topK, filter, includeMetadata: true, includeValues: true });
    expect(res.matches.map((m) => m.id)).toEqual(expected.map((e) => e.id));
    for (const [i, m] of res.matches.entries()) {
      expect(m.score).toBeCloseTo(expected[i]!.score, 5);
      expect(m.metadata).toEqual(byId.get(m.id)!.metadata);
      expect(matchesFilter(m.metadata!)).toBe(true);
      expect(m.values).toHaveLength(DIM);
      m.values!.forEach((x, j) => expect(x).toBeCloseTo(f32(byId.get(m.id)!.values!)[j]!, 6));
    }

    // Without topK cutting, the whole filtered set comes back, best first.
    const all = await index.query({ vector: query, topK: 12, filter });
    const everyMatch = records
      .filter((r) => matchesFilter(r.metadata!))
      .map((r) => ({ id: r.id, score: cosine(f32(r.values!), f32(query)) }))
      .sort((a, b) => b.score - a.score);
    expect(all.matches.map((m) => m.id)).toEqual(everyMatch.map((e) => e.id));
    // Not asked for: no values, no metadata.
    for (const m of all.matches) {
      expect(m.metadata).toBeUndefined();
      expect(m.values ?? []).toEqual([]);
    }

    // The same query in ns1 finds n-exact first with cosine 1.
    const inNs1 = await index.namespace("ns1").query({ vector: query, topK: 2, filter: { year: { $gte: 2004, $lt: 2020 } } });
    expect(inNs1.matches[0]!.id).toBe("n-exact");
    expect(inNs1.matches[0]!.score).toBeCloseTo(1, 5);
    expect(inNs1.matches.map((m) => m.id)).toEqual(
      bruteForce(ns1Records, query, 2, (m) => m.year >= 2004 && m.year < 2020).map((e) => e.id),
    );
  });

  it("queries by the id of a stored vector", async () => {
    const index = pc.index<Meta>({ host });
    const anchor = byId.get("r07")!;
    const res = await index.query({ id: "r07", topK: 5, includeMetadata: true });
    const expected = bruteForce(records, anchor.values!, 5);
    expect(expected[0]!.id).toBe("r07");
    expect(res.matches.map((m) => m.id)).toEqual(expected.map((e) => e.id));
    expect(res.matches[0]!.score).toBeCloseTo(1, 5);
    res.matches.forEach((m, i) => expect(m.score).toBeCloseTo(expected[i]!.score, 5));
    expect(res.matches[0]!.metadata).toEqual(anchor.metadata);

    // By id with a filter that excludes the anchor itself.
    const filtered = await index.query({ id: "r07", topK: 2, filter: { genre: { $eq: "drama" } } });
    expect(filtered.matches.map((m) => m.id)).toEqual(bruteForce(records, anchor.values!, 2, (m) => m.genre === "drama").map((e) => e.id));

    // An id only in ns1 is unknown in the default namespace.
    await expect(index.query({ id: "n-exact", topK: 1 })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
  });

  it("fetches values as float32 of what was sent and metadata exactly", async () => {
    const index = pc.index<Meta>({ host });
    const res = await index.fetch({ ids: ["r00", "r05", "r11", "missing"] });
    expect(Object.keys(res.records).sort()).toEqual(["r00", "r05", "r11"]);
    for (const id of ["r00", "r05", "r11"]) {
      const sent = byId.get(id)!;
      expect(res.records[id]!.id).toBe(id);
      expect(res.records[id]!.values).toEqual(f32(sent.values!));
      expect(res.records[id]!.metadata).toEqual(sent.metadata);
    }
  });

  it("updates values and merges metadata", async () => {
    const index = pc.index<Meta>({ host });
    const newValues = vec();
    // r06 is a drama from 2012: inside the filter. Make it a comedy (outside) and move it.
    await index.update({ id: "r06", values: newValues, metadata: { genre: "comedy" } });
    const fetched = await eventually(async () => {
      const r = (await index.fetch({ ids: ["r06"] })).records.r06!;
      expect(r.values).toEqual(f32(newValues));
      return r;
    });
    expect(fetched.metadata).toEqual({ year: 2012, genre: "comedy" }); // year kept, genre replaced
    byId.set("r06", { id: "r06", values: newValues, metadata: { year: 2012, genre: "comedy" } });
    records[6] = byId.get("r06")!;

    // The filter now leaves r06 out, and the ranking is recomputed from the new state.
    const res = await index.query({ vector: query, topK: 12, filter });
    expect(res.matches.map((m) => m.id)).not.toContain("r06");
    expect(res.matches.map((m) => m.id)).toEqual(bruteForce(records, query, 12, matchesFilter).map((e) => e.id));
    // And a query for the new values finds r06 first.
    const near = await index.query({ vector: newValues, topK: 1 });
    expect(near.matches[0]!.id).toBe("r06");
    expect(near.matches[0]!.score).toBeCloseTo(1, 5);

    // Updating an id that does not exist is not found.
    await expect(index.update({ id: "nope", metadata: { genre: "drama" } })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
  });

  it("deletes by filter and counts via describeIndexStats (filtered and not)", async () => {
    const index = pc.index<Meta>({ host });
    const isComedy = (m: Meta) => m.genre === "comedy";
    const comedies = records.filter((r) => isComedy(r.metadata!)).map((r) => r.id);
    expect(comedies.length).toBe(4); // r01, r05, r09 and the updated r06

    const before = await index.describeIndexStats({ filter: { genre: { $eq: "comedy" } } });
    expect(before.namespaces).toEqual({ __default__: { recordCount: 4 } }); // ns1 has none
    const recent = await index.describeIndexStats({ filter: { year: { $gte: 2010 } } });
    const recentDefault = records.filter((r) => r.metadata!.year >= 2010).length;
    expect(recentDefault).toBe(7); // r05..r11
    // ns1: n-exact 2010, n-1 2012, n-2 2014 match; its r00 (1999) does not.
    expect(recent.namespaces).toEqual({ __default__: { recordCount: recentDefault }, ns1: { recordCount: 3 } });
    expect(recent.totalRecordCount).toBe(recentDefault + 3);

    await index.deleteMany({ filter: { genre: { $eq: "comedy" } } });
    const after = await eventually(async () => {
      const s = await index.describeIndexStats();
      expect(s.namespaces!.__default__).toEqual({ recordCount: records.length - comedies.length });
      return s;
    });
    expect(after.namespaces!.ns1).toEqual({ recordCount: ns1Records.length });
    expect(after.totalRecordCount).toBe(records.length - comedies.length + ns1Records.length);
    expect(Object.keys((await index.fetch({ ids: comedies })).records)).toEqual([]);
    const left = records.filter((r) => !isComedy(r.metadata!));
    const res = await index.query({ vector: query, topK: 20 });
    expect(res.matches.map((m) => m.id)).toEqual(bruteForce(left, query, left.length).map((e) => e.id));

    // deleteMany by ids, in ns1 only.
    await index.namespace("ns1").deleteMany({ ids: ["n-2"] });
    await eventually(async () =>
      expect((await index.describeIndexStats()).namespaces!.ns1).toEqual({ recordCount: ns1Records.length - 1 }),
    );
    expect((await index.describeIndexStats()).namespaces!.__default__).toEqual({ recordCount: left.length });
  });

  it("lists, describes and deletes namespaces", async () => {
    const index = pc.index<Meta>({ host });
    const listed = await index.listNamespaces();
    expect(listed.namespaces?.map((n) => ({ name: n.name, recordCount: n.recordCount }))).toEqual([
      { name: "__default__", recordCount: 8 },
      { name: "ns1", recordCount: 3 },
    ]);
    expect(await index.describeNamespace("ns1")).toMatchObject({ name: "ns1", recordCount: 3 });
    await expect(index.describeNamespace("no-such-ns")).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);

    // Pagination: one per page.
    const page1 = await index.listNamespaces({ limit: 1 });
    expect(page1.namespaces?.map((n) => n.name)).toEqual(["__default__"]);
    expect(page1.pagination?.next).toBeTruthy();
    const page2 = await index.listNamespaces({ limit: 1, paginationToken: page1.pagination!.next });
    expect(page2.namespaces?.map((n) => n.name)).toEqual(["ns1"]);
    expect(page2.pagination?.next).toBeFalsy();

    // Prefix filtering.
    const prefixed = await index.listNamespaces({ prefix: "ns" });
    expect(prefixed.namespaces?.map((n) => n.name)).toEqual(["ns1"]);
    expect(prefixed.totalCount).toBe(1);
    expect((await index.listNamespaces({ prefix: "__def" })).namespaces?.map((n) => n.name)).toEqual(["__default__"]);
    expect((await index.listNamespaces({ prefix: "zz" })).namespaces ?? []).toEqual([]);

    await index.deleteNamespace("ns1");
    await eventually(async () => expect((await index.listNamespaces()).namespaces?.map((n) => n.name)).toEqual(["__default__"]));
    await expect(index.describeNamespace("ns1")).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    expect(Object.keys((await index.namespace("ns1").fetch({ ids: ["n-exact", "r00"] })).records)).toEqual([]);
    // The default namespace's r00 (not a comedy) is untouched.
    expect((await index.fetch({ ids: ["r00"] })).records.r00!.metadata).toEqual(records[0]!.metadata);
    const stats = await index.describeIndexStats();
    expect(stats.namespaces).toEqual({ __default__: { recordCount: 8 } });
    expect(stats.totalRecordCount).toBe(8);
  });

  it("keeps tenants apart: a second tenant's key sees none of the first tenant's indexes", async () => {
    const { stdout } = await run(process.execPath, [MAIN, "keys", "create", "--data", server.dataDir, "--json"]);
    const created = JSON.parse(stdout.trim().split("\n").at(-1)!) as { key: string; tenant: string; admin: boolean };
    expect(created.key).toMatch(/^svc_/);
    expect(created.admin).toBe(false);
    const pc2 = new Pinecone({ apiKey: created.key, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });

    // The server picks new keys up within about half a second.
    const listed = await eventually(() => pc2.listIndexes());
    expect(listed.indexes ?? []).toEqual([]);
    await expect(pc2.describeIndex(INDEX)).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    // Even with the first tenant's host URL, the data plane resolves the name within the caller's tenant.
    const foreign = pc2.index({ host });
    await expect(foreign.fetch({ ids: ["r00"] })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    await expect(foreign.query({ vector: query, topK: 1 })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    await expect(foreign.upsert({ records: [{ id: "x", values: query }] })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    await expect(pc2.deleteIndex(INDEX)).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);

    // The second tenant may use the same name for its own, different index.
    await pc2.createIndex({
      name: INDEX,
      dimension: 4,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
      timeout: 10_000,
    });
    const own = pc2.index({ host: (await pc2.describeIndex(INDEX)).host });
    await own.upsert({ records: [{ id: "t2", values: [1, 0, 0, 0], metadata: { year: 1 } }] });
    await eventually(async () => expect((await own.describeIndexStats()).totalRecordCount).toBe(1));
    expect((await pc2.describeIndex(INDEX)).dimension).toBe(4);
    // The first tenant's index is unchanged.
    expect((await pc.describeIndex(INDEX)).dimension).toBe(DIM);
    expect((await pc.index({ host }).describeIndexStats()).totalRecordCount).toBe(8);
    expect(Object.keys((await pc.index({ host }).fetch({ ids: ["t2"] })).records)).toEqual([]);
    await pc2.deleteIndex(INDEX);
    expect((await pc2.listIndexes()).indexes ?? []).toEqual([]);
    expect((await pc.listIndexes()).indexes?.map((i) => i.name)).toEqual([INDEX]);
  });

  it("rejects an unknown API key with PineconeAuthorizationError", async () => {
    const bad = new Pinecone({ apiKey: "svc_not_a_real_key", controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
    await expect(bad.listIndexes()).rejects.toBeInstanceOf(Errors.PineconeAuthorizationError);
    await expect(bad.describeIndex(INDEX)).rejects.toBeInstanceOf(Errors.PineconeAuthorizationError);
    await expect(bad.index({ host }).fetch({ ids: ["r00"] })).rejects.toBeInstanceOf(Errors.PineconeAuthorizationError);
  });

  it("deletes the index: gone from listIndexes, describeIndex is not found", async () => {
    await pc.deleteIndex(INDEX);
    expect((await pc.listIndexes()).indexes ?? []).toEqual([]);
    await expect(pc.describeIndex(INDEX)).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    await expect(pc.describeIndex(INDEX)).rejects.toThrow(/not found|404|no index/i);
    await expect(pc.index({ host }).fetch({ ids: ["r00"] })).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
    await expect(pc.deleteIndex(INDEX)).rejects.toBeInstanceOf(Errors.PineconeNotFoundError);
  });
});
