/** @module fillable-form.test — re-loads the generated form with pdf-lib and checks fields, names, states and positions. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PDFArray, PDFCheckBox, PDFDict, PDFDocument, PDFName, PDFRawStream, PDFTextField, decodePDFRawStream } from "pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { build } from "../../src/helpers/fillable-form.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-form-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function load(path: string): Promise<PDFDocument> {
  return PDFDocument.load(await readFile(path));
}

function rectOf(doc: PDFDocument, name: string) {
  return doc.getForm().getField(name).acroField.getWidgets()[0]!.getRectangle();
}

/** The page's decoded content streams as text. */
function pageContent(doc: PDFDocument): string {
  const contents = doc.getPage(0).node.Contents();
  const streams = contents instanceof PDFArray ? contents.asArray().map((r) => doc.context.lookup(r)) : [contents];
  return streams.map((s) => (s instanceof PDFRawStream ? Buffer.from(decodePDFRawStream(s).decode()).toString("latin1") : "")).join("\n");
}

const hex = (s: string): string => Buffer.from(s, "latin1").toString("hex").toUpperCase();

function baseFonts(doc: PDFDocument): string[] {
  const fonts = doc.getPage(0).node.Resources()!.lookup(PDFName.of("Font"), PDFDict);
  return [...fonts.entries()].map(([, ref]) => String((doc.context.lookup(ref) as PDFDict).lookup(PDFName.of("BaseFont"))));
}

