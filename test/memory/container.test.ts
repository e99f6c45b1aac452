/**
 * @module container.test — the .svc container: records.nmm framing (read back here by an
 * independent decoder), the zip with manifest.json, every way a container can be broken
 * (E_CONTAINER, 400, field "file"), unknown sections, and export -> import -> export stability
 * through a real RecordService.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import JSZip from "jszip";
import { afterAll, describe, expect, it } from "vitest";
import { TextEncoder1024 } from "../../src/encoder/encoder.js";
import { SvcError } from "../../src/errors.js";
import { Kernels } from "../../src/kernels/abi.js";
import { CausalService } from "../../src/hd/causal/service.js";
import { KnowledgeGraphs } from "../../src/hd/kg/service.js";
import {
  CONTAINER_TYPE,
  decodeRecords,
  encodeRecords,
  exportContainer,
  importContainer,
  readContainer,
  writeContainer,
  type Manifest,
} from "../../src/memory/container.js";
import type { ContainerRecord } from "../../src/memory/record-fields.js";
import { exportSchema } from "../../src/http/routes/records.js";
import { DAY_MS, RecordService } from "../../src/memory/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const T0 = 1_700_000_000_000;

const RECORDS: ContainerRecord[] = [
  {
    id: "rec_00000000000000a1",
    kind: "decision",
    text: "use PostgreSQL",
    tags: ["db", "billing"],
    ts: T0,
    meta: { by: "ana", score: 0.5, nested: { list: [1, "two", null, true] } },
  },
  { id: "rec_00000000000000a2", kind: "note", text: "ünïcødé ✓ 日本語 \u0000 text", tags: [], ts: 0, meta: {} },
  {
    id: "rec_00000000000000a3",
    kind: "mistake",
    text: "x".repeat(65_536),
    tags: ["big"],
    ts: T0 + 1,
    meta: { k: "v" },
    ttlDays: 3,
    exp: T0 + 3 * DAY_MS,
  },
  {
    id: "rec_ff",
    kind: "tool_call",
    text: "short id",
    tags: ["a", "b", "c"],
    ts: Number.MAX_SAFE_INTEGER,
    meta: { deep: { deeper: { deepest: 1 } } },
    exp: 5,
  },
];

/** records.nmm read by hand: "SVCNMM01", then u32 LE length + msgpack map per record. */
function parseNmm(buf: Buffer): Array<Record<string, unknown>> {
  expect(buf.subarray(0, 8).toString("latin1")).toBe("SVCNMM01");
  const out: Array<Record<string, unknown>> = [];
  let at = 8;
  while (at < buf.length) {
    const len = buf.readUInt32LE(at);
    out.push(msgpackDecode(buf.subarray(at + 4, at + 4 + len)) as Record<string, unknown>);
    at += 4 + len;
  }
  expect(at).toBe(buf.length);
  return out;
}

function frame(obj: unknown): Buffer {
  const body = Buffer.from(msgpackEncode(obj));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(body.length);
  return Buffer.concat([len, body]);
}
const nmm = (...objs: unknown[]) => Buffer.concat([Buffer.from("SVCNMM01"), ...objs.map(frame)]);

const manifestOf = (count: number, extra: Record<string, unknown> = {}) => ({
  schema_version: 1,
  exported_at_ms: T0,
  namespace: "ns",
  sections: ["records"],
  counts: { records: count },
  exported_by: "test",
  ...extra,
});

/** A zip with the given entries (strings or bytes); `null` leaves an entry out. */
async function zipOf(entries: Record<string, string | Buffer | null>): Promise<Buffer> {
  const zip = new JSZip();
  for (const [name, data] of Object.entries(entries)) if (data !== null) zip.file(name, data);
  return zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE" });
}

async function expectContainerError(p: () => Promise<unknown> | unknown, message?: RegExp): Promise<void> {
  const err = await Promise.resolve()
    .then(p)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(SvcError);
  const e = err as SvcError;
  expect({ code: e.code, status: e.status, field: e.field }).toEqual({ code: "E_CONTAINER", status: 400, field: "file" });
  expect(e.message).toMatch(/^invalid container: /);
  if (message) expect(e.message).toMatch(message);
}

