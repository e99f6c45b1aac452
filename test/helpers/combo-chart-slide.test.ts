/** @module combo-chart-slide.test — reads the generated .pptx back with JSZip + fast-xml-parser and checks the chart structure. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import JSZip from "jszip";
import { afterAll, describe, expect, it } from "vitest";
import { build, comboChartSlideArgs, renderRawPptx, repairChartAxes } from "../../src/helpers/combo-chart-slide.js";
import { failure } from "./failure.js";

const dir = mkdtempSync(join(tmpdir(), "svc-combo-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const EMU_PER_INCH = 914400;
const base = {
  chartTitle: "Revenue & <Margin>",
  categories: ["Q1", "Q2", "R&D"],
  barSeriesName: "Revenue",
  barValues: [10, 20, 30],
  lineSeriesName: "Margin",
  lineValues: [0.1, 0.25, 0.3],
};

type Node = Record<string, any>;
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  isArray: (name) => ["c:valAx", "c:catAx", "c:axId", "c:ser", "c:pt", "a:p", "a:r"].includes(name),
});

interface Pptx {
  zip: JSZip;
  chartXml: string;
  chart: Node;
  plot: Node;
  slideXml: string;
  presentationXml: string;
}

async function openPptx(bytes: Buffer): Promise<Pptx> {
  const zip = await JSZip.loadAsync(bytes);
  const charts = Object.keys(zip.files).filter((n) => /^ppt\/charts\/chart\d+\.xml$/.test(n));
  expect(charts).toHaveLength(1);
  const chartXml = await zip.file(charts[0]!)!.async("string");
  expect(XMLValidator.validate(chartXml)).toBe(true);
  const chart = parser.parse(chartXml)["c:chartSpace"]["c:chart"] as Node;
  return {
    zip,
    chartXml,
    chart,
    plot: chart["c:plotArea"],
    slideXml: await zip.file("ppt/slides/slide1.xml")!.async("string"),
    presentationXml: await zip.file("ppt/presentation.xml")!.async("string"),
  };
}

const val = (n: Node | undefined): string | undefined => n?.["@_val"];
const axisIdOf = (ax: Node): string => val(ax["c:axId"][0])!;
const groupAxIds = (group: Node): string[] => (group["c:axId"] as Node[]).map((n) => val(n)!);
const labelColor = (holder: Node): string => holder["c:txPr"]["a:p"][0]["a:pPr"]["a:defRPr"]["a:solidFill"]["a:srgbClr"]["@_val"];
const titleText = (holder: Node): string =>
  (holder["c:title"]["c:tx"]["c:rich"]["a:p"] as Node[]).flatMap((p) => (p["a:r"] as Node[]).map((r) => String(r["a:t"]))).join("");

/** All axis ids declared in the plot area, and the invariant: no chart group or crossAx points elsewhere. */
function danglingAxisRefs(plot: Node): string[] {
  const axes = [...(plot["c:valAx"] ?? []), ...(plot["c:catAx"] ?? [])] as Node[];
  const ids = new Set(axes.map(axisIdOf));
  const refs = [
    ...["c:barChart", "c:lineChart"].flatMap((g) => (plot[g] ? groupAxIds(plot[g]) : [])),
    ...axes.map((ax) => val(ax["c:crossAx"])!),
  ];
  return refs.filter((id) => !ids.has(id));
}

async function expectBadRequest(p: Promise<unknown>, field: string): Promise<void> {
  const err = await failure(p);
  expect(err.code).toBe("E_BAD_REQUEST");
  expect(err.field).toBe(field);
  expect(err.message).toContain(field);
}

