/** @module import — loads an import file into the directory in batches: checked lines are merged, bad lines are reported with their line number. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SvcError } from "../errors.js";
import { checkValue } from "../safe-values.js";
import type { OpenLog } from "../store/log.js";
import type { Reporter } from "../store/reporter.js";
import type { Durability } from "../store/wal.js";
import { checkBooking } from "./booking.js";
import { checkImport, isoDate, type ImportRecord } from "./identity.js";
import { formatOf, readImportFile } from "./import-file.js";
import { Directory } from "./service.js";

export interface ImportReport {
  lines: number;
  created: number;
  updated: number;
  rejected: Array<{ line: number; field?: string; message: string }>;
}

export interface ImportProgress {
  bytes: number;
  totalBytes: number;
  lines: number;
}

const BATCH = 1000;
/** Rejected lines kept in the report (the count is exact). */
const KEEP_REJECTED = 100;

export async function importFile(
  dir: Directory,
  path: string,
  opts: { format?: string; today?: string; onProgress?: (p: ImportProgress) => void } = {},
): Promise<ImportReport & { rejectedCount: number }> {
  const format = formatOf(path, opts.format);
  const today = opts.today ?? isoDate(Date.now());
  const report: ImportReport & { rejectedCount: number } = { lines: 0, created: 0, updated: 0, rejected: [], rejectedCount: 0 };
  let batch: ImportRecord[] = [];
  let bytes = 0;
  let totalBytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const s = await dir.importRecords(batch);
    report.created += s.created;
    report.updated += s.updated;
    batch = [];
    opts.onProgress?.({ bytes, totalBytes, lines: report.lines });
  };
  const reject = (line: number, message: string, field?: string) => {
    report.rejectedCount++;
    if (report.rejected.length < KEEP_REJECTED) report.rejected.push({ line, ...(field ? { field } : {}), message });
  };
  for await (const r of readImportFile(path, format, (b, t) => ((bytes = b), (totalBytes = t)))) {
    report.lines++;
    if ("error" in r) {
      reject(r.line, `line ${r.line}: ${r.error}`);
      continue;
    }
    try {
      checkLine(r.value, r.line);
      const rec = checkImport(r.value, today, `line ${r.line}`);
      if (rec.booking !== undefined) rec.booking = checkBooking(rec.booking, `line ${r.line}: booking`); // a bad line is rejected alone
      batch.push(rec);
    } catch (err) {
      if (!(err instanceof SvcError) || err.status >= 500) throw err;
      reject(r.line, err.message, err.field);
    }
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  return report;
}

/** data/directory/businesses.jsonl as seen from src/directory/ (tsx) and dist/directory/ (built). */
export const DEMO_FILE = new URL("../../data/directory/businesses.jsonl", import.meta.url);

/**
 * Opens `<data>/directory` and, when it holds no business yet and `seed` is not null, imports
 * `seed` (default: the shipped demo file, when present). Returns the directory and what was imported.
 */
export async function openDirectory(
  dataDir: string,
  opts: { durability?: Durability; seed?: string | null; openLog?: OpenLog; reporter?: Reporter } = {},
): Promise<{ directory: Directory; seeded: (ImportReport & { rejectedCount: number }) | null }> {
  const directory = await Directory.open(join(dataDir, "directory"), {
    durability: opts.durability,
    openLog: opts.openLog,
    reporter: opts.reporter,
  });
  const seed = opts.seed === undefined ? fileURLToPath(DEMO_FILE) : opts.seed;
  if (directory.offline !== null || directory.size > 0 || seed === null || (opts.seed === undefined && !existsSync(seed)))
    return { directory, seeded: null };
  try {
    return { directory, seeded: await importFile(directory, seed) };
  } catch (err) {
    await directory.close();
    throw err;
  }
}

/** checkValue (src/safe-values.ts) of one line's value, its errors spelled like checkImport's ("line 3: booking.__proto__: ..."). */
function checkLine(value: unknown, line: number): void {
  try {
    checkValue(value);
  } catch (err) {
    if (!(err instanceof SvcError)) throw err;
    const field = `line ${line}: ${err.field}`;
    throw new SvcError(err.code, `${field}: ${err.message}`, { field });
  }
}
