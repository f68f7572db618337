/**
 * SEARCH /1.0/survey/<survey_ids>/response/export: every response in selection, newest first (the
 * search order), streamed as NDJSON (the stored docs, one per line) or CSV (one column per
 * top-level field of a record; arrays and objects as JSON text).
 *
 * Memory stays flat whatever the number of responses:
 * - The selection is read in time slices of about SLICE_ROWS responses (whole UTC days, from a count
 *   per day), each one query ordered newest first: the engine sorts one slice at a time, never the
 *   whole selection (10M docs sorted at once would pass the query memory limit).
 * - The bytes flow with backpressure: the answer is a stream pulled by the client's socket, which
 *   pulls each slice's engine stream; a slow client slows the engine query, nothing piles up here.
 *   Each row's record is rebuilt from its `doc` and columns (stored-doc.ts), one batch of rows at a time.
 * - A client that goes away aborts the engine request, and the engine cancels the query
 *   (`cancel_http_readonly_queries_on_client_close`).
 * A failure after the first bytes (the engine stops mid-export) can only cut the answer short: the
 * connection is closed without the final chunk, which HTTP clients report as an error.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { DT64, ParamBag, compiled } from '../clickhouse/sql.ts';
import { fromSelection, QUERY_SETTINGS, type ResponseSelection } from './compile.ts';
import { responseRecordSchema, type ResponseRecord } from './record-schema.ts';
import { rebuildRecord, STORED_COLUMNS_SQL, type StoredColumns } from './stored-doc.ts';
import { csvLine, EXPORT_SLICE_SETTINGS, planDaySlices, SLICE_ROWS, type ExportFormat } from '../query/export.ts';

const EXPORT_SETTINGS: ClickHouseSettings = { ...QUERY_SETTINGS, ...EXPORT_SLICE_SETTINGS };

/** The CSV columns: the top-level fields of a response record, in the schema's order. */
export const CSV_COLUMNS: readonly string[] = Object.keys(responseRecordSchema.pipe[0].entries);

/**
 * The export of the selection as a byte stream, in `format`; `signal` aborts it (client gone). The
 * slices are planned before the answer starts, so a refused selection (too many rows to read, engine
 * down) is still an error status rather than a cut stream.
 */
export async function exportResponses(client: ClickHouseClient, selection: ResponseSelection, format: ExportFormat, signal: AbortSignal, sliceRows = SLICE_ROWS): Promise<Readable> {
  const plan = await slices(client, selection, signal, sliceRows);
  return Readable.from(format === 'csv' ? csvChunks(client, selection, plan, signal) : ndjsonChunks(client, selection, plan, signal), { objectMode: false });
}

/** Time slices [from, to) as DateTime64 texts, newest first, each about SLICE_ROWS responses. */
async function slices(client: ClickHouseClient, selection: ResponseSelection, signal: AbortSignal, sliceRows: number): Promise<Array<[string, string]>> {
  const bag = new ParamBag();
  // toDate32: created_at may be before 1970 (the API accepts 1900 on).
  const q = compiled(`SELECT toString(toDate32(created_at)) AS d, count() AS n ${fromSelection(selection, bag)} GROUP BY d ORDER BY d DESC`, bag);
  const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS, abort_signal: signal });
  return planDaySlices(await rs.json<{ d: string; n: string }>(), sliceRows);
}

function sliceQuery(selection: ResponseSelection, [from, to]: [string, string]) {
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  return compiled(`SELECT ${STORED_COLUMNS_SQL} ${source} AND created_at >= ${bag.add(from, DT64)} AND created_at < ${bag.add(to, DT64)} ORDER BY created_at DESC, id DESC`, bag);
}

/**
 * The records of every slice, one batch of rows (the lines of one chunk of the engine's answer) at
 * a time. The answer's own socket stream: destroying it (the client went away) cuts the engine's
 * query, where a pooled client's result stream would be drained to its end.
 */
async function* recordBatches(client: ClickHouseClient, selection: ResponseSelection, plan: Array<[string, string]>, signal: AbortSignal): AsyncGenerator<ResponseRecord[]> {
  for (const slice of plan) {
    const q = sliceQuery(selection, slice);
    const { stream } = await client.exec({ query: `${q.sql} FORMAT JSONEachRow`, query_params: { ...q.params }, clickhouse_settings: EXPORT_SETTINGS, abort_signal: signal });
    // A chunk may end inside a character: the decoder keeps its first bytes for the next one.
    const text = new StringDecoder('utf8');
    let rest = '';
    try {
      for await (const chunk of stream) {
        const lines = (rest + text.write(chunk as Buffer)).split('\n');
        rest = lines.pop()!;
        if (lines.length) yield lines.map((line) => rebuildRecord(JSON.parse(line) as StoredColumns));
      }
      if (rest) yield [rebuildRecord(JSON.parse(rest) as StoredColumns)];
    } finally {
      stream.destroy();
    }
  }
}

async function* ndjsonChunks(client: ClickHouseClient, selection: ResponseSelection, plan: Array<[string, string]>, signal: AbortSignal): AsyncGenerator<string> {
  for await (const records of recordBatches(client, selection, plan, signal)) {
    let text = '';
    for (const record of records) text += `${JSON.stringify(record)}\n`;
    yield text;
  }
}

async function* csvChunks(client: ClickHouseClient, selection: ResponseSelection, plan: Array<[string, string]>, signal: AbortSignal): AsyncGenerator<string> {
  yield `${CSV_COLUMNS.join(',')}\r\n`;
  for await (const records of recordBatches(client, selection, plan, signal)) {
    let text = '';
    for (const record of records) text += csvLine(CSV_COLUMNS, record as unknown as Record<string, unknown>);
    yield text;
  }
}
