/**
 * SEARCH /1.0/event: the events in selection, newest `timestamp` first (ties: later received_at, then
 * later item of the request, then event_id), `size` per page, `next_cursor` to continue.
 *
 * Two queries, one after the other, cached together as one request (src/query/request-cache.ts):
 * 1. the count: `total` (every match, whatever the cursor), with a cursor `after_total` (the
 *    matches after it), and the page windows' counts (src/query/page-windows.ts);
 * 2. the page, read only from the smallest window that holds the `size + 1` matches it needs
 *    (or every match after the cursor, when there are fewer). The extra row says whether a next
 *    page exists; it is not returned.
 * The sorting key of `events` starts (org_id, toDate(timestamp)), so both read only the
 * organization's days in range, and the window's days for the page.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { DT64, ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { pageWindowAnchor, smallestWindowHolding, windowCountColumns, windowStartsBefore, type WindowCounts } from '../../query/page-windows.ts';
import { cachedRequest } from '../../query/request-cache.ts';
import { EVENT_SEARCH_SETTINGS } from './settings.ts';
import { jsonObject } from '../../validation.ts';
import { decodeCursor, encodeCursor, type EventPosition } from './cursor.ts';
import { eventSelectionEntries } from './filters.ts';
import { EVENT_COLUMNS, toEventRecord, type EventReadRow, type EventRecord } from './record.ts';
import { daysFrom, daysTo, EventSource, type EventSelection } from './source.ts';
import { hoursServe, hoursSource } from './hours.ts';
import { parseInstantMicros } from '../../query/histogram.ts';

export const MAX_EVENT_PAGE_SIZE = 1000;

export const eventSearchBodySchema = jsonObject({
  ...eventSelectionEntries,
  size: v.optional(v.pipe(
    v.number('size must be an integer'), v.integer('size must be an integer'),
    v.minValue(0, `size must be 0 to ${MAX_EVENT_PAGE_SIZE}`), v.maxValue(MAX_EVENT_PAGE_SIZE, `size must be 0 to ${MAX_EVENT_PAGE_SIZE}`),
  ), 10),
  cursor: v.optional(v.pipe(v.string('cursor must be a string'), v.minLength(1, 'cursor must not be empty'), v.maxLength(1000, 'cursor is not valid'))),
}, 'the event search body');
export type EventSearchBody = v.InferOutput<typeof eventSearchBodySchema>;

/** The selection of an event read: the token's organization, the body's filters, range and cohort. */
export function eventSelectionOf(orgId: string, body: Pick<EventSearchBody, 'filters_bool' | 'filters' | 'range' | 'cohort'>): EventSelection {
  return { orgId, filtersBool: body.filters_bool, filters: body.filters, range: body.range, cohort: body.cohort };
}

export interface EventSearchInput extends EventSelection {
  size: number;
  /** Continue strictly after this position. */
  after?: EventPosition;
}

export interface EventSearchResult {
  took: number;
  hits: { total: { value: number }; events: EventRecord[] };
  next_cursor?: string;
}

/** Ordering of every event read: newest first, ties by reception, item index, id. */
export const EVENT_ORDER = 'timestamp DESC, received_at DESC, seq DESC, event_id DESC';

/** Strictly after `after` in EVENT_ORDER (its day bound lets the sorting key prune days). */
function afterSql(after: EventPosition | undefined, bag: ParamBag): string {
  if (!after) return '';
  const t = bag.add(after.timestamp, "DateTime64(3, 'UTC')");
  return (
    ` AND ${daysTo(after.timestamp, bag)} AND timestamp <= ${t} AND (timestamp, received_at, seq, event_id) < ` +
    `(${t}, ${bag.add(after.received_at, "DateTime64(3, 'UTC')")}, ${bag.add(after.seq, 'UInt16')}, ${bag.add(after.event_id, 'UUID')})`
  );
}

/** The page windows' starts (DateTime64(6) texts, latest first) before min(cursor, range end, now). */
export function eventPageWindowStarts(input: EventSearchInput, nowMs: number): string[] {
  return windowStartsBefore(pageWindowAnchor(input.range?.end, nowMs, input.after?.timestamp));
}

/** `total`, with a cursor `after_total`, and the window counts `w<i>` (of the matches after the cursor). */
export function compileEventCount(input: EventSearchInput, windowStarts: readonly string[]): CompiledQuery {
  const bag = new ParamBag();
  const from = new EventSource(input, bag).from();
  const after = input.after ? afterSql(input.after, bag).slice(' AND '.length) : undefined;
  const afterTotal = after ? `, countIf(${after}) AS after_total` : '';
  return compiled(`SELECT count() AS total${afterTotal}${windowCountColumns('timestamp', windowStarts, bag, after)} ${from}`, bag);
}

