/**
 * End to end with LangChain's PineconeStore (@langchain/pinecone) over the Pinecone v5 client
 * against the built `svc serve` as a child process. Embeddings are SyntheticEmbeddings: offline
 * and deterministic, so the expected rankings are computed here by brute force.
 */
import { Document } from "@langchain/core/documents";
import { SyntheticEmbeddings } from "@langchain/core/utils/testing";
import { PineconeStore } from "@langchain/pinecone";
import { Pinecone } from "pinecone-v5";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "./server-process.js";
import { cosine, eventually } from "./until.js";

const INDEX = "lc-e2e";
const embeddings = new SyntheticEmbeddings({ vectorSize: 16 });

const DOCS = [
  { id: "doc-0", text: "The quick brown fox jumps over the lazy dog", year: 2009, topic: "animals" },
  { id: "doc-1", text: "Vector databases index embeddings for similarity search", year: 2021, topic: "tech" },
  { id: "doc-2", text: "A recipe for sourdough bread with a long cold fermentation", year: 2016, topic: "food" },
  { id: "doc-3", text: "Whales migrate thousands of kilometres every single year", year: 2018, topic: "animals" },
  { id: "doc-4", text: "Compilers translate source code into efficient machine code", year: 2012, topic: "tech" },
  { id: "doc-5", text: "Fresh pasta needs only flour eggs and a little patience", year: 2020, topic: "food" },
  { id: "doc-6", text: "Owls hunt at night using silent feathers and sharp hearing", year: 2014, topic: "animals" },
  { id: "doc-7", text: "Garbage collectors reclaim memory that programs no longer use", year: 2023, topic: "tech" },
  { id: "doc-8", text: "Spices like cumin and coriander lift a simple lentil soup", year: 2011, topic: "food" },
];
const OTHER_NS = "lc-other";
const OTHER_DOCS = [
  { id: "other-0", text: "The quick brown fox jumps over the lazy dog", year: 2009, topic: "animals" }, // same text as doc-0
  { id: "other-1", text: "Mountain goats climb cliffs that look impossible to scale", year: 2019, topic: "animals" },
];

const toDoc = (d: { text: string; year: number; topic: string }) =>
  new Document({ pageContent: d.text, metadata: { year: d.year, topic: d.topic } });