describe("records.nmm", () => {
  it("encodes to the documented framing and decodes back to the same records", () => {
    const buf = encodeRecords(RECORDS);
    expect(buf.subarray(0, 8).toString("latin1")).toBe("SVCNMM01");
    const frames = parseNmm(buf);
    expect(frames).toHaveLength(RECORDS.length);
    frames.forEach((f, i) => {
      const r = RECORDS[i]!;
      // exactly the documented keys; ttlDays and exp only when present
      expect(Object.keys(f).sort()).toEqual(
        [
          "id",
          "kind",
          "meta",
          "tags",
          "text",
          "ts",
          ...(r.ttlDays === undefined ? [] : ["ttlDays"]),
          ...(r.exp === undefined ? [] : ["exp"]),
        ].sort(),
      );
      expect(f).toEqual(r);
    });
    expect(decodeRecords(buf)).toEqual(RECORDS);
    // records without meta are written with an empty one
    const noMeta = { id: "rec_1", kind: "k", text: "t", tags: [], ts: 1 };
    expect(parseNmm(encodeRecords([noMeta]))[0]).toEqual({ ...noMeta, meta: {} });
    // empty: just the magic
    expect(encodeRecords([])).toEqual(Buffer.from("SVCNMM01"));
    expect(decodeRecords(Buffer.from("SVCNMM01"))).toEqual([]);
    // deterministic
    expect(encodeRecords(RECORDS).equals(buf)).toBe(true);
  });

  it("rejects a wrong magic, truncation anywhere and malformed records, naming the file field", async () => {
    const buf = encodeRecords(RECORDS.slice(0, 2));
    await expectContainerError(() => decodeRecords(Buffer.alloc(0)), /SVCNMM01/);
    await expectContainerError(() => decodeRecords(Buffer.from("SVCNMM0")), /SVCNMM01/);
    await expectContainerError(() => decodeRecords(Buffer.from("SVCNMM02")), /SVCNMM01/);
    await expectContainerError(() => decodeRecords(Buffer.concat([Buffer.from("svcnmm01"), buf.subarray(8)])), /SVCNMM01/);
    // every cut inside the frames (not at a frame boundary) is refused
    const firstLen = buf.readUInt32LE(8);
    const boundaries = new Set([8, 8 + 4 + firstLen, buf.length]);
    for (let cut = 9; cut < buf.length; cut++) {
      if (boundaries.has(cut)) continue;
      await expectContainerError(() => decodeRecords(buf.subarray(0, cut)), /truncated|past the end/);
    }
    // a cut at a frame boundary is a well-formed shorter file (the manifest count catches it: below)
    expect(decodeRecords(buf.subarray(0, 8 + 4 + firstLen))).toHaveLength(1);
    // a length prefix that is not msgpack
    await expectContainerError(
      () => decodeRecords(Buffer.concat([Buffer.from("SVCNMM01"), Buffer.from([2, 0, 0, 0, 0xc1, 0xc1])])),
      /not msgpack/,
    );

    const good = { id: "rec_0a", kind: "note", text: "t", tags: ["x"], ts: 5, meta: {} };
    const bads: Array<Record<string, unknown>> = [
      { id: undefined },
      { id: "rec_" },
      { id: "rec_XYZ" },
      { id: "abc_12" },
      { id: 5 },
      { id: `rec_${"a".repeat(65)}` },
      { kind: "" },
      { kind: undefined },
      { kind: 3 },
      { text: "" },
      { text: undefined },
      { text: ["t"] },
      { tags: undefined },
      { tags: "x" },
      { tags: [""] },
      { tags: [1] },
      { ts: -1 },
      { ts: 1.5 },
      { ts: "5" },
      { ts: undefined },
      { ts: 2 ** 53 },
      { meta: undefined },
      { meta: null },
      { meta: [] },
      { meta: "m" },
      { ttlDays: 0 },
      { ttlDays: -2 },
      { ttlDays: 1.5 },
      { ttlDays: "1" },
      { exp: 1.5 },
      { exp: "1" },
    ];
    for (const bad of bads) {
      const rec = { ...good, ...bad };
      for (const k of Object.keys(bad)) if (bad[k] === undefined) delete (rec as Record<string, unknown>)[k];
      await expectContainerError(() => decodeRecords(nmm(good, good, rec)), /record 2 is malformed/);
    }
    await expectContainerError(() => decodeRecords(nmm("a string")), /record 0 is malformed/);
    await expectContainerError(() => decodeRecords(nmm(null)), /record 0 is malformed/);
  });
});

