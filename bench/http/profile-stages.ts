/** @module profile-stages — a V8 .cpuprofile of `svc serve` during an ingest or a query load, summed into the write path's or the query path's stages (inclusive main-thread µs, per vector or per query). */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

interface Frame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const file = (url: string, name: string) => url.endsWith(name);
type Stages = Array<[string, (f: Frame) => boolean]>;

/** Each stage is the samples with a matching frame on their stack (a sample counts once per stage). */
export const STAGES: Stages = [
  ["body read (uWS onData, copy)", (f) => file(f.url, "http/server.js") && f.functionName === ""],
  ["msgpack decode", (f) => f.functionName === "decodeBody"],
  ["route: values to Float32Array", (f) => f.functionName === "floats" || f.functionName === "binaryFloats"],
  ["checkUpsert (ids, lengths, metadata, finite)", (f) => f.functionName === "checkUpsert"],
  ["  of which checkFinite", (f) => f.functionName === "checkFinite"],
  [
    "WAL encode + CRC + write",
    (f) =>
      (file(f.url, "store/wal.js") && f.functionName === "append") || (file(f.url, "store/wal-writer.js") && f.functionName === "writeOut"),
  ],
  ["applier: rotation encode dispatch to workers", (f) => f.functionName === "encodeAhead"],
  ["applier: arena append (row files, writeSync)", (f) => f.functionName === "append" && file(f.url, "engine/row-file.js")],
  ["applier: records + id table", (f) => f.functionName === "append" && file(f.url, "engine/record-file.js")],
  ["applier: apply, all", (f) => f.functionName === "apply" && file(f.url, "engine/applier.js")],
  ["reply", (f) => f.functionName === "respond"],
  ["garbage collector", (f) => f.functionName === "(garbage collector)"],
  ["startup (openServices)", (f) => f.functionName === "openServices"],
  ["idle", (f) => f.functionName === "(idle)"],
];

/** The query path's stages (a top-10 over HTTP), same rules. */
export const QUERY_STAGES: Stages = [
  ["uWS callbacks in server.js (headers, body read)", (f) => file(f.url, "http/server.js") && f.functionName === ""],
  ["decode body (JSON.parse / msgpack)", (f) => f.functionName === "decodeBody"],
  ["  of which checkValue (depth, reserved keys)", (f) => f.functionName === "checkValue"],
  ["authenticate (key hash)", (f) => f.functionName === "authenticate"],
  ["route handler (its synchronous part)", (f) => f.functionName === "handle" && file(f.url, "routes/indexes.js")],
  ["  route: vector check (floats)", (f) => f.functionName === "floats" && file(f.url, "routes/indexes.js")],
  ["  engine: Reader.query, all", (f) => f.functionName === "query" && file(f.url, "engine/reader.js")],
  ["    checkValues (finite, length, copy)", (f) => f.functionName === "checkValues"],
  ["    rotation encode of the query", (f) => f.functionName === "encode" && file(f.url, "kernels/rotation.js")],
  ["    ivf probe (WASM)", (f) => f.functionName === "probeIndex"],
  ["    pool dispatch (scan-pool.js)", (f) => file(f.url, "pool/scan-pool.js")],
  [
    "    asymmetric estimate",
    (f) => (f.functionName === "estimate" && file(f.url, "engine/search.js")) || f.functionName === "bestEstimated",
  ],
  ["    rescore (all)", (f) => f.functionName === "rescore" && file(f.url, "engine/search.js")],
  ["      of which values.f32 reads (pread)", (f) => f.functionName === "readRange"],
  ["reply encode (JSON.stringify / msgpack)", (f) => f.functionName === "encodeBody"],
  ["reply send (cork, tryEnd)", (f) => f.functionName === "send" && file(f.url, "http/server.js")],
  ["metrics + request log", (f) => f.functionName === "observe" || (f.functionName === "info" && f.url.includes("pino"))],
  ["garbage collector", (f) => f.functionName === "(garbage collector)"],
  ["(program): native, uWS, outside JS", (f) => f.functionName === "(program)"],
  ["startup (openServices)", (f) => f.functionName === "openServices"],
  ["idle", (f) => f.functionName === "(idle)"],
];

/**
 * Microseconds of main-thread CPU per unit (vector, query) for each stage of the main thread's .cpuprofile in `dir`
 * (thread id 0 in Node's file name CPU.<date>.<time>.<pid>.<tid>.<seq>; worker threads write their own; the newest if several), plus "busy" (not idle, not startup).
 */
export function profileStages(dir: string, vectors: number, stages: Stages = STAGES): Array<[string, number]> {
  const STAGES = stages;
  const files = readdirSync(dir).filter((x) => /\.0\.\d+\.cpuprofile$/.test(x));
  const name = files.sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs)[0];
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
