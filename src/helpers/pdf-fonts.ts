/** @module pdf-fonts — shared PDF font support for the PDF helpers (not a helper itself): WinAnsi-encodability check, DejaVu Sans and CJK font lookup, coverage check and embedding (pdf-lib, @pdf-lib/fontkit). */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fontkit from "@pdf-lib/fontkit";
import type { PDFDocument, PDFFont } from "pdf-lib";
import { SvcError } from "../errors.js";

/** The DejaVu faces the helpers fall back to. */
export type DejaVuFile = "DejaVuSans.ttf" | "DejaVuSans-Bold.ttf";

const requireFromHere = createRequire(import.meta.url);

/** Path of a DejaVu TTF shipped by the dejavu-fonts-ttf package (node_modules/dejavu-fonts-ttf/ttf/<file>). */
export function dejavuPath(file: DejaVuFile): string {
  return join(dirname(requireFromHere.resolve("dejavu-fonts-ttf/package.json")), "ttf", file);
}

/**
 * Fonts for Chinese, Japanese and Korean text, first found wins: the file named by
 * SVC_CJK_FONT, then Debian's fonts-wqy-microhei, fonts-wqy-zenhei and fonts-noto-cjk
 * (collections: their first face is used).
 */
export function cjkFontCandidates(): string[] {
  const env = process.env.SVC_CJK_FONT;
  return [
    ...(env ? [env] : []),
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
  ];
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

interface GlyphSource {
  hasGlyphForCodePoint(cp: number): boolean;
}
/** fontkit's create, taking the first face of a collection (.ttc) so pdf-lib can embed it. */
const fontkitFirstFace = {
  create(data: Uint8Array, postscriptName?: string) {
    const f = fontkit.create(data, postscriptName) as ReturnType<typeof fontkit.create> & { fonts?: ReturnType<typeof fontkit.create>[] };
    return f.fonts?.[0] ?? f;
  },
};
const parsed = new Map<string, { bytes: Buffer; glyphs: GlyphSource } | null>();

/** The font file's bytes and glyph table, parsed once per process; null when unreadable. */
function load(path: string): { bytes: Buffer; glyphs: GlyphSource } | null {
  let hit = parsed.get(path);
  if (hit === undefined) {
    try {
      const bytes = readFileSync(path);
      hit = { bytes, glyphs: fontkitFirstFace.create(bytes) as unknown as GlyphSource };
    } catch {
      hit = null;
    }
    parsed.set(path, hit);
  }
  return hit;
}

/** The drawn characters of `text` (line breaks and other control characters are never drawn). */
const drawn = (text: string): number[] =>
  [...new Set([...text].map((c) => c.codePointAt(0)!))].filter((cp) => cp >= 0x20 && !(cp >= 0x7f && cp < 0xa0));

/**
 * The font file that has a glyph for every drawn character of `text`: DejaVu Sans (bold for
 * bold faces), else a CJK font (see cjkFontCandidates). With none, throws E_BAD_REQUEST naming
 * `field` and the characters, so the helper fails before writing — never empty boxes.
 */
export function coveringFont(text: string, options: { bold: boolean; helper: string; field: string }): string {
  const cps = drawn(text);
  const candidates = [
    dejavuPath(options.bold ? "DejaVuSans-Bold.ttf" : "DejaVuSans.ttf"),
    ...cjkFontCandidates().filter((p) => existsSync(p)),
  ];
  let missing = cps;
  for (const path of candidates) {
    const f = load(path);
    if (f === null) continue;
    const lacking = cps.filter((cp) => !f.glyphs.hasGlyphForCodePoint(cp));
    if (lacking.length === 0) return path;
    if (lacking.length < missing.length) missing = lacking;
  }
  const chars = missing
    .slice(0, 12)
    .map((cp) => `${String.fromCodePoint(cp)} (U+${cp.toString(16).toUpperCase().padStart(4, "0")})`)
    .join(", ");
  throw new SvcError(
    "E_BAD_REQUEST",
    `${options.helper}: ${options.field}: no available font has glyphs for ${chars}${missing.length > 12 ? ` and ${missing.length - 12} more` : ""}; ` +
      "for Chinese, Japanese or Korean text install a CJK font (Debian: apt-get install fonts-wqy-microhei) or set SVC_CJK_FONT to a .ttf/.otf/.ttc file",
    { field: options.field },
  );
}

/**
 * Embed a font file found by coveringFont. `subset: true` embeds only the glyphs used;
 * `subset: false` embeds the whole font, so later edits in a viewer still have glyphs — except
 * for fonts other than DejaVu (CJK fonts are megabytes, collections cannot be embedded whole),
 * which are always subset.
 */
export async function embedFontFile(doc: PDFDocument, path: string, options: { subset: boolean }): Promise<PDFFont> {
  const f = load(path);
  if (f === null) throw new SvcError("E_IO", `font file ${path} became unreadable`);
  doc.registerFontkit(fontkitFirstFace as unknown as Parameters<PDFDocument["registerFontkit"]>[0]);
  const dejavu = path.startsWith(dirname(dejavuPath("DejaVuSans.ttf")));
  return doc.embedFont(f.bytes, { subset: options.subset || !dejavu });
}
