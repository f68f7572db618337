/**
 * The read side of the rollups (schema/020-survey-rollups.sql): which part of a request's selection
 * is answered from survey_rollup, and the SQL of both parts.
 *
 * A request is rollup-served when its filters only test columns the rollup groups by
 * (completion, language, channel_id: any operator, AND or OR), or are one `eq` answer filter alone
 * or ANDed with such filters (answer-rollups.ts), and, for an aggregation, when its
 * rules are completion, survey_id, end_reason, created_at histograms whose buckets start on whole
 * hours, and at most one `answer` level. Its created_at range [start, end] (µs, end inclusive)
 * is then cut in three:
 *   - the whole UTC calendar months inside it: month rows (when every date level's buckets are
 *     whole months);
 *   - the other whole UTC days: day rows (when every date level's buckets start on whole days);
 *   - the other whole hours: hour rows;
 *   - the partial hours at both ends: survey_responses.
 * A slice whose maintenance is pending (a write in flight or interrupted) is read from
 * survey_responses instead, its day and month from their other hours and days; with the whole org pending (seed,
 * rebuild) or too many pending slices, the request reads survey_responses alone.
 * The pending set is read no later than the slice rows, in the read's own query (pending.ts
 * runWithPending). A search
 * count (no cursor) is served alike. This module holds the window and the rows that answer it;
 * what those rows answer (response groups, slice totals, answer counts) is in groups.ts.
 */
import { DT64, type ParamBag, type RunQuery } from '../../clickhouse/sql.ts';
import { TenantOrg } from '../../clickhouse/tenant.ts';
import type { ResponseSelection } from '../compile.ts';
import { compileFilter } from '../filter-sql.ts';
import type { GroupByRule } from '../group-by.ts';
import type { HistogramPlan } from '../../query/histogram.ts';
import { formatDbMicros, parseInstantMicros } from '../../time/iso.ts';
import type { Pending } from './pending.ts';

export { runWithPending, type Pending } from './pending.ts';
import { MICROS_PER_DAY, MICROS_PER_HOUR, ceilMonth, ceilTo, floorMonth, floorTo, parentsOf, sliceStartSql, type HourSlice, type Span } from './slices.ts';

export interface ReadOptions {
  /** false: read survey_responses only (the reference the property tests compare the rollup with). */
  rollups?: boolean;
  /**
   * Runs the small reads that shape the main query (pending marks, histogram bounds) with no
   * cache at all; default: the main query's runner.
   */
  fresh?: RunQuery;
  /**
   * Read the pending marks first, in a query of their own (runWithPending): on a cluster, whose
   * initiator reads the set and the slice rows with separate queries to the shard, in no set order.
   */
  marksFirst?: boolean;
}
/** Up to this many pending slices are OR-ed key ranges on the raw table; past it, one range and a slice set. */
const MAX_PENDING_RANGES = 32;

/** Rules the rollup answers: no hidden field, no ended_at / last_activity_at, at most one answer level. */
export function rulesServable(rules: readonly GroupByRule[]): boolean {
  let answers = 0;
  for (const r of rules) {
    if (r.kind === 'hidden_field') return false;
    if (r.kind === 'date' && r.field !== 'created_at') return false;
    if (r.kind === 'answer') answers++;
  }
  return answers <= 1;
}

/**
 * The coarsest slice every date level's buckets are made of: 'month' when each bucket starts on
 * the first of a UTC month (and steps by months), 'day' on a UTC day, 'hour' on an hour; null when
 * a bucket starts inside an hour (then no slice fits). No date level: 'month'.
 */
export function grainOf(plans: readonly (HistogramPlan | undefined)[]): Span | null {
  let grain: Span = 'month';
  const finer = (g: Span) => {
    if (g === 'hour' || (g === 'day' && grain === 'month')) grain = g;
  };
  for (const p of plans) {
    if (!p || p.starts.length === 0) continue;
    if (p.start % MICROS_PER_HOUR !== 0n) return null;
    if (p.unit === 'month' && floorMonth(p.start) === p.start) continue;
    const step = p.unit === 'hour' ? BigInt(p.k) * MICROS_PER_HOUR : MICROS_PER_DAY;
    finer(p.start % MICROS_PER_DAY !== 0n || step % MICROS_PER_DAY !== 0n ? 'hour' : 'day');
  }
  return grain;
}

