/**
 * What the query bench asks: each case is one HTTP request (path + body) and the same work done
 * directly on the engine (the same queries in the same order, compiled by the service's own
 * compiler functions, run with @clickhouse/client), so that the difference between the two is
 * HTTP + JSON shaping.
 *
 * Every body carries the same created_at range: from 99 days before the day of (newest response
 * + 1 hour) to that instant, i.e. the whole data set of the default 90-day seed, and exactly 100
 * daily buckets. Variant i moves `range.end` i microseconds back (i < 1 s, still after the newest
 * response): the answer does not change, but the SQL parameters do, so a variant is never served
 * by the service's 3 s polling cache (a "first run"). Variant 0 is the one repeated back to back
 * (the "repeated" runs, which the polling cache serves). The end stays an hour after the data
 * whatever the day the bench runs, so the search page is read from the same window (the last day
 * before the range end, see compile.ts pageWindowStarts) on every run.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { CompiledQuery, RunQuery } from '../../src/clickhouse/sql.ts';
import { DASHBOARD_QUERY_CACHE_SETTINGS } from '../../src/query/request-cache.ts';
import { aggregationBodySchema, runAggregation } from '../../src/responses/aggregation.ts';
import { QUERY_SETTINGS, selectionOf, type ResponseSelection } from '../../src/responses/compile.ts';
import { selectionSchema, searchBodySchema, parseSurveyIds, type SelectionBody } from '../../src/responses/filters.ts';
import type { GroupByRule } from '../../src/responses/group-by.ts';
import { MICROS_PER_DAY, formatMicros, parseInstantMicros } from '../../src/query/histogram.ts';
import { runSearch } from '../../src/responses/search.ts';
import { runSummary } from '../../src/responses/summary.ts';
import * as v from 'valibot';
import type { Dataset } from './dataset.ts';

export type Endpoint = 'search' | 'summary' | 'aggregation';

export interface BenchCase {
  name: string;
  endpoint: Endpoint;
  /** `<survey_ids>` of the path. */
  surveys: string;
  /** The request body of variant i (see the file comment). */
  body(variant: number): Record<string, unknown>;
  /**
   * What the service runs for that body: the service's own query sequence (runSearch,
   * runAggregation) or compiler, with `exec` running each query.
   */
  direct(exec: RunQuery, variant: number): Promise<void>;
}

export function pathOf(c: BenchCase): string {
  const base = `/1.0/survey/${c.surveys}/response`;
  return c.endpoint === 'search' ? base : `${base}/${c.endpoint}`;
}

/** Range of the bodies (see the file comment); variant < 1,000,000. */
export function benchRange(data: Dataset, variant: number): { start: string; end: string } {
  let end0 = parseInstantMicros(data.maxCreatedAt)! + 3_600_000_000n;
  // Keep every variant on the day of end0, so that the range spans [99, 100) days: 100 buckets.
  if (end0 % MICROS_PER_DAY < 1_000_000n) end0 += 1_000_000n;
  const start = (end0 / MICROS_PER_DAY) * MICROS_PER_DAY - 99n * MICROS_PER_DAY;
  return { start: formatMicros(start), end: formatMicros(end0 - BigInt(variant % 1_000_000)) };
}

function scopeFor(data: Dataset, surveys: string, parsed: SelectionBody): ResponseSelection {
  return selectionOf(data.orgId, parseSurveyIds(surveys), parsed);
}

function searchCase(data: Dataset, name: string, filters: unknown[], surveys = '*'): BenchCase {
  const body = (i: number) => ({ range: benchRange(data, i), filters, size: 10 });
  return {
    name,
    endpoint: 'search',
    surveys,
    body,
    direct: async (exec, i) => {
      const parsed = v.parse(searchBodySchema, body(i));
      await runSearch(exec, { ...scopeFor(data, surveys, parsed), size: parsed.size, offset: parsed.offset });
    },
  };
}

function summaryCase(data: Dataset, name: string, surveys = '*'): BenchCase {
  const body = (i: number) => ({ range: benchRange(data, i) });
  return {
    name,
    endpoint: 'summary',
    surveys,
    body,
    direct: async (exec, i) => {
      await runSummary(exec, scopeFor(data, surveys, v.parse(selectionSchema, body(i))));
    },
  };
}

function aggregationCase(data: Dataset, name: string, groupBy: unknown[], surveys = '*'): BenchCase {
  const body = (i: number) => ({ range: benchRange(data, i), group_by: groupBy });
  return {
    name,
    endpoint: 'aggregation',
    surveys,
    body,
    direct: async (exec, i) => {
      const parsed = v.parse(aggregationBodySchema, body(i));
      await runAggregation(exec, scopeFor(data, surveys, parsed), parsed.group_by as GroupByRule[]);
    },
  };
}

export function benchCases(data: Dataset): BenchCase[] {
  return [
    searchCase(data, 'search: newest page, no filter', []),
    searchCase(data, 'search: dimension filter (completion)', [{ type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' }]),
    searchCase(data, 'search: keyword (raw contains "slow")', [{ type: 'response', key: 'raw', operator: 'contains', value: 'slow' }]),
    searchCase(data, 'search: hidden field country = FR', [{ type: 'response.hidden_field', key: 'country', operator: 'eq', value: 'FR' }]),
    searchCase(data, 'search: alias contains "user-42"', [{ type: 'response', key: 'respondent_alias', operator: 'contains', value: 'user-42' }]),
    searchCase(data, 'search: segment (busiest group)', [{ type: 'response', key: 'respondent_segments', operator: 'eq', value: data.segmentId }]),
    summaryCase(data, 'summary (all surveys)'),
    aggregationCase(data, 'aggregation: completion x 100 daily', [
      { field: 'completion' },
      { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 },
    ]),
    aggregationCase(data, 'aggregation: survey_id under *', [{ field: 'survey_id' }]),
    aggregationCase(data, 'aggregation: answer (NPS question)', [{ field: 'answer', question_id: data.npsQuestionId }], data.surveyIds[0]),
  ];
}

/** Settings the service passes with the compiled SQL of an endpoint. */
export function settingsFor(endpoint: Endpoint) {
  return endpoint === 'search' ? { ...QUERY_SETTINGS } : { ...QUERY_SETTINGS, ...DASHBOARD_QUERY_CACHE_SETTINGS };
}

/** The case's queries straight on the engine, as the service runs them, rows parsed from JSONEachRow. */
export async function runDirect(client: ClickHouseClient, c: BenchCase, variant: number): Promise<void> {
  const settings = settingsFor(c.endpoint);
  await c.direct(async <T>(q: CompiledQuery) => {
    const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: settings });
    return rs.json<T>();
  }, variant);
}
