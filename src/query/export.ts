/**
 * What the streaming exports (survey responses, events) share: the plan of time slices that keeps
 * each engine query to about SLICE_ROWS rows (so the engine sorts one slice at a time, never the
 * whole selection), and CSV records (RFC 4180).
 */

import accepts from 'accepts';
import type { IncomingMessage } from 'node:http';

/** Rows per slice (one engine query each), about: a slice is whole UTC days. */
export const SLICE_ROWS = 20_000;

export type ExportFormat = 'ndjson' | 'csv';

/**
 * Added to a feature's query settings for the slice queries: one slice may wait on a slow client
 * for a long time (the per-query read and memory limits still hold), and the engine cancels the
 * query when the service's request to it closes (the client went away).
 */
export const EXPORT_SLICE_SETTINGS = { max_execution_time: 3600, cancel_http_readonly_queries_on_client_close: 1 } as const;

/**
 * What an export's Accept header is negotiated against, in this order (server/route.ts
 * negotiableTypes lists the export routes' types the same way): NDJSON, CSV, and application/json
 * answered as NDJSON, each in UTF-8 (an Accept asking for `charset=utf-8` matches).
 */
export const EXPORT_MEDIA_TYPES = ['application/x-ndjson; charset=utf-8', 'text/csv; charset=utf-8', 'application/json; charset=utf-8'] as const;

/**
 * The format an Accept header asks for, negotiated by the `accepts` package as Koa's
 * `ctx.accepts` does for the 406 of server/app.ts (q-values, ranges, `;q=0`): CSV when text/csv
 * wins, NDJSON otherwise (no Accept, a blank one, any type). An Accept that names none of them never
 * reaches an export: it is a 406 before the handler runs.
 */
export function exportFormatOf(accept: string | undefined): ExportFormat {
  if (accept === undefined || accept.trim() === '') return 'ndjson';
  return accepts({ headers: { accept } } as IncomingMessage).type([...EXPORT_MEDIA_TYPES]) === EXPORT_MEDIA_TYPES[1] ? 'csv' : 'ndjson';
}

export const EXPORT_CONTENT_TYPE: Record<ExportFormat, string> = { ndjson: 'application/x-ndjson; charset=utf-8', csv: 'text/csv; charset=utf-8' };

/**
 * Slices [from, to) as DateTime64(6) texts, newest first, from the row count of each day
 * (`d` 'YYYY-MM-DD', newest first): consecutive days until about `sliceRows` rows.
 */
export function planDaySlices(days: ReadonlyArray<{ d: string; n: number | string }>, sliceRows = SLICE_ROWS): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let to: string | undefined;
  let rows = 0;
  for (const [i, day] of days.entries()) {
    to ??= `${nextDay(day.d)} 00:00:00.000000`;
    rows += Number(day.n);
    if (rows >= sliceRows || i === days.length - 1) {
      out.push([`${day.d} 00:00:00.000000`, to]);
      to = undefined;
      rows = 0;
    }
  }
  return out;
}

function nextDay(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

/** One CSV record: strings as they are, numbers and booleans as JSON, arrays and objects as JSON text, null/absent empty. */
export function csvLine(columns: readonly string[], record: Record<string, unknown>): string {
  return `${columns.map((c) => csvField(record[c])).join(',')}\r\n`;
}

function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
