/** @module cranfield — parser for the Cranfield 1400 collection (cran.all.1400, cran.qry, cranqrel) and the graded gains used for nDCG. */
import { readFileSync } from "node:fs";

export interface CranDoc {
  /** .I number, 1..1400 */
  id: number;
  title: string;
  author: string;
  biblio: string;
  body: string;
}

export interface CranQuery {
  /** position in cran.qry, 1..225: the number cranqrel uses (the .I numbers skip values) */
  ordinal: number;
  /** the .I number written in cran.qry */
  label: number;
  text: string;
}

export interface Cranfield {
  docs: CranDoc[];
  queries: CranQuery[];
  /** query ordinal -> doc id -> gain (> 0 only) */
  qrels: Map<number, Map<number, number>>;
}

/** Default location: /work/shared/data/cranfield (a sibling of the repo); override with CRANFIELD_DIR. */
export const CRANFIELD_DIR = process.env.CRANFIELD_DIR ?? new URL("../../shared/data/cranfield/", import.meta.url).pathname;

/**
 * cranqrel codes (Cleverdon, cranqrel.readme): 1 complete answer, 2 high relevance, 3 useful
 * background, 4 minimum interest; -1 = not relevant. Gain = 5 - code for codes 1..4 (4, 3, 2, 1),
 * 0 otherwise.
 */
export function gainOf(code: number): number {
  return code >= 1 && code <= 4 ? 5 - code : 0;
}

/** Splits a SMART-style file into records of fields: ".I n" starts a record, ".X" starts field X. */
function records(text: string): { id: number; fields: Map<string, string> }[] {
  const out: { id: number; fields: Map<string, string> }[] = [];
  let field = "";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\r$/, "");
    const head = /^\.([A-Z])(?:\s+(\d+))?\s*$/.exec(line);
    if (head) {
      if (head[1] === "I") {
        out.push({ id: Number(head[2]), fields: new Map() });
        field = "";
      } else field = head[1]!;
      continue;
    }
    const rec = out[out.length - 1];
    if (!rec || field === "") continue;
    const prev = rec.fields.get(field);
    rec.fields.set(field, prev === undefined ? line : `${prev}\n${line}`);
  }
  return out;
}

export function parseDocs(text: string): CranDoc[] {
  return records(text).map(({ id, fields }) => ({
    id,
    title: (fields.get("T") ?? "").trim(),
    author: (fields.get("A") ?? "").trim(),
    biblio: (fields.get("B") ?? "").trim(),
    body: (fields.get("W") ?? "").trim(),
  }));
}

export function parseQueries(text: string): CranQuery[] {
  return records(text).map(({ id, fields }, i) => ({
    ordinal: i + 1,
    label: id,
    text: (fields.get("W") ?? "").trim().replace(/\s+/g, " "),
  }));
}

export function parseQrels(text: string): Map<number, Map<number, number>> {
  const qrels = new Map<number, Map<number, number>>();
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 3) continue;
    const [q, d, code] = parts.map(Number) as [number, number, number];
    const gain = gainOf(code);
    if (gain === 0) continue;
    let m = qrels.get(q);
    if (!m) qrels.set(q, (m = new Map()));
    m.set(d, Math.max(gain, m.get(d) ?? 0));
  }
  return qrels;
}

export function loadCranfield(dir: string = CRANFIELD_DIR): Cranfield {
  const read = (name: string) => readFileSync(`${dir.replace(/\/?$/, "/")}${name}`, "latin1");
  return { docs: parseDocs(read("cran.all.1400")), queries: parseQueries(read("cran.qry")), qrels: parseQrels(read("cranqrel")) };
}

/** The text indexed for a document: title, then body (the body of most records repeats the title). */
export function docText(d: CranDoc): string {
  return `${d.title}\n${d.body}`;
}
