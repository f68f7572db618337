/**
 * Search is two queries, one after the other (search.ts):
 * 1. compileSearchCount: `total`, the number of matching responses, and how many of them are at
 *    or after each of a few window starts (1 hour, 1 day, 7, 30 and 365 days before the range end,
 *    or before now when the range ends later or not at all).
 * 2. compileSearchPage: the page, newest first, reading only from the smallest window that holds
 *    the newest `offset + size` matches (pageWindowStart). Every response of the window is newer
 *    than any response before it, so the page is the same as over the whole selection; but the engine
 *    sorts the window's rows instead of every matching row's created_at and id.
 * The count with its window counts costs about a plain count() (bench/query/README.md, "Figures
 * behind the schema and the code").
 */
import { DT64, ParamBag, compiled, type CompiledQuery } from '../clickhouse/sql.ts';
import { pageWindowAnchor, smallestWindowHolding, windowCountColumns, windowStartsBefore } from '../query/page-windows.ts';
import { parseInstantMicros } from '../time/iso.ts';
import { fromSelection, type ResponseSelection } from './compile.ts';
import { STORED_COLUMNS_SQL } from './stored-doc.ts';

/** A response's place in the search order (created_at, id, both descending): what a cursor carries (cursor.ts). */
export interface ResponsePosition {
  /** DateTime64(6) text, as the engine prints it. */
  createdAt: string;
  id: string;
}

/** The window starts (DateTime64 texts, latest first) before min(range end, now, the cursor's position). */
export function pageWindowStarts(rangeEnd: string | undefined, nowMs: number, after?: ResponsePosition): string[] {
  return windowStartsBefore(pageWindowAnchor(rangeEnd, nowMs, after?.createdAt));
}

/**
 * The matches strictly after a cursor's position in the search order (created_at, id descending);
 * the `created_at <=` term lets the primary key skip what is newer.
 */
function afterSql(after: ResponsePosition, bag: ParamBag): string {
  const c = bag.add(after.createdAt, DT64);
  return `(created_at <= ${c} AND (created_at < ${c} OR id < ${bag.add(after.id, 'UUID')}))`;
}

/**
 * With windows, the count also returns `newest`, the created_at of the newest match: when every
 * match is older than the largest window (an org whose responses stopped over a year before the
 * range end), the page windows are taken before it instead (search.ts), not the whole selection.
 */
export function compileSearchCount(selection: ResponseSelection, windowStarts: readonly string[], after?: ResponsePosition): CompiledQuery {
  if (!after) {
    const weeks = wholeWeeksOf(selection.range, windowStarts);
    if (weeks.length > 0) return compileWeekSplitCount(selection, windowStarts, weeks);
  }
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  if (!after) {
    const windows = windowCountColumns('created_at', windowStarts, bag);
    const newest = windowStarts.length > 0 ? ', toString(max(created_at)) AS newest' : '';
    return compiled(`SELECT count() AS total${windows}${newest} ${source}`, bag);
  }
  // With a cursor: `total` is still every match; the windows, `newest` and `after_total` count
  // the matches after the cursor, which the page is taken from.
  const cond = afterSql(after, bag);
  const windows = windowCountColumns('created_at', windowStarts, bag, cond);
  const newest = windowStarts.length > 0 ? `, toString(maxIf(created_at, ${cond})) AS newest` : '';
  return compiled(`SELECT count() AS total, countIf(${cond}) AS after_total${windows}${newest} ${source}`, bag);
}

/** µs in a week, and the first Monday after the epoch (1970-01-05 00:00 UTC). */
const MICROS_PER_WEEK = 7n * 86_400_000_000n;
const FIRST_MONDAY = 4n * 86_400_000_000n;
/**
 * The Mondays a week split may name: survey_responses' partition key toMonday(created_at) is a
 * Date (1970-01-01 .. 2149-06-06), so weeks well inside those years only (1971-01-04 .. 2148-01-22).
 */
const MIN_SPLIT_MONDAY = FIRST_MONDAY + 52n * MICROS_PER_WEEK;
const MAX_SPLIT_MONDAY = FIRST_MONDAY + 9290n * MICROS_PER_WEEK;
/** At most this many whole weeks are named (~10 years); older ones are counted with the range test. */
const MAX_SPLIT_WEEKS = 520;

/**
 * The whole weeks (their Mondays, µs, UTC) of a count that need no created_at test: every instant of
 * the week [Monday, Monday + 7 days) is inside the range (both bounds given), no window start falls
 * inside it (each window counts it whole or not at all), and it is not before the last window start
 * (so that `newest`, read only when no match is at or after that start, comes from the other weeks).
 * Newest first, at most MAX_SPLIT_WEEKS.
 */
export function wholeWeeksOf(range: ResponseSelection['range'], windowStarts: readonly string[]): bigint[] {
  const start = range?.start === undefined ? null : parseInstantMicros(range.start);
  const end = range?.end === undefined ? null : parseInstantMicros(range.end);
  if (start === null || end === null) return [];
  const windows = windowStarts.map((w) => parseInstantMicros(w));
  if (windows.some((w) => w === null)) return [];
  let low = start > MIN_SPLIT_MONDAY ? start : MIN_SPLIT_MONDAY;
  const last = windows[windows.length - 1];
  if (last !== undefined && last !== null && last > low) low = last;
  const weeks: bigint[] = [];
  // The last Monday whose week ends inside the range, then back to the first at or after `low`.
  let monday = floorWeek(end + 1n - MICROS_PER_WEEK);
  if (monday > MAX_SPLIT_MONDAY) monday = MAX_SPLIT_MONDAY;
  for (; monday >= low && weeks.length < MAX_SPLIT_WEEKS; monday -= MICROS_PER_WEEK) {
    const next = monday + MICROS_PER_WEEK;
    if (windows.some((w) => w !== null && w > monday && w < next)) continue;
    weeks.push(monday);
  }
  return weeks;
}