/** Which rows answer what: null bounds are unbounded; each level answers inside the one before. */
export interface RollupCover {
  /** Whole hours [hourFrom, hourTo) come from the rollup; created_at outside them from the raw table. */
  hourFrom: bigint | null;
  hourTo: bigint | null;
  /** Whether day rows serve the whole days [dayFrom, dayTo) (else hour rows do). */
  days: boolean;
  dayFrom: bigint | null;
  dayTo: bigint | null;
  /** Whether month rows serve the whole months [monthFrom, monthTo) (else day rows do). */
  months: boolean;
  monthFrom: bigint | null;
  monthTo: bigint | null;
  pending: HourSlice[];
  pendingDays: HourSlice[];
  pendingMonths: HourSlice[];
}

const nonEmpty = (from: bigint | null, to: bigint | null) => from === null || to === null || from < to;

/** Pure: the window for the selection's range, or null when the rollup cannot serve any of it. */
export function rollupCover(range: ResponseSelection['range'], pending: Pending, grain: Span): RollupCover | null {
  if (pending.org) return null;
  const start = range?.start !== undefined ? parseInstantMicros(range.start) : null;
  const end = range?.end !== undefined ? parseInstantMicros(range.end) : null;
  const hourFrom = start === null ? null : ceilTo(start, MICROS_PER_HOUR);
  const hourTo = end === null ? null : floorTo(end + 1n, MICROS_PER_HOUR);
  if (!nonEmpty(hourFrom, hourTo)) return null;
  const dayFrom = hourFrom === null ? null : ceilTo(hourFrom, MICROS_PER_DAY);
  const dayTo = hourTo === null ? null : floorTo(hourTo, MICROS_PER_DAY);
  const days = grain !== 'hour' && nonEmpty(dayFrom, dayTo);
  const monthFrom = dayFrom === null ? null : ceilMonth(dayFrom);
  const monthTo = dayTo === null ? null : floorMonth(dayTo);
  const months = days && grain === 'month' && nonEmpty(monthFrom, monthTo);
  return {
    hourFrom, hourTo, days, dayFrom, dayTo, months, monthFrom, monthTo,
    pending: pending.slices, pendingDays: parentsOf(pending.slices, 'day'), pendingMonths: parentsOf(pending.slices, 'month'),
  };
}

const dt = (bag: ParamBag, t: bigint) => bag.add(formatDbMicros(t), DT64);
const sliceSet = (bag: ParamBag, slices: readonly HourSlice[]) =>
  `(SELECT arrayJoin(arrayZip(${bag.add(slices.map((s) => s.surveyId), 'Array(UUID)')}, ${bag.add(slices.map((s) => formatDbMicros(s.hour)), `Array(${DT64})`)})))`;

/**
 * The extra condition on survey_responses (ANDed to the selection): the created_at the rollup does not
 * answer. undefined when the rollup answers all of the selection (no raw rows needed).
 */
export function rawRemainderSql(w: RollupCover, bag: ParamBag): string | undefined {
  const parts: string[] = [];
  if (w.hourFrom !== null) parts.push(`created_at < ${dt(bag, w.hourFrom)}`);
  if (w.hourTo !== null) parts.push(`created_at >= ${dt(bag, w.hourTo)}`);
  if (w.pending.length <= MAX_PENDING_RANGES) {
    for (const s of w.pending) {
      // Ranges the primary key can use, one per pending slice.
      parts.push(`(survey_id = ${bag.add(s.surveyId, 'UUID')} AND created_at >= ${dt(bag, s.hour)} AND created_at < ${dt(bag, s.hour + MICROS_PER_HOUR)})`);
    }
  } else if (w.pending.length > 0) {
    // Many pending slices (a bulk write whose recompute is queued): one [first, last hour) range
    // for the key and the slice set as two array parameters. Three parameters per slice would
    // pass the engine's ~1000 form fields per request.
    const hours = w.pending.map((s) => s.hour);
    const first = hours.reduce((a, b) => (a < b ? a : b));
    const last = hours.reduce((a, b) => (a > b ? a : b));
    parts.push(
      `(created_at >= ${dt(bag, first)} AND created_at < ${dt(bag, last + MICROS_PER_HOUR)} ` +
        `AND (survey_id, ${sliceStartSql('hour', 'created_at')}) IN ${sliceSet(bag, w.pending)})`,
    );
  }
  return parts.length ? `(${parts.join(' OR ')})` : undefined;
}