/**
 * The same count from the hours (hours.ts), when they can answer it: no cursor, filters on type
 * and event_name only. The window starts are the edges that split hours.
 */
export function compileEventCountFromHours(input: EventSearchInput, windowStarts: readonly string[]): CompiledQuery {
  const bag = new ParamBag();
  // Grouped by one flag per window (its start is an edge: a whole hour lies on one side of it).
  const starts = windowStarts.map((w) => bag.add(w, DT64));
  const from = hoursSource(new EventSource(input, bag), windowStarts.map((w) => parseInstantMicros(w)!), (t) => starts.map((w) => `${t} >= ${w}`));
  const windows = starts.map((_, i) => `, sumIf(n, g${i + 1}) AS w${i}`).join('');
  return compiled(`SELECT sum(n) AS total${windows} ${from}`, bag);
}

/** `limit` events after `after`, newest first; with `windowStart`, only from that instant on. */
export function compileEventPage(input: EventSelection & { after?: EventPosition }, limit: number, windowStart?: string): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(input, bag);
  const from = source.from();
  const window = windowStart === undefined ? '' : ` AND ${daysFrom(windowStart, bag)} AND timestamp >= ${bag.add(windowStart, DT64)}`;
  return compiled(
    `SELECT ${EVENT_COLUMNS.join(', ')} ${from}${afterSql(input.after, bag)}${window} ORDER BY ${EVENT_ORDER} LIMIT ${bag.add(limit, 'UInt32')}`,
    bag,
  );
}

type CountRow = { total: number | string; after_total?: number | string } & WindowCounts;

/**
 * The count, then the page from the smallest window that holds the size + 1 matches it needs.
 * The page of the newest window is asked beside the count: when it holds size + 1 matches, those
 * are the newest size + 1 of the selection (every match outside it is older), so it is the page
 * whatever the count says; otherwise the page is asked again from the window the count chose.
 */
export async function runEventSearch(run: RunQuery, input: EventSearchInput, options: { hours?: boolean } = {}): Promise<{ total: number; rows: EventReadRow[]; more: boolean }> {
  const windows = input.size > 0 ? eventPageWindowStarts(input, Date.now()) : [];
  const fromHours = options.hours !== false && !input.after && hoursServe(input);
  const newest = windows.length ? run<EventReadRow>(compileEventPage(input, input.size + 1, windows[0])) : undefined;
  // Awaited below or dropped: a failure of the count is the answer's failure, not an unhandled one.
  newest?.catch(() => undefined);
  const [counts] = await run<CountRow>(fromHours ? compileEventCountFromHours(input, windows) : compileEventCount(input, windows));
  const total = Number(counts?.total ?? 0);
  const available = input.after ? Number(counts?.after_total ?? 0) : total;
  if (input.size === 0 || available === 0) return { total, rows: [], more: false };
  const early = await newest;
  const window = smallestWindowHolding(counts, windows, Math.min(input.size + 1, available));
  const rows = early && (early.length > input.size || window === windows[0]) ? early : await run<EventReadRow>(compileEventPage(input, input.size + 1, window));
  return { total, rows: rows.slice(0, input.size), more: rows.length > input.size };
}

/** The answer and its watermark: the instant its run started (every event acknowledged before it is counted), the cached run's when served from the polling window. */
export async function searchEvents(client: ClickHouseClient, selection: EventSelection, body: { size: number; cursor?: string }): Promise<{ result: EventSearchResult; watermark: number }> {
  const started = performance.now();
  const after = body.cursor === undefined ? undefined : decodeCursor(body.cursor, selection);
  const input = { ...selection, size: body.size, after };
  const { value: { total, rows, more }, at } = await cachedRequest(client, 'event search', input, EVENT_SEARCH_SETTINGS, ({ run }) => runEventSearch(run, input));
  const last = rows[rows.length - 1];
  const result: EventSearchResult = {
    took: Math.round(performance.now() - started),
    hits: { total: { value: total }, events: rows.map(toEventRecord) },
    ...(more && last
      ? { next_cursor: encodeCursor({ timestamp: last.timestamp, received_at: last.received_at, seq: Number(last.seq), event_id: last.event_id }, selection) }
      : {}),
  };
  return { result, watermark: at };
}
