/**
 * @module container — the portable .svc container of one records namespace: a zip of manifest.json and
 * records.nmm; schema 2 adds the tenant's knowledge graphs (kg/<name>.hdkg) and causal models (scm/<name>.hdscm).
 */
import { encode as msgpackEncode } from "@msgpack/msgpack";
import JSZip from "jszip";
import { SvcError } from "../errors.js";
import { checkValue, decodeMsgpack } from "../safe-values.js";
import { decodeHdscm } from "../hd/causal/format.js";
import { CAUSAL_NAME_RE } from "../hd/causal/service.js";
import { checkGraphName, checkHdkg } from "../hd/kg/service.js";
import { MAX_TEXT_BYTES, type ContainerRecord } from "./record-fields.js";

export const CONTAINER_TYPE = "application/x-svc";
/** Schema versions this reader accepts: 1 replaces the namespace, 2 merges by id and replaces the graphs and models it carries. */
export const SCHEMA_VERSIONS = [1, 2] as const;
/** The default export schema (byte-compatible with exports before schema 2 existed). */
export const EXPORT_SCHEMA = 1;
const MAGIC = Buffer.from("SVCNMM01");

export interface Manifest {
  schema_version: number;
  exported_at_ms: number;
  namespace: string;
  sections: string[];
  counts: { records: number; kg?: number; scm?: number };
  exported_by: string;
}

/** One HD section file: kg/<name>.hdkg or scm/<name>.hdscm. */
export interface HdFile {
  name: string;
  data: Buffer;
}

/** The HD sections of a schema 2 container. */
export interface HdSections {
  kg: HdFile[];
  scm: HdFile[];
}

/** What a schema 2 export reads from and an import writes to (KnowledgeGraphs and CausalService fit). */
export interface HdServices {
  kg: {
    names(tenant: string): Promise<string[]>;
    export(tenant: string, name: string): Promise<Buffer>;
    import(tenant: string, name: string, data: Uint8Array): Promise<unknown>;
  };
  causal: {
    names(tenant: string): Promise<string[]>;
    exportModel(tenant: string, name: string): Promise<Buffer>;
    importModel(tenant: string, name: string, data: Uint8Array): Promise<unknown>;
  };
}

/** What an export reads from and an import writes to (RecordService fits). */
export interface RecordStore {
  all(tenant: string, ns: string): Promise<ContainerRecord[]>;
  restore(tenant: string, ns: string, records: ContainerRecord[], mode: "replace" | "merge"): Promise<number>;
}

/**
 * records.nmm: "SVCNMM01", then one frame per record, oldest first (ties by id):
 * u32 LE length + msgpack map {id, kind, text, tags, ts, meta, ttlDays?, exp?}.
 */
