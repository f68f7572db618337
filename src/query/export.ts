/**
 * The streaming exports (survey responses, events): a feature gives its guarded source, columns,
 * order and record (ExportSource), this file streams them as NDJSON or CSV (RFC 4180) and answers
 * the route (the Accept header's format, its content type).
 *
 * Memory stays flat whatever the number of rows:
 * - The selection is read in time slices of about SLICE_ROWS rows (whole UTC days, from a count
 *   per day), each one query ordered newest first: the engine sorts one slice at a time, never the
 *   whole selection (10M docs sorted at once would pass the query memory limit).
 * - The bytes flow with backpressure: the answer is a stream pulled by the client's socket, which
 *   pulls each slice's engine stream; a slow client slows the engine query, nothing piles up here.
 *   Each row's record is built from its JSON line, one batch of rows at a time.
 * - A client that goes away aborts the engine request, and the engine cancels the query
 *   (`cancel_http_readonly_queries_on_client_close`).
 * The slices are planned before the answer starts, so a refused selection (too many rows to read,
 * engine down) is still an error status rather than a cut stream. A failure after the first bytes
 * (the engine stops mid-export) can only cut the answer short: the connection is closed without
 * the final chunk, which HTTP clients report as an error.
 */

import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import accepts from 'accepts';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { DT64, ParamBag, compiled } from '../clickhouse/sql.ts';

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
 * An export route's answer (the handler wraps it in `answer()`): the rows in the format the Accept
 * header asks for, with its content type and the route's other `headers`.
 */
export async function exportAnswer(accept: string | undefined, open: (format: ExportFormat) => Promise<Readable>, headers: Record<string, string> = {}) {
  const format = exportFormatOf(accept);
  return { status: 200, body: await open(format), headers: { 'content-type': EXPORT_CONTENT_TYPE[format], ...headers } };
}

/**
 * The success of an export route's definition: NDJSON, one `record` a line (with an `example`), or
 * CSV with these columns when the Accept header asks for it, one line per `item`.
 */
export function exportSuccess(record: string, example: string, csvColumns: readonly string[], item: string) {
  return {
    status: 200,
    description: 'NDJSON (application/x-ndjson), or CSV (text/csv) when the Accept header asks for it',
    contentType: 'application/x-ndjson',
    schema: { type: 'string', description: `One ${record} per line` },
    example,
    alternatives: { 'text/csv': { schema: { type: 'string', description: `A header line (${csvColumns.join(',')}), then one line per ${item}` } } },
  };
}

/**
 * What a feature exports. `from` prints its guarded source (`FROM ... WHERE <selection>`, the
 * token's organization first); `time`, `columns` and `order` are the feature's constants, never a
 * request's text: the DateTime64 column the day slices cut, the SELECT list of a slice, its ORDER
 * BY (newest first, the feature's search order).
 */
export interface ExportSource<Row, Rec> {
  from(bag: ParamBag): string;
  time: string;
  columns: string;
  order: string;
  /** The feature's query settings; the slice queries add EXPORT_SLICE_SETTINGS. */
  settings: ClickHouseSettings;
  /** A row (one JSONEachRow line, parsed) -> the record sent. */
  record(row: Row): Rec;
  /** The CSV columns: top-level fields of a record, in order. */
  csvColumns: readonly string[];
}

/** The export of a source's rows as a byte stream, in `format`; `signal` aborts it (client gone). */
export async function exportRows<Row, Rec extends object>(client: ClickHouseClient, source: ExportSource<Row, Rec>, format: ExportFormat, signal: AbortSignal, sliceRows = SLICE_ROWS): Promise<Readable> {
  const plan = await slices(client, source, signal, sliceRows);
  return Readable.from(chunks(client, source, plan, format, signal), { objectMode: false });
}

/** Time slices [from, to) as DateTime64 texts, newest first, each about `sliceRows` rows. */
async function slices<Row, Rec>(client: ClickHouseClient, source: ExportSource<Row, Rec>, signal: AbortSignal, sliceRows: number): Promise<Array<[string, string]>> {
  const bag = new ParamBag();
  // toDate32: the time may be before 1970 (the API accepts 1900 on).
  const q = compiled(`SELECT toString(toDate32(${source.time})) AS d, count() AS n ${source.from(bag)} GROUP BY d ORDER BY d DESC`, bag);
  const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: source.settings, abort_signal: signal });
  return planDaySlices(await rs.json<{ d: string; n: string }>(), sliceRows);
}

function sliceQuery<Row, Rec>(source: ExportSource<Row, Rec>, [from, to]: [string, string]) {
  const bag = new ParamBag();
  const rows = source.from(bag);
  return compiled(`SELECT ${source.columns} ${rows} AND ${source.time} >= ${bag.add(from, DT64)} AND ${source.time} < ${bag.add(to, DT64)} ORDER BY ${source.order}`, bag);
}

/**
 * The records of every slice, one batch of rows (the lines of one chunk of the engine's answer) at
 * a time. The answer's own socket stream: destroying it (the client went away) cuts the engine's
 * query, where a pooled client's result stream would be drained to its end.
 */
async function* recordBatches<Row, Rec>(client: ClickHouseClient, source: ExportSource<Row, Rec>, plan: Array<[string, string]>, signal: AbortSignal): AsyncGenerator<Rec[]> {
  const settings = { ...source.settings, ...EXPORT_SLICE_SETTINGS };
  for (const slice of plan) {
    const q = sliceQuery(source, slice);
    const { stream } = await client.exec({ query: `${q.sql} FORMAT JSONEachRow`, query_params: { ...q.params }, clickhouse_settings: settings, abort_signal: signal });
    // A chunk may end inside a character: the decoder keeps its first bytes for the next one.
    const text = new StringDecoder('utf8');
    let rest = '';
    try {
      for await (const chunk of stream) {
        const lines = (rest + text.write(chunk as Buffer)).split('\n');
        rest = lines.pop()!;
        if (lines.length) yield lines.map((l) => source.record(JSON.parse(l) as Row));
      }
      if (rest) yield [source.record(JSON.parse(rest) as Row)];
    } finally {
      stream.destroy();
    }
  }
}

/** NDJSON, or CSV: its header line first; each batch of records one chunk of lines. */
async function* chunks<Row, Rec extends object>(client: ClickHouseClient, source: ExportSource<Row, Rec>, plan: Array<[string, string]>, format: ExportFormat, signal: AbortSignal): AsyncGenerator<string> {
  const csv = format === 'csv';
  if (csv) yield `${source.csvColumns.join(',')}\r\n`;
  for await (const records of recordBatches(client, source, plan, signal)) {
    let text = '';
    for (const record of records) text += csv ? csvLine(source.csvColumns, record as Record<string, unknown>) : `${JSON.stringify(record)}\n`;
    yield text;
  }
}

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
