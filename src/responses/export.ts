/**
 * SEARCH /1.0/survey/<survey_ids>/response/export: every response in selection, newest first (the
 * search order), streamed as NDJSON (the stored docs, one per line) or CSV (one column per
 * top-level field of a record; arrays and objects as JSON text). The streaming, in day slices with
 * flat memory, is src/query/export.ts; each row's record is rebuilt from its `doc` and columns
 * (stored-doc.ts).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Readable } from 'node:stream';
import { fromSelection, QUERY_SETTINGS, type ResponseSelection } from './compile.ts';
import { responseRecordSchema, type ResponseRecord } from './record-schema.ts';
import { rebuildRecord, STORED_COLUMNS_SQL, type StoredColumns } from './stored-doc.ts';
import { exportRows, SLICE_ROWS, type ExportFormat, type ExportSource } from '../query/export.ts';

/** The CSV columns: the top-level fields of a response record, in the schema's order. */
export const CSV_COLUMNS: readonly string[] = Object.keys(responseRecordSchema.pipe[0].entries);

/** The selection's responses, sliced on created_at, in the search order. */
const exportSource = (selection: ResponseSelection): ExportSource<StoredColumns, ResponseRecord> => ({
  from: (bag) => fromSelection(selection, bag),
  time: 'created_at',
  columns: STORED_COLUMNS_SQL,
  order: 'created_at DESC, id DESC',
  settings: QUERY_SETTINGS,
  record: rebuildRecord,
  csvColumns: CSV_COLUMNS,
});

/** The export of the selection as a byte stream, in `format`; `signal` aborts it (client gone). */
export function exportResponses(client: ClickHouseClient, selection: ResponseSelection, format: ExportFormat, signal: AbortSignal, sliceRows = SLICE_ROWS): Promise<Readable> {
  return exportRows(client, exportSource(selection), format, signal, sliceRows);
}
