/** @module chart — the usage chart: stacked bars per time bucket, one colour per operation (SVG, sized to its container), with a data table. */
import { useEffect, useRef, useState } from "preact/hooks";
import { Table, usd } from "./ui.js";

export interface UsageSeries {
  grain: "minute" | "hour" | "day";
  ops: string[];
  buckets: Array<{ start: number; ops: Record<string, { costUsd: number; calls: number }> }>;
}

/** Distinguishable on white, each at least 4.5:1 against it. */
const COLORS = ["#1d4ed8", "#c2410c", "#15803d", "#7e22ce", "#0e7490", "#b91c1c", "#a16207"];
const OTHER_COLOR = "#4b5563";
const HEIGHT = 220;
const PAD = { top: 22, right: 8, bottom: 28, left: 52 };

function label(t: number, grain: UsageSeries["grain"]): string {
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, "0");
  if (grain === "day") return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}`;
  if (grain === "hour") return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:00`;
  return `${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Axis unit: calls, dollars, or millionths of a dollar (µ$) when the largest bar is under a cent. */
function unitOf(max: number, metric: "costUsd" | "calls"): { name: string; scale: number } {
  if (metric === "calls") return { name: "calls", scale: 1 };
  return max < 0.01 ? { name: "µ$ (millionths of a dollar)", scale: 1e6 } : { name: "$", scale: 1 };
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function tick(v: number, scale: number): string {
  const x = v * scale;
  if (x === 0) return "0";
  return String(Number(x.toPrecision(3)));
}

export function UsageChart(props: { series: UsageSeries; metric: "costUsd" | "calls" }) {
  const { series, metric } = props;
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const ro = new ResizeObserver(() => setWidth(Math.max(240, Math.floor(el.clientWidth))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // Seven named operations at most; the rest stack as "other".
  const named = series.ops.slice(0, COLORS.length);
  const groups = series.ops.length > named.length ? [...named, "other"] : named;
  const color = (g: string) => (g === "other" ? OTHER_COLOR : COLORS[named.indexOf(g)]!);
  const valueOf = (b: UsageSeries["buckets"][number], g: string) =>
    g === "other"
      ? Object.entries(b.ops)
          .filter(([op]) => !named.includes(op))
          .reduce((s, [, v]) => s + v[metric], 0)
      : (b.ops[g]?.[metric] ?? 0);
  const totals = series.buckets.map((b) => groups.reduce((s, g) => s + valueOf(b, g), 0));
  const max = Math.max(...totals, 0);
  const unit = unitOf(max, metric);
  const grand = totals.reduce((a, b) => a + b, 0);

  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const n = series.buckets.length;
  const step = plotW / Math.max(1, n);
  const barW = Math.max(1, step * 0.8);
  // Axis top: four steps of 1, 2, 2.5 or 5 x 10^k (in axis units) covering the tallest bar.
  const yStep = max > 0 ? niceStep((max * unit.scale) / 4) / unit.scale : 0;
  const top = yStep * 4;
  const y = (v: number) => PAD.top + plotH - (top > 0 ? (v / top) * plotH : 0);
  const gridValues = top > 0 ? [0, 1, 2, 3, 4].map((i) => i * yStep) : [0];
  const labelEvery = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(plotW / 70))));
  const summary =
    grand === 0
      ? "No charges in this range."
      : `${metric === "calls" ? `${grand} metered calls` : `${usd(grand)} spent`} in this range, most on ${series.ops.slice(0, 3).join(", ")}.`;

  return (
    <figure class="chart">
      <div ref={box} class="chart-box">
        <svg width={width} height={HEIGHT} role="img" aria-label={`Usage chart. ${summary}`} data-testid="usage-chart">
          <text x={4} y={12} class="axis">
            {unit.name}
          </text>
          {gridValues.map((v) => (
            <g key={v}>
              <line x1={PAD.left} x2={width - PAD.right} y1={y(v)} y2={y(v)} class="grid" />
              <text x={PAD.left - 6} y={y(v) + 4} text-anchor="end" class="axis">
                {tick(v, unit.scale)}
              </text>
            </g>
          ))}
          {series.buckets.map((b, i) => {
            let acc = 0;
            const x = PAD.left + i * step + (step - barW) / 2;
            return (
              <g key={b.start}>
                {groups.map((g) => {
                  const v = valueOf(b, g);
                  if (v <= 0) return null;
                  const y0 = y(acc);
                  acc += v;
                  const y1 = y(acc);
                  return (
                    <rect key={g} x={x} y={y1} width={barW} height={Math.max(1, y0 - y1)} fill={color(g)}>
                      <title>{`${label(b.start, series.grain)} ${g}: ${metric === "calls" ? `${v} calls` : usd(v)}`}</title>
                    </rect>
                  );
                })}
                {i % labelEvery === 0 && (
                  <text x={PAD.left + i * step + step / 2} y={HEIGHT - 8} text-anchor="middle" class="axis">
                    {label(b.start, series.grain)}
                  </text>
                )}
              </g>
            );
          })}
          <line x1={PAD.left} x2={width - PAD.right} y1={y(0)} y2={y(0)} class="baseline" />
        </svg>
      </div>
      <figcaption>
        <p class="muted">{summary}</p>
        {groups.length > 0 && (
          <ul class="legend" aria-label="Operations">
            {groups.map((g) => (
              <li key={g}>
                <span class="swatch" style={{ background: color(g) }} aria-hidden="true" />
                {g}
              </li>
            ))}
          </ul>
        )}
      </figcaption>
      {grand > 0 && (
        <details>
          <summary>Chart data as a table</summary>
          <Table cols={["Time", "Operation", ["Calls", "num"], ["Cost", "num"]]}>
            {series.buckets.flatMap((b) =>
              Object.entries(b.ops).map(([op, v]) => (
                <tr key={`${b.start}-${op}`}>
                  <td>{label(b.start, series.grain)}</td>
                  <td class="break">{op}</td>
                  <td class="num">{v.calls}</td>
                  <td class="num">{usd(v.costUsd)}</td>
                </tr>
              )),
            )}
          </Table>
        </details>
      )}
    </figure>
  );
}
