/**
 * SEARCH /1.0/event: the events in scope, newest `timestamp` first (ties: later received_at, then
 * later item of the request, then event_id), `size` per page, `next_cursor` to continue.
 *
 * Two queries, one after the other, both through the 3 s polling cache:
 * 1. the count: `total` (every match, whatever the cursor) and, for a few windows ending at the
 *    page's start (the cursor position, else min(range end, now)): how many matches after the
 *    cursor lie in the last hour, day, 7, 30, 365 days;
 * 2. the page, read only from the smallest window that holds `size + 1` matches after the cursor
 *    (every event of the window is newer than any before it, so the page is the same as over the
 *    whole scope, but the engine sorts the window's rows, not every match). The extra row says
 *    whether a next page exists; it is not returned.
 * The sorting key of `events` starts (org_id, toDate(timestamp)), so both read only the
 * organization's days in range, and the window's days for the page.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { runDashboardQuery } from '../../clickhouse/result-cache.ts';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { formatDbMicros, parseInstantMicros } from '../../query/histogram.ts';
import { jsonObject } from '../../validation.ts';
import { decodeCursor, encodeCursor, type EventPosition } from './cursor.ts';
import { eventScopeEntries } from './filters.ts';
import { EVENT_COLUMNS, toEventRecord, type EventReadRow, type EventRecord } from './record.ts';
import { DT, EVENT_QUERY_SETTINGS, EventSource, type EventScope } from './source.ts';

export const MAX_EVENT_PAGE_SIZE = 1000;

export const eventSearchBodySchema = jsonObject({
  ...eventScopeEntries,
  size: v.optional(v.pipe(
    v.number('size must be an integer'), v.integer('size must be an integer'),
    v.minValue(0, `size must be 0 to ${MAX_EVENT_PAGE_SIZE}`), v.maxValue(MAX_EVENT_PAGE_SIZE, `size must be 0 to ${MAX_EVENT_PAGE_SIZE}`),
  ), 10),
  cursor: v.optional(v.pipe(v.string('cursor must be a string'), v.minLength(1, 'cursor must not be empty'), v.maxLength(1000, 'cursor is not valid'))),
}, 'the event search body');
export type EventSearchBody = v.InferOutput<typeof eventSearchBodySchema>;

/** The scope of an event read: the token's organization, the body's filters, range and cohort. */
export function eventScopeOf(orgId: string, body: Pick<EventSearchBody, 'filters_bool' | 'filters' | 'range' | 'cohort'>): EventScope {
  return { orgId, filtersBool: body.filters_bool, filters: body.filters, range: body.range, cohort: body.cohort };
}

export interface EventSearchInput extends EventScope {
  size: number;
  /** Continue strictly after this position. */
  after?: EventPosition;
}

export interface EventSearchResult {
  took: number;
  hits: { total: { value: number }; events: EventRecord[] };
  next_cursor?: string;
}

export const PAGE_WINDOWS_SECONDS = [3600, 86_400, 7 * 86_400, 30 * 86_400, 365 * 86_400] as const;

/** Ordering of every event read: newest first, ties by reception, item index, id. */
export const EVENT_ORDER = 'timestamp DESC, received_at DESC, seq DESC, event_id DESC';

/** Strictly after `after` in EVENT_ORDER (the `timestamp <=` lets the sorting key prune days). */
function afterSql(after: EventPosition | undefined, bag: ParamBag): string {
  if (!after) return '';
  const t = bag.add(after.timestamp, "DateTime64(3, 'UTC')");
  return (
    ` AND timestamp <= ${t} AND (timestamp, received_at, seq, event_id) < ` +
    `(${t}, ${bag.add(after.received_at, "DateTime64(3, 'UTC')")}, ${bag.add(after.seq, 'UInt16')}, ${bag.add(after.event_id, 'UUID')})`
  );
}

/** The window starts (DateTime64(6) texts, latest first) before min(cursor, range end, now). */
export function eventPageWindowStarts(input: EventSearchInput, nowMs: number): string[] {
  const candidates = [BigInt(nowMs) * 1000n];
  const end = input.range?.end !== undefined ? parseInstantMicros(input.range.end) : null;
  if (end !== null) candidates.push(end);
  const cursor = input.after ? parseInstantMicros(input.after.timestamp) : null;
  if (cursor !== null) candidates.push(cursor);
  const anchor = candidates.reduce((a, b) => (a < b ? a : b));
  return PAGE_WINDOWS_SECONDS.map((s) => formatDbMicros(anchor - BigInt(s) * 1_000_000n));
}

export function compileEventCount(input: EventSearchInput, windowStarts: readonly string[]): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(input, bag);
  const from = source.from();
  const after = input.after ? afterSql(input.after, bag).slice(' AND '.length) : 'true';
  const windows = windowStarts.map((w, i) => `, countIf(${after} AND timestamp >= ${bag.add(w, DT)}) AS w${i}`).join('');
  return compiled(`SELECT count() AS total${windows} ${from}`, bag);
}

/** `limit` events after `after`, newest first; with `windowStart`, only from that instant on. */
export function compileEventPage(input: EventScope & { after?: EventPosition }, limit: number, windowStart?: string): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(input, bag);
  const from = source.from();
  const window = windowStart === undefined ? '' : ` AND timestamp >= ${bag.add(windowStart, DT)}`;
  return compiled(
    `SELECT ${EVENT_COLUMNS.join(', ')} ${from}${afterSql(input.after, bag)}${window} ORDER BY ${EVENT_ORDER} LIMIT ${bag.add(limit, 'UInt32')}`,
    bag,
  );
}

type CountRow = { total: number | string } & Record<`w${number}`, number | string>;

/** The count, then the page from the smallest window that holds size + 1 matches. */
export async function runEventSearch(run: RunQuery, input: EventSearchInput): Promise<{ total: number; rows: EventReadRow[]; more: boolean }> {
  const windows = input.size > 0 ? eventPageWindowStarts(input, Date.now()) : [];
  const [counts] = await run<CountRow>(compileEventCount(input, windows));
  const total = Number(counts?.total ?? 0);
  if (input.size === 0 || total === 0) return { total, rows: [], more: false };
  const window = windows.find((_, i) => Number(counts?.[`w${i}`] ?? 0) >= input.size + 1);
  const rows = await run<EventReadRow>(compileEventPage(input, input.size + 1, window));
  return { total, rows: rows.slice(0, input.size), more: rows.length > input.size };
}

export async function searchEvents(client: ClickHouseClient, scope: EventScope, body: { size: number; cursor?: string }): Promise<EventSearchResult> {
  const started = performance.now();
  const after = body.cursor === undefined ? undefined : decodeCursor(body.cursor, scope);
  const run: RunQuery = (q) => runDashboardQuery(client, q, EVENT_QUERY_SETTINGS);
  const { total, rows, more } = await runEventSearch(run, { ...scope, size: body.size, after });
  const last = rows[rows.length - 1];
  return {
    took: Math.round(performance.now() - started),
    hits: { total: { value: total }, events: rows.map(toEventRecord) },
    ...(more && last
      ? { next_cursor: encodeCursor({ timestamp: last.timestamp, received_at: last.received_at, seq: Number(last.seq), event_id: last.event_id }, scope) }
      : {}),
  };
}
