/** @module combo-chart-slide — builds a .pptx with one native bar + line combo chart (secondary axes) and repairs pptxgenjs's dangling chart axis ids. */
import { writeFile } from "node:fs/promises";
import JSZip from "jszip";
import pptxgenjsModule from "pptxgenjs";
import { z } from "zod";
import { SvcError } from "../errors.js";
import { parseArgs } from "./args.js";
import { prepareOutput } from "./output-path.js";

const HELPER = "combo-chart-slide";

/**
 * pptxgenjs ships CJS-style typings next to an ESM build: under NodeNext the typings put the class
 * on `.default` while Node's ESM import returns the class itself. Accept either shape.
 */
type PptxCtorType = typeof pptxgenjsModule.default;
type ChartMulti = pptxgenjsModule.default.IChartMulti;
type ChartOpts = pptxgenjsModule.default.IChartOpts;
const PptxCtor: PptxCtorType = ((pptxgenjsModule as unknown as { default?: PptxCtorType }).default ??
  pptxgenjsModule) as unknown as PptxCtorType;

/** Hex RGB without `#`; a leading `#` is tolerated and stripped, output is upper-case. */
const hexColor = z
  .string()
  .regex(/^#?[0-9A-Fa-f]{6}$/, "expected a 6-digit hex colour without '#', e.g. 1E2761")
  .transform((s) => s.replace(/^#/, "").toUpperCase());

const finite = z.number().finite();

/** Slide layouts pptxgenjs knows by name; the spec names the first two. */
export const LAYOUTS = ["LAYOUT_16x9", "LAYOUT_4x3", "LAYOUT_16x10", "LAYOUT_WIDE"] as const;

/**
 * Argument object. Unknown properties are stripped (the spec does not say "no other properties"
 * for this helper). Empty chartTitle / series names count as missing.
 */
export const comboChartSlideArgs = z
  .object({
    outputPath: z.string().min(1),
    chartTitle: z.string().min(1),
    categories: z.array(z.string()).min(1),
    barSeriesName: z.string().min(1),
    barValues: z.array(finite),
    lineSeriesName: z.string().min(1),
    lineValues: z.array(finite),
    layout: z.enum(LAYOUTS).default("LAYOUT_16x9"),
    x: finite.nonnegative().default(0.5),
    y: finite.nonnegative().default(0.5),
    w: finite.positive().default(9),
    h: finite.positive().default(4.5),
    barColor: hexColor.default("1E2761"),
    lineColor: hexColor.default("F96167"),
    showBarDataLabels: z.boolean().default(true),
    barDataLabelColor: hexColor.default("363636"),
    /** Points; OOXML text size range is 1..4000 pt. */
    barDataLabelFontSize: finite.min(1).max(4000).default(10),
    showLegend: z.boolean().default(true),
    legendPos: z.enum(["b", "t", "l", "r"]).default("b"),
    catAxisTitle: z.string().default(""),
    valAxisTitle: z.string().default(""),
    valAxis2Title: z.string().default(""),
    axisLabelColor: hexColor.default("363636"),
  })
  .superRefine((a, ctx) => {
    for (const key of ["barValues", "lineValues"] as const) {
      if (a[key].length !== a.categories.length) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `has ${a[key].length} values but categories has ${a.categories.length}; lengths must be equal`,
        });
      }
    }
  });

export type ComboChartSlideArgs = z.input<typeof comboChartSlideArgs>;
type Parsed = z.output<typeof comboChartSlideArgs>;

