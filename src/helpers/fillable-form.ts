/** @module fillable-form — builds a one-page PDF with a title, labelled AcroForm text fields and checkboxes (pdf-lib). */
import { writeFile } from "node:fs/promises";
import { PDFDocument, type PDFFont, type PDFPage, StandardFonts, rgb } from "pdf-lib";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";
import { canEncode, coveringFont, embedFontFile } from "./pdf-fonts.js";

export { dejavuPath } from "./pdf-fonts.js";

const HELPER = "fillable-form";

const finite = z.number().finite();
const positive = finite.positive();
/** Widget sizes in points; at least 2 so the 1 pt border leaves a non-empty inside. */
const widgetSize = finite.min(2);
/** The 14 standard PDF font names, as plain strings ("Helvetica-Bold"). */
type FontName = `${StandardFonts}`;
const fontName = z.enum(Object.values(StandardFonts) as [FontName, ...FontName[]]);

/** PDF partial field names may not be empty; a dotted name creates a field hierarchy whose full name is the given string. */
const fieldName = z
  .string()
  .min(1)
  .refine((n) => n.split(".").every((part) => part !== ""), "dot-separated name parts must not be empty");

const textField = z.object({
  name: fieldName,
  label: z.string(),
  x: finite.optional(),
  y: finite.optional(),
  width: widgetSize.optional(),
  height: widgetSize.optional(),
});

const checkboxField = z.object({
  name: fieldName,
  label: z.string().optional(),
  x: finite.optional(),
  y: finite.optional(),
  size: widgetSize.default(14),
  checked: z.boolean().default(false),
});

/**
 * Argument object. Unknown properties are stripped (the spec does not forbid them here);
 * field names must be unique and no name may be a dotted prefix of another (PDF field hierarchy).
 */
export const fillableFormArgs = z
  .object({
    output_path: z.string().min(1),
    title: z.string().min(1),
    text_fields: z.array(textField),
    checkbox_fields: z.array(checkboxField).default([]),
    /** [width, height] in points; US Letter by default. */
    page_size: z.tuple([positive, positive]).default([612, 792]),
    left_margin: finite.nonnegative().default(72),
    top_margin: finite.nonnegative().default(72),
    row_height: positive.default(40),
    label_width: finite.nonnegative().default(140),
    field_width: widgetSize.default(250),
    field_height: widgetSize.default(20),
    title_font: fontName.default(StandardFonts.HelveticaBold),
    title_size: positive.default(20),
    label_font: fontName.default(StandardFonts.Helvetica),
    label_size: positive.default(12),
  })
  .superRefine((a, ctx) => {
    const seen = new Map<string, (string | number)[]>();
    const all = [
      ...a.text_fields.map((f, i) => ({ name: f.name, path: ["text_fields", i, "name"] })),
      ...a.checkbox_fields.map((f, i) => ({ name: f.name, path: ["checkbox_fields", i, "name"] })),
    ];
    for (const { name, path } of all) {
      if (seen.has(name)) {
        ctx.addIssue({ code: "custom", path, message: `duplicate field name "${name}"` });
        continue;
      }
      for (const other of seen.keys()) {
        if (name.startsWith(`${other}.`) || other.startsWith(`${name}.`)) {
          ctx.addIssue({
            code: "custom",
            path,
            message: `field name "${name}" conflicts with "${other}" (one is a dotted prefix of the other)`,
          });
        }
      }
      seen.set(name, path);
    }
  });

export type FillableFormArgs = z.input<typeof fillableFormArgs>;
type Parsed = z.output<typeof fillableFormArgs>;

/** A widget rectangle in PDF points (origin bottom-left). */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where every element goes; pure arithmetic, exported so tests can check positions against it. */
export interface FormLayout {
  title: { x: number; baseline: number };
  text: { name: string; label: string; labelX: number; labelBaseline: number; rect: Rect }[];
  checkboxes: { name: string; label: string | undefined; labelX: number; labelBaseline: number; rect: Rect; checked: boolean }[];
}

/**
 * Layout rules (points, origin bottom-left, H = page height):
 * - title baseline at H - top_margin, x = left_margin;
 * - row i (text fields first, then checkboxes, 0-based) has label baseline b_i = H - top_margin - (i + 1) * row_height;
 * - a widget of height h starts at x = left_margin + label_width and y = b_i - (h - label_size) / 2
 *   (centred on the label's line box); text widgets are field_width x field_height, checkboxes size x size;
 * - x/y/width/height overrides replace the computed values; the label then stays at left_margin with its
 *   baseline level with the widget (y + (h - label_size) / 2). An overridden row still consumes its slot.
 */
