/**
 * @module cjk-text.test — Chinese, Japanese and Korean text in the fillable form and the form
 * filler: drawn with an embedded (subset) CJK font, checked by rendering the PDF through
 * pdftoppm (ink where the text is) and extracting it with pdftotext; text no font covers is
 * refused before any file is written, naming the field.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { build as buildForm } from "../../src/helpers/fillable-form.js";
import { build as fillForm } from "../../src/helpers/form-filler.js";
import { cjkFontCandidates } from "../../src/helpers/pdf-fonts.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-cjk-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CJK = { zh: "姓名与地址", ja: "氏名とふりがな", ko: "이름과 주소" };
const hasCjkFont = cjkFontCandidates().some((p) => existsSync(p));
const hasPoppler = ["pdftoppm", "pdftotext", "pdffonts"].every((tool) => spawnSync(tool, ["-v"]).status === 0);

/** Dark pixels (any channel < 128) of page 1 rendered at 72 dpi inside the PDF rectangle (points, origin bottom-left). */
function inkIn(pdf: string, rect: { x: number; y: number; width: number; height: number }, pageHeight: number): number {
  const out = join(dir, `render-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync("pdftoppm", ["-r", "72", "-f", "1", "-l", "1", "-singlefile", "-gray", pdf, out]);
  expect(r.status, r.stderr?.toString()).toBe(0);
  const pgm = readFileSync(`${out}.pgm`);
  // binary PGM: "P5\n<w> <h>\n<max>\n" then w*h bytes
  const header = /^P5\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(pgm.subarray(0, 64).toString("latin1"))!;
  const [w, h] = [Number(header[1]), Number(header[2])];
  const pixels = pgm.subarray(header[0].length);
  let ink = 0;
  const top = Math.floor(pageHeight - rect.y - rect.height);
  for (let y = Math.max(0, top); y < Math.min(h, top + Math.ceil(rect.height)); y++) {
    for (let x = Math.max(0, Math.floor(rect.x)); x < Math.min(w, Math.ceil(rect.x + rect.width)); x++) if (pixels[y * w + x]! < 128) ink++;
  }
  return ink;
}

const text = (pdf: string) => spawnSync("pdftotext", ["-layout", pdf, "-"], { encoding: "utf8" }).stdout;

describe("CJK text in the PDF helpers", () => {
  it.skipIf(!hasCjkFont || !hasPoppler)(
    "the fillable form draws Chinese, Japanese and Korean labels and title with glyphs (rendered and extracted)",
    async () => {
      const output_path = join(dir, "form.pdf");
      await buildForm({
        title: `申请表 ${CJK.ja}`,
        text_fields: [
          { name: "zh", label: CJK.zh },
          { name: "ja", label: CJK.ja },
          { name: "ko", label: CJK.ko },
          { name: "latin", label: "Résumé" },
        ],
        checkbox_fields: [{ name: "agree", label: "同意します" }],
        output_path,
      });
      const extracted = text(output_path);
      for (const s of [CJK.zh, CJK.ja, CJK.ko, "申请表", "同意します", "Résumé"]) expect(extracted).toContain(s);
      // labels sit at left_margin 72 on rows 40 pt apart below the title (top_margin 72, page 792 high)
      for (let row = 0; row < 3; row++) {
        const baseline = 792 - 72 - (row + 1) * 40;
        expect(inkIn(output_path, { x: 72, y: baseline - 3, width: 130, height: 15 }, 792), `row ${row}`).toBeGreaterThan(40);
      }
    },
  );

  it.skipIf(!hasCjkFont || !hasPoppler)("the form filler generates appearances for CJK values that render", async () => {
    const blank = join(dir, "blank.pdf");
    await buildForm({
      title: "Form",
      text_fields: [
        { name: "name", label: "Name" },
        { name: "other", label: "Other" },
      ],
      output_path: blank,
    });
    const rect = { x: 72 + 140, y: 792 - 72 - 40 - 4, width: 250, height: 20 }; // the first widget (layout rules of fillable-form)
    const before = inkIn(blank, rect, 792);
    const output_pdf = join(dir, "filled.pdf");
    expect(
      await fillForm({
        input_pdf: blank,
        output_pdf,
        field_values: { name: `${CJK.zh} ${CJK.ja} ${CJK.ko}`, other: "plain" },
        generate_appearances: true,
      }),
    ).toBe(output_pdf);
    expect(inkIn(output_pdf, rect, 792)).toBeGreaterThan(before + 100);
    // ink alone could be .notdef boxes: the appearance must use an embedded font that is neither Helvetica nor DejaVu
    const fonts = spawnSync("pdffonts", [output_pdf], { encoding: "utf8" })
      .stdout.split("\n")
      .slice(2)
      .filter((l) => l.trim() !== "");
    expect(
      fonts.some((l) => !/Helvetica|DejaVu/.test(l) && /\byes\b/.test(l)),
      fonts.join("\n"),
    ).toBe(true);
  });

  it("refuses text that no available font covers, naming the field and the characters, before writing", async () => {
    const output_path = join(dir, "never", "form.pdf");
    const tangut = "\u{17000}\u{17001}"; // Tangut: in neither DejaVu nor the CJK fonts
    const err = await failure(
      buildForm({
        title: "T",
        text_fields: [
          { name: "a", label: "ok" },
          { name: "b", label: `x ${tangut}` },
        ],
        output_path,
      }),
    );
    expect(err.code).toBe("E_BAD_REQUEST");
    expect(err.field).toBe("text_fields.1.label");
    expect(err.message).toContain("U+17000");
    expect(existsSync(join(dir, "never"))).toBe(false);

    const blank = join(dir, "blank2.pdf");
    await buildForm({ title: "Form", text_fields: [{ name: "name", label: "Name" }], output_path: blank });
    const output_pdf = join(dir, "never2.pdf");
    const err2 = await failure(fillForm({ input_pdf: blank, output_pdf, field_values: { name: tangut }, generate_appearances: true }));
    expect(err2).toMatchObject({ code: "E_BAD_REQUEST", field: "field_values.name" });
    expect(existsSync(output_pdf)).toBe(false);
  });
});
