/** @module records-support.test — what the records API needs from a collection: payloads, order/facet/range/count/namespaces, moveNamespace.
 * Long (~500 lines): one collection fixture for each read the records API needs; each block is independent.
 */
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as msgpack from "@msgpack/msgpack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Collection, MAX_PAYLOAD_BYTES } from "../../src/engine/collection.js";
import { matches } from "../../src/engine/filter/match.js";
import type { Metadata } from "../../src/engine/filter/metadata.js";
import { NumericColumn } from "../../src/engine/filter/numeric-column.js";
import { parseFilter } from "../../src/engine/filter/parse.js";
import { RecordFile } from "../../src/engine/record-file.js";
import { RoaringBitmap32 } from "../../src/engine/roaring.js";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { mulberry32 } from "../../src/kernels/random.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const root = mkdtempSync(join(tmpdir(), "svc-records-support-"));
let kernels: Kernels;
let pool: ScanPool;
let n = 0;
const fresh = (dimension = 8, durability?: "none") => Collection.open(join(root, `c${n++}`), { kernels, pool, dimension, durability });

beforeAll(() => {
  kernels = Kernels.create();
  pool = new ScanPool(kernels, { threads: 2, inlineBelow: 1000 });
});
afterAll(async () => {
  await pool.close();
  rmSync(root, { recursive: true, force: true });
});

/** A seeded vector per i (distinct directions). */
function vec(i: number, dim = 8): Float32Array {
  const next = mulberry32(0x9e3779b9 ^ i);
  return Float32Array.from({ length: dim }, () => next() / 2 ** 32 - 0.5);
}
const bytes = (i: number, len = i % 40) => Uint8Array.from({ length: len }, (_, j) => (i * 31 + j * 7) & 0xff);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

type Rand = { int(n: number): number; chance(p: number): boolean; pick<T>(xs: readonly T[]): T };
function rand(seed: number): Rand {
  const next = mulberry32(seed);
  const int = (k: number): number => Math.floor((next() / 2 ** 32) * k);
  return { int, chance: (p) => next() / 2 ** 32 < p, pick: (xs) => xs[int(xs.length)]! };
}

async function expectCode(fn: () => unknown, code: string, field?: string): Promise<void> {
  const err = await Promise.resolve()
    .then(fn)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(SvcError);
  expect((err as SvcError).code).toBe(code);
  if (field !== undefined) expect((err as SvcError).field).toBe(field);
}

