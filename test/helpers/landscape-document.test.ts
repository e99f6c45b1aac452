/** @module landscape-document.test — unzips the generated .docx and checks sections, header part, and table widths/header row. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { XMLParser } from "fast-xml-parser";
import JSZip from "jszip";
import { afterAll, describe, expect, it } from "vitest";
import { HEADER_FILL, build, landscapeDocumentArgs, renderDocx } from "../../src/helpers/landscape-document.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-docx-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Ordered XML: each node is {tag: children[], ":@"?: attrs}. */
type ONode = Record<string, any>;
const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", preserveOrder: true });

const tagOf = (n: ONode): string => Object.keys(n).find((k) => k !== ":@")!;
const kids = (n: ONode): ONode[] => n[tagOf(n)] as ONode[];
const attrs = (n: ONode): Record<string, string> => (n[":@"] ?? {}) as Record<string, string>;
const child = (n: ONode, tag: string): ONode | undefined => kids(n).find((c) => tagOf(c) === tag);
const children = (n: ONode, tag: string): ONode[] => kids(n).filter((c) => tagOf(c) === tag);
/** Every descendant with this tag, depth first. */
function all(n: ONode, tag: string): ONode[] {
  const out: ONode[] = [];
  const walk = (x: ONode): void => {
    if (tagOf(x) === "#text") return;
    if (tagOf(x) === tag) out.push(x);
    for (const c of kids(x)) walk(c);
  };
  walk(n);
  return out;
}
const text = (n: ONode): string =>
  all(n, "w:t")
    .map((t) =>
      kids(t)
        .map((x) => String(x["#text"] ?? ""))
        .join(""),
    )
    .join("");

interface Docx {
  zip: JSZip;
  body: ONode[];
  sections: ONode[];
  rels: string;
}

async function openDocx(bytes: Buffer): Promise<Docx> {
  const zip = await JSZip.loadAsync(bytes);
  const doc = parser.parse(await zip.file("word/document.xml")!.async("string")) as ONode[];
  const root = doc.find((n) => tagOf(n) === "w:document")!;
  const body = kids(child(root, "w:body")!);
  // Section 1's properties live in its last paragraph's pPr; the last section's are the body's final sectPr.
  const sections = [
    ...body.filter((n) => tagOf(n) === "w:p").flatMap((p) => all(p, "w:sectPr")),
    ...body.filter((n) => tagOf(n) === "w:sectPr"),
  ];
  return { zip, body, sections, rels: await zip.file("word/_rels/document.xml.rels")!.async("string") };
}

const pgSz = (sect: ONode) => attrs(child(sect, "w:pgSz")!);

/** Index of the paragraph carrying section 1's break, and what follows it. */
function afterBreak(d: Docx): ONode[] {
  const i = d.body.findIndex((n) => tagOf(n) === "w:p" && all(n, "w:sectPr").length > 0);
  return d.body.slice(i + 1);
}

