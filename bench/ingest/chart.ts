/**
 * The SVG chart of an ingest run, written beside its JSON: throughput and p50/p99 per phase, and
 * the open-loop phases as ack latency against offered rate (the sweep). Plain markup, no library:
 * three panels of bars and one of lines.
 */
import { writeFileSync } from 'node:fs';
import type { IngestResult, PhaseResult } from './run.ts';

const W = 1180;
const H = 400;
const PANEL_TOP = 70;
const PANEL_H = 270;
const FONT = 'font-family="system-ui, sans-serif"';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'inf');

function label(p: PhaseResult): string {
  if ('direct' in p) return `direct ${p.direct.rows_per_insert} rows x${p.direct.concurrency}`;
  if (p.load.mode === 'open') return `open ${fmt((p.load.target_rate ?? 0) * 100)}/s`;
  return p.phase === 'retry' ? 'closed + resends' : 'closed loop';
}

/** A round axis maximum above `max`: 1, 2 or 5 x a power of ten. */
function niceMax(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return ([1, 2, 5, 10].find((m) => m * p >= max) ?? 10) * p;
}

/** Horizontal bars: one row per item, `series` bars per row (e.g. p50 and p99). */
function barPanel(x: number, width: number, title: string, rows: string[], series: Array<{ name: string; color: string; values: number[] }>): string {
  const labelW = 150;
  const plotW = width - labelW - 60;
  const finite = series.flatMap((s) => s.values).filter(Number.isFinite);
  const max = niceMax(Math.max(0, ...finite));
  const rowH = Math.min(40, PANEL_H / Math.max(1, rows.length));
  const barH = (rowH - 8) / series.length;
  let out = `<text x="${x}" y="${PANEL_TOP - 22}" ${FONT} font-size="14" font-weight="600">${esc(title)}</text>`;
  series.forEach((s, i) => {
    out += `<rect x="${x + labelW + i * 90}" y="${PANEL_TOP - 14}" width="10" height="10" fill="${s.color}"/><text x="${x + labelW + 14 + i * 90}" y="${PANEL_TOP - 5}" ${FONT} font-size="11">${esc(s.name)}</text>`;
  });
  rows.forEach((row, r) => {
    const y = PANEL_TOP + r * rowH;
    out += `<text x="${x + labelW - 6}" y="${y + rowH / 2 + 4}" ${FONT} font-size="11" text-anchor="end">${esc(row)}</text>`;
    series.forEach((s, i) => {
      const v = s.values[r];
      const w = Number.isFinite(v) ? (Math.max(0, v) / max) * plotW : plotW;
      const by = y + 4 + i * barH;
      out += `<rect x="${x + labelW}" y="${by}" width="${w.toFixed(1)}" height="${(barH - 1).toFixed(1)}" fill="${s.color}"${Number.isFinite(v) ? '' : ' fill-opacity="0.35"'}/>`;
      out += `<text x="${x + labelW + w + 3}" y="${by + barH - 2}" ${FONT} font-size="10">${fmt(v)}</text>`;
    });
  });
  const axisY = PANEL_TOP + rows.length * rowH + 4;
  out += `<line x1="${x + labelW}" y1="${axisY}" x2="${x + labelW + plotW}" y2="${axisY}" stroke="#999"/>`;
  out += `<text x="${x + labelW}" y="${axisY + 14}" ${FONT} font-size="10">0</text><text x="${x + labelW + plotW}" y="${axisY + 14}" ${FONT} font-size="10" text-anchor="end">${fmt(max)}</text>`;
  return out;
}

