/** @module import-file — reads a directory import file (JSON Lines or CSV) as raw records, one per line/row, with byte progress. */
import { createReadStream, statSync } from "node:fs";
import { createInterface } from "node:readline";
import { parse } from "csv-parse";
import { SvcError } from "../errors.js";

export type ImportFormat = "jsonl" | "csv";

/** One line or row: its 1-based number in the file, and the object it holds (or why it holds none). */
export type RawRecord = { line: number; value: unknown } | { line: number; error: string };

/** CSV columns that hold lists, separated by ";" (or "|"). */
const LIST_COLUMNS = new Set(["services", "industries", "areas"]);
const ADDRESS_COLUMNS = ["street", "locality", "region", "postal_code", "country"] as const;

export function formatOf(path: string, given?: string): ImportFormat {
  if (given !== undefined) {
    if (given !== "jsonl" && given !== "csv")
      throw new SvcError("E_BAD_REQUEST", `--format must be jsonl or csv, not ${given}`, { field: "format" });
    return given;
  }
  if (/\.csv$/i.test(path)) return "csv";
  if (/\.(jsonl|ndjson|json)$/i.test(path)) return "jsonl";
  throw new SvcError("E_BAD_REQUEST", `cannot tell the format of ${path} from its extension; use .jsonl or .csv, or --format`, {
    field: "format",
  });
}

/** A CSV row (header names as keys) as an import object: lists split on ";", address columns gathered. */
export function csvRowToRecord(row: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const address: Record<string, string> = {};
  for (const [k, raw] of Object.entries(row)) {
    const v = raw.trim();
    if (v === "") continue;
    if (LIST_COLUMNS.has(k)) out[k] = v.split(/\s*[;|]\s*/).filter((x) => x !== "");
    else if ((ADDRESS_COLUMNS as readonly string[]).includes(k)) address[k] = v;
    else if (k === "listed") out[k] = !/^(false|no|0)$/i.test(v);
    else out[k] = v;
  }
  if (Object.keys(address).length > 0) out.address = address;
  return out;
}

/**
 * Streams the records of `path`. `onBytes(read, total)` is called as the file is consumed.
 * A JSON Lines line that is not JSON yields an error entry; blank lines are skipped.
 */
export async function* readImportFile(
  path: string,
  format: ImportFormat,
  onBytes?: (read: number, total: number) => void,
): AsyncGenerator<RawRecord> {
  let total: number;
  try {
    total = statSync(path).size;
  } catch (err) {
    throw new SvcError("E_NOT_FOUND", `cannot read ${path}: ${(err as Error).message}`, { field: "file", cause: err });
  }
  const stream = createReadStream(path);
  let read = 0;
  stream.on("data", (b) => {
    read += b.length;
    onBytes?.(read, total);
  });
  if (format === "jsonl") {
    let line = 0;
    for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
      line++;
      const t = line === 1 ? text.replace(/^\uFEFF/, "") : text;
      if (t.trim() === "") continue;
      try {
        yield { line, value: JSON.parse(t) as unknown };
      } catch (err) {
        yield { line, error: `not JSON: ${(err as Error).message}` };
      }
    }
    return;
  }
  const parser = stream.pipe(
    parse({
      columns: (h: string[]) => h.map((c) => c.trim().toLowerCase()),
      bom: true,
      skip_empty_lines: true,
      relax_column_count: false,
      info: true,
    }),
  );
  try {
    for await (const item of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      yield { line: item.info.lines, value: csvRowToRecord(item.record) };
    }
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${path}: malformed CSV: ${(err as Error).message}`, { field: "file", cause: err });
  }
}
