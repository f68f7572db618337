/** A plain aligned console table: numbers right-aligned, text left-aligned. */
export type Cell = string | number | undefined | null;

export function formatCell(v: Cell): string {
  if (v === undefined || v === null || (typeof v === 'number' && Number.isNaN(v))) return '-';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    return Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
  }
  return v;
}

export function renderTable(columns: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map(formatCell));
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((r) => (r[i] ?? '').length)));
  const numeric = columns.map((_, i) => rows.every((r) => r[i] === undefined || r[i] === null || typeof r[i] === 'number'));
  const line = (cells: string[]) =>
    cells.map((c, i) => (numeric[i] && i > 0 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(columns), widths.map((w) => '-'.repeat(w)).join('  '), ...text.map(line)].join('\n');
}

export function printTable(title: string, columns: string[], rows: Cell[][]): void {
  process.stdout.write(`\n${title}\n${renderTable(columns, rows)}\n`);
}