/** Build the presentation in memory exactly as pptxgenjs writes it (before the axis repair). */
export async function renderRawPptx(a: Parsed): Promise<Buffer> {
  const pptx = new PptxCtor();
  pptx.layout = a.layout;
  const slide = pptx.addSlide();
  const bar: ChartMulti = {
    type: pptx.ChartType.bar,
    data: [{ name: a.barSeriesName, labels: a.categories, values: a.barValues }],
    options: {
      barDir: "col",
      barGrouping: "clustered",
      chartColors: [a.barColor],
      showValue: a.showBarDataLabels,
      dataLabelColor: a.barDataLabelColor,
      dataLabelFontSize: a.barDataLabelFontSize,
      // Only on the bar group: outEnd is not a legal dLblPos for a line chart.
      ...(a.showBarDataLabels ? { dataLabelPosition: "outEnd" as const } : {}),
    },
  };
  const line: ChartMulti = {
    type: pptx.ChartType.line,
    data: [{ name: a.lineSeriesName, labels: a.categories, values: a.lineValues }],
    options: { chartColors: [a.lineColor], secondaryValAxis: true, secondaryCatAxis: true, showValue: false },
  };
  const options: ChartOpts = {
    x: a.x,
    y: a.y,
    w: a.w,
    h: a.h,
    showTitle: true,
    title: a.chartTitle,
    showLegend: a.showLegend,
    legendPos: a.legendPos,
    valAxes: [
      { showValAxisTitle: a.valAxisTitle !== "", valAxisTitle: a.valAxisTitle, valAxisLabelColor: a.axisLabelColor },
      {
        showValAxisTitle: a.valAxis2Title !== "",
        valAxisTitle: a.valAxis2Title,
        valAxisLabelColor: a.axisLabelColor,
        valGridLine: { style: "none" },
      },
    ],
    catAxes: [
      { showCatAxisTitle: a.catAxisTitle !== "", catAxisTitle: a.catAxisTitle, catAxisLabelColor: a.axisLabelColor },
      { catAxisHidden: true },
    ],
  };
  // With an array of chart types pptxgenjs reads the options from the second argument.
  slide.addChart([bar, line], options as unknown as unknown[]);
  const out = await pptx.write({ outputType: "nodebuffer" });
  return Buffer.from(out as Uint8Array);
}

const AXIS_RE = /<c:(catAx|valAx|dateAx|serAx)>([\s\S]*?)<\/c:\1>/g;
const GROUP_RE = /<c:(\w+Chart)>([\s\S]*?)<\/c:\1>/g;
const AXID_RE = /<c:axId val="(-?\d+)"\s*\/>/g;

/**
 * Make a chart part's axis references consistent: every c:axId listed by a chart group names an
 * axis declared in the plot area (dangling ids are removed), and every axis's c:crossAx names a
 * declared axis (a dangling one is pointed at the axis it shares a chart group with).
 * pptxgenjs 4.0.1 appends a series-axis id (2094734556) to every bar/line group although no
 * c:serAx exists; PowerPoint then "repairs" the file.
 */
export function repairChartAxes(xml: string): string {
  const axisIds = new Set<string>();
  for (const m of xml.matchAll(AXIS_RE)) {
    const id = /<c:axId val="(-?\d+)"/.exec(m[2]!)?.[1];
    if (id !== undefined) axisIds.add(id);
  }
  const groups: string[][] = [];
  let out = xml.replace(GROUP_RE, (whole, _name: string, body: string) => {
    const kept: string[] = [];
    const fixed = body.replace(AXID_RE, (tag, id: string) => {
      if (axisIds.has(id)) {
        kept.push(id);
        return tag;
      }
      return "";
    });
    groups.push(kept);
    return whole.replace(body, () => fixed);
  });
  out = out.replace(AXIS_RE, (whole, _kind: string, body: string) => {
    const own = /<c:axId val="(-?\d+)"/.exec(body)?.[1];
    const cross = /<c:crossAx val="(-?\d+)"\s*\/>/.exec(body);
    if (own === undefined || cross === null || axisIds.has(cross[1]!)) return whole;
    const partner = groups.find((g) => g.includes(own))?.find((id) => id !== own);
    if (partner === undefined) return whole;
    return whole.replace(cross[0], `<c:crossAx val="${partner}"/>`);
  });
  return out;
}

/** Apply repairChartAxes to every chart part of a .pptx buffer. */
export async function repairPptxCharts(pptx: Buffer): Promise<Buffer> {
  const zip = await JSZip.loadAsync(pptx);
  const charts = Object.keys(zip.files).filter((n) => /^ppt\/charts\/chart\d+\.xml$/.test(n));
  for (const name of charts) {
    const xml = await zip.file(name)!.async("string");
    zip.file(name, repairChartAxes(xml));
  }
  return zip.generateAsync({ type: "nodebuffer", compression: "DEFLATE" });
}

/** Write the combo chart slide; returns the resolved output path. */
export async function build(args: ComboChartSlideArgs): Promise<string> {
  const a = parseArgs(HELPER, comboChartSlideArgs, args);
  let bytes: Buffer;
  try {
    bytes = await repairPptxCharts(await renderRawPptx(a));
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: could not render the presentation: ${(err as Error).message}`, { cause: err });
  }
  const path = prepareOutput(a.outputPath, "outputPath");
  try {
    await writeFile(path, bytes);
  } catch (err) {
    throw new SvcError("E_IO", `${HELPER}: outputPath: cannot write ${path}: ${(err as Error).message}`, {
      field: "outputPath",
      cause: err,
    });
  }
  return path;
}