describe("fillable form", () => {
  it("lays out title, labelled text fields and checkboxes with the default geometry", async () => {
    const output_path = join(dir, "sub", "default.pdf");
    const returned = await build({
      output_path,
      title: "Registration",
      text_fields: [
        { name: "full_name", label: "Full name" },
        { name: "email", label: "E-mail" },
      ],
      checkbox_fields: [
        { name: "agree", label: "I agree", checked: true },
        { name: "newsletter", label: "Newsletter" },
      ],
    });
    expect(returned).toBe(output_path);
    const doc = await load(output_path);
    expect(doc.getPageCount()).toBe(1);
    expect(doc.getPage(0).getSize()).toEqual({ width: 612, height: 792 });

    const fields = doc.getForm().getFields();
    expect(fields.map((f) => [f.getName(), f.constructor.name])).toEqual([
      ["full_name", "PDFTextField"],
      ["email", "PDFTextField"],
      ["agree", "PDFCheckBox"],
      ["newsletter", "PDFCheckBox"],
    ]);
    expect(doc.getForm().getCheckBox("agree").isChecked()).toBe(true);
    expect(doc.getForm().getCheckBox("newsletter").isChecked()).toBe(false);

    // H=792, top 72, rows 40: label baselines 680, 640, 600, 560; widgets at x = 72 + 140,
    // y = baseline - (h - 12) / 2.
    expect(rectOf(doc, "full_name")).toEqual({ x: 212, y: 676, width: 250, height: 20 });
    expect(rectOf(doc, "email")).toEqual({ x: 212, y: 636, width: 250, height: 20 });
    expect(rectOf(doc, "agree")).toEqual({ x: 212, y: 599, width: 14, height: 14 });
    expect(rectOf(doc, "newsletter")).toEqual({ x: 212, y: 559, width: 14, height: 14 });

    // Title baseline at 792 - 72 in 20 pt Helvetica-Bold; labels at the left margin in 12 pt Helvetica.
    const content = pageContent(doc);
    expect(content).toMatch(new RegExp(`/Helvetica-Bold-\\d+ 20 Tf[\\s\\S]*?1 0 0 1 72 720 Tm\\s*<${hex("Registration")}> Tj`));
    for (const [label, y] of [
      ["Full name", 680],
      ["E-mail", 640],
      ["I agree", 600],
      ["Newsletter", 560],
    ] as const) {
      expect(content).toMatch(new RegExp(`/Helvetica-\\d+ 12 Tf[\\s\\S]*?1 0 0 1 72 ${y} Tm\\s*<${hex(label)}> Tj`));
    }
  });

  it("honours page size, margins, sizes, fonts and per-field overrides", async () => {
    const output_path = join(dir, "custom.pdf");
    await build({
      output_path,
      title: "Custom",
      page_size: [595, 842],
      left_margin: 50,
      top_margin: 60,
      row_height: 30,
      label_width: 100,
      field_width: 200,
      field_height: 24,
      title_font: "Times-Bold",
      title_size: 18,
      label_font: "Courier",
      label_size: 10,
      text_fields: [
        { name: "a", label: "A" },
        { name: "b", label: "B", x: 300, y: 100, width: 120, height: 30 },
        { name: "c", label: "C" },
      ],
      checkbox_fields: [
        { name: "x", label: "X", size: 20 },
        { name: "y", x: 500, y: 50 },
      ],
    });
    const doc = await load(output_path);
    expect(doc.getPage(0).getSize()).toEqual({ width: 595, height: 842 });
    // Baselines: 842 - 60 - 30 * (i + 1) = 752, 722, 692, 662, 632.
    expect(rectOf(doc, "a")).toEqual({ x: 150, y: 752 - 7, width: 200, height: 24 });
    expect(rectOf(doc, "b")).toEqual({ x: 300, y: 100, width: 120, height: 30 });
    expect(rectOf(doc, "c")).toEqual({ x: 150, y: 692 - 7, width: 200, height: 24 });
    expect(rectOf(doc, "x")).toEqual({ x: 150, y: 662 - 5, width: 20, height: 20 });
    expect(rectOf(doc, "y")).toEqual({ x: 500, y: 50, width: 14, height: 14 });
    const content = pageContent(doc);
    expect(content).toMatch(new RegExp(`/Times-Bold-\\d+ 18 Tf[\\s\\S]*?1 0 0 1 50 782 Tm\\s*<${hex("Custom")}> Tj`));
    // The overridden field's label stays at the left margin, level with the widget: 100 + (30 - 10) / 2.
    expect(content).toMatch(new RegExp(`/Courier-\\d+ 10 Tf[\\s\\S]*?1 0 0 1 50 110 Tm\\s*<${hex("B")}> Tj`));
    expect(content).toMatch(new RegExp(`1 0 0 1 50 752 Tm\\s*<${hex("A")}> Tj`));
    expect(baseFonts(doc)).toEqual(expect.arrayContaining(["/Times-Bold", "/Courier"]));
  });

  it("keeps dotted names exact and falls back to DejaVu for text outside WinAnsi", async () => {
    const output_path = join(dir, "cyrillic.pdf");
    await build({
      output_path,
      title: "Анкета участника",
      text_fields: [{ name: "person.name", label: "Имя" }],
      checkbox_fields: [{ name: "person.ok", label: "Согласен", checked: true }],
    });
    const doc = await load(output_path);
    const form = doc.getForm();
    expect(form.getFields().map((f) => f.getName())).toEqual(["person.name", "person.ok"]);
    expect(form.getField("person.name")).toBeInstanceOf(PDFTextField);
    expect(form.getField("person.ok")).toBeInstanceOf(PDFCheckBox);
    const fonts = baseFonts(doc);
    expect(fonts.some((f) => f.includes("DejaVuSans-Bold"))).toBe(true);
    expect(fonts.some((f) => /DejaVuSans(?!-Bold)/.test(f))).toBe(true);
  });

  it("rejects bad arguments before writing anything", async () => {
    const output_path = join(dir, "never", "x.pdf");
    const ok = { output_path, title: "T", text_fields: [{ name: "a", label: "A" }] };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, output_path: undefined }, "output_path"],
      [{ ...ok, title: undefined }, "title"],
      [{ ...ok, text_fields: undefined }, "text_fields"],
      [{ ...ok, text_fields: [{ label: "no name" }] }, "text_fields.0.name"],
      [{ ...ok, text_fields: [{ name: "a" }] }, "text_fields.0.label"],
      [{ ...ok, checkbox_fields: [{ label: "x" }] }, "checkbox_fields.0.name"],
      [{ ...ok, checkbox_fields: [{ name: "a" }] }, "checkbox_fields.0.name"],
      [
        {
          ...ok,
          text_fields: [
            { name: "p", label: "" },
            { name: "p.q", label: "" },
          ],
        },
        "text_fields.1.name",
      ],
      [{ ...ok, page_size: [612] }, "page_size"],
      [{ ...ok, title_font: "Comic Sans" }, "title_font"],
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
    const err = await failure(build({ output_path: join(blocker, "x.pdf"), title: "T", text_fields: [] }));
    expect(err.code).toBe("E_IO");
    expect(err.field).toBe("output_path");
  });
});
