/** @module form-filler.test — fills a pdf-lib-made two-page form and re-loads the copy to check values, appearances and errors. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PDFBool, PDFDict, PDFDocument, PDFHexString, PDFName, PDFRawStream, PDFRef, type PDFField, decodePDFRawStream } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FieldInfo, build, labelCandidates, listFields, resolveLabels } from "../../src/helpers/form-filler.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-filler-"));
const blank = join(dir, "blank.pdf");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A two-page form: tooltipped text fields, a nameless-tooltip hierarchical field, a prefilled field, checkbox, radio, dropdown. */
beforeAll(async () => {
  const doc = await PDFDocument.create();
  const p1 = doc.addPage([612, 792]);
  const p2 = doc.addPage([612, 792]);
  const form = doc.getForm();
  const tip = (f: PDFField, tu: string) => f.acroField.dict.set(PDFName.of("TU"), PDFHexString.fromText(tu));
  const text = (name: string, tu: string | undefined, page = p1, y = 700) => {
    const f = form.createTextField(name);
    f.addToPage(page, { x: 200, y, width: 250, height: 20 });
    if (tu !== undefined) tip(f, tu);
    return f;
  };
  text("f1", "First name", p1, 700);
  text("f2", "Last name", p1, 660);
  text("employer", "Name of employer", p1, 620);
  text("addr.zip", undefined, p1, 580);
  text("notes", "Notes", p2, 700).setText("keep me");
  text("code", "Code", p2, 660).setMaxLength(3);
  const agree = form.createCheckBox("agree");
  agree.addToPage(p1, { x: 200, y: 540, width: 14, height: 14 });
  tip(agree, "I agree to the terms");
  const color = form.createRadioGroup("color");
  color.addOptionToPage("Red", p1, { x: 200, y: 500, width: 14, height: 14 });
  color.addOptionToPage("Blue", p1, { x: 230, y: 500, width: 14, height: 14 });
  const country = form.createDropdown("country");
  country.addOptions(["France", "Spain"]);
  country.addToPage(p2, { x: 200, y: 620, width: 150, height: 20 });
  await writeFile(blank, await doc.save());
});

async function load(path: string): Promise<PDFDocument> {
  return PDFDocument.load(await readFile(path));
}

/** Decoded normal-appearance stream of a field's first widget, plus the BaseFonts it uses. */
function appearance(doc: PDFDocument, name: string): { content: string; fonts: string[] } {
  const widget = doc.getForm().getField(name).acroField.getWidgets()[0]!;
  const ap = widget.getNormalAppearance();
  const stream = ap instanceof PDFRef ? doc.context.lookup(ap) : ap;
  if (!(stream instanceof PDFRawStream)) throw new Error(`no appearance stream for ${name}`);
  const content = Buffer.from(decodePDFRawStream(stream).decode()).toString("latin1");
  const fontDict = stream.dict.lookup(PDFName.of("Resources"), PDFDict).lookupMaybe(PDFName.of("Font"), PDFDict);
  const fonts =
    fontDict === undefined
      ? []
      : [...fontDict.entries()].map(([, r]) => String((doc.context.lookup(r) as PDFDict).lookup(PDFName.of("BaseFont"))));
  return { content, fonts };
}

const hex = (s: string): string => Buffer.from(s, "latin1").toString("hex").toUpperCase();