describe("payloads", () => {
  it("round-trip through upsert, fetch, query(includePayload) and update; an upsert replaces, an update keeps unless given", async () => {
    const c = await fresh();
    const big = Uint8Array.from({ length: MAX_PAYLOAD_BYTES }, (_, i) => (i * 13) & 0xff);
    const mine = bytes(3, 10);
    await c.upsert("ns", [
      { id: "a", values: vec(0), metadata: { k: 1 }, payload: mine },
      { id: "b", values: vec(1) },
      { id: "e", values: vec(2), payload: new Uint8Array(0) },
      { id: "big", values: vec(3), payload: big },
    ]);
    mine.fill(0); // the caller reuses its buffer after the acknowledgement
    await c.settled();
    // a 1 MiB array compared as a Buffer: element-wise deep equality would take seconds
    const same = (x: Uint8Array | null | undefined) =>
      x instanceof Uint8Array && Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(big);
    const got = Object.fromEntries(c.fetch("ns", ["a", "b", "e", "big"]).map((v) => [v.id, v.payload]));
    expect(same(got.big)).toBe(true);
    expect({ ...got, big: null }).toEqual({ a: bytes(3, 10), b: null, e: new Uint8Array(0), big: null });

    const res = await c.query("ns", { vector: vec(0), topK: 4, includePayload: true });
    const payloads = Object.fromEntries(res.matches.map((m) => [m.id, m.payload]));
    expect(same(payloads.big)).toBe(true);
    expect({ ...payloads, big: null }).toEqual({ a: bytes(3, 10), b: undefined, e: new Uint8Array(0), big: null });
    expect("payload" in res.matches.find((m) => m.id === "b")!).toBe(false);
    expect((await c.query("ns", { vector: vec(0), topK: 4 })).matches.every((m) => !("payload" in m))).toBe(true);

    await c.update("ns", { id: "a", setMetadata: { k: 2 } });
    await c.update("ns", { id: "a", values: vec(9) });
    await c.settled();
    expect(c.fetch("ns", ["a"])[0]).toEqual({ id: "a", values: vec(9), metadata: { k: 2 }, payload: bytes(3, 10) });
    await c.update("ns", { id: "a", payload: bytes(4, 5) });
    await c.update("ns", { id: "b", payload: bytes(5, 6) });
    await c.settled();
    expect(c.fetch("ns", ["a", "b"])).toEqual([
      { id: "a", values: vec(9), metadata: { k: 2 }, payload: bytes(4, 5) },
      { id: "b", values: vec(1), metadata: {}, payload: bytes(5, 6) },
    ]);
    await c.upsert("ns", [{ id: "a", values: vec(0) }]);
    await c.settled();
    expect(c.fetch("ns", ["a"])[0]!.payload).toBeNull();

    const tooBig = new Uint8Array(MAX_PAYLOAD_BYTES + 1);
    await expectCode(
      () =>
        c.upsert("ns", [
          { id: "x", values: vec(0) },
          { id: "y", values: vec(1), payload: tooBig },
        ]),
      "E_BAD_REQUEST",
      "vectors[1].payload",
    );
    await expectCode(
      () => c.upsert("ns", [{ id: "x", values: vec(0), payload: "text" as unknown as Uint8Array }]),
      "E_BAD_REQUEST",
      "vectors[0].payload",
    );
    await expectCode(() => c.update("ns", { id: "b", payload: tooBig }), "E_BAD_REQUEST", "payload");
    await c.settled();
    expect(c.fetch("ns", ["x", "y"])).toEqual([]);
    await c.close();
  });

  it("survive compaction, checkpoint + reopen, and WAL replay after a crash-like reopen (no close)", async () => {
    const dir = join(root, "payload-durable");
    let c = await Collection.open(dir, { kernels, pool, dimension: 8 });
    const want = new Map<string, Uint8Array | null>();
    const payloadOf = (i: number, gen: number) => (i % 3 === 0 ? null : bytes(i + gen, (i * 7 + gen) % 300));
    for (let s = 0; s < 3000; s += 1000) {
      await c.upsert(
        "",
        range(s, s + 1000).map((i) => ({ id: `v${i}`, values: vec(i), metadata: { i }, payload: payloadOf(i, 0) ?? undefined })),
      );
      for (const i of range(s, s + 1000)) want.set(`v${i}`, payloadOf(i, 0));
    }
    for (const i of range(2000, 2100)) await c.update("", { id: `v${i}`, setMetadata: { touched: true } });
    for (const i of range(2100, 2150)) {
      await c.update("", { id: `v${i}`, payload: bytes(i, 3) });
      want.set(`v${i}`, bytes(i, 3));
    }
    await c.delete("", { filter: { i: { $lt: 1500 } } });
    for (const i of range(0, 1500)) want.delete(`v${i}`);
    const check = async (col: Collection) => {
      await col.settled();
      const ids = [...want.keys()];
      const got = col.fetch("", ids);
      expect(got.map((v) => v.id)).toEqual(ids);
      for (const v of got) expect(v.payload, v.id).toEqual(want.get(v.id));
      const q = await col.query("", { vector: vec(2120), topK: 1, includePayload: true, includeMetadata: true });
      expect(q.matches[0]).toMatchObject({ id: "v2120", payload: bytes(2120, 3), metadata: { i: 2120 } });
    };
    await check(c);
    expect(await c.compact("")).toEqual({ before: 3000 + 150, after: 1500 });
    await check(c);
    await c.checkpoint();
    c = await Collection.open(dir, { kernels, pool }); // crash-like: the old instance is never closed
    await check(c);
    await c.upsert(
      "",
      range(3000, 3200).map((i) => ({ id: `v${i}`, values: vec(i), metadata: { i }, payload: payloadOf(i, 1) ?? undefined })),
    );
    for (const i of range(3000, 3200)) want.set(`v${i}`, payloadOf(i, 1));
    await c.update("", { id: "v2999", payload: bytes(1, 1) });
    want.set("v2999", bytes(1, 1));
    await c.update("", { id: "v3001", setMetadata: { i: -1 } });
    await c.settled();
    c = await Collection.open(dir, { kernels, pool }); // crash-like again: checkpoint + WAL replay
    await check(c);
    await c.close();
    c = await Collection.open(dir, { kernels, pool });
    await check(c);
    await c.close();
  });
});