export function computeLayout(a: Parsed): FormLayout {
  const H = a.page_size[1];
  const baseline = (row: number): number => H - a.top_margin - (row + 1) * a.row_height;
  const widgetX = a.left_margin + a.label_width;
  const place = (row: number, h: number, x: number | undefined, y: number | undefined, w: number) => {
    const rectY = y ?? baseline(row) - (h - a.label_size) / 2;
    return {
      labelX: a.left_margin,
      labelBaseline: rectY + (h - a.label_size) / 2,
      rect: { x: x ?? widgetX, y: rectY, width: w, height: h },
    };
  };
  const text = a.text_fields.map((f, i) => ({
    name: f.name,
    label: f.label,
    ...place(i, f.height ?? a.field_height, f.x, f.y, f.width ?? a.field_width),
  }));
  const checkboxes = a.checkbox_fields.map((f, j) => ({
    name: f.name,
    label: f.label,
    checked: f.checked,
    ...place(a.text_fields.length + j, f.size, f.x, f.y, f.size),
  }));
  return { title: { x: a.left_margin, baseline: H - a.top_margin }, text, checkboxes };
}

/**
 * Fonts by name, embedded once; text a standard font cannot encode falls back to a font that
 * covers it (DejaVu Sans, bold for bold faces, then a CJK font), or fails naming `field`.
 */
class FontBox {
  private readonly cache = new Map<string, PDFFont>();
  constructor(private readonly doc: PDFDocument) {}

  async for(name: FontName, text: string, field: string): Promise<PDFFont> {
    const standard = await this.get(name, () => this.doc.embedFont(name));
    if (canEncode(standard, text)) return standard;
    const path = coveringFont(text, { bold: /Bold/.test(name), helper: "fillable-form", field });
    return this.get(path, () => embedFontFile(this.doc, path, { subset: true }));
  }

  private async get(key: string, make: () => Promise<PDFFont>): Promise<PDFFont> {
    let font = this.cache.get(key);
    if (font === undefined) {
      font = await make();
      this.cache.set(key, font);
    }
    return font;
  }
}

async function drawText(
  page: PDFPage,
  fonts: FontBox,
  name: FontName,
  text: string,
  x: number,
  y: number,
  size: number,
  field: string,
): Promise<void> {
  if (text === "") return;
  page.drawText(text, { x, y, size, font: await fonts.for(name, text, field), color: rgb(0, 0, 0) });
}

const BORDER = 1;

/**
 * pdf-lib grows a widget's /Rect by half the border width on every side; inset by the same amount so
 * the stored /Rect is exactly the laid-out rectangle.
 */
function widgetOptions(r: Rect) {
  const h = BORDER / 2;
  return {
    x: r.x + h,
    y: r.y + h,
    width: r.width - BORDER,
    height: r.height - BORDER,
    borderColor: rgb(0, 0, 0),
    borderWidth: BORDER,
    backgroundColor: rgb(1, 1, 1),
  };
}

/** Render the form to bytes (no file written). */
export async function renderForm(a: Parsed): Promise<Uint8Array> {
  const layout = computeLayout(a);
  const doc = await PDFDocument.create();
  const page = doc.addPage([a.page_size[0], a.page_size[1]]);
  const fonts = new FontBox(doc);
  const form = doc.getForm();

  await drawText(page, fonts, a.title_font, a.title, layout.title.x, layout.title.baseline, a.title_size, "title");
  for (const [i, f] of layout.text.entries()) {
    await drawText(page, fonts, a.label_font, f.label, f.labelX, f.labelBaseline, a.label_size, `text_fields.${i}.label`);
    const field = form.createTextField(f.name);
    field.addToPage(page, widgetOptions(f.rect));
  }
  for (const [j, c] of layout.checkboxes.entries()) {
    if (c.label !== undefined)
      await drawText(page, fonts, a.label_font, c.label, c.labelX, c.labelBaseline, a.label_size, `checkbox_fields.${j}.label`);
    const box = form.createCheckBox(c.name);
    box.addToPage(page, widgetOptions(c.rect));
    if (c.checked) box.check();
    else box.uncheck();
  }
  return doc.save();
}

/** Write the fillable form; returns `output_path` as given. */
export async function build(args: FillableFormArgs): Promise<string> {
  const a = parseArgs(HELPER, fillableFormArgs, args);
  const bytes = await renderForm(a);
  const path = prepareOutput(a.output_path, "output_path");
  try {
    await writeFile(path, bytes);
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: output_path: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_path",
      cause: err,
    });
  }
  return a.output_path;
}