describe("form filler", () => {
  it("lists the blank form's fields with tooltip, type and value", async () => {
    const fields = listFields(await load(blank));
    expect(fields).toEqual([
      { name: "f1", tooltip: "First name", type: "text", value: "" },
      { name: "f2", tooltip: "Last name", type: "text", value: "" },
      { name: "employer", tooltip: "Name of employer", type: "text", value: "" },
      { name: "addr.zip", tooltip: "", type: "text", value: "" },
      { name: "notes", tooltip: "Notes", type: "text", value: "keep me" },
      { name: "code", tooltip: "Code", type: "text", value: "" },
      { name: "agree", tooltip: "I agree to the terms", type: "checkbox", value: "/Off" },
      { name: "color", tooltip: "", type: "radio", value: "/Off" },
      { name: "country", tooltip: "", type: "dropdown", value: "" },
    ]);
  });

  it("fills by label and by exact name, a label overriding a direct value; keeps other fields and pages", async () => {
    const output_pdf = join(dir, "out", "filled.pdf");
    const returned = await build({
      input_pdf: blank,
      output_pdf,
      labels: {
        "FIRST NAME": "Ada", // case-insensitive by default, exact on the tooltip
        '["Surname", "Last name", "Name"]': "Lovelace", // candidate list: "Surname" matches nothing, "Last name" does
        zip: "12345", // matched against the internal name "addr.zip"
        employer: "Analytical Engines Ltd", // overrides field_values.employer below
        "no such label": "ignored",
      },
      field_values: { employer: "Direct Co", agree: "/Yes", color: "/Blue", country: "Spain" },
    });
    expect(returned).toBe(output_pdf);
    const doc = await load(output_pdf);
    expect(doc.getPageCount()).toBe(2);
    const form = doc.getForm();
    expect(form.getTextField("f1").getText()).toBe("Ada");
    expect(form.getTextField("f2").getText()).toBe("Lovelace");
    expect(form.getTextField("addr.zip").getText()).toBe("12345");
    expect(form.getTextField("employer").getText()).toBe("Analytical Engines Ltd");
    expect(form.getTextField("notes").getText()).toBe("keep me");
    expect(form.getTextField("code").getText()).toBeUndefined();
    expect(form.getCheckBox("agree").isChecked()).toBe(true);
    expect(form.getRadioGroup("color").getSelected()).toBe("Blue");
    expect(form.getDropdown("country").getSelected()).toEqual(["Spain"]);

    // Appearance streams were generated for the written values; the viewer flag was not needed.
    expect(appearance(doc, "f2").content).toContain(`<${hex("Lovelace")}> Tj`);
    expect(appearance(doc, "employer").content).toContain(`<${hex("Analytical Engines Ltd")}> Tj`);
    expect(form.acroForm.dict.lookup(PDFName.of("NeedAppearances"))).not.toBe(PDFBool.True);
  });

  it("matches case-sensitively when asked, and unchecks with /Off", async () => {
    const first = join(dir, "checked.pdf");
    await build({ input_pdf: blank, output_pdf: first, field_values: { agree: "/Yes" } });
    const output_pdf = join(dir, "case.pdf");
    await build({
      input_pdf: first,
      output_pdf,
      labels: { "FIRST NAME": "nope", "Last name": "Byron" },
      field_values: { agree: "/Off" },
      case_sensitive: true,
    });
    const form = (await load(output_pdf)).getForm();
    expect(form.getTextField("f1").getText()).toBeUndefined();
    expect(form.getTextField("f2").getText()).toBe("Byron");
    expect(form.getCheckBox("agree").isChecked()).toBe(false);
  });

  it("sets NeedAppearances instead of generating appearances when generate_appearances is false", async () => {
    const output_pdf = join(dir, "viewer-render.pdf");
    await build({ input_pdf: blank, output_pdf, labels: { "First name": "Ada" }, generate_appearances: false });
    const doc = await load(output_pdf);
    expect(doc.getForm().acroForm.dict.lookup(PDFName.of("NeedAppearances"))).toBe(PDFBool.True);
    expect(doc.getForm().getTextField("f1").getText()).toBe("Ada");
  });

  it("round-trips Cyrillic and Greek values, rendering them with embedded DejaVu Sans", async () => {
    const value = "Иван Петров — Ελένη";
    const output_pdf = join(dir, "unicode.pdf");
    await build({ input_pdf: blank, output_pdf, labels: { "First name": value }, field_values: { f2: "Plain" } });
    const doc = await load(output_pdf);
    expect(doc.getForm().getTextField("f1").getText()).toBe(value);
    expect(appearance(doc, "f1").fonts.some((f) => f.includes("DejaVuSans"))).toBe(true);
    expect(appearance(doc, "f2").fonts).toEqual(["/Helvetica"]);

    const flagged = join(dir, "unicode-flag.pdf");
    await build({ input_pdf: blank, output_pdf: flagged, field_values: { f1: value }, generate_appearances: false });
    expect((await load(flagged)).getForm().getTextField("f1").getText()).toBe(value);
  });

  it("rejects bad arguments and bad values before writing anything", async () => {
    const output_pdf = join(dir, "never", "x.pdf");
    const cases: [Record<string, unknown>, string | undefined, string][] = [
      [{ output_pdf }, "input_pdf", "input_pdf"],
      [{ input_pdf: blank }, "output_pdf", "output_pdf"],
      [{ input_pdf: blank, output_pdf, extra: 1 }, undefined, "extra"],
      [{ input_pdf: join(dir, "missing.pdf"), output_pdf }, "input_pdf", "missing.pdf"],
      [{ input_pdf: blank, output_pdf, field_values: { nope: "x" } }, "field_values.nope", "nope"],
      [{ input_pdf: blank, output_pdf, field_values: { color: "/Green" } }, "field_values.color", "/Blue"],
      [{ input_pdf: blank, output_pdf, field_values: { code: "toolong" } }, "field_values.code", "at most 3"],
      [{ input_pdf: blank, output_pdf, labels: { "": "x" } }, "labels.", "empty"],
      [{ input_pdf: blank, output_pdf, case_sensitive: "yes" }, "case_sensitive", "case_sensitive"],
    ];
    for (const [args, field, text] of cases) {
      const err = await failure(build(args as never));
      expect(err.code).toBe("E_BAD_REQUEST");
      expect(err.field).toBe(field);
      expect(err.message).toContain(text);
    }
    const notPdf = join(dir, "not.pdf");
    writeFileSync(notPdf, "hello");
    expect((await failure(build({ input_pdf: notPdf, output_pdf }))).field).toBe("input_pdf");
    expect(existsSync(join(dir, "never"))).toBe(false);
  });

  it("raises E_IO when the output directory cannot be created", async () => {
    const blocker = join(dir, "blocker");
    writeFileSync(blocker, "");
    const err = await failure(build({ input_pdf: blank, output_pdf: join(blocker, "x", "y.pdf") }));
    expect(err.code).toBe("E_IO");
    expect(err.field).toBe("output_pdf");
  });
});

