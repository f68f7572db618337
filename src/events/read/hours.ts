/**
 * Event counts from the hours: the `event_counts` projection of `events` (schema/091) counts the
 * events per (organization, hour, type, event_name, anonymous); the engine keeps it exact under
 * inserts, merges and user deletions. A read whose levels and filters only need those columns
 * (timestamp levels, type, event_name; filters on type and event_name) and whose metric is the
 * count reads:
 * - every WHOLE hour from the projection (about 24 rows per type and name a day instead of every
 *   event), each standing for its count at its hour start;
 * - the PARTIAL hours from the rows: the hours the range starts or ends inside, and those holding
 *   an edge that splits them (a histogram bucket start, a page window start): bucket edges sit at
 *   the range start plus whole hours, days or months, so at most one hour per edge. The engine
 *   reads them from the `event_times` projection (the rows ordered by time), only the granules
 *   of those hours.
 * An hour is whole when all of it lies in the range and no edge falls strictly inside it; then
 * every event of it lies in the same bucket and window as its start, and the union of both parts
 * holds every event in selection exactly once. Both parts are read by one query, which sees one
 * snapshot of the table (READ_SETTINGS), so a concurrent INSERT is in both or in neither.
 */
import { DT64 } from '../../clickhouse/sql.ts';
import { MICROS_PER_HOUR, formatDbMicros, parseInstantMicros, type HistogramPlan } from '../../query/histogram.ts';
import type { EventSource, EventSelection } from './source.ts';

/** The selection can be evaluated on the projection's columns: filters on type and event_name only, no cohort (a per-user condition). */
export function hoursServe(selection: EventSelection): boolean {
  return !selection.cohort && selection.filters.every((f) => f.kind === 'type' || f.kind === 'event_name');
}

/** The instants where a plan's buckets split time: every bucket start and the series' end. */
export function planEdges(plans: readonly (HistogramPlan | undefined)[]): bigint[] {
  return plans.flatMap((p) => (p ? [...p.starts, p.boundary] : []));
}

const floorHour = (t: bigint) => t - (((t % MICROS_PER_HOUR) + MICROS_PER_HOUR) % MICROS_PER_HOUR);

export interface HourSplit {
  /** Whole hours are [from, to) (µs hour starts; undefined: unbounded), except the partial ones. */
  from?: bigint;
  to?: bigint;
  /** Hour starts read from the rows, ascending, distinct. */
  partial: bigint[];
}