describe("records.bin", () => {
  it("reads the documented layout: records written before payloads, with a payload, with an empty one; and writes exactly it", () => {
    const { encode } = msgpack;
    const meta = encode({ k: 1 });
    const u32 = (x: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(x >>> 0);
      return b;
    };
    const old = Buffer.concat([u32(3), Buffer.from("old"), u32(meta.byteLength), meta]); // the format before payloads
    const withPayload = Buffer.concat([u32(1), Buffer.from("p"), u32(meta.byteLength | 0x80000000), u32(3), meta, Buffer.from([7, 8, 9])]);
    const empty = Buffer.concat([u32(1), Buffer.from("e"), u32(0x80000000), u32(0)]);
    const bare = Buffer.concat([u32(1), Buffer.from("b"), u32(0)]);
    const file = Buffer.concat([old, withPayload, empty, bare]);
    const path = join(root, "records.bin");
    writeFileSync(path, file);
    const rf = new RecordFile(path, { rows: 4, bytes: file.byteLength });
    expect([0, 1, 2, 3].map((r) => [rf.ids.idOf(r), rf.metadata(r), rf.payload(r)])).toEqual([
      ["old", { k: 1 }, null],
      ["p", { k: 1 }, new Uint8Array([7, 8, 9])],
      ["e", {}, new Uint8Array(0)],
      ["b", {}, null],
    ]);
    rf.close();
    const path2 = join(root, "records2.bin");
    const written = new RecordFile(path2);
    written.append(["old", "p"], [{ k: 1 }, { k: 1 }], [null, new Uint8Array([7, 8, 9])]);
    written.append(["e", "b"], [undefined, undefined], [new Uint8Array(0)]);
    written.close();
    expect(readFileSync(path2).equals(file)).toBe(true);
  });

  it("loads records whose head straddles the loader's 8 MiB read chunk at any offset", () => {
    const u32 = (x: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(x >>> 0);
      return b;
    };
    const small = (i: number) => Buffer.concat([u32(1), Buffer.from([97 + i]), u32(0x80000000), u32(3), Buffer.from([i, i, i])]); // 16 bytes
    const tail = Buffer.concat(range(0, 10).map(small));
    for (let shift = 0; shift < 20; shift++) {
      // one big record (a sparse payload) ending just before 8 MiB, then small ones across the boundary
      const bigLen = (8 << 20) - 64 + shift;
      const head = Buffer.concat([u32(1), Buffer.from("B"), u32(0x80000000), u32(bigLen)]);
      const path = join(root, `chunk-${shift}.bin`);
      const fd = openSync(path, "w");
      writeSync(fd, head, 0, head.length, 0);
      writeSync(fd, tail, 0, tail.length, head.length + bigLen);
      closeSync(fd);
      const rf = new RecordFile(path, { rows: 11, bytes: head.length + bigLen + tail.length });
      expect(rf.payload(0)!.byteLength).toBe(bigLen);
      for (let i = 0; i < 10; i++) {
        expect(rf.ids.idOf(i + 1)).toBe(String.fromCharCode(97 + i));
        expect(rf.payload(i + 1)).toEqual(new Uint8Array([i, i, i]));
      }
      rf.close();
      rmSync(path);
    }
  });
});