describe("label resolution", () => {
  const f = (name: string, tooltip = ""): FieldInfo => ({ name, tooltip, type: "text", value: "" });

  it("reads a JSON-array key as an ordered candidate list and anything else as one substring", () => {
    expect(labelCandidates('["Surname", "Last name"]')).toEqual(["Surname", "Last name"]);
    expect(labelCandidates("[Optional] phone")).toEqual(["[Optional] phone"]);
    expect(labelCandidates("[1, 2]")).toEqual(["[1, 2]"]);
    expect(labelCandidates("Name")).toEqual(["Name"]);
  });

  it("gives competing keys different fields, the better match keeping the contested one", () => {
    const fields = [f("a", "First name"), f("b", "Last name")];
    const r = resolveLabels(fields, { Name: "N", "Last name": "L" }, false);
    expect(Object.fromEntries([...r].map(([k, v]) => [k, v.field]))).toEqual({ Name: "a", "Last name": "b" });
  });

  it("tries candidates in order: an earlier candidate's partial match beats a later candidate's exact one", () => {
    const fields = [f("n", "Name"), f("s", "Surname of spouse")];
    const r = resolveLabels(fields, { '["Surname", "Name"]': "x" }, false);
    expect(r.get('["Surname", "Name"]')?.field).toBe("s");
  });

  it("prefers the field whose text the substring covers most, and skips keys matching nothing", () => {
    const fields = [f("long", "Telephone number (home, optional)"), f("short", "Telephone")];
    const r = resolveLabels(fields, { phone: "1", "fax number": "2" }, false);
    expect(r.get("phone")?.field).toBe("short");
    expect(r.has("fax number")).toBe(false);
  });
});
