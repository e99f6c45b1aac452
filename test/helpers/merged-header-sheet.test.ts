/** @module merged-header-sheet.test — unzips the generated .xlsx and checks the mergeCells element and cell values in the sheet XML. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { XMLParser } from "fast-xml-parser";
import JSZip from "jszip";
import { afterAll, describe, expect, it } from "vitest";
import { build } from "../../src/helpers/merged-header-sheet.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-xlsx-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Node = Record<string, any>;
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  parseTagValue: false,
  isArray: (name) => ["sheet", "row", "c", "mergeCell", "si", "r"].includes(name),
});

interface Sheet {
  merges: string[];
  /** address -> decoded value ("A1" -> "Header"); cells without a value are absent. */
  values: Map<string, string | number | boolean>;
  sheetCount: number;
}

async function openXlsx(path: string): Promise<Sheet> {
  const zip = await JSZip.loadAsync(await readFile(path));
  const workbook = parser.parse(await zip.file("xl/workbook.xml")!.async("string"));
  const sheetCount = (workbook.workbook.sheets.sheet as Node[]).length;
  const sstFile = zip.file("xl/sharedStrings.xml");
  const shared: string[] = sstFile
    ? ((parser.parse(await sstFile.async("string")).sst.si ?? []) as Node[]).map((si) =>
        si.t !== undefined ? String(typeof si.t === "object" ? si.t["#text"] : si.t) : (si.r as Node[]).map((r) => String(r.t)).join(""),
      )
    : [];
  const ws = parser.parse(await zip.file("xl/worksheets/sheet1.xml")!.async("string")).worksheet as Node;
  const merges = ((ws.mergeCells?.mergeCell ?? []) as Node[]).map((m) => m["@_ref"] as string);
  if (ws.mergeCells) expect(Number(ws.mergeCells["@_count"])).toBe(merges.length);
  const values = new Map<string, string | number | boolean>();
  for (const row of (ws.sheetData?.row ?? []) as Node[]) {
    for (const c of (row.c ?? []) as Node[]) {
      const t = c["@_t"] as string | undefined;
      if (t === "inlineStr") values.set(c["@_r"], String(c.is.t));
      else if (c.v === undefined) continue;
      else if (t === "s") values.set(c["@_r"], shared[Number(c.v)]!);
      else if (t === "b") values.set(c["@_r"], c.v === "1");
      else if (t === "str") values.set(c["@_r"], String(c.v));
      else values.set(c["@_r"], Number(c.v));
    }
  }
  return { merges, values, sheetCount };
}

describe("merged-header sheet", () => {
  it("writes one true merged range with the header in its top-left cell and the other cells set", async () => {
    const output_path = join(dir, "x", "sheet.xlsx");
    const result = await build({
      header: "Quarterly sales",
      merge_start_row: 0,
      merge_start_col: 0,
      merge_end_row: 0,
      merge_end_col: 2,
      cells: { "1,0": "Region", "1,1": "Units", "1,2": "Active", "2,0": "North", "2,1": 5, "2,2": true, "3,1": 2.5, "4,4": null },
      output_path,
    });
    expect(result).toEqual({ path: resolve(output_path) });
    const s = await openXlsx(output_path);
    expect(s.sheetCount).toBe(1);
    expect(s.merges).toEqual(["A1:C1"]);
    expect(Object.fromEntries(s.values)).toEqual({
      A1: "Quarterly sales",
      A2: "Region",
      B2: "Units",
      C2: "Active",
      A3: "North",
      B3: 5,
      C3: true,
      B4: 2.5,
    });
  });

  it("maps 0-indexed rectangles anywhere on the sheet, including past column Z", async () => {
    const output_path = join(dir, "offset.xlsx");
    await build({
      header: "H",
      merge_start_row: 2,
      merge_start_col: 26,
      merge_end_row: 4,
      merge_end_col: 28,
      cells: { "0,0": "top-left of sheet", "5,27": "below", "2,25": "left of merge" },
      output_path,
    });
    const s = await openXlsx(output_path);
    expect(s.merges).toEqual(["AA3:AC5"]);
    expect(Object.fromEntries(s.values)).toEqual({ AA3: "H", A1: "top-left of sheet", AB6: "below", Z3: "left of merge" });
  });

  it("takes a cells entry at the merged range's top-left cell (the contract refuses only the others); the header stays there", async () => {
    const output_path = join(dir, "top-left.xlsx");
    const cells = { "1,1": "also the top-left", "0,0": "corner", "3,4": 7 };
    const result = await build({
      header: "H",
      merge_start_row: 1,
      merge_start_col: 1,
      merge_end_row: 2,
      merge_end_col: 3,
      cells,
      output_path,
    });
    expect(result).toEqual({ path: resolve(output_path) });
    const s = await openXlsx(output_path);
    expect(s.merges).toEqual(["B2:D3"]);
    expect(Object.fromEntries(s.values)).toEqual({ B2: "H", A1: "corner", E4: 7 });
    // the same with a null at the top-left, the other way of naming it
    await build({
      header: "H",
      merge_start_row: 1,
      merge_start_col: 1,
      merge_end_row: 2,
      merge_end_col: 3,
      cells: { "1, 1": null },
      output_path,
    });
    expect(Object.fromEntries((await openXlsx(output_path)).values)).toEqual({ B2: "H" });
  });

  it("rejects a cells entry inside the merged range, and other bad arguments, before writing anything", async () => {
    const output_path = join(dir, "never", "x.xlsx");
    const ok = { header: "H", merge_start_row: 1, merge_start_col: 1, merge_end_row: 2, merge_end_col: 3, cells: {}, output_path };
    const cases: [Record<string, unknown>, string, string][] = [
      [{ ...ok, cells: { "2,3": "clash" } }, "cells.2,3", "inside the merged range"],
      [{ ...ok, cells: { "1,1": "the header's cell", "2,1": "clash" } }, "cells.2,1", "inside the merged range"],
      [{ ...ok, cells: { "0,0": "fine", "1, 2": "clash" } }, "cells.1, 2", "inside the merged range"],
      [{ ...ok, cells: { A1: "x" } }, "cells.A1", "<row>,<col>"],
      [{ ...ok, cells: { "0,0": { v: 1 } } }, "cells.0,0", ""],
      [{ ...ok, merge_end_row: 0 }, "merge_end_row", ">="],
      [{ ...ok, merge_end_row: 1, merge_end_col: 1 }, "merge_end_col", "two cells"],
      [{ ...ok, merge_start_col: -1 }, "merge_start_col", ""],
      [{ ...ok, merge_start_row: 1.5 }, "merge_start_row", ""],
    ];
    for (const key of Object.keys(ok)) {
      const args: Record<string, unknown> = { ...ok };
      delete args[key];
      cases.push([args, key, ""]);
    }
    for (const [args, field, text] of cases) {
      const err = await failure(build(args as never));
      expect(err.code).toBe("E_BAD_REQUEST");
      expect(err.field).toBe(field);
      expect(err.message).toContain(text);
    }
    expect(existsSync(join(dir, "never"))).toBe(false);
  });

  it("raises E_IO when the output directory cannot be created", async () => {
    const blocker = join(dir, "blocker");
    writeFileSync(blocker, "");
    const err = await failure(
      build({
        header: "H",
        merge_start_row: 0,
        merge_start_col: 0,
        merge_end_row: 1,
        merge_end_col: 0,
        cells: {},
        output_path: join(blocker, "x.xlsx"),
      }),
    );
    expect(err.code).toBe("E_IO");
    expect(err.field).toBe("output_path");
  });
});
