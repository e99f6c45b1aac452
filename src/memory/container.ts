/** @module container — the portable .svc container of one records namespace: a zip of manifest.json and records.nmm. */
import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";
import JSZip from "jszip";
import { SvcError } from "../errors.js";
import { MAX_TEXT_BYTES, type RecordView } from "./records.js";

export const CONTAINER_TYPE = "application/x-svc";
/** Schema versions this reader accepts: 1 replaces the namespace, 2 merges by id. */
export const SCHEMA_VERSIONS = [1, 2] as const;
export const EXPORT_SCHEMA = 1;
const MAGIC = Buffer.from("SVCNMM01");

export interface Manifest {
  schema_version: number;
  exported_at_ms: number;
  namespace: string;
  sections: string[];
  counts: { records: number };
  exported_by: string;
}

/** A record as stored in records.nmm (RecordView plus its absolute expiry). */
export type ContainerRecord = RecordView & { exp?: number };

/**
 * records.nmm: "SVCNMM01", then one frame per record, oldest first (ties by id):
 * u32 LE length + msgpack map {id, kind, text, tags, ts, meta, ttlDays?, exp?}.
 */
export function encodeRecords(records: ContainerRecord[]): Buffer {
  const frames: Buffer[] = [MAGIC];
  for (const r of records) {
    const body = msgpackEncode({ id: r.id, kind: r.kind, text: r.text, tags: r.tags, ts: r.ts, meta: r.meta ?? {}, ...(r.ttlDays === undefined ? {} : { ttlDays: r.ttlDays }), ...(r.exp === undefined ? {} : { exp: r.exp }) });
    const len = Buffer.alloc(4);
    len.writeUInt32LE(body.byteLength);
    frames.push(len, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }
  return Buffer.concat(frames);
}

export function decodeRecords(buf: Buffer): ContainerRecord[] {
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw bad("records.nmm does not start with SVCNMM01");
  const out: ContainerRecord[] = [];
  for (let at = MAGIC.length; at < buf.length; ) {
    if (at + 4 > buf.length) throw bad(`records.nmm is truncated at byte ${at}`);
    const len = buf.readUInt32LE(at);
    if (at + 4 + len > buf.length) throw bad(`records.nmm frame at byte ${at} runs past the end`);
    let r: unknown;
    try {
      r = msgpackDecode(buf.subarray(at + 4, at + 4 + len));
    } catch {
      throw bad(`records.nmm frame at byte ${at} is not msgpack`);
    }
    out.push(checkRecord(r, out.length));
    at += 4 + len;
  }
  return out;
}

export async function writeContainer(namespace: string, records: ContainerRecord[], exportedBy: string, now = Date.now()): Promise<{ zip: Buffer; manifest: Manifest }> {
  const manifest: Manifest = { schema_version: EXPORT_SCHEMA, exported_at_ms: now, namespace, sections: ["records"], counts: { records: records.length }, exported_by: exportedBy };
  const zip = new JSZip();
  zip.file("manifest.json", JSON.stringify(manifest, null, 2));
  zip.file("records.nmm", encodeRecords(records));
  return { zip: await zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE", compressionOptions: { level: 6 } }), manifest };
}

/** Parse and check a whole container before anything is written; sections other than records are ignored. */
export async function readContainer(data: Buffer): Promise<{ manifest: Manifest; records: ContainerRecord[] }> {
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
  if (!SCHEMA_VERSIONS.includes(manifest.schema_version as never)) throw bad(`schema_version ${String(manifest.schema_version)} is not supported (1 or 2)`);
  if (typeof manifest.counts?.records !== "number") throw bad("manifest.counts.records must be a number");
  const records = decodeRecords(await read("records.nmm"));
  const ids = new Set<string>();
  records.forEach((r, i) => {
    if (ids.has(r.id)) throw bad(`records.nmm record ${i} repeats id ${r.id}`);
    ids.add(r.id);
  });
  if (records.length !== manifest.counts.records) throw bad(`records.nmm holds ${records.length} records, the manifest says ${manifest.counts.records}`);
  return { manifest, records };
}

function checkRecord(v: unknown, i: number): ContainerRecord {
  const r = v as Record<string, unknown>;
  const ok =
    typeof r === "object" && r !== null &&
    typeof r.id === "string" && /^rec_[0-9a-f]{1,64}$/.test(r.id) &&
    typeof r.kind === "string" && r.kind !== "" &&
    typeof r.text === "string" && r.text.trim() !== "" && Buffer.byteLength(r.text) <= MAX_TEXT_BYTES &&
    Array.isArray(r.tags) && r.tags.every((t) => typeof t === "string" && t !== "") &&
    Number.isSafeInteger(r.ts) && (r.ts as number) >= 0 &&
    typeof r.meta === "object" && r.meta !== null && !Array.isArray(r.meta) &&
    (r.ttlDays === undefined || (Number.isInteger(r.ttlDays) && (r.ttlDays as number) > 0)) &&
    (r.exp === undefined || Number.isSafeInteger(r.exp));
  if (!ok) throw bad(`records.nmm record ${i} is malformed`);
  return r as unknown as ContainerRecord;
}

function bad(message: string): SvcError {
  return new SvcError("E_CONTAINER", `invalid container: ${message}`, { field: "file" });
}