/** Lines of p50 and p99 ack latency against the offered rate of the open-loop phases. */
function sweepPanel(x: number, width: number, points: Array<{ rate: number; p50: number; p99: number }>, targetMs: number): string {
  const left = 50;
  const plotW = width - left - 20;
  const plotH = PANEL_H - 30;
  let out = `<text x="${x}" y="${PANEL_TOP - 22}" ${FONT} font-size="14" font-weight="600">Open loop: ack latency vs offered events/s</text>`;
  if (points.length === 0) return out + `<text x="${x}" y="${PANEL_TOP + 20}" ${FONT} font-size="12">no open-loop phase in this run</text>`;
  const xs = points.map((p) => p.rate);
  const xMax = niceMax(Math.max(...xs));
  const yMax = niceMax(Math.max(targetMs, ...points.flatMap((p) => [p.p50, p.p99]).filter(Number.isFinite)));
  const px = (rate: number) => x + left + (rate / xMax) * plotW;
  const py = (ms: number) => PANEL_TOP + plotH - (Math.min(Number.isFinite(ms) ? ms : yMax, yMax) / yMax) * plotH;
  out += `<line x1="${x + left}" y1="${PANEL_TOP + plotH}" x2="${x + left + plotW}" y2="${PANEL_TOP + plotH}" stroke="#999"/>`;
  out += `<line x1="${x + left}" y1="${PANEL_TOP}" x2="${x + left}" y2="${PANEL_TOP + plotH}" stroke="#999"/>`;
  out += `<text x="${x + left - 4}" y="${PANEL_TOP + 8}" ${FONT} font-size="10" text-anchor="end">${fmt(yMax)} ms</text>`;
  out += `<text x="${x + left - 4}" y="${PANEL_TOP + plotH}" ${FONT} font-size="10" text-anchor="end">0</text>`;
  out += `<text x="${x + left + plotW}" y="${PANEL_TOP + plotH + 14}" ${FONT} font-size="10" text-anchor="end">${fmt(xMax)} events/s</text>`;
  out += `<line x1="${x + left}" y1="${py(targetMs)}" x2="${x + left + plotW}" y2="${py(targetMs)}" stroke="#c00" stroke-dasharray="4 3"/>`;
  out += `<text x="${x + left + plotW}" y="${py(targetMs) - 3}" ${FONT} font-size="10" fill="#c00" text-anchor="end">target p99 ${targetMs} ms</text>`;
  for (const [key, color] of [['p50', '#4a90d9'], ['p99', '#e07b00']] as const) {
    const pts = points.map((p) => `${px(p.rate).toFixed(1)},${py(p[key]).toFixed(1)}`).join(' ');
    out += `<polyline points="${pts}" fill="none" stroke="${color}" stroke-width="2"/>`;
    for (const p of points) out += `<circle cx="${px(p.rate).toFixed(1)}" cy="${py(p[key]).toFixed(1)}" r="3" fill="${color}"><title>${key} ${fmt(p[key])} ms at ${fmt(p.rate)}/s</title></circle>`;
    const last = points[points.length - 1];
    out += `<text x="${(px(last.rate) + 5).toFixed(1)}" y="${(py(last[key]) + 4).toFixed(1)}" ${FONT} font-size="10" fill="${color}">${key}</text>`;
  }
  return out;
}

export function ingestChartSvg(r: IngestResult, targetP99Ms = 250): string {
  const phases = r.phases;
  const rows = phases.map(label);
  const rate = (p: PhaseResult) => ('load' in p ? p.load.events_per_s : p.direct.events_per_s);
  const lat = (p: PhaseResult) => ('load' in p ? p.load.latency_ms : p.direct.latency_ms);
  const open = phases
    .filter((p): p is Extract<PhaseResult, { load: unknown }> => 'load' in p && p.load.mode === 'open')
    .map((p) => ({ rate: (p.load.target_rate ?? 0) * r.settings.workload.events_per_batch, p50: p.load.latency_ms.p50, p99: p.load.latency_ms.p99 }))
    .sort((a, b) => a.rate - b.rate);
  const m = r.machine;
  const load = m.load_average;
  const subtitle =
    `${r.started_at} · ${m.cpus} CPUs · ClickHouse ${r.settings.storage} · ${r.settings.workload.events_per_batch} events/request` +
    (load ? ` · load average at start ${load.map((x) => x.toFixed(2)).join(' ')}` : '') +
    ` · service/limit (large batches) ${r.ratios.closed_vs_direct_large_batch ?? '-'}`;
  const body =
    barPanel(20, 380, 'Throughput (events/s acknowledged or inserted)', rows, [{ name: 'events/s', color: '#2f7d32', values: phases.map(rate) }]) +
    barPanel(400, 380, 'Ack latency per phase (ms)', rows, [
      { name: 'p50', color: '#4a90d9', values: phases.map((p) => lat(p).p50) },
      { name: 'p99', color: '#e07b00', values: phases.map((p) => lat(p).p99) },
    ]) +
    sweepPanel(790, 380, open, targetP99Ms);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">` +
    `<rect width="100%" height="100%" fill="#fff"/>` +
    `<text x="20" y="22" ${FONT} font-size="16" font-weight="700">tallyhouse ingest bench</text>` +
    `<text x="20" y="${H - 12}" ${FONT} font-size="11" fill="#555">${esc(subtitle)}</text>` +
    body +
    `</svg>\n`
  );
}

export function writeIngestChart(r: IngestResult, path: string): string {
  writeFileSync(path, ingestChartSvg(r));
  return path;
}