export function encodeRecords(records: ContainerRecord[]): Buffer {
  const frames: Buffer[] = [MAGIC];
  for (const r of records) {
    const body = msgpackEncode({
      id: r.id,
      kind: r.kind,
      text: r.text,
      tags: r.tags,
      ts: r.ts,
      meta: r.meta ?? {},
      ...(r.ttlDays === undefined ? {} : { ttlDays: r.ttlDays }),
      ...(r.exp === undefined ? {} : { exp: r.exp }),
    });
    const len = Buffer.alloc(4);
    len.writeUInt32LE(body.byteLength);
    frames.push(len, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }
  return Buffer.concat(frames);
}

export function decodeRecords(buf: Buffer): ContainerRecord[] {
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw bad("records.nmm does not start with SVCNMM01");
  const out: ContainerRecord[] = [];
  for (let at = MAGIC.length; at < buf.length;) {
    if (at + 4 > buf.length) throw bad(`records.nmm is truncated at byte ${at}`);
    const len = buf.readUInt32LE(at);
    if (at + 4 + len > buf.length) throw bad(`records.nmm frame at byte ${at} runs past the end`);
    let r: unknown;
    try {
      r = decodeMsgpack(buf.subarray(at + 4, at + 4 + len));
    } catch {
      throw bad(`records.nmm frame at byte ${at} is not msgpack`);
    }
    out.push(checkRecord(r, out.length));
    at += 4 + len;
  }
  return out;
}

/**
 * Without `hd`: schema 1 (manifest.json, records.nmm), exactly as before schema 2 existed. With `hd`:
 * schema 2, sections ["records", "kg"?, "scm"?] (only those present), counts {records, kg, scm}, plus
 * kg/<name>.hdkg and scm/<name>.hdscm.
 */
export async function writeContainer(
  namespace: string,
  records: ContainerRecord[],
  exportedBy: string,
  now = Date.now(),
  hd?: HdSections,
): Promise<{ zip: Buffer; manifest: Manifest }> {
  const manifest: Manifest =
    hd === undefined
      ? {
          schema_version: EXPORT_SCHEMA,
          exported_at_ms: now,
          namespace,
          sections: ["records"],
          counts: { records: records.length },
          exported_by: exportedBy,
        }
      : {
          schema_version: 2,
          exported_at_ms: now,
          namespace,
          sections: ["records", ...(hd.kg.length > 0 ? ["kg"] : []), ...(hd.scm.length > 0 ? ["scm"] : [])],
          counts: { records: records.length, kg: hd.kg.length, scm: hd.scm.length },
          exported_by: exportedBy,
        };
  const zip = new JSZip();
  zip.file("manifest.json", JSON.stringify(manifest, null, 2));
  zip.file("records.nmm", encodeRecords(records));
  for (const g of hd?.kg ?? []) zip.file(`kg/${g.name}.hdkg`, g.data);
  for (const m of hd?.scm ?? []) zip.file(`scm/${m.name}.hdscm`, m.data);
  return { zip: await zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE", compressionOptions: { level: 6 } }), manifest };
}

/**
 * Parse and check a whole container before anything is written. Schema 1: only records (other files
 * are ignored). Schema 2: also every kg/<name>.hdkg and scm/<name>.hdscm, each decoded and checked as
 * the HD import routes would; analogy.json (reserved: analogy is stateless) and any other file are ignored.
 */
export async function readContainer(data: Buffer): Promise<{ manifest: Manifest; records: ContainerRecord[] } & Partial<HdSections>> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(data, { checkCRC32: true });
  } catch (err) {
    throw bad(`not a readable zip: ${(err as Error).message}`);
  }
  const read = async (name: string) => {
    const f = zip.file(name);
    if (f === null) throw bad(`the container has no ${name}`);
    try {
      return await f.async("nodebuffer");
    } catch (err) {
      throw bad(`${name} is damaged: ${(err as Error).message}`);
    }
  };
  let manifest: Manifest;
  try {
    manifest = JSON.parse((await read("manifest.json")).toString("utf8")) as Manifest;
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw bad("manifest.json is not JSON");
  }
  if (typeof manifest !== "object" || manifest === null) throw bad("manifest.json must be an object");
  checkValue(manifest, "manifest.json");
  if (!SCHEMA_VERSIONS.includes(manifest.schema_version as never))
    throw bad(`schema_version ${String(manifest.schema_version)} is not supported (1 or 2)`);
  if (typeof manifest.counts?.records !== "number") throw bad("manifest.counts.records must be a number");
  const records = decodeRecords(await read("records.nmm"));
  const ids = new Set<string>();
  records.forEach((r, i) => {
    if (ids.has(r.id)) throw bad(`records.nmm record ${i} repeats id ${r.id}`);
    ids.add(r.id);
  });
  if (records.length !== manifest.counts.records)
    throw bad(`records.nmm holds ${records.length} records, the manifest says ${manifest.counts.records}`);
  if (manifest.schema_version === 1) return { manifest, records };
  const hd: HdSections = { kg: [], scm: [] };
  const sections = [
    {
      key: "kg",
      re: /^kg\/([^/]+)\.hdkg$/,
      out: hd.kg,
      what: "knowledge graph",
      checkName: (n: string) => checkGraphName(n),
      decode: (b: Buffer) => checkHdkg(b),
    },
    {
      key: "scm",
      re: /^scm\/([^/]+)\.hdscm$/,
      out: hd.scm,
      what: "causal model",
      checkName: (n: string) => {
        if (!CAUSAL_NAME_RE.test(n)) throw new Error("bad name");
      },
      decode: (b: Buffer) => decodeHdscm(b),
    },
  ] as const;
  const files = Object.values(zip.files)
    .filter((f) => !f.dir)
    .map((f) => f.name)
    .sort();
  for (const sec of sections) {
    for (const file of files) {
      const name = sec.re.exec(file)?.[1];
      if (name === undefined) continue;
      try {
        sec.checkName(name);
      } catch {
        throw bad(`${file}: '${name}' is not a valid ${sec.what} name`);
      }
      const bytes = await read(file);
      try {
        sec.decode(bytes);
      } catch (err) {
        throw bad(`${file} is not a valid ${sec.what}: ${(err as Error).message}`);
      }
      sec.out.push({ name, data: bytes });
    }
    const said = (manifest.counts as Record<string, unknown>)[sec.key];
    if (said !== undefined && said !== sec.out.length)
      throw bad(`the container holds ${sec.out.length} ${sec.key} files, the manifest says ${String(said)}`);
  }
  return { manifest, records, ...hd };
}

