/** @module profile-stages — a V8 .cpuprofile of `svc serve` during an ingest, summed into the write path's stages (inclusive main-thread ms, per vector). */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

interface Frame { functionName: string; url: string }
interface ProfileNode { id: number; callFrame: Frame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const file = (url: string, name: string) => url.endsWith(name);
/** Each stage is the samples with a matching frame on their stack (a sample counts once per stage). */
export const STAGES: Array<[string, (f: Frame) => boolean]> = [
  ["body read (uWS onData, copy)", (f) => file(f.url, "http/server.js") && f.functionName === ""],
  ["msgpack decode", (f) => f.functionName === "decodeBody"],
  ["route: values to Float32Array", (f) => f.functionName === "floats" || f.functionName === "binaryFloats"],
  ["checkUpsert (ids, lengths, metadata, finite)", (f) => f.functionName === "checkUpsert"],
  ["  of which checkFinite", (f) => f.functionName === "checkFinite"],
  ["WAL encode + CRC + write", (f) => (file(f.url, "store/wal.js") && f.functionName === "append") || (file(f.url, "store/wal-writer.js") && f.functionName === "writeOut")],
  ["applier: rotation encode dispatch to workers", (f) => f.functionName === "encodeAhead"],
  ["applier: arena append (row files, writeSync)", (f) => f.functionName === "append" && file(f.url, "engine/row-file.js")],
  ["applier: records + id table", (f) => f.functionName === "append" && file(f.url, "engine/record-file.js")],
  ["applier: apply, all", (f) => f.functionName === "apply" && file(f.url, "engine/applier.js")],
  ["reply", (f) => f.functionName === "respond"],
  ["garbage collector", (f) => f.functionName === "(garbage collector)"],
  ["startup (openServices)", (f) => f.functionName === "openServices"],
  ["idle", (f) => f.functionName === "(idle)"],
];

/** Microseconds of main-thread CPU per vector for each stage of the only .cpuprofile in `dir`, plus "busy" (not idle, not startup). */
export function profileStages(dir: string, vectors: number): Array<[string, number]> {
  const name = readdirSync(dir).find((x) => x.endsWith(".cpuprofile"));
  if (name === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  const p = JSON.parse(readFileSync(join(dir, name), "utf8")) as Profile;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const hits = new Map<number, number>();
  p.samples.forEach((id, i) => hits.set(id, (hits.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const acc = STAGES.map(() => 0);
  let busy = 0;
  for (const [id, us] of hits) {
    if (byId.get(id)!.callFrame.functionName !== "(idle)") busy += us;
    STAGES.forEach(([, match], k) => {
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        if (match(byId.get(cur)!.callFrame)) {
          acc[k]! += us;
          break;
        }
      }
    });
  }
  const startup = acc[STAGES.findIndex(([s]) => s.startsWith("startup"))]!;
  return [...STAGES.map(([s], k): [string, number] => [s, acc[k]! / vectors]), ["busy, not idle, not startup", (busy - startup) / vectors]];
}
