/**
 * SEARCH /1.0/event/export: every event in selection, newest first (the event search order), streamed
 * as NDJSON (one record per line, as event search returns them) or CSV (one column per top-level
 * field of a record; `properties` and `context` as JSON text). Like the survey export
 * (src/responses/export.ts): day slices of about SLICE_ROWS events, planned before the answer
 * starts; each slice one engine query whose rows flow with backpressure; a client that goes away
 * aborts the query. Day slices follow the events' sorting key (org_id, toDate(timestamp), ...).
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { DT64, ParamBag, compiled } from '../../clickhouse/sql.ts';
import { csvLine, EXPORT_SLICE_SETTINGS, planDaySlices, SLICE_ROWS, type ExportFormat } from '../../query/export.ts';
import { EVENT_COLUMNS, toEventRecord, type EventReadRow } from './record.ts';
import { EVENT_ORDER } from './search.ts';
import { EventSource, type EventSelection } from './source.ts';
import { READ_SETTINGS } from '../../query/settings.ts';

const EXPORT_SETTINGS: ClickHouseSettings = { ...READ_SETTINGS, ...EXPORT_SLICE_SETTINGS };

/** The CSV columns: every top-level field an event record can have. */
export const EVENT_CSV_COLUMNS = [
  'event_id', 'type', 'event_name', 'user_id', 'user_alias', 'anonymous', 'timestamp', 'received_at', 'properties', 'context',
  'group_type', 'group_name', 'url', 'screen_name', 'agent_id', 'conversation_id', 'copilot_session_id', 'prompt', 'response',
  'rating', 'rating_scale', 'message_id',
] as const;

export async function exportEvents(client: ClickHouseClient, selection: EventSelection, format: ExportFormat, signal: AbortSignal, sliceRows = SLICE_ROWS): Promise<Readable> {
  const bag = new ParamBag();
  const days = compiled(`SELECT toString(toDate32(timestamp)) AS d, count() AS n ${new EventSource(selection, bag).from()} GROUP BY d ORDER BY d DESC`, bag);
  const rs = await client.query({ query: days.sql, query_params: { ...days.params }, format: 'JSONEachRow', clickhouse_settings: READ_SETTINGS, abort_signal: signal });
  const plan = planDaySlices(await rs.json<{ d: string; n: string }>(), sliceRows);
  return Readable.from(chunks(client, selection, plan, format, signal), { objectMode: false });
}

async function* chunks(client: ClickHouseClient, selection: EventSelection, plan: Array<[string, string]>, format: ExportFormat, signal: AbortSignal): AsyncGenerator<string> {
  if (format === 'csv') yield `${EVENT_CSV_COLUMNS.join(',')}\r\n`;
  for (const [from, to] of plan) {
    const bag = new ParamBag();
    const source = new EventSource(selection, bag).from();
    const q = compiled(`SELECT ${EVENT_COLUMNS.join(', ')} ${source} AND timestamp >= ${bag.add(from, DT64)} AND timestamp < ${bag.add(to, DT64)} ORDER BY ${EVENT_ORDER}`, bag);
    const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: EXPORT_SETTINGS, abort_signal: signal });
    const stream = rs.stream<EventReadRow>();
    try {
      for await (const rows of stream) {
        let text = '';
        for (const row of rows) {
          const record = toEventRecord(row.json<EventReadRow>());
          text += format === 'csv' ? csvLine(EVENT_CSV_COLUMNS, record as unknown as Record<string, unknown>) : `${JSON.stringify(record)}\n`;
        }
        yield text;
      }
    } finally {
      stream.destroy();
    }
  }
}