/** An export of namespace `ns`: schema 2 also carries all of the tenant's graphs and models (the HD layer is tenant-scoped). */
export async function exportContainer(
  records: RecordStore,
  hd: HdServices,
  tenant: string,
  ns: string,
  schema: 1 | 2,
  exportedBy: string,
): Promise<{ zip: Buffer; manifest: Manifest }> {
  const all = await records.all(tenant, ns);
  if (schema === 1) return writeContainer(ns, all, exportedBy);
  const sections: HdSections = { kg: [], scm: [] };
  const gone = (err: unknown) => err instanceof SvcError && err.code === "E_NOT_FOUND"; // dropped since it was listed
  for (const name of await hd.kg.names(tenant)) {
    try {
      sections.kg.push({ name, data: await hd.kg.export(tenant, name) });
    } catch (err) {
      if (!gone(err)) throw err;
    }
  }
  for (const name of await hd.causal.names(tenant)) {
    try {
      sections.scm.push({ name, data: await hd.causal.exportModel(tenant, name) });
    } catch (err) {
      if (!gone(err)) throw err;
    }
  }
  return writeContainer(ns, all, exportedBy, Date.now(), sections);
}

/**
 * Import a container into namespace `ns`, everything checked first: schema 1 replaces the namespace;
 * schema 2 merges the records by id and replaces each graph and model it carries by name.
 */
export async function importContainer(
  records: RecordStore,
  hd: HdServices,
  tenant: string,
  ns: string,
  data: Buffer,
): Promise<{ imported: number; manifest: Manifest; graphs?: number; models?: number }> {
  const c = await readContainer(data);
  const imported = await records.restore(tenant, ns, c.records, c.manifest.schema_version === 1 ? "replace" : "merge");
  for (const g of c.kg ?? []) await hd.kg.import(tenant, g.name, g.data);
  for (const m of c.scm ?? []) await hd.causal.importModel(tenant, m.name, m.data);
  return {
    imported,
    manifest: c.manifest,
    ...(c.kg?.length ? { graphs: c.kg.length } : {}),
    ...(c.scm?.length ? { models: c.scm.length } : {}),
  };
}

function checkRecord(v: unknown, i: number): ContainerRecord {
  const r = v as Record<string, unknown>;
  const ok =
    typeof r === "object" &&
    r !== null &&
    typeof r.id === "string" &&
    /^rec_[0-9a-f]{1,64}$/.test(r.id) &&
    typeof r.kind === "string" &&
    r.kind !== "" &&
    typeof r.text === "string" &&
    r.text.trim() !== "" &&
    Buffer.byteLength(r.text) <= MAX_TEXT_BYTES &&
    Array.isArray(r.tags) &&
    r.tags.every((t) => typeof t === "string" && t !== "") &&
    Number.isSafeInteger(r.ts) &&
    (r.ts as number) >= 0 &&
    typeof r.meta === "object" &&
    r.meta !== null &&
    !Array.isArray(r.meta) &&
    (r.ttlDays === undefined || (Number.isInteger(r.ttlDays) && (r.ttlDays as number) > 0)) &&
    (r.exp === undefined || Number.isSafeInteger(r.exp));
  if (!ok) throw bad(`records.nmm record ${i} is malformed`);
  checkValue(r, `records.nmm[${i}]`);
  return r as unknown as ContainerRecord;
}

function bad(message: string): SvcError {
  return new SvcError("E_CONTAINER", `invalid container: ${message}`, { field: "file" });
}