describe("NumericColumn.ordered", () => {
  it("equals a brute-force (value, row) sort for any universe, limit and direction: walk, fallback, sorted base and tail", () => {
    const r = rand(11);
    for (const total of [30, 5000, 60_000]) {
      const col = new NumericColumn();
      const vals = new Map<number, number>();
      let added = 0;
      for (const upTo of [Math.floor(total / 3), total - 700, total]) {
        for (; added < upTo; added++) {
          if (!r.chance(0.8)) continue;
          const v = r.chance(0.6) ? r.int(25) - 5 : r.int(1e6) / 7;
          col.add(added, v);
          vals.set(added, v);
        }
        const values = [...vals.values()].sort((a, b) => a - b);
        const median = values[values.length >> 1] ?? 0;
        const universes = [
          range(0, added + 10),
          range(0, added).filter(() => r.chance(0.5)),
          range(0, added).filter(() => r.chance(0.01)),
          [r.int(added)],
          [],
          range(0, added).filter((row) => (vals.get(row) ?? Infinity) < median), // desc walks past the whole upper half
          range(0, added).filter((row) => (vals.get(row) ?? -Infinity) > median),
        ];
        for (const u of universes) {
          const universe = new RoaringBitmap32(u);
          const brute = u.filter((row) => vals.has(row)).sort((a, b) => vals.get(a)! - vals.get(b)! || a - b);
          for (const limit of [1, 3, 50, 10_000]) {
            expect(Array.from(col.ordered(universe, limit, false))).toEqual(brute.slice(0, limit));
            expect(Array.from(col.ordered(universe, limit, true))).toEqual(brute.slice().reverse().slice(0, limit));
          }
        }
      }
    }
  });
});

