/** @module pdf-fonts — shared PDF font support for the PDF helpers (not a helper itself): WinAnsi-encodability check and DejaVu Sans lookup/embedding (pdf-lib, @pdf-lib/fontkit). */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fontkit from "@pdf-lib/fontkit";
import type { PDFDocument, PDFFont } from "pdf-lib";

/** The DejaVu faces the helpers fall back to. */
export type DejaVuFile = "DejaVuSans.ttf" | "DejaVuSans-Bold.ttf";

const requireFromHere = createRequire(import.meta.url);

/** Path of a DejaVu TTF shipped by the dejavu-fonts-ttf package (node_modules/dejavu-fonts-ttf/ttf/<file>). */
export function dejavuPath(file: DejaVuFile): string {
  return join(dirname(requireFromHere.resolve("dejavu-fonts-ttf/package.json")), "ttf", file);
}

/**
 * True when `font` can encode every character of `text`, line by line (a standard font covers
 * WinAnsi only; line breaks themselves are not drawn, so they are not checked).
 */
export function canEncode(font: PDFFont, text: string): boolean {
  try {
    for (const line of text.split(/\r\n|\r|\n/)) font.encodeText(line);
    return true;
  } catch {
    return false;
  }
}

/**
 * Embed a DejaVu face into `doc` (registering fontkit first). `subset: true` embeds only the glyphs
 * used; `subset: false` embeds the whole font, so later edits in a viewer still have glyphs.
 */
export async function embedDejaVu(doc: PDFDocument, file: DejaVuFile, options: { subset: boolean }): Promise<PDFFont> {
  doc.registerFontkit(fontkit);
  return doc.embedFont(await readFile(dejavuPath(file)), { subset: options.subset });
}
