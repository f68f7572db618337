/**
 * SEARCH /1.0/event/export: every event in selection, newest first (the event search order), streamed
 * as NDJSON (one record per line, as event search returns them) or CSV (one column per top-level
 * field of a record; `properties` and `context` as JSON text). The streaming is src/query/export.ts,
 * as for the survey export: day slices of about SLICE_ROWS events, planned before the answer
 * starts; each slice one engine query whose rows flow with backpressure; a client that goes away
 * aborts the query. Day slices follow the events' sorting key (org_id, toDate(timestamp), ...).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Readable } from 'node:stream';
import { exportRows, SLICE_ROWS, type ExportFormat, type ExportSource } from '../../query/export.ts';
import { EVENT_COLUMNS, toEventRecord, type EventReadRow, type EventRecord } from './record.ts';
import { EVENT_ORDER } from './search.ts';
import { EventSource, type EventSelection } from './source.ts';
import { READ_SETTINGS } from '../../query/settings.ts';

/** The CSV columns: every top-level field an event record can have. */
export const EVENT_CSV_COLUMNS = [
  'event_id', 'type', 'event_name', 'user_id', 'user_alias', 'anonymous', 'timestamp', 'received_at', 'properties', 'context',
  'group_type', 'group_name', 'url', 'screen_name', 'agent_id', 'conversation_id', 'copilot_session_id', 'prompt', 'response',
  'rating', 'rating_scale', 'message_id',
] as const;

/** The selection's events, sliced on timestamp, in the event search order. */
const exportSource = (selection: EventSelection): ExportSource<EventReadRow, EventRecord> => ({
  from: (bag) => new EventSource(selection, bag).from(),
  time: 'timestamp',
  columns: EVENT_COLUMNS.join(', '),
  order: EVENT_ORDER,
  settings: READ_SETTINGS,
  record: toEventRecord,
  csvColumns: EVENT_CSV_COLUMNS,
});

export function exportEvents(client: ClickHouseClient, selection: EventSelection, format: ExportFormat, signal: AbortSignal, sliceRows = SLICE_ROWS): Promise<Readable> {
  return exportRows(client, exportSource(selection), format, signal, sliceRows);
}