describe("order, facet, range, count, namespaces", () => {
  const KINDS = ["note", "task", "fact", "event"] as const;
  const TAGS = ["x", "y", "z", "w"] as const;
  const FILTERS: unknown[] = [
    undefined,
    { kind: "note" },
    { kind: { $in: ["task", "fact"] } },
    { tags: "x" },
    { ts: { $gte: 10, $lt: 30 } },
    { rare: true },
    { kind: { $ne: "note" }, tags: { $exists: true } },
    { $or: [{ kind: "event" }, { tags: "w" }] },
    { kind: "nope" },
  ];
  type Row = { seq: number; meta: Metadata; payload: Uint8Array | null };

  function randomMeta(r: Rand): Metadata {
    const m: Metadata = { kind: r.pick(KINDS) };
    const t = r.int(10);
    if (t < 7)
      m.ts = r.int(60); // many ties
    else if (t < 9) m.ts = r.int(1e6) / 7;
    else if (r.chance(0.5)) m.ts = "later"; // not a number: never ordered
    if (r.chance(0.6)) m.tags = Array.from({ length: r.int(4) }, () => r.pick(TAGS)); // repeats count once
    if (r.chance(0.005)) m.rare = true;
    if (r.chance(0.3)) m.score = r.int(5) - 2;
    return m;
  }

  function bruteOrder(model: Map<string, Row>, field: string, filter: unknown, limit: number, desc: boolean) {
    const f = parseFilter(filter);
    const rows = [...model].filter(([, r]) => typeof r.meta[field] === "number" && (f === null || matches(f, r.meta)));
    rows.sort(([, a], [, b]) => (a.meta[field] as number) - (b.meta[field] as number) || a.seq - b.seq);
    if (desc) rows.reverse();
    return rows.slice(0, limit).map(([id, r]) => ({ id, value: r.meta[field] as number }));
  }

  function live(model: Map<string, Row>, filter: unknown): Row[] {
    const f = parseFilter(filter);
    return [...model.values()].filter((r) => f === null || matches(f, r.meta));
  }

  function check(c: Collection, ns: string, model: Map<string, Row>) {
    for (const filter of FILTERS) {
      for (const desc of [true, false]) {
        for (const limit of [1, 7, 100, 10_000]) {
          expect(c.order(ns, { field: "ts", filter, limit, desc })).toEqual(bruteOrder(model, "ts", filter, limit, desc));
        }
        expect(c.order(ns, { field: "score", filter, limit: 50, desc })).toEqual(bruteOrder(model, "score", filter, 50, desc));
      }
      const rows = live(model, filter);
      expect(c.count(ns, filter)).toBe(rows.length);
      const nums = rows.map((r) => r.meta.ts).filter((v): v is number => typeof v === "number");
      expect(c.range(ns, "ts", filter)).toEqual(nums.length === 0 ? null : { min: Math.min(...nums), max: Math.max(...nums) });
      for (const field of ["kind", "tags"]) {
        const want: Record<string, number> = {};
        for (const r of rows) {
          const v = r.meta[field];
          for (const s of new Set(typeof v === "string" ? [v] : Array.isArray(v) ? v : [])) want[s] = (want[s] ?? 0) + 1;
        }
        const got = c.facet(ns, field, filter);
        expect(Object.getPrototypeOf(got)).toBeNull();
        expect({ ...got }).toEqual(want);
      }
    }
    expect(c.range(ns, "kind")).toBeNull();
    expect(c.range(ns, "absent")).toBeNull();
    expect({ ...c.facet(ns, "absent") }).toEqual({});
    expect(c.order(ns, { field: "absent", limit: 5 })).toEqual([]);
    // includeMetadata / includePayload: the row's own metadata and payload
    const top = c.order(ns, { field: "ts", limit: 20, includeMetadata: true, includePayload: true });
    for (const row of top) {
      const m = model.get(row.id)!;
      expect(row.metadata).toEqual(m.meta);
      expect(row.payload).toEqual(m.payload ?? undefined);
    }
  }

  it("agree with brute force on random rows with ties, filters, deletes, updates, checkpoint + reopen, later appends and compaction", async () => {
    const dir = join(root, "order");
    let c = await Collection.open(dir, { kernels, pool, dimension: 4 });
    const r = rand(7);
    const model = new Map<string, Row>();
    let seq = 0;
    let ids = 0;
    const upsertRandom = async (count: number, reuse: number) => {
      const batch = Array.from({ length: count }, () => {
        const id = `r${r.chance(reuse) && ids > 0 ? r.int(ids) : ids++}`;
        const payload = r.chance(0.5) ? bytes(seq, 1 + (seq % 20)) : null;
        const meta = randomMeta(r);
        model.delete(id); // a repeated id (in this batch too) is appended again: the later row
        model.set(id, { seq: seq++, meta, payload });
        return { id, values: vec(seq, 4), metadata: meta, payload: payload ?? undefined };
      });
      await c.upsert("ns", batch);
    };
    const mutate = async (count: number) => {
      const known = [...model.keys()];
      const gone = known.filter(() => r.chance(0.1));
      await c.delete("ns", { ids: gone });
      for (const id of gone) model.delete(id);
      const alive = [...model.keys()];
      for (let k = 0; k < count; k++) {
        const id = r.pick(alive);
        const row = model.get(id)!;
        const patch: Metadata = r.chance(0.7) ? { ts: r.int(60) } : { kind: r.pick(KINDS) };
        await c.update("ns", { id, setMetadata: patch });
        model.delete(id);
        model.set(id, { seq: seq++, meta: { ...row.meta, ...patch }, payload: row.payload });
      }
    };

    for (let b = 0; b < 6; b++) await upsertRandom(1000, 0.15);
    await c.settled();
    check(c, "ns", model);
    await mutate(40);
    await upsertRandom(300, 0.5);
    await c.settled();
    check(c, "ns", model);
    await c.checkpoint();
    c = await Collection.open(dir, { kernels, pool }); // numeric columns restored from the checkpoint
    check(c, "ns", model);
    await upsertRandom(500, 0.3); // a fresh, unsorted tail
    await mutate(20);
    await c.settled();
    check(c, "ns", model);
    await c.compact("ns");
    check(c, "ns", model);
    await c.upsert("other", [{ id: "o", values: vec(1, 4) }]);
    await c.upsert("emptied", [{ id: "e", values: vec(2, 4) }]);
    await c.delete("emptied", { ids: ["e"] });
    await c.settled();
    expect(c.namespaces()).toEqual(["ns", "other"]);
    expect(c.count("nowhere")).toBe(0);
    expect(c.order("nowhere", { field: "ts", limit: 3 })).toEqual([]);
    expect(c.range("nowhere", "ts")).toBeNull();
    expect({ ...c.facet("nowhere", "kind") }).toEqual({});
    for (const limit of [0, 10_001, 1.5, Number.NaN])
      await expectCode(() => c.order("ns", { field: "ts", limit }), "E_BAD_REQUEST", "limit");
    await expectCode(() => c.order("ns", { field: "", limit: 1 }), "E_BAD_REQUEST", "field");
    await expectCode(() => c.count("ns", { ts: { $gt: "x" } }), "E_FILTER", "filter.ts.$gt");
    await c.close();
  }, 120_000);
});

