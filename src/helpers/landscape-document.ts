/** @module landscape-document — builds a .docx with a portrait text section then a landscape section holding a two-column table (docx). */
import { writeFile } from "node:fs/promises";
import {
  Document,
  Header,
  HeadingLevel,
  Packer,
  PageOrientation,
  Paragraph,
  ShadingType,
  Table,
  TableCell,
  TableLayoutType,
  TableRow,
  TextRun,
  WidthType,
} from "docx";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

const HELPER = "landscape-document";

/** DXA = twentieths of a point; Word stores them as integers. */
const dxa = z.number().int().positive();
const cell = z.union([z.string(), z.number().finite()]);

/** Argument object. Unknown properties are stripped (the spec does not forbid them here). */
export const landscapeDocumentArgs = z.object({
  outputPath: z.string().min(1),
  title: z.string().optional(),
  bodyParagraphs: z.array(z.string()).default([]),
  tableHeaderRow: z.tuple([z.string(), z.string()]).default(["Item", "Count"]),
  tableRows: z.array(z.tuple([cell, cell])).default([]),
  columnWidths: z.tuple([dxa, dxa]).default([6000, 3000]),
  appendixHeaderText: z.string().optional(),
  /** Portrait page size; the landscape section uses them swapped. */
  pageWidth: dxa.default(12240),
  pageHeight: dxa.default(15840),
});

export type LandscapeDocumentArgs = z.input<typeof landscapeDocumentArgs>;
type Parsed = z.output<typeof landscapeDocumentArgs>;

/** Fill of the header-row cells (light grey-blue). */
export const HEADER_FILL = "D9E2F3";

function tableCell(text: string, width: number, header: boolean): TableCell {
  return new TableCell({
    width: { size: width, type: WidthType.DXA },
    ...(header ? { shading: { type: ShadingType.CLEAR, color: "auto", fill: HEADER_FILL } } : {}),
    children: [new Paragraph({ children: [new TextRun({ text, bold: header })] })],
  });
}

export interface RenderOptions {
  /**
   * Put an empty paragraph before the table, so the landscape section does not start with a table;
   * some viewers ignore a section whose first block is a table. Default true; false exists for tests.
   */
  leadingParagraph?: boolean;
}

/** Render the document to bytes (no file written). */
export async function renderDocx(a: Parsed, opts: RenderOptions = {}): Promise<Buffer> {
  const [w0, w1] = a.columnWidths;
  const rows = [
    new TableRow({ tableHeader: true, children: a.tableHeaderRow.map((t, i) => tableCell(t, a.columnWidths[i]!, true)) }),
    ...a.tableRows.map((r) => new TableRow({ children: r.map((v, i) => tableCell(String(v), a.columnWidths[i]!, false)) })),
  ];
  const table = new Table({
    width: { size: w0 + w1, type: WidthType.DXA },
    columnWidths: [w0, w1],
    layout: TableLayoutType.FIXED,
    rows,
  });
  const first: Paragraph[] = [];
  if (a.title !== undefined && a.title !== "") first.push(new Paragraph({ text: a.title, heading: HeadingLevel.HEADING_1 }));
  for (const p of a.bodyParagraphs) first.push(new Paragraph({ text: p }));
  const size = { width: a.pageWidth, height: a.pageHeight };
  const doc = new Document({
    sections: [
      { properties: { page: { size: { ...size, orientation: PageOrientation.PORTRAIT } } }, children: first },
      {
        // docx swaps width and height itself when the orientation is landscape.
        properties: { page: { size: { ...size, orientation: PageOrientation.LANDSCAPE } } },
        ...(a.appendixHeaderText === undefined
          ? {}
          : { headers: { default: new Header({ children: [new Paragraph({ text: a.appendixHeaderText })] }) } }),
        children: opts.leadingParagraph === false ? [table] : [new Paragraph({}), table],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

/** Write the document; returns `outputPath` as given. */
export async function build(args: LandscapeDocumentArgs): Promise<string> {
  const a = parseArgs(HELPER, landscapeDocumentArgs, args);
  const bytes = await renderDocx(a);
  const path = prepareOutput(a.outputPath, "outputPath");
  try {
    await writeFile(path, bytes);
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: outputPath: cannot write ${path}: ${(err as Error).message}`, {
      field: "outputPath",
      cause: err,
    });
  }
  return a.outputPath;
}
