/** @module merged-cell-grid-reader.test — reads workbooks with merges (ours and exceljs-made) and checks the JSON grid. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import ExcelJS from "exceljs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build } from "../../src/helpers/merged-cell-grid-reader.js";
import { build as buildSheet } from "../../src/helpers/merged-header-sheet.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-grid-"));
const multi = join(dir, "multi.xlsx");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two sheets; the second is active and holds two merges, a formula, rich text, a date and a hyperlink. */
beforeAll(async () => {
  const wb = new ExcelJS.Workbook();
  const first = wb.addWorksheet("Ignored");
  first.getCell("A1").value = "not the active sheet";
  const ws = wb.addWorksheet("Data");
  ws.getCell("B1").value = "Title";
  ws.mergeCells("B1:D1");
  ws.getCell("A2").value = 1;
  ws.getCell("B2").value = { formula: "A2*2", result: 2 };
  ws.getCell("C2").value = { richText: [{ text: "bold ", font: { bold: true } }, { text: "plain" }] };
  ws.getCell("D2").value = new Date(Date.UTC(2024, 0, 31));
  ws.getCell("A3").value = { text: "site", hyperlink: "https://example.org" };
  ws.getCell("A4").value = false;
  ws.mergeCells("A5:B6");
  ws.getCell("A5").value = "block";
  wb.views = [{ x: 0, y: 0, width: 10000, height: 20000, firstSheet: 0, activeTab: 1, visibility: "visible" }];
  await wb.xlsx.writeFile(multi);
});

async function grid(input_path: string, name: string): Promise<unknown> {
  const output_path = join(dir, "out", name);
  const result = await build({ input_path, output_path });
  expect(result).toEqual({ path: resolve(output_path) });
  return JSON.parse(await readFile(output_path, "utf8"));
}

describe("merged-cell grid reader", () => {
  it("reads the active sheet, filling every merged cell with its range's value and untouched cells with null", async () => {
    expect(await grid(multi, "multi.json")).toEqual([
      [null, "Title", "Title", "Title"],
      [1, 2, "bold plain", "2024-01-31T00:00:00.000Z"],
      ["site", null, null, null],
      [false, null, null, null],
      ["block", "block", null, null],
      ["block", "block", null, null],
    ]);
  });

  it("round-trips a merged-header sheet: grid[r][c] is the writer's '<row>,<col>' cell", async () => {
    const sheet = join(dir, "ours.xlsx");
    await buildSheet({
      header: "Header",
      merge_start_row: 1,
      merge_start_col: 1,
      merge_end_row: 2,
      merge_end_col: 2,
      cells: { "0,0": "corner", "3,1": 7, "3,3": "far" },
      output_path: sheet,
    });
    expect(await grid(sheet, "ours.json")).toEqual([
      ["corner", null, null, null],
      [null, "Header", "Header", null],
      [null, "Header", "Header", null],
      [null, 7, null, "far"],
    ]);
  });

  it("reads the used range, not from A1: data in C3:E6 gives 4 rows of 3 with no leading nulls", async () => {
    const offset = join(dir, "offset.xlsx");
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet("Offset");
    ws.getCell("C3").value = "Quarter";
    ws.mergeCells("C3:E3");
    for (const [r, row] of [
      [4, ["Q1", 10, 11]],
      [5, ["Q2", 20, 21]],
      [6, ["Q3", 30, null]],
    ] as const) {
      row.forEach((v, i) => (ws.getCell(r, 3 + i).value = v));
    }
    await wb.xlsx.writeFile(offset);
    expect(await grid(offset, "offset.json")).toEqual([
      ["Quarter", "Quarter", "Quarter"],
      ["Q1", 10, 11],
      ["Q2", 20, 21],
      ["Q3", 30, null],
    ]);
    // a merge alone can widen the range: a lone merged block at D8:E9 under B2
    const wide = join(dir, "wide.xlsx");
    const wb2 = new ExcelJS.Workbook();
    const ws2 = wb2.addWorksheet("Wide");
    ws2.getCell("B2").value = "top";
    ws2.mergeCells("D8:E9");
    ws2.getCell("D8").value = "m";
    await wb2.xlsx.writeFile(wide);
    const g = (await grid(wide, "wide.json")) as unknown[][];
    expect(g).toHaveLength(8);
    expect(g[0]).toEqual(["top", null, null, null]);
    expect(g[6]).toEqual([null, null, "m", "m"]);
    expect(g[7]).toEqual([null, null, "m", "m"]);
  });

  it("writes an empty grid for an empty sheet", async () => {
    const empty = join(dir, "empty.xlsx");
    const wb = new ExcelJS.Workbook();
    wb.addWorksheet("Empty");
    await wb.xlsx.writeFile(empty);
    expect(await grid(empty, "empty.json")).toEqual([]);
  });

  it("rejects missing arguments and unreadable inputs before writing anything", async () => {
    const output_path = join(dir, "never", "g.json");
    const notXlsx = join(dir, "not.xlsx");
    writeFileSync(notXlsx, "plain text");
    const cases: [Record<string, unknown>, string][] = [
      [{ output_path }, "input_path"],
      [{ input_path: multi }, "output_path"],
      [{ input_path: join(dir, "missing.xlsx"), output_path }, "input_path"],
      [{ input_path: notXlsx, output_path }, "input_path"],
      [{ input_path: dir, output_path }, "input_path"],
    ];
    for (const [args, field] of cases) {
      const err = await failure(build(args as never));
      expect(err.code).toBe("E_BAD_REQUEST");
      expect(err.field).toBe(field);
    }
    expect(existsSync(join(dir, "never"))).toBe(false);
  });

  it("raises E_IO when the output directory cannot be created", async () => {
    const blocker = join(dir, "blocker");
    writeFileSync(blocker, "");
    const err = await failure(build({ input_path: multi, output_path: join(blocker, "g.json") }));
    expect(err.code).toBe("E_IO");
  });
});