describe("moveNamespace", () => {
  it("replaces `to` in one step: queries in flight see the old or the new `to`, never a mix", async () => {
    const c = await fresh(16);
    await c.upsert(
      "src",
      range(0, 2000).map((i) => ({ id: `s${i}`, values: vec(i, 16), metadata: { i }, payload: bytes(i) })),
    );
    await c.upsert(
      "dst",
      range(0, 2000).map((i) => ({ id: `d${i}`, values: vec(i, 16), metadata: { i } })),
    );
    await c.settled();
    const q = vec(5, 16);
    const results: Array<Promise<string[]>> = [];
    const ask = () => results.push(c.query("dst", { vector: q, topK: 50 }).then((res) => res.matches.map((m) => m.id)));
    const counts: number[] = [];
    let done = false;
    const moving = c.moveNamespace("src", "dst");
    void moving.then(() => c.settled()).then(() => (done = true));
    while (!done) {
      ask();
      counts.push(c.count("dst", { i: { $lt: 1000 } }));
      await new Promise((resolve) => setImmediate(resolve));
    }
    ask();
    expect(await moving).toEqual({ moved: 2000 });
    const all = await Promise.all(results);
    for (const ids of all) {
      expect(ids).toHaveLength(50);
      expect(new Set(ids.map((id) => id[0])).size).toBe(1);
    }
    expect(new Set(all.map((ids) => ids[0]![0]))).toEqual(new Set(["d", "s"]));
    expect(counts.every((k) => k === 1000)).toBe(true);
    expect(c.namespaces()).toEqual(["dst"]);
    expect(c.count("src")).toBe(0);
    expect(c.fetch("dst", ["d1", "s1"])).toEqual([{ id: "s1", values: vec(1, 16), metadata: { i: 1 }, payload: bytes(1) }]);
    expect((await c.query("src", { vector: q, topK: 3 })).matches).toEqual([]);
    await c.close();
    expect(readdirSync(join(c.dir, "parts"))).toHaveLength(1); // the replaced partition's files are gone
  });

  it("is durable: replayed after a crash-like reopen, with or without a checkpoint before it, and after one that holds it", async () => {
    for (const checkpointFirst of [false, true]) {
      const dir = join(root, `move-durable-${checkpointFirst}`);
      let c = await Collection.open(dir, { kernels, pool, dimension: 8 });
      await c.upsert(
        "a",
        range(0, 100).map((i) => ({ id: `a${i}`, values: vec(i), metadata: { i }, payload: bytes(i) })),
      );
      await c.upsert(
        "b",
        range(0, 50).map((i) => ({ id: `b${i}`, values: vec(1000 + i), metadata: { i: 1000 + i } })),
      );
      if (checkpointFirst) await c.checkpoint();
      expect(await c.moveNamespace("a", "b")).toEqual({ moved: 100 });
      await c.upsert("a", [{ id: "a-new", values: vec(5000) }]);
      await c.upsert("b", [{ id: "b-extra", values: vec(5001), metadata: { i: -1 }, payload: bytes(7, 3) }]);
      await c.settled();
      const expectMoved = async (col: Collection) => {
        expect(col.namespaces()).toEqual(["a", "b"]);
        expect(col.count("b")).toBe(101);
        expect(col.count("a")).toBe(1);
        expect(col.fetch("b", ["b0", "a7", "b-extra"])).toEqual([
          { id: "a7", values: vec(7), metadata: { i: 7 }, payload: bytes(7) },
          { id: "b-extra", values: vec(5001), metadata: { i: -1 }, payload: bytes(7, 3) },
        ]);
        expect(col.fetch("a", ["a-new", "a7"]).map((v) => v.id)).toEqual(["a-new"]);
        expect((await col.query("b", { vector: vec(7), topK: 1 })).matches[0]!.id).toBe("a7");
        expect(col.order("b", { field: "i", limit: 2 })).toEqual([
          { id: "a99", value: 99 },
          { id: "a98", value: 98 },
        ]);
        expect(col.range("b", "i")).toEqual({ min: -1, max: 99 });
      };
      await expectMoved(c);
      c = await Collection.open(dir, { kernels, pool }); // crash-like: no close, no checkpoint after the move
      await expectMoved(c);
      await c.checkpoint();
      c = await Collection.open(dir, { kernels, pool }); // crash-like, from a checkpoint that holds the move
      await expectMoved(c);
      await c.close();
      c = await Collection.open(dir, { kernels, pool });
      await expectMoved(c);
      expect(readdirSync(join(dir, "parts"))).toHaveLength(2);
      await c.close();
    }
  });

  it("onto an existing namespace replaces it; an empty or unknown `from` empties `to`; bad names and from = to are refused", async () => {
    const c = await fresh();
    await c.upsert(
      "x",
      range(0, 10).map((i) => ({ id: `x${i}`, values: vec(i) })),
    );
    await c.upsert(
      "y",
      range(0, 5).map((i) => ({ id: `y${i}`, values: vec(100 + i) })),
    );
    await c.upsert("z", [{ id: "z0", values: vec(200) }]);
    expect(await c.moveNamespace("x", "y")).toEqual({ moved: 10 });
    await c.settled();
    expect(c.namespaces()).toEqual(["y", "z"]);
    expect(c.count("y")).toBe(10);
    expect(c.fetch("y", ["y0", "x0"]).map((v) => v.id)).toEqual(["x0"]);
    expect(await c.moveNamespace("nothing", "y")).toEqual({ moved: 0 });
    await c.settled();
    expect(c.namespaces()).toEqual(["z"]);
    expect(c.count("y")).toBe(0);
    expect((await c.query("y", { vector: vec(0), topK: 3 })).matches).toEqual([]);
    await c.upsert("w", [{ id: "w0", values: vec(300) }]);
    await c.delete("z", { ids: ["z0"] }); // z exists but holds no live row
    expect(await c.moveNamespace("z", "w")).toEqual({ moved: 0 });
    await c.settled();
    expect(c.namespaces()).toEqual([]);
    await c.upsert("w", [{ id: "w1", values: vec(301) }]); // the moved (empty) partition takes new rows
    await c.settled();
    expect(c.fetch("w", ["w0", "w1"]).map((v) => v.id)).toEqual(["w1"]);
    await expectCode(() => c.moveNamespace("w", "w"), "E_BAD_REQUEST", "to");
    await expectCode(() => c.moveNamespace(5 as unknown as string, "w"), "E_BAD_REQUEST", "from");
    await expectCode(() => c.moveNamespace("w", "n".repeat(513)), "E_BAD_REQUEST", "to");
    await c.close();
  });

  it("while either namespace is being compacted keeps exactly the moved rows", async () => {
    // durability "none": the move is acknowledged and applied between compaction's chunks
    const c = await fresh(8, "none");
    for (let s = 0; s < 20_000; s += 5000) {
      await c.upsert(
        "src",
        range(s, s + 5000).map((i) => ({ id: `s${i}`, values: vec(i), metadata: { i }, payload: i % 2 ? bytes(i) : undefined })),
      );
    }
    await c.upsert(
      "dst",
      range(0, 3000).map((i) => ({ id: `d${i}`, values: vec(i) })),
    );
    await c.delete("src", { filter: { i: { $lt: 8000 } } });
    await c.delete("dst", { ids: range(0, 2000).map((i) => `d${i}`) });
    const compactions = [c.compact("src"), c.compact("dst")];
    expect(await c.moveNamespace("src", "dst")).toEqual({ moved: 12_000 });
    await Promise.all(compactions);
    await c.settled();
    const expectMoved = (col: Collection) => {
      expect(col.namespaces()).toEqual(["dst"]);
      expect(col.count("dst")).toBe(12_000);
      expect(col.fetch("dst", ["d2500", "s7999", "s8001", "s19998"])).toEqual([
        { id: "s8001", values: vec(8001), metadata: { i: 8001 }, payload: bytes(8001) },
        { id: "s19998", values: vec(19998), metadata: { i: 19998 }, payload: null },
      ]);
      expect(col.order("dst", { field: "i", limit: 2, desc: false })).toEqual([
        { id: "s8000", value: 8000 },
        { id: "s8001", value: 8001 },
      ]);
    };
    expectMoved(c);
    await c.compact("dst");
    expectMoved(c);
    await c.close();
    const again = await Collection.open(c.dir, { kernels, pool });
    expectMoved(again);
    await again.close();
  }, 60_000);
});
