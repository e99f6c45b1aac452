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
import { CONTAINER_TYPE, decodeRecords, encodeRecords, readContainer, writeContainer, type ContainerRecord, type Manifest } from "../../src/memory/container.js";
import { DAY_MS, RecordService } from "../../src/memory/records.js";
import { ScanPool } from "../../src/pool/scan-pool.js";

const T0 = 1_700_000_000_000;

const RECORDS: ContainerRecord[] = [
  { id: "rec_00000000000000a1", kind: "decision", text: "use PostgreSQL", tags: ["db", "billing"], ts: T0, meta: { by: "ana", score: 0.5, nested: { list: [1, "two", null, true] } } },
  { id: "rec_00000000000000a2", kind: "note", text: "ünïcødé ✓ 日本語 \u0000 text", tags: [], ts: 0, meta: {} },
  { id: "rec_00000000000000a3", kind: "mistake", text: "x".repeat(65_536), tags: ["big"], ts: T0 + 1, meta: { k: "v" }, ttlDays: 3, exp: T0 + 3 * DAY_MS },
  { id: "rec_ff", kind: "tool_call", text: "short id", tags: ["a", "b", "c"], ts: Number.MAX_SAFE_INTEGER, meta: { deep: { deeper: { deepest: 1 } } }, exp: 5 },
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

const manifestOf = (count: number, extra: Record<string, unknown> = {}) => ({ schema_version: 1, exported_at_ms: T0, namespace: "ns", sections: ["records"], counts: { records: count }, exported_by: "test", ...extra });

/** A zip with the given entries (strings or bytes); `null` leaves an entry out. */
async function zipOf(entries: Record<string, string | Buffer | null>): Promise<Buffer> {
  const zip = new JSZip();
  for (const [name, data] of Object.entries(entries)) if (data !== null) zip.file(name, data);
  return zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE" });
}

async function expectContainerError(p: () => Promise<unknown> | unknown, message?: RegExp): Promise<void> {
  const err = await Promise.resolve().then(p).then(() => null, (e: unknown) => e);
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
      expect(Object.keys(f).sort()).toEqual(["id", "kind", "meta", "tags", "text", "ts", ...(r.ttlDays === undefined ? [] : ["ttlDays"]), ...(r.exp === undefined ? [] : ["exp"])].sort());
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
    await expectContainerError(() => decodeRecords(Buffer.concat([Buffer.from("SVCNMM01"), Buffer.from([2, 0, 0, 0, 0xc1, 0xc1])])), /not msgpack/);

    const good = { id: "rec_0a", kind: "note", text: "t", tags: ["x"], ts: 5, meta: {} };
    const bads: Array<Record<string, unknown>> = [
      { id: undefined }, { id: "rec_" }, { id: "rec_XYZ" }, { id: "abc_12" }, { id: 5 }, { id: `rec_${"a".repeat(65)}` },
      { kind: "" }, { kind: undefined }, { kind: 3 },
      { text: "" }, { text: undefined }, { text: ["t"] },
      { tags: undefined }, { tags: "x" }, { tags: [""] }, { tags: [1] },
      { ts: -1 }, { ts: 1.5 }, { ts: "5" }, { ts: undefined }, { ts: 2 ** 53 },
      { meta: undefined }, { meta: null }, { meta: [] }, { meta: "m" },
      { ttlDays: 0 }, { ttlDays: -2 }, { ttlDays: 1.5 }, { ttlDays: "1" },
      { exp: 1.5 }, { exp: "1" },
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
    expect(manifest).toEqual({ schema_version: 1, exported_at_ms: T0 + 5, namespace: "my.ns", sections: ["records"], counts: { records: RECORDS.length }, exported_by: "svc test" });
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
    expect((await readContainer(await stored.generateAsync({ type: "nodebuffer", compression: "STORE" }))).records).toEqual(RECORDS.slice(0, 2));
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
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs.subarray(0, recs.length - 7) })), /records\.nmm/);
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs.subarray(0, 10) })), /records\.nmm/);
    // wrong magic
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": Buffer.concat([Buffer.from("SVCNMM99"), recs.subarray(8)]) })), /SVCNMM01/);
    // count mismatch, both ways, and a cut exactly at a frame boundary
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(4)), "records.nmm": recs })), /3 records.*says 4/);
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(2)), "records.nmm": recs })), /3 records.*says 2/);
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": encodeRecords(RECORDS.slice(0, 2)) })), /2 records.*says 3/);
    // schema versions other than 1 and 2
    for (const v of [0, 3, 1.5, "1", null, undefined, -1]) {
      await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3, { schema_version: v })), "records.nmm": recs })), /schema_version/);
    }
    // missing or unreadable pieces
    await expectContainerError(async () => readContainer(await zipOf({ "records.nmm": recs })), /no manifest\.json/);
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(0)) })), /no records\.nmm/);
    await expectContainerError(async () => readContainer(await zipOf({ "dir/manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": recs })), /no manifest\.json/);
    for (const text of ["{", "", "not json", "{\"schema_version\": 1,}"]) await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": text, "records.nmm": recs })), /manifest\.json is not JSON/);
    for (const m of ["null", "5", "\"x\"", "[]"]) await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": m, "records.nmm": recs })));
    for (const counts of [undefined, null, {}, { records: "3" }, 3]) await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3, { counts })), "records.nmm": recs })), /counts/);
    // a malformed record, reported by its index
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], text: "" }) })), /record 2 is malformed/);
    // a text over the records limit (64 KiB) and a repeated id are refused before anything is written
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], text: "x".repeat(65_537) }) })), /record 2 is malformed/);
    await expectContainerError(async () => readContainer(await zipOf({ "manifest.json": JSON.stringify(manifestOf(3)), "records.nmm": nmm(RECORDS[0], RECORDS[1], { ...RECORDS[2], id: RECORDS[0]!.id }) })), /record 2 repeats id/);
  });

  it("ignores sections it does not know (kg, scm, analogy and anything else); schema 2 is read too", async () => {
    const recs = encodeRecords(RECORDS);
    for (const schema_version of [1, 2]) {
      const data = await zipOf({
        "manifest.json": JSON.stringify(manifestOf(RECORDS.length, { schema_version, sections: ["records", "kg", "scm", "analogy", "future-thing"], counts: { records: RECORDS.length, kg: 7, future: 1 }, extra_field: { any: "thing" } })),
        "records.nmm": recs,
        "kg/people.hdkg": Buffer.from([1, 2, 3, 4]),
        "scm/world.hdscm": Buffer.from("garbage that is not any known format"),
        "analogy.json": "{ not even json",
        "future/section.bin": Buffer.alloc(1000, 7),
        "README.txt": "hello",
      });
      const { manifest, records } = await readContainer(data);
      expect(records).toEqual(RECORDS);
      expect(manifest.schema_version).toBe(schema_version);
      expect(manifest.sections).toEqual(["records", "kg", "scm", "analogy", "future-thing"]);
    }
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