describe("the zip container", () => {
  it("writeContainer writes manifest.json and records.nmm; readContainer reads them back", async () => {
    const { zip, manifest } = await writeContainer("my.ns", RECORDS, "svc test", T0 + 5);
    expect(CONTAINER_TYPE).toBe("application/x-svc");
    expect(manifest).toEqual({
      schema_version: 1,
      exported_at_ms: T0 + 5,
      namespace: "my.ns",
      sections: ["records"],
      counts: { records: RECORDS.length },
      exported_by: "svc test",
    });
    // read with JSZip independently
    const z = await JSZip.loadAsync(zip);
    expect(Object.keys(z.files).sort()).toEqual(["manifest.json", "records.nmm"]);
    const m = JSON.parse(await z.file("manifest.json")!.async("string")) as Manifest;
    expect(Object.keys(m)).toEqual(["schema_version", "exported_at_ms", "namespace", "sections", "counts", "exported_by"]);
    expect(m).toEqual(manifest);
    expect(parseNmm(await z.file("records.nmm")!.async("nodebuffer"))).toEqual(RECORDS);

    expect(await readContainer(zip)).toEqual({ manifest, records: RECORDS });
    // an empty namespace round-trips too
    const empty = await writeContainer("e", [], "x", 1);
    expect(await readContainer(empty.zip)).toEqual({ manifest: { ...empty.manifest }, records: [] });
    // a zip written by another tool (stored, not deflated) is read the same
    const stored = new JSZip();
    stored.file("manifest.json", JSON.stringify(manifestOf(2)));
    stored.file("records.nmm", encodeRecords(RECORDS.slice(0, 2)));
    expect((await readContainer(await stored.generateAsync({ type: "nodebuffer", compression: "STORE" }))).records).toEqual(
      RECORDS.slice(0, 2),
    );
  });

  it("broken containers are E_CONTAINER (400, field file)", async () => {
    const { zip } = await writeContainer("ns", RECORDS, "t", T0);
    // truncated zip: every eighth of it
    for (let k = 0; k < 8; k++) await expectContainerError(() => readContainer(zip.subarray(0, Math.floor((zip.length * k) / 8))));
    await expectContainerError(() => readContainer(zip.subarray(0, zip.length - 1)));
    await expectContainerError(() => readContainer(Buffer.from("not a zip at all")), /not a readable zip/);
    // a flipped byte inside the compressed records.nmm: CRC or inflate fails
    const z = await JSZip.loadAsync(zip);
    const big = await zipOf({ "manifest.json": JSON.stringify(manifestOf(1)), "records.nmm": encodeRecords([RECORDS[2]!]) });
    const corrupt = Buffer.from(big);
    const at = corrupt.indexOf(Buffer.from("records.nmm")) + 11 + 40;
    corrupt[at] = corrupt[at]! ^ 0xff;
    await expectContainerError(() => readContainer(corrupt));
    expect(z.file("records.nmm")).not.toBeNull();

    const recs = encodeRecords(RECORDS.slice(0, 3));
    // truncated records.nmm inside an intact zip
    await expectContainerError(
      async () =>
        readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs.subarray(0, recs.length - 7) })),
      /records\.nmm/,
    );
    await expectContainerError(
      async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs.subarray(0, 10) })),
      /records\.nmm/,
    );
    // wrong magic
    await expectContainerError(
      async () =>
        readContainer(
          await zipOf({
            "manifest.json": JSON.stringify(manifestOf(3)),
            "records.nmm": Buffer.concat([Buffer.from("SVCNMM99"), recs.subarray(8)]),
          }),
        ),
      /SVCNMM01/,
    );
    // count mismatch, both ways, and a cut exactly at a frame boundary
    await expectContainerError(
      async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(4)), "records.nmm": recs })),
      /3 records.*says 4/,
    );
    await expectContainerError(
      async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(2)), "records.nmm": recs })),
      /3 records.*says 2/,
    );
    await expectContainerError(
      async () =>
        readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": encodeRecords(RECORDS.slice(0, 2)) })),
      /2 records.*says 3/,
    );
    // schema versions other than 1 and 2
    for (const v of [0, 3, 1.5, "1", null, undefined, -1]) {
      await expectContainerError(
        async () =>
          readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3, { schema_version: v })), "records.nmm": recs })),
        /schema_version/,
      );
    }
    // missing or unreadable pieces
    await expectContainerError(async () => readContainer(await zipOf({ "records.nmm": recs })), /no manifest\.json/);
    await expectContainerError(
      async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(0)) })),
      /no records\.nmm/,
    );
    await expectContainerError(
      async () => readContainer(await zipOf({ "dir/manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs })),
      /no manifest\.json/,
    );
    for (const text of ["{", "", "not json", '{"schema_version": 1,}'])
      await expectContainerError(
        async () => readContainer(await zipOf({ "manifest.json": text, "records.nmm": recs })),
        /manifest\.json is not JSON/,
      );
    for (const m of ["null", "5", '"x"', "[]"])
      await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": m, "records.nmm": recs })));
    for (const counts of [undefined, null, {}, { records: "3" }, 3])
      await expectContainerError(
        async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3, { counts })), "records.nmm": recs })),
        /counts/,
      );
    // a malformed record, reported by its index
    await expectContainerError(
      async () =>
        readContainer(
          await zipOf({
            "manifest.json": JSON.stringify(manifestOf(3)),
            "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], text: "" }),
          }),
        ),
      /record 2 is malformed/,
    );
    // a text over the records limit (64 KiB) and a repeated id are refused before anything is written
    await expectContainerError(
      async () =>
        readContainer(
          await zipOf({
            "manifest.json": JSON.stringify(manifestOf(3)),
            "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], text: "x".repeat(65_537) }),
          }),
        ),
      /record 2 is malformed/,
    );
    await expectContainerError(
      async () =>
        readContainer(
          await zipOf({
            "manifest.json": JSON.stringify(manifestOf(3)),
            "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], id: RECORDS[0]!.id }),
          }),
        ),
      /record 2 repeats id/,
    );
  });

  it("ignores sections it does not know (schema 1: kg, scm and analogy too; schema 2: analogy.json and anything else)", async () => {
    const recs = encodeRecords(RECORDS);
    const unknown = {
      "analogy.json": "{ not even json",
      "future/section.bin": Buffer.alloc(1000, 7),
      "README.txt": "hello",
      "kg/notes.txt": "not a .hdkg name",
      "scm/deep/x.hdscm": "nested: not a section file",
    };
    const v1 = await zipOf({
      "manifest.json": JSON.stringify(
        manifestOf(RECORDS.length, {
          sections: ["records", "kg", "scm", "analogy", "future-thing"],
          counts: { records: RECORDS.length, kg: 7, future: 1 },
          extra_field: { any: "thing" },
        }),
      ),
      "records.nmm": recs,
      "kg/people.hdkg": Buffer.from([1, 2, 3, 4]),
      "scm/world.hdscm": Buffer.from("garbage that is not any known format"),
      ...unknown,
    });
    const one = await readContainer(v1);
    expect(one).toEqual({ manifest: expect.objectContaining({ schema_version: 1 }), records: RECORDS });
    expect(one.manifest.sections).toEqual(["records", "kg", "scm", "analogy", "future-thing"]);
    const v2 = await zipOf({
      "manifest.json": JSON.stringify(
        manifestOf(RECORDS.length, {
          schema_version: 2,
          sections: ["records", "analogy", "future-thing"],
          counts: { records: RECORDS.length, future: 1 },
          extra_field: { any: "thing" },
        }),
      ),
      "records.nmm": recs,
      ...unknown,
    });
    const two = await readContainer(v2);
    expect(two).toEqual({ manifest: expect.objectContaining({ schema_version: 2 }), records: RECORDS, kg: [], scm: [] });
    expect(two.manifest.sections).toEqual(["records", "analogy", "future-thing"]);
  });
});

