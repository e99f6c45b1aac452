/** @module form-filler — fills an existing AcroForm PDF by label (substring of tooltip/name) or exact field name (pdf-lib). */
import { readFile, writeFile } from "node:fs/promises";
import {
  PDFBool,
  PDFCheckBox,
  PDFDocument,
  PDFDropdown,
  PDFField,
  type PDFFont,
  PDFHexString,
  PDFName,
  PDFOptionList,
  PDFRadioGroup,
  PDFSignature,
  PDFString,
  PDFTextField,
} from "pdf-lib";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";
import { canEncode, coveringFont, embedFontFile } from "./pdf-fonts.js";

const HELPER = "form-filler";

/** Values are text; numbers and booleans are accepted and written as their string form ("42", "true"). */
const fieldText = z.union([z.string(), z.number().finite(), z.boolean()]).transform(String);

/**
 * Argument object; strict (the spec says "No other properties are allowed").
 *
 * `labels` keys: JSON object keys are strings, so a list of candidate substrings is written as a key
 * whose text is a JSON array of strings, e.g. `{"[\"Last name\", \"Surname\", \"Name\"]": "Doe"}`.
 * Any other key (including one that merely starts with "[" but is not such an array) is one substring.
 */
export const formFillerArgs = z.strictObject({
  input_pdf: z.string().min(1),
  output_pdf: z.string().min(1),
  labels: z.record(z.string(), fieldText).default({}),
  field_values: z.record(z.string(), fieldText).default({}),
  case_sensitive: z.boolean().default(false),
  generate_appearances: z.boolean().default(true),
});

export type FormFillerArgs = z.input<typeof formFillerArgs>;

export type FieldType = "text" | "checkbox" | "radio" | "dropdown" | "optionlist" | "button" | "signature";

export interface FieldInfo {
  /** Fully qualified internal name. */
  name: string;
  /** The field's /TU entry, "" when absent. */
  tooltip: string;
  type: FieldType;
  /** Text for text fields, `/State` names for checkboxes and radios (`/Off` when off), selections joined by ", " for choices. */
  value: string;
}

function fieldType(field: PDFField): FieldType {
  if (field instanceof PDFTextField) return "text";
  if (field instanceof PDFCheckBox) return "checkbox";
  if (field instanceof PDFRadioGroup) return "radio";
  if (field instanceof PDFDropdown) return "dropdown";
  if (field instanceof PDFOptionList) return "optionlist";
  if (field instanceof PDFSignature) return "signature";
  return "button";
}

function tooltipOf(field: PDFField): string {
  const tu = field.acroField.dict.lookup(PDFName.of("TU"));
  return tu instanceof PDFString || tu instanceof PDFHexString ? tu.decodeText() : "";
}

function valueOf(field: PDFField): string {
  if (field instanceof PDFTextField) return field.getText() ?? "";
  if (field instanceof PDFCheckBox) {
    const v = field.acroField.dict.lookup(PDFName.of("V"));
    return v instanceof PDFName ? v.asString() : "/Off";
  }
  if (field instanceof PDFRadioGroup) {
    const s = field.getSelected();
    return s === undefined ? "/Off" : `/${s}`;
  }
  if (field instanceof PDFDropdown || field instanceof PDFOptionList) return field.getSelected().join(", ");
  return "";
}

/** The form's fields in document order: name, tooltip (TU), type, current value. */
export function listFields(doc: PDFDocument): FieldInfo[] {
  return doc
    .getForm()
    .getFields()
    .map((f) => ({ name: f.getName(), tooltip: tooltipOf(f), type: fieldType(f), value: valueOf(f) }));
}

/** Candidate substrings of a `labels` key, most specific first (see formFillerArgs). */
export function labelCandidates(key: string): string[] {
  const t = key.trim();
  if (t.startsWith("[") && t.endsWith("]")) {
    try {
      const v: unknown = JSON.parse(t);
      if (Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === "string")) return v as string[];
    } catch {
      // not JSON: the key is one literal substring
    }
  }
  return [key];
}

const FILLABLE: ReadonlySet<FieldType> = new Set(["text", "checkbox", "radio", "dropdown", "optionlist"]);

interface Match {
  key: number;
  field: number;
  candidate: number;
  exact: number;
  cover: number;
  viaTooltip: number;
}

