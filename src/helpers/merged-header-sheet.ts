/** @module merged-header-sheet — builds an .xlsx whose one merged range holds a header, plus a map of other cells (exceljs). */
import ExcelJS from "exceljs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

const HELPER = "merged-header-sheet";

/** Excel's sheet limits, 0-indexed inclusive maxima. */
export const MAX_ROW = 1_048_575;
export const MAX_COL = 16_383;

const row = z.number().int().min(0).max(MAX_ROW);
const col = z.number().int().min(0).max(MAX_COL);
/** A cell value: text, finite number, boolean, or null (cell left empty). */
const cellValue = z.union([z.string(), z.number().finite(), z.boolean(), z.null()]);

/** "<row>,<col>", 0-indexed; blanks around the numbers are tolerated. */
const CELL_KEY = /^\s*(\d+)\s*,\s*(\d+)\s*$/;

/**
 * Argument object; all seven fields required. Unknown properties are stripped. The merged range must
 * span at least two cells (a 1x1 "merge" is not a merged range). A `cells` entry inside the range
 * other than its top-left cell is an error (the contract's rule); the top-left one is not.
 */
export const mergedHeaderSheetArgs = z
  .object({
    header: z.string(),
    merge_start_row: row,
    merge_start_col: col,
    merge_end_row: row,
    merge_end_col: col,
    cells: z.record(z.string(), cellValue),
    output_path: z.string().min(1),
  })
  .superRefine((a, ctx) => {
    if (a.merge_end_row < a.merge_start_row) {
      ctx.addIssue({ code: "custom", path: ["merge_end_row"], message: `must be >= merge_start_row (${a.merge_start_row})` });
    }
    if (a.merge_end_col < a.merge_start_col) {
      ctx.addIssue({ code: "custom", path: ["merge_end_col"], message: `must be >= merge_start_col (${a.merge_start_col})` });
    }
    if (a.merge_end_row === a.merge_start_row && a.merge_end_col === a.merge_start_col) {
      ctx.addIssue({ code: "custom", path: ["merge_end_col"], message: "the merged range must span at least two cells" });
    }
    for (const key of Object.keys(a.cells)) {
      const m = CELL_KEY.exec(key);
      const r = m === null ? NaN : Number(m[1]);
      const c = m === null ? NaN : Number(m[2]);
      if (m === null || r > MAX_ROW || c > MAX_COL) {
        ctx.addIssue({
          code: "custom",
          path: ["cells", key],
          message: `key must be "<row>,<col>" with 0 <= row <= ${MAX_ROW} and 0 <= col <= ${MAX_COL}`,
        });
        continue;
      }
      const inside = r >= a.merge_start_row && r <= a.merge_end_row && c >= a.merge_start_col && c <= a.merge_end_col;
      const topLeft = r === a.merge_start_row && c === a.merge_start_col;
      if (inside && !topLeft) {
        ctx.addIssue({
          code: "custom",
          path: ["cells", key],
          message: `cell (${r},${c}) lies inside the merged range (${a.merge_start_row},${a.merge_start_col})..(${a.merge_end_row},${a.merge_end_col}); only its top-left cell holds a value, the header`,
        });
      }
    }
  });

export type MergedHeaderSheetArgs = z.input<typeof mergedHeaderSheetArgs>;

/**
 * Write the workbook; returns `{path}` (absolute). No entry of `cells` may lie inside the merged
 * range other than at its top-left cell; that cell holds `header` (an entry for it is accepted and
 * the header is what it holds, as the contract says).
 */
export async function build(args: MergedHeaderSheetArgs): Promise<{ path: string }> {
  const a = parseArgs(HELPER, mergedHeaderSheetArgs, args);
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet("Sheet1");
  // exceljs is 1-indexed.
  for (const [key, value] of Object.entries(a.cells)) {
    const [, r, c] = CELL_KEY.exec(key)!;
    const rr = Number(r);
    const cc = Number(c);
    if (rr === a.merge_start_row && cc === a.merge_start_col) continue; // the top-left cell holds the header
    if (value !== null) ws.getCell(rr + 1, cc + 1).value = value;
  }
  ws.mergeCells(a.merge_start_row + 1, a.merge_start_col + 1, a.merge_end_row + 1, a.merge_end_col + 1);
  const master = ws.getCell(a.merge_start_row + 1, a.merge_start_col + 1);
  master.value = a.header;
  master.alignment = { horizontal: "center", vertical: "middle" };
  master.font = { bold: true };

  const path = prepareOutput(a.output_path, "output_path");
  try {
    await wb.xlsx.writeFile(path);
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return { path };
}