describe("LangChain PineconeStore (Pinecone v5 client) against svc serve", () => {
  let server: ServerProcess;
  let pc: Pinecone;
  let index: ReturnType<Pinecone["index"]>;
  let store: PineconeStore;
  const vectors = new Map<string, number[]>();

  /** Brute-force ranking of the live docs (those `keep` accepts) for `text`, best first. */
  async function expectedRanking(text: string, live: typeof DOCS, k: number, keep: (d: (typeof DOCS)[number]) => boolean = () => true) {
    const q = await embeddings.embedQuery(text);
    const ranked = live
      .filter(keep)
      .map((d) => ({ id: d.id, score: cosine(q, vectors.get(d.id)!) }))
      .sort((a, b) => b.score - a.score);
    for (let i = 0; i + 1 < Math.min(ranked.length, k + 1); i++) expect(ranked[i]!.score - ranked[i + 1]!.score).toBeGreaterThan(1e-4);
    return ranked.slice(0, k);
  }

  beforeAll(async () => {
    server = await startServerProcess();
    pc = new Pinecone({ apiKey: server.adminKey!, controllerHostUrl: `${server.url}/v1`, maxRetries: 0 });
    // Preconditions on the synthetic embeddings: no zero vectors, no two documents alike.
    const embedded = await embeddings.embedDocuments(DOCS.map((d) => d.text));
    DOCS.forEach((d, i) => vectors.set(d.id, embedded[i]!));
    for (const v of embedded) expect(v.some((x) => x !== 0)).toBe(true);
    for (let i = 0; i < embedded.length; i++)
      for (let j = i + 1; j < embedded.length; j++) expect(cosine(embedded[i]!, embedded[j]!)).toBeLessThan(0.999);
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it("creates the index with the v5 client and wires a PineconeStore to it", async () => {
    await pc.createIndex({
      name: INDEX,
      dimension: embeddings.vectorSize,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      waitUntilReady: true,
    });
    const described = await pc.describeIndex(INDEX);
    expect(described).toMatchObject({ name: INDEX, dimension: 16, metric: "cosine", host: `${server.url}/v1/indexes/${INDEX}` });
    index = pc.index(INDEX, `${server.url}/v1/indexes/${INDEX}`);
    store = new PineconeStore(embeddings, { pineconeIndex: index as any });
  });

  it("addDocuments with ids and metadata stores the text under 'text' and the metadata as given", async () => {
    const ids = await store.addDocuments(DOCS.map(toDoc), { ids: DOCS.map((d) => d.id) });
    expect(ids).toEqual(DOCS.map((d) => d.id));
    const otherStore = new PineconeStore(embeddings, { pineconeIndex: index as any, namespace: OTHER_NS });
    await otherStore.addDocuments(OTHER_DOCS.map(toDoc), { ids: OTHER_DOCS.map((d) => d.id) });

    const stats = await eventually(async () => {
      const s = await index.describeIndexStats();
      expect(s.totalRecordCount).toBe(DOCS.length + OTHER_DOCS.length);
      return s;
    });
    expect(stats.namespaces).toEqual({ __default__: { recordCount: DOCS.length }, [OTHER_NS]: { recordCount: OTHER_DOCS.length } });

    const fetched = await index.fetch(DOCS.map((d) => d.id));
    expect(Object.keys(fetched.records).sort()).toEqual(DOCS.map((d) => d.id).sort());
    for (const d of DOCS) {
      const r = fetched.records[d.id]!;
      expect(r.metadata).toEqual({ text: d.text, year: d.year, topic: d.topic });
      expect(r.values).toEqual(Array.from(Float32Array.from(vectors.get(d.id)!)));
    }
    // The other namespace's ids are not in the default one.
    expect(Object.keys((await index.fetch(["other-0", "other-1"])).records)).toEqual([]);
  });

  it("similaritySearch returns the document whose text is the query first, in brute-force order", async () => {
    for (const d of DOCS) {
      const results = await store.similaritySearch(d.text, 3);
      const expected = await expectedRanking(d.text, DOCS, 3);
      expect(expected[0]!.id).toBe(d.id);
      expect(results.map((r) => r.id)).toEqual(expected.map((e) => e.id));
      expect(results[0]!.pageContent).toBe(d.text);
      expect(results[0]!.metadata).toEqual({ year: d.year, topic: d.topic });
      for (const r of results) {
        const src = DOCS.find((x) => x.id === r.id)!;
        expect(r.pageContent).toBe(src.text);
        expect(r.metadata).toEqual({ year: src.year, topic: src.topic });
      }
    }
    // Scores are cosine similarities.
    const withScores = await store.similaritySearchWithScore(DOCS[4]!.text, 4);
    const expected = await expectedRanking(DOCS[4]!.text, DOCS, 4);
    expect(withScores.map(([doc]) => doc.id)).toEqual(expected.map((e) => e.id));
    withScores.forEach(([, score], i) => expect(score).toBeCloseTo(expected[i]!.score, 5));
    expect(withScores[0]![1]).toBeCloseTo(1, 5);
  });

  it("similaritySearch with a metadata filter returns only matching documents", async () => {
    const recent = (d: (typeof DOCS)[number]) => d.year >= 2015;
    const results = await store.similaritySearch(DOCS[3]!.text, 10, { year: { $gte: 2015 } });
    const expected = await expectedRanking(DOCS[3]!.text, DOCS, 10, recent);
    expect(expected.length).toBe(DOCS.filter(recent).length);
    expect(results.map((r) => r.id)).toEqual(expected.map((e) => e.id));
    expect(results[0]!.pageContent).toBe(DOCS[3]!.text);
    for (const r of results) expect(r.metadata.year).toBeGreaterThanOrEqual(2015);

    // The query's own document is filtered out: it must not come back.
    const excluded = await store.similaritySearch(DOCS[0]!.text, 3, { topic: { $eq: "tech" } });
    expect(excluded.map((r) => r.id)).toEqual((await expectedRanking(DOCS[0]!.text, DOCS, 3, (d) => d.topic === "tech")).map((e) => e.id));
    expect(excluded.map((r) => r.id)).not.toContain("doc-0");
    for (const r of excluded) expect(r.metadata.topic).toBe("tech");

    // $and with $in.
    const both = await store.similaritySearch(DOCS[5]!.text, 10, {
      $and: [{ topic: { $in: ["food", "animals"] } }, { year: { $lt: 2017 } }],
    });
    const keep = (d: (typeof DOCS)[number]) => (d.topic === "food" || d.topic === "animals") && d.year < 2017;
    expect(both.map((r) => r.id)).toEqual((await expectedRanking(DOCS[5]!.text, DOCS, 10, keep)).map((e) => e.id));
    expect(both.map((r) => r.id).sort()).toEqual(["doc-0", "doc-2", "doc-6", "doc-8"]);

    // A filter nothing matches.
    expect(await store.similaritySearch(DOCS[0]!.text, 3, { year: { $gt: 3000 } })).toEqual([]);

    // MMR picks the most similar document first and only from the filtered set.
    const mmr = await store.maxMarginalRelevanceSearch(DOCS[7]!.text, { k: 2, fetchK: 10, filter: { topic: { $eq: "tech" } } });
    expect(mmr).toHaveLength(2);
    expect(mmr[0]!.pageContent).toBe(DOCS[7]!.text);
    for (const r of mmr) expect(r.metadata.topic).toBe("tech");
  });

  it("keeps namespaces apart", async () => {
    // doc-0 and other-0 share a text; each namespace's store finds only its own.
    const inDefault = await store.similaritySearch(DOCS[0]!.text, 20);
    expect(inDefault.map((r) => r.id).sort()).toEqual(DOCS.map((d) => d.id).sort());
    const otherStore = new PineconeStore(embeddings, { pineconeIndex: index as any, namespace: OTHER_NS });
    const inOther = await otherStore.similaritySearch(DOCS[0]!.text, 20);
    expect(inOther.map((r) => r.id)).toEqual(["other-0", "other-1"]);
    expect(inOther[0]!.pageContent).toBe(OTHER_DOCS[0]!.text);
  });

  it("delete({ids}) removes exactly those documents", async () => {
    await store.delete({ ids: ["doc-1", "doc-3"] });
    await eventually(async () => expect(Object.keys((await index.fetch(["doc-1", "doc-3"])).records)).toEqual([]));
    const live = DOCS.filter((d) => d.id !== "doc-1" && d.id !== "doc-3");
    expect(Object.keys((await index.fetch(DOCS.map((d) => d.id))).records).sort()).toEqual(live.map((d) => d.id).sort());
    // Searching for a deleted document's text no longer finds it; the ranking is over what is left.
    const results = await store.similaritySearch(DOCS[3]!.text, 3);
    expect(results.map((r) => r.id)).not.toContain("doc-3");
    expect(results.map((r) => r.id)).toEqual((await expectedRanking(DOCS[3]!.text, live, 3)).map((e) => e.id));
    expect((await index.describeIndexStats()).namespaces).toEqual({
      __default__: { recordCount: live.length },
      [OTHER_NS]: { recordCount: OTHER_DOCS.length },
    });
  });

  it("delete({filter}) removes the matching documents only", async () => {
    await store.delete({ filter: { topic: { $eq: "food" } } });
    const live = DOCS.filter((d) => d.id !== "doc-1" && d.id !== "doc-3" && d.topic !== "food");
    await eventually(async () => expect((await index.describeIndexStats()).namespaces!.__default__).toEqual({ recordCount: live.length }));
    expect(Object.keys((await index.fetch(["doc-2", "doc-5", "doc-8"])).records)).toEqual([]);
    const all = await store.similaritySearch(DOCS[6]!.text, 20);
    expect(all.map((r) => r.id)).toEqual((await expectedRanking(DOCS[6]!.text, live, 20)).map((e) => e.id));
    expect(all.map((r) => r.id).sort()).toEqual(["doc-0", "doc-4", "doc-6", "doc-7"]);
    // The other namespace is untouched (a filter delete is per namespace).
    expect((await index.describeIndexStats()).namespaces![OTHER_NS]).toEqual({ recordCount: OTHER_DOCS.length });
  });

  it("delete({deleteAll: true}) empties the store's namespace and nothing else", async () => {
    await store.delete({ deleteAll: true });
    await eventually(async () =>
      expect((await index.describeIndexStats()).namespaces).toEqual({ [OTHER_NS]: { recordCount: OTHER_DOCS.length } }),
    );
    expect(await store.similaritySearch(DOCS[0]!.text, 5)).toEqual([]);
    expect(Object.keys((await index.fetch(DOCS.map((d) => d.id))).records)).toEqual([]);
    const otherStore = new PineconeStore(embeddings, { pineconeIndex: index as any, namespace: OTHER_NS });
    expect((await otherStore.similaritySearch(OTHER_DOCS[1]!.text, 5)).map((r) => r.id)).toEqual(["other-1", "other-0"]);

    await pc.deleteIndex(INDEX);
    expect((await pc.listIndexes()).indexes ?? []).toEqual([]);
  });
});