describe("combo chart slide", () => {
  it("builds one slide with a bar + line combo on primary/secondary axes, with the spec's defaults", async () => {
    const outputPath = join(dir, "nested", "deeper", "default.pptx");
    const returned = await build({ outputPath, ...base });
    expect(returned).toBe(resolve(outputPath));
    const p = await openPptx(await readFile(outputPath));

    expect(Object.keys(p.zip.files).filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n))).toEqual(["ppt/slides/slide1.xml"]);
    // LAYOUT_16x9 = 10 x 5.625 in.
    expect(p.presentationXml).toMatch(/<p:sldSz cx="9144000" cy="5143500"\/>/);
    // Default frame 0.5, 0.5, 9 x 4.5 in.
    expect(p.slideXml).toContain(
      `<a:off x="${0.5 * EMU_PER_INCH}" y="${0.5 * EMU_PER_INCH}"/><a:ext cx="${9 * EMU_PER_INCH}" cy="${4.5 * EMU_PER_INCH}"/>`,
    );

    expect(titleText(p.chart)).toBe(base.chartTitle);
    expect(val(p.chart["c:autoTitleDeleted"])).toBe("0");

    const bar = p.plot["c:barChart"] as Node;
    const line = p.plot["c:lineChart"] as Node;
    expect(val(bar["c:barDir"])).toBe("col");
    expect(bar["c:ser"]).toHaveLength(1);
    expect(line["c:ser"]).toHaveLength(1);
    const barSer = bar["c:ser"][0] as Node;
    const lineSer = line["c:ser"][0] as Node;
    expect(barSer["c:tx"]["c:strRef"]["c:strCache"]["c:pt"][0]["c:v"]).toBe("Revenue");
    expect(lineSer["c:tx"]["c:strRef"]["c:strCache"]["c:pt"][0]["c:v"]).toBe("Margin");
    expect(barSer["c:spPr"]["a:solidFill"]["a:srgbClr"]["@_val"]).toBe("1E2761");
    expect(lineSer["c:spPr"]["a:ln"]["a:solidFill"]["a:srgbClr"]["@_val"]).toBe("F96167");
    // Shared categories, values in order.
    for (const ser of [barSer, lineSer]) {
      const cats = (ser["c:cat"]["c:multiLvlStrRef"]["c:multiLvlStrCache"]["c:lvl"]["c:pt"] as Node[]).map((pt) => String(pt["c:v"]));
      expect(cats).toEqual(base.categories);
    }
    expect((barSer["c:val"]["c:numRef"]["c:numCache"]["c:pt"] as Node[]).map((pt) => Number(pt["c:v"]))).toEqual(base.barValues);
    expect((lineSer["c:val"]["c:numRef"]["c:numCache"]["c:pt"] as Node[]).map((pt) => Number(pt["c:v"]))).toEqual(base.lineValues);

    // Column data labels at the outer end, default colour 363636 and 10 pt; none on the line.
    for (const dl of [barSer["c:dLbls"], bar["c:dLbls"]] as Node[]) {
      expect(val(dl["c:dLblPos"])).toBe("outEnd");
      expect(val(dl["c:showVal"])).toBe("1");
      expect(labelColor(dl)).toBe("363636");
      expect(dl["c:txPr"]["a:p"][0]["a:pPr"]["a:defRPr"]["@_sz"]).toBe("1000");
    }
    expect(val(lineSer["c:dLbls"]["c:showVal"])).toBe("0");
    expect(JSON.stringify(line)).not.toContain("dLblPos");

    // Two value axes and two category axes; the secondary category axis is hidden.
    const valAxes = p.plot["c:valAx"] as Node[];
    const catAxes = p.plot["c:catAx"] as Node[];
    expect(valAxes).toHaveLength(2);
    expect(catAxes).toHaveLength(2);
    expect(valAxes.map((ax) => val(ax["c:axPos"]))).toEqual(["l", "r"]);
    expect(catAxes.map((ax) => val(ax["c:delete"]))).toEqual(["0", "1"]);
    // The bar uses the primary pair, the line the secondary pair.
    expect(groupAxIds(bar)).toEqual([axisIdOf(catAxes[0]!), axisIdOf(valAxes[0]!)]);
    expect(groupAxIds(line)).toEqual([axisIdOf(catAxes[1]!), axisIdOf(valAxes[1]!)]);
    expect(danglingAxisRefs(p.plot)).toEqual([]);

    // No axis titles by default; label colour 363636 on both value axes and the primary category axis.
    for (const ax of [...valAxes, ...catAxes]) expect(ax["c:title"]).toBeUndefined();
    for (const ax of [valAxes[0]!, valAxes[1]!, catAxes[0]!]) expect(labelColor(ax)).toBe("363636");

    expect(val(p.chart["c:legend"]["c:legendPos"])).toBe("b");
  });

  it("honours every styling argument", async () => {
    const outputPath = join(dir, "styled.pptx");
    await build({
      outputPath,
      ...base,
      layout: "LAYOUT_4x3",
      x: 1,
      y: 1.25,
      w: 7.5,
      h: 5,
      barColor: "#00ff00",
      lineColor: "112233",
      barDataLabelColor: "AA0000",
      barDataLabelFontSize: 14,
      legendPos: "t",
      catAxisTitle: "Quarter",
      valAxisTitle: "USD",
      valAxis2Title: "Ratio",
      axisLabelColor: "445566",
    });
    const p = await openPptx(await readFile(outputPath));
    expect(p.presentationXml).toMatch(/<p:sldSz cx="9144000" cy="6858000"/);
    expect(p.slideXml).toContain(
      `<a:off x="${1 * EMU_PER_INCH}" y="${1.25 * EMU_PER_INCH}"/><a:ext cx="${7.5 * EMU_PER_INCH}" cy="${5 * EMU_PER_INCH}"/>`,
    );
    const barSer = p.plot["c:barChart"]["c:ser"][0] as Node;
    expect(barSer["c:spPr"]["a:solidFill"]["a:srgbClr"]["@_val"]).toBe("00FF00");
    expect(p.plot["c:lineChart"]["c:ser"][0]["c:spPr"]["a:ln"]["a:solidFill"]["a:srgbClr"]["@_val"]).toBe("112233");
    expect(labelColor(barSer["c:dLbls"])).toBe("AA0000");
    expect(barSer["c:dLbls"]["c:txPr"]["a:p"][0]["a:pPr"]["a:defRPr"]["@_sz"]).toBe("1400");
    expect(val(p.chart["c:legend"]["c:legendPos"])).toBe("t");
    const valAxes = p.plot["c:valAx"] as Node[];
    const catAxes = p.plot["c:catAx"] as Node[];
    expect(titleText(catAxes[0]!)).toBe("Quarter");
    expect(titleText(valAxes[0]!)).toBe("USD");
    expect(titleText(valAxes[1]!)).toBe("Ratio");
    expect(catAxes[1]!["c:title"]).toBeUndefined();
    for (const ax of [valAxes[0]!, valAxes[1]!, catAxes[0]!]) expect(labelColor(ax)).toBe("445566");
    expect(danglingAxisRefs(p.plot)).toEqual([]);
  });

  it("hides the legend and the column labels when asked", async () => {
    const outputPath = join(dir, "plain.pptx");
    await build({ outputPath, ...base, showLegend: false, showBarDataLabels: false });
    const p = await openPptx(await readFile(outputPath));
    expect(p.chart["c:legend"]).toBeUndefined();
    const bar = p.plot["c:barChart"] as Node;
    expect(val(bar["c:ser"][0]["c:dLbls"]["c:showVal"])).toBe("0");
    expect(JSON.stringify(bar)).not.toContain("dLblPos");
    expect(titleText(p.chart)).toBe(base.chartTitle);
  });

  it("repairs pptxgenjs's dangling chart axis id (raw output has it, ours does not)", async () => {
    const raw = await openPptx(await renderRawPptx(comboChartSlideArgs.parse({ outputPath: "unused.pptx", ...base })));
    // pptxgenjs 4.0.1 lists a third (series) axis id in each group with no matching axis.
    const rawDangling = danglingAxisRefs(raw.plot);
    expect(rawDangling.length).toBeGreaterThan(0);
    expect(groupAxIds(raw.plot["c:barChart"])).toHaveLength(3);

    const outputPath = join(dir, "repaired.pptx");
    const fixed = await openPptx(await readFile(await build({ outputPath, ...base })));
    expect(danglingAxisRefs(fixed.plot)).toEqual([]);
    expect(groupAxIds(fixed.plot["c:barChart"])).toHaveLength(2);
    expect(groupAxIds(fixed.plot["c:lineChart"])).toHaveLength(2);
  });

  it("repairChartAxes also re-points a dangling crossAx at the axis sharing its chart group", () => {
    const xml =
      '<c:plotArea><c:barChart><c:axId val="1"/><c:axId val="2"/><c:axId val="9"/></c:barChart>' +
      '<c:catAx><c:axId val="1"/><c:crossAx val="7"/></c:catAx><c:valAx><c:axId val="2"/><c:crossAx val="1"/></c:valAx></c:plotArea>';
    const out = repairChartAxes(xml);
    expect(out).toBe(
      '<c:plotArea><c:barChart><c:axId val="1"/><c:axId val="2"/></c:barChart>' +
        '<c:catAx><c:axId val="1"/><c:crossAx val="2"/></c:catAx><c:valAx><c:axId val="2"/><c:crossAx val="1"/></c:valAx></c:plotArea>',
    );
  });

  it("rejects missing or inconsistent arguments before writing anything", async () => {
    const target = join(dir, "never", "x.pptx");
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, chartTitle: undefined }, "chartTitle"],
      [{ ...base, categories: [] }, "categories"],
      [{ ...base, barSeriesName: undefined }, "barSeriesName"],
      [{ ...base, lineValues: undefined }, "lineValues"],
      [{ ...base, barValues: [1, 2] }, "barValues"],
      [{ ...base, lineValues: [1, 2, 3, 4] }, "lineValues"],
      [{ ...base, barColor: "blue" }, "barColor"],
      [{ ...base, legendPos: "x" }, "legendPos"],
      [{ ...base, layout: "LAYOUT_A4" }, "layout"],
    ];
    for (const [args, field] of cases) {
      await expectBadRequest(build({ outputPath: target, ...args } as never), field);
    }
    await expectBadRequest(build({ ...base } as never), "outputPath");
    expect(existsSync(join(dir, "never"))).toBe(false);
  });

  it("raises E_IO for an output directory that cannot be created", async () => {
    const blocker = join(dir, "a-file");
    writeFileSync(blocker, "not a directory");
    const err = await failure(build({ outputPath: join(blocker, "sub", "x.pptx"), ...base }));
    expect(err.code).toBe("E_IO");
    expect(err.field).toBe("outputPath");
    expect(existsSync(join(blocker, "sub"))).toBe(false);
  });
});