describe("export -> import -> export through a RecordService", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-container-"));
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const clock = { now: T0 };
  const svc = new RecordService(root, { kernels, pool, encoder: TextEncoder1024.load(), durability: "none", now: () => clock.now });
  afterAll(async () => {
    await svc.close();
    await pool.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("gives a byte-identical records.nmm; the manifests differ only in exported_at_ms", async () => {
    const items = Array.from({ length: 120 }, (_, i) => ({
      kind: ["decision", "note", "tool_call"][i % 3]!,
      text: `record ${i}: ${"lorem ipsum ".repeat(i % 5)}ünï ${i}`,
      tags: i % 4 === 0 ? [] : [`t${i % 4}`, "shared"],
      ts: T0 - (i % 9) * 1000, // many records share a ts
      meta: i % 2 === 0 ? {} : { i, half: i / 2, flag: i % 3 === 0, nested: { list: [i, `s${i}`] } },
      ...(i % 7 === 0 ? { ttlDays: 1 + (i % 3) } : {}),
    }));
    await svc.ingest("t", "ns", items.slice(0, 60));
    clock.now += 5000; // a second batch, whose expiries come later
    await svc.ingest("t", "ns", items.slice(60));

    const export1 = await writeContainer("ns", await svc.all("t", "ns"), "svc test", T0 + 10);
    const first = await readContainer(export1.zip);
    expect(first.records).toHaveLength(120);
    // oldest first, ties by id
    for (let i = 1; i < first.records.length; i++) {
      const [a, b] = [first.records[i - 1]!, first.records[i]!];
      expect(a.ts < b.ts || (a.ts === b.ts && a.id < b.id)).toBe(true);
    }
    expect(first.records.filter((r) => r.exp !== undefined)).toHaveLength(items.filter((x) => x.ttlDays !== undefined).length);

    clock.now += 60_000;
    expect(await svc.restore("t", "ns", first.records, "replace")).toBe(120);
    const export2 = await writeContainer("ns", await svc.all("t", "ns"), "svc test", T0 + 99);

    const nmm1 = await (await JSZip.loadAsync(export1.zip)).file("records.nmm")!.async("nodebuffer");
    const nmm2 = await (await JSZip.loadAsync(export2.zip)).file("records.nmm")!.async("nodebuffer");
    expect(nmm2.equals(nmm1)).toBe(true);
    const m1 = JSON.parse(await (await JSZip.loadAsync(export1.zip)).file("manifest.json")!.async("string")) as Manifest;
    const m2 = JSON.parse(await (await JSZip.loadAsync(export2.zip)).file("manifest.json")!.async("string")) as Manifest;
    expect(m1.exported_at_ms).toBe(T0 + 10);
    expect(m2.exported_at_ms).toBe(T0 + 99);
    expect({ ...m2, exported_at_ms: 0 }).toEqual({ ...m1, exported_at_ms: 0 });

    // and into another namespace: the same records, the same bytes
    await svc.restore("t", "copy", first.records, "replace");
    const export3 = await writeContainer("copy", await svc.all("t", "copy"), "svc test", T0 + 10);
    expect((await (await JSZip.loadAsync(export3.zip)).file("records.nmm")!.async("nodebuffer")).equals(nmm1)).toBe(true);
  });
});

describe("schema 2: records plus the tenant's graphs (kg/*.hdkg) and causal models (scm/*.hdscm)", () => {
  const root = mkdtempSync(join(tmpdir(), "svc-container-v2-"));
  const kernels = Kernels.create();
  const pool = new ScanPool(kernels, { threads: 2 });
  const records = new RecordService(root, { kernels, pool, encoder: TextEncoder1024.load(), durability: "none" });
  const kg = new KnowledgeGraphs(root, { kernels, durability: "none" });
  const causal = new CausalService(root);
  const hd = { kg, causal };
  afterAll(async () => {
    await causal.close();
    await kg.close();
    await records.close();
    await pool.close();
    rmSync(root, { recursive: true, force: true });
  });
  const FACTS = [
    { subject: "ana", relation: "works_at", object: "acme" },
    { subject: "bo", relation: "works_at", object: "globex" },
    { subject: "ana", relation: "lives_in", object: "lisbon" },
  ];
  const WORLDS = {
    n_vars: 2,
    vocab_per_var: [2, 2],
    worlds: [
      [0, 0],
      [0, 1],
      [1, 1],
      [1, 1],
    ],
    seed: 3,
    parents: [[], [0]],
  };
  const Q = { query_type: "observation" as const, condition_var: 0, condition_value: 1, query_var: 1, query_value: 1 };

  it("schema 1 stays the default and its bytes are what they were; exportSchema reads the query parameter", async () => {
    expect([exportSchema(null), exportSchema("1"), exportSchema("2")]).toEqual([1, 1, 2]);
    for (const bad of ["3", "", "two", "2.0"]) expect(() => exportSchema(bad)).toThrow(/schema: must be 1 or 2/);
    await records.ingest("t1", "ns", [{ kind: "note", text: "hello there", ts: T0 }]);
    await kg.addFacts("t1", "people", { facts: FACTS }); // present but not in a schema 1 export
    const v1 = await exportContainer(records, hd, "t1", "ns", 1, "svc test");
    const z = await JSZip.loadAsync(v1.zip);
    expect(Object.keys(z.files).sort()).toEqual(["manifest.json", "records.nmm"]);
    const m = {
      schema_version: 1,
      exported_at_ms: v1.manifest.exported_at_ms,
      namespace: "ns",
      sections: ["records"],
      counts: { records: 1 },
      exported_by: "svc test",
    };
    expect(await z.file("manifest.json")!.async("string")).toBe(JSON.stringify(m, null, 2));
    const direct = await writeContainer("ns", await records.all("t1", "ns"), "svc test", v1.manifest.exported_at_ms);
    const dz = await JSZip.loadAsync(direct.zip);
    for (const f of ["manifest.json", "records.nmm"])
      expect((await z.file(f)!.async("nodebuffer")).equals(await dz.file(f)!.async("nodebuffer"))).toBe(true);
  });

  it("round trip: export ?schema=2 into another tenant gives the same graph answers, model probabilities and records", async () => {
    await records.ingest("t2", "ns", [
      { kind: "note", text: "first", ts: T0 },
      { kind: "decision", text: "second", ts: T0 + 1, tags: ["x"] },
    ]);
    await kg.addFacts("t2", "people", { facts: FACTS });
    await kg.addFacts("t2", "places", { facts: [{ subject: "lisbon", relation: "in", object: "portugal" }] });
    await causal.uploadWorlds("t2", "world", WORLDS);
    const { zip, manifest } = await exportContainer(records, hd, "t2", "ns", 2, "svc test");
    expect(manifest).toEqual({
      schema_version: 2,
      exported_at_ms: expect.any(Number),
      namespace: "ns",
      sections: ["records", "kg", "scm"],
      counts: { records: 2, kg: 2, scm: 1 },
      exported_by: "svc test",
    });
    const z = await JSZip.loadAsync(zip);
    expect(
      Object.keys(z.files)
        .filter((f) => !z.files[f]!.dir)
        .sort(),
    ).toEqual(["kg/people.hdkg", "kg/places.hdkg", "manifest.json", "records.nmm", "scm/world.hdscm"]);
    expect((await z.file("kg/people.hdkg")!.async("nodebuffer")).equals(await kg.export("t2", "people"))).toBe(true);
    expect((await z.file("scm/world.hdscm")!.async("nodebuffer")).equals(await causal.exportModel("t2", "world"))).toBe(true);

    // the target already holds a record (kept: merge) and a different "people" graph (replaced)
    await records.ingest("t3", "other", [{ kind: "note", text: "already here", ts: 5 }]);
    await kg.addFacts("t3", "people", { facts: [{ subject: "zed", relation: "works_at", object: "initech" }] });
    const res = await importContainer(records, hd, "t3", "other", zip);
    expect(res).toEqual({ imported: 2, manifest, graphs: 2, models: 1 });
    expect((await records.stats("t3", "other")).count).toBe(3);
    expect(await kg.query("t3", "people", { subject: "ana", relation: "works_at" })).toEqual(
      await kg.query("t2", "people", { subject: "ana", relation: "works_at" }),
    );
    expect((await kg.query("t3", "people", { subject: "ana", relation: "works_at" })).object).toBe("acme");
    expect((await kg.query("t3", "people", { subject: "zed", relation: "works_at" })).object).toBeNull();
    expect((await kg.stats("t3", "people")).facts).toBe(3);
    expect(await causal.query("t3", "world", Q)).toEqual(await causal.query("t2", "world", Q));
    expect((await causal.query("t3", "world", Q)).probability).toBe(1);
    // exported again from the target: the same HD bytes
    const again = await JSZip.loadAsync((await exportContainer(records, hd, "t3", "other", 2, "svc test")).zip);
    for (const f of ["kg/people.hdkg", "kg/places.hdkg", "scm/world.hdscm"])
      expect((await again.file(f)!.async("nodebuffer")).equals(await z.file(f)!.async("nodebuffer"))).toBe(true);
    // a tenant with no graphs or models: sections ["records"], counts 0
    expect((await exportContainer(records, hd, "empty", "ns", 2, "x")).manifest).toMatchObject({
      sections: ["records"],
      counts: { records: 0, kg: 0, scm: 0 },
    });
  });

  it("a damaged .hdkg or .hdscm, a bad section name or a count mismatch refuses the whole import: nothing changes", async () => {
    await records.ingest("t4", "ns", [{ kind: "note", text: "source", ts: 1 }]);
    await kg.addFacts("t4", "people", { facts: FACTS });
    await causal.uploadWorlds("t4", "world", WORLDS);
    const { zip } = await exportContainer(records, hd, "t4", "ns", 2, "svc test");
    const good = await JSZip.loadAsync(zip);
    const hdkg = await good.file("kg/people.hdkg")!.async("nodebuffer");
    const hdscm = await good.file("scm/world.hdscm")!.async("nodebuffer");
    const variant = async (edit: (z: JSZip) => void) => {
      const z = await JSZip.loadAsync(zip);
      edit(z);
      return z.generateAsync({ type: "nodebuffer" });
    };
    const flipped = Buffer.from(hdkg);
    flipped[30] = flipped[30]! ^ 0x01;
    const cases: Array<[Buffer, RegExp]> = [
      [await variant((z) => z.file("kg/people.hdkg", flipped)), /kg\/people\.hdkg is not a valid knowledge graph: .*CRC/],
      [await variant((z) => z.file("kg/people.hdkg", hdkg.subarray(0, hdkg.length - 5))), /kg\/people\.hdkg/],
      [await variant((z) => z.file("scm/world.hdscm", hdscm.subarray(0, 20))), /scm\/world\.hdscm is not a valid causal model/],
      [await variant((z) => z.file("kg/-bad name.hdkg", hdkg)), /'-bad name' is not a valid knowledge graph name/],
      [await variant((z) => z.file("kg/more.hdkg", hdkg)), /holds 2 kg files, the manifest says 1/],
    ];
    // the target: one record, a "people" graph and a "world" model that must survive every refusal
    await records.ingest("t5", "ns", [{ kind: "note", text: "keep me", ts: 9 }]);
    await kg.addFacts("t5", "people", { facts: [{ subject: "zed", relation: "works_at", object: "initech" }] });
    await causal.uploadWorlds("t5", "world", { ...WORLDS, worlds: [[1, 0]] });
    const before = {
      all: await records.all("t5", "ns"),
      kg: await kg.export("t5", "people"),
      scm: await causal.exportModel("t5", "world"),
    };
    for (const [data, message] of cases) {
      await expectContainerError(() => importContainer(records, hd, "t5", "ns", data), message);
      expect(await records.all("t5", "ns")).toEqual(before.all);
      expect((await kg.export("t5", "people")).equals(before.kg)).toBe(true);
      expect((await causal.exportModel("t5", "world")).equals(before.scm)).toBe(true);
      expect(await kg.names("t5")).toEqual(["people"]);
    }
    // the untouched export imports fine
    expect(await importContainer(records, hd, "t5", "ns", zip)).toMatchObject({ imported: 1, graphs: 1, models: 1 });
    expect((await kg.query("t5", "people", { subject: "ana", relation: "works_at" })).object).toBe("acme");
  });
});
