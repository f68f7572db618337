/**
 * A grouped horizontal bar chart as SVG markup, for the bench results (one file beside the JSON).
 * Hand-built on purpose: a few rectangles and labels need no chart library, and the file opens in
 * any browser. Values are drawn on a linear scale from 0; a missing value leaves a gap.
 */

export interface BarSeries {
  label: string;
  /** One value per category (undefined: not measured). */
  values: readonly (number | undefined)[];
}

export interface BarChart {
  title: string;
  /** The text under the axis, e.g. "p95 latency, ms". */
  unit: string;
  categories: readonly string[];
  series: readonly BarSeries[];
  /** Optional vertical marker per category (a target), drawn as a short dashed line. */
  markers?: readonly (number | undefined)[];
}

// Colour-blind-safe palette (Okabe-Ito).
const COLORS = ['#0072B2', '#E69F00', '#56B4E9', '#D55E00', '#009E73', '#CC79A7', '#F0E442', '#000000'];

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A round axis maximum (1, 2 or 5 times a power of ten) at or above `max`. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export function barChartSvg(chart: BarChart): string {
  const labelWidth = 290;
  const plotWidth = 560;
  const barHeight = 11;
  const groupGap = 10;
  const top = 40 + 18 * Math.ceil(chart.series.length / 3);
  const groupHeight = chart.series.length * barHeight + groupGap;
  const height = top + chart.categories.length * groupHeight + 40;
  const width = labelWidth + plotWidth + 80;
  const all = chart.series.flatMap((s) => s.values).concat(chart.markers ?? []).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const axisMax = niceMax(Math.max(0, ...all));
  const x = (v: number) => labelWidth + (v / axisMax) * plotWidth;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  out.push(`<text x="10" y="18" font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`);
  // Legend, three per line.
  chart.series.forEach((s, i) => {
    const lx = 10 + (i % 3) * 300;
    const ly = 34 + 18 * Math.floor(i / 3);
    out.push(`<rect x="${lx}" y="${ly - 9}" width="12" height="10" fill="${COLORS[i % COLORS.length]}"/>`);
    out.push(`<text x="${lx + 16}" y="${ly}">${escapeXml(s.label)}</text>`);
  });
  // Grid lines and ticks: five steps.
  for (let t = 0; t <= 5; t++) {
    const v = (axisMax * t) / 5;
    const gx = x(v);
    out.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${height - 34}" stroke="#ddd"/>`);
    out.push(`<text x="${gx}" y="${height - 22}" text-anchor="middle">${Number(v.toPrecision(3))}</text>`);
  }
  out.push(`<text x="${labelWidth + plotWidth / 2}" y="${height - 6}" text-anchor="middle">${escapeXml(chart.unit)}</text>`);
  chart.categories.forEach((category, c) => {
    const gy = top + c * groupHeight;
    out.push(`<text x="${labelWidth - 6}" y="${gy + (chart.series.length * barHeight) / 2 + 4}" text-anchor="end">${escapeXml(category)}</text>`);
    chart.series.forEach((s, i) => {
      const v = s.values[c];
      if (v === undefined || !Number.isFinite(v)) return;
      const y = gy + i * barHeight;
      out.push(`<rect x="${labelWidth}" y="${y}" width="${Math.max(0.5, x(v) - labelWidth).toFixed(1)}" height="${barHeight - 1}" fill="${COLORS[i % COLORS.length]}"><title>${escapeXml(`${category} / ${s.label}: ${v}`)}</title></rect>`);
      out.push(`<text x="${(x(v) + 3).toFixed(1)}" y="${y + barHeight - 2}" font-size="9">${Number(v.toPrecision(3))}</text>`);
    });
    const m = chart.markers?.[c];
    if (m !== undefined) {
      out.push(`<line x1="${x(m)}" y1="${gy - 2}" x2="${x(m)}" y2="${gy + chart.series.length * barHeight}" stroke="#c00" stroke-dasharray="3,2"><title>target ${m}</title></line>`);
    }
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