describe("landscape document", () => {
  it("writes a portrait section (heading + paragraphs) then a landscape section with header and table", async () => {
    const outputPath = join(dir, "a", "b", "report.docx");
    const returned = await build({
      outputPath,
      title: "Quarterly report",
      bodyParagraphs: ["First paragraph.", "Second paragraph."],
      tableHeaderRow: ["Product", "Units"],
      tableRows: [
        ["Widgets", 12],
        ["Gadgets", "7"],
      ],
      appendixHeaderText: "Appendix A",
    });
    expect(returned).toBe(outputPath);
    const d = await openDocx(await readFile(outputPath));

    // Sections: portrait 12240 x 15840, then landscape with the size swapped.
    expect(d.sections).toHaveLength(2);
    expect(pgSz(d.sections[0]!)).toMatchObject({ "@_w:w": "12240", "@_w:h": "15840", "@_w:orient": "portrait" });
    expect(pgSz(d.sections[1]!)).toMatchObject({ "@_w:w": "15840", "@_w:h": "12240", "@_w:orient": "landscape" });

    // Section 1: Heading1 title then the paragraphs in order.
    const paras = d.body.filter((n) => tagOf(n) === "w:p");
    expect(attrs(all(paras[0]!, "w:pStyle")[0]!)["@_w:val"]).toBe("Heading1");
    expect(paras.slice(0, 3).map(text)).toEqual(["Quarterly report", "First paragraph.", "Second paragraph."]);

    // Header only on the landscape section, and its part holds the text.
    expect(child(d.sections[0]!, "w:headerReference")).toBeUndefined();
    const ref = attrs(child(d.sections[1]!, "w:headerReference")!);
    expect(ref["@_w:type"]).toBe("default");
    const target =
      new RegExp(`Id="${ref["@_r:id"]}"[^>]*Target="([^"]+)"`).exec(d.rels)?.[1] ??
      new RegExp(`Target="([^"]+)"[^>]*Id="${ref["@_r:id"]}"`).exec(d.rels)?.[1];
    expect(target).toMatch(/header\d*\.xml$/);
    const header = parser.parse(await d.zip.file(`word/${target}`)!.async("string")) as ONode[];
    expect(text(header.find((n) => tagOf(n) === "w:hdr")!)).toBe("Appendix A");

    // Section 2 starts with a paragraph (viewer workaround), then the table.
    const rest = afterBreak(d);
    expect(rest.map(tagOf)).toEqual(["w:p", "w:tbl", "w:sectPr"]);
    const tbl = rest[1]!;
    const tblPr = child(tbl, "w:tblPr")!;
    expect(attrs(child(tblPr, "w:tblW")!)).toMatchObject({ "@_w:w": "9000", "@_w:type": "dxa" });
    expect(children(child(tbl, "w:tblGrid")!, "w:gridCol").map((g) => attrs(g)["@_w:w"])).toEqual(["6000", "3000"]);

    const rows = children(tbl, "w:tr");
    expect(rows.map((r) => children(r, "w:tc").map(text))).toEqual([
      ["Product", "Units"],
      ["Widgets", "12"],
      ["Gadgets", "7"],
    ]);
    // Every cell carries its column width.
    for (const r of rows) {
      expect(children(r, "w:tc").map((c) => attrs(child(child(c, "w:tcPr")!, "w:tcW")!))).toEqual([
        { "@_w:w": "6000", "@_w:type": "dxa" },
        { "@_w:w": "3000", "@_w:type": "dxa" },
      ]);
    }
    // Header row repeats, is bold and shaded; body rows are neither.
    expect(all(rows[0]!, "w:tblHeader")).toHaveLength(1);
    for (const c of children(rows[0]!, "w:tc")) {
      expect(attrs(child(child(c, "w:tcPr")!, "w:shd")!)["@_w:fill"]).toBe(HEADER_FILL);
      const b = all(c, "w:b");
      expect(b).toHaveLength(1);
      expect(attrs(b[0]!)["@_w:val"]).toBeUndefined();
    }
    for (const r of rows.slice(1)) {
      expect(all(r, "w:tblHeader")).toHaveLength(0);
      expect(all(r, "w:shd")).toHaveLength(0);
      for (const b of all(r, "w:b")) expect(attrs(b)["@_w:val"]).toBe("false");
    }
  });

  it("uses the defaults: no heading, no header, [Item, Count] header row only, custom sizes swapped", async () => {
    const outputPath = join(dir, "defaults.docx");
    await build({ outputPath, pageWidth: 11906, pageHeight: 16838, columnWidths: [4000, 2500] });
    const d = await openDocx(await readFile(outputPath));
    expect(pgSz(d.sections[0]!)).toMatchObject({ "@_w:w": "11906", "@_w:h": "16838", "@_w:orient": "portrait" });
    expect(pgSz(d.sections[1]!)).toMatchObject({ "@_w:w": "16838", "@_w:h": "11906", "@_w:orient": "landscape" });
    expect(d.body.flatMap((n) => all(n, "w:pStyle"))).toHaveLength(0);
    expect(d.sections.flatMap((s) => children(s, "w:headerReference"))).toHaveLength(0);
    expect(Object.keys(d.zip.files).filter((n) => /header\d*\.xml$/.test(n))).toEqual([]);
    const tbl = afterBreak(d).find((n) => tagOf(n) === "w:tbl")!;
    const rows = children(tbl, "w:tr");
    expect(rows.map((r) => children(r, "w:tc").map(text))).toEqual([["Item", "Count"]]);
    expect(attrs(child(child(tbl, "w:tblPr")!, "w:tblW")!)["@_w:w"]).toBe("6500");
    expect(children(rows[0]!, "w:tc").map((c) => attrs(child(child(c, "w:tcPr")!, "w:tcW")!)["@_w:w"])).toEqual(["4000", "2500"]);
  });

  it("puts a paragraph before the landscape table (without the workaround the section would open with the table)", async () => {
    const a = landscapeDocumentArgs.parse({ outputPath: "unused.docx", tableRows: [["x", 1]] });
    const naive = await openDocx(await renderDocx(a, { leadingParagraph: false }));
    expect(afterBreak(naive).map(tagOf)[0]).toBe("w:tbl");
    const ours = await openDocx(await renderDocx(a));
    expect(afterBreak(ours).map(tagOf).slice(0, 2)).toEqual(["w:p", "w:tbl"]);
  });

  it("rejects missing outputPath and malformed arguments before writing anything", async () => {
    const outputPath = join(dir, "never", "x.docx");
    const cases: [Record<string, unknown>, string][] = [
      [{}, "outputPath"],
      [{ title: "T" }, "outputPath"],
      [{ outputPath, tableHeaderRow: ["a", "b", "c"] }, "tableHeaderRow"],
      [{ outputPath, tableRows: [["a"]] }, "tableRows.0"],
      [{ outputPath, tableRows: [["a", { n: 1 }]] }, "tableRows.0.1"],
      [{ outputPath, columnWidths: [100.5, 200] }, "columnWidths.0"],
      [{ outputPath, pageWidth: -1 }, "pageWidth"],
      [{ outputPath, bodyParagraphs: "text" }, "bodyParagraphs"],
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
    const err = await failure(build({ outputPath: join(blocker, "x.docx") }));
    expect(err.code).toBe("E_IO");
    expect(err.field).toBe("outputPath");
  });
});