/** Splits the range [start, end] (µs, end inclusive; undefined: unbounded) into whole and partial hours at `edges`. */
export function splitHours(start: bigint | undefined, end: bigint | undefined, edges: readonly bigint[]): HourSplit {
  const partial = new Set<bigint>();
  let from: bigint | undefined;
  let to: bigint | undefined;
  if (start !== undefined) {
    from = floorHour(start);
    if (from !== start) {
      partial.add(from);
      from += MICROS_PER_HOUR;
    }
  }
  if (end !== undefined) {
    // The hour holding `end` is whole only when `end` is its last microsecond.
    to = floorHour(end + 1n);
    if (to !== end + 1n) partial.add(to);
  }
  for (const e of edges) {
    const h = floorHour(e);
    if (h !== e && (start === undefined || e > start) && (end === undefined || e <= end)) partial.add(h);
  }
  const inRange = (h: bigint) => (start === undefined || h + MICROS_PER_HOUR > start) && (end === undefined || h <= end);
  return { from, to, partial: [...partial].filter(inRange).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
}

/** The selection's range split at `edges` (µs). */
export function splitSelectionHours(selection: EventSelection, edges: readonly bigint[]): HourSplit {
  const micros = (t: string | undefined) => (t === undefined ? undefined : parseInstantMicros(t) ?? undefined);
  return splitHours(micros(selection.range?.start), micros(selection.range?.end), edges);
}

/**
 * The conditions of both parts are written for what the engine's index analysis costs, which it
 * pays for every part, every projection that could answer the query and the table itself, before
 * reading anything: it came to a third of the read's engine CPU (bench/events/README.md).
 * - The hour as `toStartOfHour(timestamp)`, a DateTime: the key of the event_counts projection
 *   itself, one monotonic function of event_times' and the partitions' `timestamp`.
 * - `identity(...)` hides a condition from the analysis where it prunes nothing: the whole hours'
 *   `NOT IN` the partial ones (about one hour in 24), and the partial hours' range bounds (the set
 *   of the partial hours prunes within them; the bounds still filter each row, and the day bounds
 *   of the other reads are left out: the set implies them).
 */
const HOUR_SQL = 'toStartOfHour(timestamp)';
const DATETIME = "DateTime('UTC')";
const hourText = (t: bigint) => formatDbMicros(t).slice(0, 19);

/** What each part of `hoursSource` computes per group by default: its events, `n`. */
const COUNT = 'count() AS n';

/** The instant of a whole hour's projection row: its hour start, in the type of `timestamp`. */
const HOUR_START_SQL = "toDateTime64(toStartOfHour(timestamp), 3, 'UTC')";

/**
 * `FROM (...)`: rows (g1..gn, n): the selection's events grouped by `keys(t)`, n events per group,
 * where `keys` maps an instant column to the read's key expressions (of that instant, `type` and
 * `event_name` only). The whole hours are grouped from the projection, each hour's events at its
 * hour start (whole hours lie in one bucket and window, so the start stands for every event of
 * it); the partial hours from the rows, at their own timestamps. Each part is grouped by the
 * read's own keys, not by the projection's: the projection holds a row per hour, type, name and
 * anonymous in every data part, far more than the read's buckets, and the engine answers a GROUP
 * BY of expressions of the projection's keys from the projection. The caller sums n per group.
 * `aggregates`: what each part computes per group (`n` among them), the same in both parts
 * (user-hours.ts adds the users' bitmap, served by the event_user_hours projection).
 * Placeholders go to the source's bag.
 */
export function hoursSource(source: EventSource, edges: readonly bigint[], keys: (t: string) => readonly string[], split = splitSelectionHours(source.selection, edges), aggregates = COUNT): string {
  return `FROM (${hoursParts(source, edges, groupedPart(keys, aggregates), split)})`;
}

/** What one part of the hours selects and groups by, given its instant column `t` (the hour start of the whole hours, `timestamp` for the partial ones). */
export type HoursPart = (t: string, part: 'whole' | 'partial') => { select: string; groupBy: readonly string[]; having?: string };

/** Each part grouped by `keys(t)` as g1..gn, computing `aggregates` (hoursSource's rows). */
export function groupedPart(keys: (t: string) => readonly string[], aggregates = COUNT): HoursPart {
  return (t) => {
    const ks = keys(t);
    // HAVING: a GROUP BY whose keys the engine folds to constants (the NULL bucket of an empty
    // series) answers one row of 0 events even when no event matches; the rows path has none.
    return { select: [...ks.map((k, i) => `${k} AS g${i + 1}`), aggregates].join(', '), groupBy: ks.map((_, i) => `g${i + 1}`), having: 'n > 0' };
  };
}

/**
 * hoursSource's parts without the layer above them: the whole hours' grouped query, then (when
 * there are partial hours) `UNION ALL` the partial hours' one, each as `part` says (the same
 * columns in both, in the same order; `n`, the events, among them). A group may come in a row of
 * each part: the reader sums them (hours-buckets.ts does, in the service). `limit`: each part
 * returns at most that many rows (a placeholder), so the reader can tell a complete answer (fewer
 * rows than `limit`) from one it must read otherwise.
 */
export function hoursParts(source: EventSource, edges: readonly bigint[], part: HoursPart, split = splitSelectionHours(source.selection, edges), limit?: string): string {
  const { bag } = source;
  // The scope is the range and the filters: no cohort (hoursServe, userHoursServe).
  if (source.selection.cohort) throw new Error('hoursSource: a cohort is a condition per user, not one of the hours');
  const filters = source.filtersSql();
  const hours = (ts: readonly bigint[]) => bag.add(ts.map(hourText), `Array(${DATETIME})`);
  const grouped = (t: string, which: 'whole' | 'partial', from: string) => {
    const { select, groupBy, having } = part(t, which);
    return `SELECT ${select} ${from}${groupBy.length ? ` GROUP BY ${groupBy.join(', ')}${having ? ` HAVING ${having}` : ''}` : ''}${limit ? ` LIMIT ${limit}` : ''}`;
  };
  const whole: string[] = [];
  if (split.from !== undefined) whole.push(`${HOUR_SQL} >= ${bag.add(hourText(split.from), DATETIME)}`);
  if (split.to !== undefined) whole.push(`${HOUR_SQL} < ${bag.add(hourText(split.to), DATETIME)}`);
  if (split.partial.length) whole.push(`identity(${HOUR_SQL}) NOT IN ${hours(split.partial)}`);
  if (filters) whole.push(filters);
  const wholeHours = grouped(HOUR_START_SQL, 'whole', `${source.org.from('events')}${whole.map((c) => ` AND ${c}`).join('')}`);
  if (split.partial.length === 0) return wholeHours;
  // One set lookup per row (an OR of one range per partial hour cost a comparison per hour per
  // row, and its analysis far more); the engine also prunes event_times' granules with it (its
  // key is the timestamp).
  const { start, end } = source.selection.range ?? {};
  const partial = [
    `${HOUR_SQL} IN ${hours(split.partial)}`,
    ...(start !== undefined ? [`identity(timestamp) >= ${bag.add(start, DT64)}`] : []),
    ...(end !== undefined ? [`identity(timestamp) <= ${bag.add(end, DT64)}`] : []),
    ...(filters ? [filters] : []),
  ];
  const rows = grouped('timestamp', 'partial', `${source.org.from('events')} AND ${partial.join(' AND ')}`);
  return `${wholeHours} UNION ALL ${rows}`;
}