/**
 * `FROM <table> FINAL [joins] PREWHERE ... WHERE ...` of the slice rows that answer the window: the
 * org (the tenant guard), surveys, then per span the slices inside the range that no coarser slice
 * answers (a slice is answered by its parent unless the parent holds a pending hour). Tests only
 * the slice key (org_id, span, survey_id, start), which the answer totals (schema/111) share. FINAL:
 * a recompute replaces a slice row by a newer version. The window is a PREWHERE: it tests sorting-key
 * columns only, which every version of a slice row shares, so it keeps or drops a slice's versions
 * together and FINAL still picks the newest; the engine then reads the wide arrays of the window's
 * rows only, not of every row of the granules holding them (FINAL moves nothing to PREWHERE by
 * itself: src/clickhouse/settings.ts). Callers append ` AND ...` to the WHERE.
 */
export function fromSlicesSql(table: 'survey_rollup' | 'survey_rollup_answers', selection: ResponseSelection, w: RollupCover, bag: ParamBag, joins: readonly string[] = []): string {
  const window: string[] = [];
  if (selection.surveyIds !== '*') window.push(`survey_id IN ${bag.add(selection.surveyIds, 'Array(UUID)')}`);
  const within = (from: bigint | null, to: bigint | null) =>
    [...(from !== null ? [`start >= ${dt(bag, from)}`] : []), ...(to !== null ? [`start < ${dt(bag, to)}`] : [])];
  /** Not answered by the parent span: outside its range, or in a pending parent. */
  const notInParent = (from: bigint | null, to: bigint | null, parent: Span, pendingParents: readonly HourSlice[]) => {
    const outside = [...(from !== null ? [`start < ${dt(bag, from)}`] : []), ...(to !== null ? [`start >= ${dt(bag, to)}`] : [])];
    if (pendingParents.length) outside.push(`(survey_id, ${sliceStartSql(parent, 'start')}) IN ${sliceSet(bag, pendingParents)}`);
    return outside.length ? `(${outside.join(' OR ')})` : 'false';
  };
  const level = (span: Span, from: bigint | null, to: bigint | null, pending: readonly HourSlice[], parent?: [bigint | null, bigint | null, Span, readonly HourSlice[]]) => {
    const parts = [`span = '${span}'`, ...within(from, to)];
    if (pending.length) parts.push(`(survey_id, start) NOT IN ${sliceSet(bag, pending)}`);
    if (parent) parts.push(notInParent(...parent));
    return `(${parts.join(' AND ')})`;
  };
  const branches = [level('hour', w.hourFrom, w.hourTo, w.pending, w.days ? [w.dayFrom, w.dayTo, 'day', w.pendingDays] : undefined)];
  if (w.days) branches.push(level('day', w.dayFrom, w.dayTo, w.pendingDays, w.months ? [w.monthFrom, w.monthTo, 'month', w.pendingMonths] : undefined));
  if (w.months) branches.push(level('month', w.monthFrom, w.monthTo, w.pendingMonths));
  window.push(`(${branches.join(' OR ')})`);
  return new TenantOrg(selection.orgId, bag).from(table, { final: true, joins, prewhere: window.join(' AND ') });
}

/** The selection's filters over the rollup's group columns (filtersServable must hold). */
function filtersSql(selection: ResponseSelection, bag: ParamBag): string {
  if (selection.filters.length === 0) return '';
  const joiner = selection.filtersBool === 'OR' ? ' OR ' : ' AND ';
  return ` AND (${selection.filters.map((f) => compileFilter(f, bag)).join(joiner)})`;
}

/**
 * `FROM ... WHERE ...` of the slice rows that answer the window, their arrays expanded by
 * `arrayJoin` when given. FINAL: a recompute replaces a slice row by a newer version.
 */
export function rollupRowsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, arrayJoin?: string): string {
  return `${fromSlicesSql('survey_rollup', selection, w, bag, arrayJoin ? [`ARRAY JOIN ${arrayJoin}`] : [])}${filtersSql(selection, bag)}`;
}
