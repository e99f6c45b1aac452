/** @module merged-cell-grid-reader — reads a workbook's active sheet into a JSON grid with merged ranges resolved (exceljs). */
import { stat, writeFile } from "node:fs/promises";
import ExcelJS from "exceljs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

const HELPER = "merged-cell-grid-reader";

/** Argument object. Unknown properties are stripped. */
export const mergedCellGridReaderArgs = z.object({
  input_path: z.string().min(1),
  output_path: z.string().min(1),
});

export type MergedCellGridReaderArgs = z.input<typeof mergedCellGridReaderArgs>;

export type GridValue = string | number | boolean | null;

/**
 * A cell's value as JSON: formulas give their cached result, rich text its plain text, hyperlinks their
 * text, dates an ISO 8601 string, error cells their code ("#DIV/0!"); empty cells null.
 */
export function jsonValue(v: ExcelJS.CellValue): GridValue {
  if (v === null || v === undefined) return null;
  if (typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "object") {
    if ("richText" in v) return v.richText.map((r) => r.text).join("");
    if ("error" in v) return v.error;
    if ("formula" in v || "sharedFormula" in v) return jsonValue((v as { result?: ExcelJS.CellValue }).result ?? null);
    if ("text" in v) return typeof v.text === "string" ? v.text : jsonValue(v.text as ExcelJS.CellValue);
  }
  return null;
}

/** The sheet shown when the workbook opens (workbook view's activeTab), else the first sheet. */
function activeSheet(wb: ExcelJS.Workbook): ExcelJS.Worksheet | undefined {
  const sheets = wb.worksheets;
  const tab = wb.views?.[0]?.activeTab ?? 0;
  return sheets[tab] ?? sheets[0];
}

/** Decode "A1" / "AB12" to 1-indexed {row, col}. */
function decodeAddress(addr: string): { row: number; col: number } {
  const m = /^\$?([A-Z]+)\$?(\d+)$/.exec(addr.toUpperCase());
  if (m === null) throw new Error(`bad cell address ${addr}`);
  let col = 0;
  for (const ch of m[1]!) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { row: Number(m[2]), col };
}

/**
 * Grid of the sheet's used range: the smallest rectangle holding every cell with a value and
 * every merged range, so grid[0][0] is its top-left cell (data in C3:E6 gives 4 rows of 3).
 * Cells covered by a merged range carry the value of its top-left cell; untouched cells are null.
 */
export function sheetGrid(ws: ExcelJS.Worksheet): GridValue[][] {
  let minRow = Infinity;
  let minCol = Infinity;
  let maxRow = 0;
  let maxCol = 0;
  const extend = (r: number, c: number) => {
    minRow = Math.min(minRow, r);
    minCol = Math.min(minCol, c);
    maxRow = Math.max(maxRow, r);
    maxCol = Math.max(maxCol, c);
  };
  const values = new Map<string, GridValue>();
  ws.eachRow({ includeEmpty: false }, (row, r) => {
    row.eachCell({ includeEmpty: false }, (cell, c) => {
      if (cell.isMerged && cell.master !== cell) return; // filled from the master below
      const v = jsonValue(cell.value);
      if (v === null) return;
      values.set(`${r},${c}`, v);
      extend(r, c);
    });
  });
  const merges = (ws.model.merges ?? []).map((range) => {
    const [a, b = a] = range.split(":");
    const tl = decodeAddress(a!);
    const br = decodeAddress(b!);
    extend(tl.row, tl.col);
    extend(br.row, br.col);
    return { tl, br };
  });
  if (maxRow === 0) return [];
  const grid: GridValue[][] = Array.from({ length: maxRow - minRow + 1 }, () => Array<GridValue>(maxCol - minCol + 1).fill(null));
  for (const [key, v] of values) {
    const [r, c] = key.split(",").map(Number) as [number, number];
    grid[r - minRow]![c - minCol] = v;
  }
  for (const { tl, br } of merges) {
    const v = jsonValue(ws.getCell(tl.row, tl.col).value);
    for (let r = tl.row; r <= br.row; r++) for (let c = tl.col; c <= br.col; c++) grid[r - minRow]![c - minCol] = v;
  }
  return grid;
}

/** Read the active sheet of `input_path`, write its grid as JSON to `output_path`; returns `{path}` (absolute). */
export async function build(args: MergedCellGridReaderArgs): Promise<{ path: string }> {
  const a = parseArgs(HELPER, mergedCellGridReaderArgs, args);
  const isFile = await stat(a.input_path).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile)
    throw new SvcError("E_BAD_REQUEST", `${HELPER}: input_path: ${a.input_path} is not a readable file`, { field: "input_path" });
  const wb = new ExcelJS.Workbook();
  try {
    await wb.xlsx.readFile(a.input_path);
  } catch (err) {
    throw new SvcError(
      "E_BAD_REQUEST",
      `${HELPER}: input_path: ${a.input_path} is not a readable .xlsx workbook: ${(err as Error).message}`,
      {
        field: "input_path",
        cause: err,
      },
    );
  }
  const ws = activeSheet(wb);
  const grid = ws === undefined ? [] : sheetGrid(ws);
  const path = prepareOutput(a.output_path, "output_path");
  try {
    await writeFile(path, JSON.stringify(grid));
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return { path };
}
