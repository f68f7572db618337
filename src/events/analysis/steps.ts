/**
 * What funnels and retention share: a step (a set of events described in the event filter
 * language), the guarded source their queries start from, and the per-user rows they are computed
 * on.
 *
 * Users: events are counted per user_id, the stable id of the user's alias; an anonymous event
 * (sent without `user_alias`) has a user id of its own (a random UUID v4, never a known user's v5
 * id), so it is one user with one event. Both kinds are grouped by user_id in one read of the
 * table; only the anonymous events that can count (a first step, a start event) are grouped, since
 * each is a hash entry of its own.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { maxChars } from '../../chars.ts';
import type { CompiledQuery, ParamBag } from '../../clickhouse/sql.ts';
import { cachedRequest } from '../../query/request-cache.ts';
import { READ_SETTINGS } from '../../query/settings.ts';
import { MAX_FILTERS } from '../../query/filter-args.ts';
import { jsonObject } from '../../validation.ts';
import { compileEventFilter } from '../read/compile.ts';
import { eventFilterSchema, eventRangeSchema, type EventFilterNode } from '../read/filters.ts';
import { EventSource, type EventSelection } from '../read/source.ts';
import { parseInstantMicros } from '../../time/iso.ts';
import { timestampAtLeast, timestampAtMost } from './timestamps.ts';
import { cohortCondition } from './cohort-sql.ts';
import { cohortEntry, splitByCohortsSchema, type CohortNode } from './cohort.ts';

export interface StepNode {
  readonly name?: string;
  readonly filtersBool: 'AND' | 'OR';
  readonly filters: readonly EventFilterNode[];
}

/** A step: the events matching its filters (at least one filter: an empty step would match every event). */
export function stepSchema(what: string) {
  return v.pipe(
    jsonObject({
      name: v.optional(v.pipe(v.string('name must be a string'), v.minLength(1, 'name must not be empty'), maxChars(100, 'name is at most 100 characters'))),
      filters_bool: v.optional(v.picklist(['AND', 'OR'], 'filters_bool must be "AND" or "OR"'), 'AND'),
      filters: v.pipe(
        v.array(eventFilterSchema, 'filters must be an array of event filters'),
        v.minLength(1, `${what} needs at least one filter (an empty one would match every event)`),
        v.maxLength(MAX_FILTERS, `at most ${MAX_FILTERS} filters`),
      ),
    }, what),
    v.transform((s): StepNode => ({ ...(s.name === undefined ? {} : { name: s.name }), filtersBool: s.filters_bool, filters: s.filters })),
  );
}

/** Body entries of every analysis: the range (on `timestamp`), a cohort, split_by_cohorts. */
export const analysisSelectionEntries = {
  range: v.optional(eventRangeSchema),
  cohort: cohortEntry,
  split_by_cohorts: v.optional(splitByCohortsSchema),
};

export interface AnalysisSelection {
  orgId: string;
  /** Inclusive DateTime64(6) texts. */
  range?: { start?: string; end?: string };
  cohort?: CohortNode;
  split: readonly { name: string; cohort: CohortNode }[];
}

/** The condition "the event belongs to the step", over `events` columns. */
export function stepSql(step: StepNode, source: EventSource): string {
  const joiner = step.filtersBool === 'OR' ? ' OR ' : ' AND ';
  return `(${step.filters.map((f) => compileEventFilter(f, source)).join(joiner)})`;
}

/**
 * The guarded source of an analysis: the organization, the cohort, and a range (the request's; a
 * retention reads return events past the range end, so it passes its own), compared in the
 * timestamp column's own type (timestamps.ts).
 */
class AnalysisSource extends EventSource {
  readonly #range: AnalysisSelection['range'];
  constructor(selection: AnalysisSelection, bag: ParamBag, range: AnalysisSelection['range']) {
    super({ orgId: selection.orgId, filtersBool: 'AND', filters: [], cohort: selection.cohort }, bag);
    this.#range = range;
  }