/** The Monday 00:00 UTC at or before an instant (µs). */
function floorWeek(t: bigint): bigint {
  const d = t - FIRST_MONDAY;
  const q = d / MICROS_PER_WEEK;
  return FIRST_MONDAY + (d % MICROS_PER_WEEK < 0n ? q - 1n : q) * MICROS_PER_WEEK;
}

/**
 * The partition id of a week of survey_responses: its partition key is toMonday(created_at)
 * (schema/004), a Date, whose partition id is the date as YYYYMMDD. test/integration/search-weeks.test.ts
 * fails if the key or the id's form changes.
 */
export function weekPartitionId(monday: bigint): string {
  return new Date(Number(monday / 1000n)).toISOString().slice(0, 10).replaceAll('-', '');
}

/**
 * The count (compileSearchCount's row, without a cursor) of a range holding whole weeks: the whole
 * weeks' matches are counted by partition (`_partition_id IN`), without testing created_at on their
 * rows, and the rest of the range (the edge weeks, the weeks a window start cuts) as before, in a
 * second read of the same snapshot (enable_shared_storage_snapshot_in_query, settings.ts). Reading and
 * testing created_at was ~100 of the ~350 ms of engine CPU of a count over 10M responses
 * (bench/query/README.md, "respondent alias contains, whole weeks"). Each version of a response
 * shares its created_at, so FINAL collapses versions within one partition, one branch.
 * A window counts a whole week when its Monday is at or after the window's start (no start falls
 * inside one). `newest` comes from the other weeks only: it is read (search.ts) only when no match
 * is at or after the last window start, and every whole week is at or after it, so then it holds no
 * match and `newest` is the newest match's created_at as before.
 */
function compileWeekSplitCount(selection: ResponseSelection, windowStarts: readonly string[], weeks: readonly bigint[]): CompiledQuery {
  const bag = new ParamBag();
  const ids = bag.add(weeks.map(weekPartitionId), 'Array(String)');
  const whole = fromSelection({ ...selection, range: undefined }, bag);
  const wholeWindows = windowStarts.map((w, i) => {
    const from = parseInstantMicros(w)!;
    const inside = weeks.filter((m) => m >= from);
    const counted = inside.length === weeks.length ? 'count()' : inside.length === 0 ? '0' : `countIf(_partition_id IN ${bag.add(inside.map(weekPartitionId), 'Array(String)')})`;
    return `, ${counted} AS w${i}`;
  }).join('');
  const rest = fromSelection(selection, bag);
  const restWindows = windowCountColumns('created_at', windowStarts, bag);
  const newest = windowStarts.length > 0;
  const wholeSql = `SELECT 0 AS r, count() AS total${wholeWindows}${newest ? `, toDateTime64(0, 6, 'UTC') AS newest` : ''} ${whole} AND _partition_id IN ${ids}`;
  const restSql = `SELECT 1 AS r, count() AS total${restWindows}${newest ? ', max(created_at) AS newest' : ''} ${rest} AND NOT (_partition_id IN ${ids})`;
  const sums = windowStarts.map((_, i) => `, sum(w${i}) AS w${i}`).join('');
  return compiled(`SELECT sum(total) AS total${sums}${newest ? ', toString(maxIf(newest, r = 1)) AS newest' : ''} FROM (${wholeSql} UNION ALL ${restSql})`, bag);
}

/**
 * One page of records (their `doc` and the columns that rebuild them: stored-doc.ts), newest first,
 * with each one's position (`c`, `i`: the next cursor); with
 * `windowStart` (a DateTime64 text), only from that instant on; with `after`, only after it.
 */
export function compileSearchPage(selection: ResponseSelection, size: number, offset: number, windowStart?: string, after?: ResponsePosition): CompiledQuery {
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  const window = windowStart === undefined ? '' : ` AND created_at >= ${bag.add(windowStart, DT64)}`;
  const position = after ? ` AND ${afterSql(after, bag)}` : '';
  return compiled(
    `SELECT ${STORED_COLUMNS_SQL}, toString(created_at) AS c, toString(id) AS i ${source}${window}${position} ORDER BY created_at DESC, id DESC ` +
      `LIMIT ${bag.add(size, 'UInt32')} OFFSET ${bag.add(offset, 'UInt32')}`,
    bag,
  );
}

/**
 * The count row: `total`, `w<i>` the matches at or after window start i, and `newest` (with
 * windows); with a cursor, `after_total` (the matches after it), which `w<i>` and `newest` count.
 */
export type SearchCountRow = { total: number | string; after_total?: number | string; newest?: string } & Record<`w${number}`, number | string>;

/**
 * The smallest window that holds the newest `offset + size` matches (or every match, when there
 * are fewer), or undefined (the whole selection) when none does.
 */
export function pageWindowStart(row: SearchCountRow | undefined, windowStarts: readonly string[], offset: number, size: number): string | undefined {
  return row ? smallestWindowHolding(row, windowStarts, Math.min(offset + size, Number(row.total))) : undefined;
}