/** Lexicographic comparison; negative when `a` sorts first. */
function byTuple(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** A key's preference: earlier candidate, exact match, larger share of the text covered, tooltip over name, document order. */
const keyPreference = (m: Match): number[] => [m.candidate, -m.exact, -m.cover, -m.viaTooltip, m.field];
/** Which of two keys a field keeps: exact match, earlier candidate, larger share covered, earlier key. */
const fieldPreference = (m: Match): number[] => [-m.exact, m.candidate, -m.cover, m.key];

/**
 * Resolve `labels` keys to fields: a key matches a fillable field when one of its candidates is a
 * substring of the field's tooltip or internal name (case-folded unless `caseSensitive`).
 * - Each key ranks its matches: candidates in the given order first, then exact (whole-text) matches, then
 *   the share of the tooltip/name the candidate covers, then tooltip over name, then document order.
 * - Each field takes at most one key. When keys compete for a field, the field keeps the better match
 *   (exact, earlier candidate, larger share, earlier key) and the other key moves on to its next match
 *   (deferred acceptance), so `{"Name": …, "Last name": …}` fills two different fields.
 * - A key that matches nothing, or only fields held by better-matching keys, is skipped.
 * Returns key -> {field name, value} for the resolved keys, in `labels` order.
 */
export function resolveLabels(
  fields: FieldInfo[],
  labels: Record<string, string>,
  caseSensitive: boolean,
): Map<string, { field: string; value: string }> {
  const norm = (s: string): string => (caseSensitive ? s : s.toLowerCase());
  const fillable = fields.filter((f) => FILLABLE.has(f.type));
  const entries = Object.entries(labels);
  const prefs: Match[][] = entries.map(([key], k) => {
    const matches: Match[] = [];
    labelCandidates(key).forEach((candidate, ci) => {
      const c = norm(candidate);
      fillable.forEach((f, fi) => {
        const hay = [
          { text: norm(f.tooltip), tooltip: 1 },
          { text: norm(f.name), tooltip: 0 },
        ].filter((h) => h.text !== "" && h.text.includes(c));
        if (hay.length === 0) return;
        matches.push({
          key: k,
          field: fi,
          candidate: ci,
          exact: hay.some((h) => h.text === c) ? 1 : 0,
          cover: Math.max(...hay.map((h) => c.length / h.text.length)),
          viaTooltip: Math.max(...hay.map((h) => h.tooltip)),
        });
      });
    });
    // One entry per field: its best candidate for this key.
    matches.sort((a, b) => byTuple(keyPreference(a), keyPreference(b)));
    const seen = new Set<number>();
    return matches.filter((m) => !seen.has(m.field) && (seen.add(m.field), true));
  });

  const next = prefs.map(() => 0);
  const holder = new Map<number, Match>();
  const free = entries.map((_, k) => k);
  while (free.length > 0) {
    const k = free.shift()!;
    const m = prefs[k]![next[k]!++];
    if (m === undefined) continue; // exhausted: skipped
    const held = holder.get(m.field);
    if (held === undefined) holder.set(m.field, m);
    else if (byTuple(fieldPreference(m), fieldPreference(held)) < 0) {
      holder.set(m.field, m);
      free.push(held.key);
    } else free.push(k);
  }

  const byKey = new Map([...holder.values()].map((m) => [m.key, m] as const));
  const out = new Map<string, { field: string; value: string }>();
  entries.forEach(([key, value], k) => {
    const m = byKey.get(k);
    if (m !== undefined) out.set(key, { field: fillable[m.field]!.name, value });
  });
  return out;
}

const OFF = new Set(["off", "false", "no", "0", ""]);

/** Write `value` into `field`; `where` names the argument for errors (`field_values.x`, `labels.y`). */
function applyValue(field: PDFField, value: string, where: string): void {
  const bad = (why: string): SvcError => new SvcError("E_BAD_REQUEST", `${HELPER}: ${where}: ${why}`, { field: where });
  try {
    if (field instanceof PDFTextField) {
      const max = field.getMaxLength();
      if (max !== undefined && value.length > max) throw bad(`"${field.getName()}" holds at most ${max} characters, got ${value.length}`);
      field.setText(value);
    } else if (field instanceof PDFCheckBox) {
      // `/Yes`, `Yes`, the box's own on-state, "true"… check it; `/Off`, "false", "no", "0", "" clear it.
      if (OFF.has(value.replace(/^\//, "").toLowerCase())) field.uncheck();
      else field.check();
    } else if (field instanceof PDFRadioGroup) {
      const wanted = value.replace(/^\//, "");
      if (OFF.has(wanted.toLowerCase())) field.clear();
      else {
        const options = field.getOptions();
        const hit = options.find((o) => o === wanted) ?? options.find((o) => o.toLowerCase() === wanted.toLowerCase());
        if (hit === undefined)
          throw bad(
            `"${value}" is not an option of radio group "${field.getName()}" (options: ${options.map((o) => `/${o}`).join(", ")}, /Off)`,
          );
        field.select(hit);
      }
    } else if (field instanceof PDFDropdown || field instanceof PDFOptionList) {
      if (value === "") field.clear();
      else field.select(value);
    } else {
      throw bad(`field "${field.getName()}" is a ${fieldType(field)} and cannot hold a value`);
    }
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw bad(`cannot set "${field.getName()}": ${(err as Error).message}`);
  }
}

/** Text a field would render, used to pick a font that can encode it. */
function renderedText(field: PDFField): string {
  if (field instanceof PDFTextField) return field.getText() ?? "";
  if (field instanceof PDFDropdown || field instanceof PDFOptionList) return [...field.getOptions(), ...field.getSelected()].join("\n");
  return "";
}

/**
 * Regenerate appearance streams of every field that needs one. Helvetica (WinAnsi) where it can encode the
 * text, otherwise a font that covers it: DejaVu Sans embedded whole (not subset, so later edits in a viewer
 * still have glyphs), else a CJK font (subset); with none, E_BAD_REQUEST naming the field before anything is
 * written. Returns false when some field's appearance could not be built (odd widget data in the input); the
 * caller then also sets NeedAppearances so the viewer renders that field itself.
 */
async function generateAppearances(doc: PDFDocument): Promise<boolean> {
  let complete = true;
  const form = doc.getForm();
  const helvetica = form.getDefaultFont();
  const embedded = new Map<string, PDFFont>();
  for (const field of form.getFields()) {
    if (!field.needsAppearancesUpdate()) continue;
    let font = helvetica;
    const text = renderedText(field);
    if (!canEncode(helvetica, text)) {
      const path = coveringFont(text, { bold: false, helper: HELPER, field: `field_values.${field.getName()}` });
      font = embedded.get(path) ?? (await embedFontFile(doc, path, { subset: false }));
      embedded.set(path, font);
    }
    try {
      field.defaultUpdateAppearances(font);
    } catch {
      complete = false;
    }
  }
  return complete;
}

async function loadInput(path: string): Promise<PDFDocument> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "EISDIR") {
      throw new SvcError("E_BAD_REQUEST", `${HELPER}: input_pdf: ${path} is not a readable file (${code})`, {
        field: "input_pdf",
        cause: err,
      });
    }
    throw new SvcError("E_IO", `${HELPER}: input_pdf: cannot read ${path}: ${(err as Error).message}`, { field: "input_pdf", cause: err });
  }
  try {
    return await PDFDocument.load(bytes);
  } catch (err) {
    throw new SvcError("E_BAD_REQUEST", `${HELPER}: input_pdf: ${path} is not a loadable PDF: ${(err as Error).message}`, {
      field: "input_pdf",
      cause: err,
    });
  }
}

/** Fill a copy of `input_pdf` and write it to `output_pdf`; returns `output_pdf` as given. */
export async function build(args: FormFillerArgs): Promise<string> {
  const a = parseArgs(HELPER, formFillerArgs, args);
  for (const key of Object.keys(a.labels)) {
    if (labelCandidates(key).some((c) => c === "")) {
      throw new SvcError("E_BAD_REQUEST", `${HELPER}: labels: an empty substring would match every field`, { field: `labels.${key}` });
    }
  }
  const doc = await loadInput(a.input_pdf);
  const form = doc.getForm();
  const fields = listFields(doc);
  const byName = new Map(form.getFields().map((f) => [f.getName(), f] as const));

  // Direct values first; a matched label then overrides a direct value for the same field.
  for (const [name, value] of Object.entries(a.field_values)) {
    const field = byName.get(name);
    if (field === undefined) {
      throw new SvcError(
        "E_BAD_REQUEST",
        `${HELPER}: field_values: no field named "${name}" (fields: ${fields.map((f) => f.name).join(", ")})`,
        {
          field: `field_values.${name}`,
        },
      );
    }
    applyValue(field, value, `field_values.${name}`);
  }
  for (const [key, hit] of resolveLabels(fields, a.labels, a.case_sensitive)) {
    applyValue(byName.get(hit.field)!, hit.value, `labels.${key}`);
  }

  const rendered = a.generate_appearances && (await generateAppearances(doc));
  if (!rendered) form.acroForm.dict.set(PDFName.of("NeedAppearances"), PDFBool.True);
  let bytes: Uint8Array;
  try {
    bytes = await doc.save({ updateFieldAppearances: false });
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: could not serialise the filled form: ${(err as Error).message}`, { cause: err });
  }

  const path = prepareOutput(a.output_pdf, "output_pdf");
  try {
    await writeFile(path, bytes);
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: output_pdf: cannot write ${path}: ${(err as Error).message}`, {
      field: "output_pdf",
      cause: err,
    });
  }
  return a.output_pdf;
}