  override where(): string {
    const parts = [super.where()];
    if (this.#range?.start !== undefined) parts.push(timestampAtLeast(this.bag, instantMicros(this.#range.start)));
    if (this.#range?.end !== undefined) parts.push(timestampAtMost(this.bag, instantMicros(this.#range.end)));
    return parts.join(' AND ');
  }
}

export function analysisSource(selection: AnalysisSelection, bag: ParamBag, range: AnalysisSelection['range']): EventSource {
  return new AnalysisSource(selection, bag, range);
}

/** A validated instant text (the range's) -> µs. */
export function instantMicros(text: string): bigint {
  const us = parseInstantMicros(text);
  if (us === null) throw new Error(`not an instant: ${text}`);
  return us;
}

/**
 * `[0, i, j, ...]`: the whole (0) and the split cohorts (1-based) the row's user belongs to, over
 * columns named like the events' (`user_id`, `user_alias`, `anonymous`); `[0]` without a split.
 */
export function groupsSql(selection: AnalysisSelection, bag: ParamBag): string {
  if (selection.split.length === 0) return '[toUInt8(0)]';
  const cohortEvents = (events: EventSelection) => new EventSource(events, bag).from();
  const members = selection.split.map((s, i) => `if(${cohortCondition(selection.orgId, s.cohort, bag, cohortEvents)}, ${i + 1}, 0)`);
  return `arrayConcat([toUInt8(0)], arrayFilter(x -> x != 0, [${members.map((m) => `toUInt8(${m})`).join(', ')}]))`;
}

/** Per-user rows carry the user's alias only when a split cohort matches aliases (reading it costs a column and an aggregate). */
const needsAlias = (selection: AnalysisSelection) => selection.split.some((s) => s.cohort.kind === 'survey');

/**
 * The user columns of a scan: `user_id`, `alias` (the user_alias, or '' when not needed) and
 * `anon` (output names that are no column's, since WHERE would read an output alias named like a
 * column instead of the column).
 */
export function scanUserColumns(selection: AnalysisSelection): string {
  return `user_id, ${needsAlias(selection) ? 'user_alias' : "''"} AS alias, anonymous AS anon`;
}

/**
 * One row per user (`user_id, user_alias, anonymous` and the columns given), from `scan` (a SELECT
 * starting with scanUserColumns), in one GROUP BY user_id over one read of the table: the
 * aggregate columns `known` (and `having`) are computed for known users and anonymous users alike
 * (an anonymous user is one event, and the aggregates give it the values its one event defines).
 * Only the anonymous events that pass `anonymousWhere` are grouped: the others are users who count
 * nowhere, and each would cost a hash entry.
 */
export function perUserSql(selection: AnalysisSelection, scan: string, columns: { known: string; having?: string; anonymousWhere?: string }): string {
  const having = columns.having ? ` HAVING ${columns.having}` : '';
  const where = columns.anonymousWhere ? ` WHERE anon = 0 OR (${columns.anonymousWhere})` : '';
  const alias = needsAlias(selection) ? 'any(alias)' : "''";
  return `SELECT user_id, ${alias} AS user_alias, any(anon) AS anonymous, ${columns.known} FROM (${scan})${where} GROUP BY user_id${having}`;
}

/** The UTC period functions: a period's start, and a number that grows by one per period. */
export const PERIODS = {
  day: { start: 'toDate', index: 'toRelativeDayNum' },
  week: { start: 'toMonday', index: 'toRelativeWeekNum' },
  month: { start: 'toStartOfMonth', index: 'toRelativeMonthNum' },
} as const;
export type Period = keyof typeof PERIODS;
export const PERIOD_NAMES = Object.keys(PERIODS) as Period[];

/** A period start as the engine prints a Date ('2026-11-02') -> the API's instant text. */
export const periodStartText = (date: string) => `${date}T00:00:00.000000Z`;

/** An analysis answered: its one compiled query, run once per polling window for identical requests, shaped. */
export async function answerAnalysis<Q, Row, Answer>(
  client: ClickHouseClient,
  kind: string,
  q: Q,
  compile: (q: Q) => CompiledQuery,
  shape: (q: Q, rows: Row[], took: number) => Answer,
): Promise<Answer> {
  const started = performance.now();
  const { value: rows } = await cachedRequest(client, kind, q, READ_SETTINGS, ({ run }) => run<Row>(compile(q)));
  return shape(q, rows, Math.round(performance.now() - started));
}
