/**
 * Rollup maintenance (schema/020-survey-rollups.sql): mark the touched hour slices pending, write,
 * recompute the slices from survey_responses FINAL, clear the marks. Every write path goes through
 * here: the API writer (store.ts, through maintainer.ts, which recomputes after the acknowledgement
 * and coalesces batches), `tallyhouse seed` and `tallyhouse rollups rebuild` (withOrgMaintenance,
 * with the org-wide mark). Recomputing a slice is correct whatever changed in it (deletions too).
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import { DT64, ParamBag } from '../../clickhouse/sql.ts';
import { TenantOrg } from '../../clickhouse/tenant.ts';
import { formatDbMicros, parseInstantMicros } from '../../time/iso.ts';
import { ORG_SENTINEL, parentsOf, sliceRanges, sliceStartSql, type HourSlice, type Span } from './slices.ts';
import { addMarks, takeBackAllMarks } from './pending.ts';

/**
 * Slices recomputed per statement: bounds the parameters and the memory of one GROUP BY. A write
 * batch (at most 1000 records) is one statement per span.
 */
const SLICES_PER_STATEMENT = 1000;
/**
 * Up to this many ranges are OR-ed for the primary key; past it, one [min, max) range: with
 * hundreds of OR-ed ranges (a batch spread over months) the key analysis itself becomes the cost
 * (bench/responses-write/README.md, "Figures behind the schema and the code").
 */
const MAX_KEY_RANGES = 64;

const MAINTENANCE_SETTINGS: ClickHouseSettings = {
  // Far beyond what one chunk of slices takes; a recompute that fails leaves its slices pending
  // (read from the raw table), never wrong.
  max_execution_time: 300,
  // One rollup part per statement: the table is not partitioned.
  max_partitions_per_insert_block: '1000',
};

const GROUP_DIMS = ['channel_id', 'completion', 'end_reason', 'language'] as const;
const countScores = (column: string) => `sumMap(mapFromArrays(${column}, arrayMap(x -> toUInt64(1), ${column})))`;
const ROLLUP_COLUMNS = [
  'g_channel_id', 'g_completion', 'g_end_reason', 'g_language', 'g_support', 'g_responses', 'g_nps', 'g_csat', 'g_ces',
  'a_channel_id', 'a_completion', 'a_end_reason', 'a_language', 'a_question_id', 'a_value', 'a_responses',
  'a_support', 'a_nps', 'a_csat', 'a_ces',
] as const;

/**
 * `(x >= a AND x < b) OR ...` over the ranges, or one [min, max) when there are many. The bounds
 * travel as two array parameters (one form field each: the engine refuses a request with more
 * than ~1000 fields); an element of a parameter is a constant, which the primary key can use.
 */
function rangesSql(column: string, ranges: [bigint, bigint][], params: Record<string, unknown>): string {
  const used = ranges.length <= MAX_KEY_RANGES ? ranges : [[ranges[0][0], ranges[ranges.length - 1][1]] as [bigint, bigint]];
  params.range_from = used.map(([from]) => formatDbMicros(from));
  params.range_to = used.map(([, to]) => formatDbMicros(to));
  return '(' + used.map((_, i) =>
    `(${column} >= {range_from:Array(${DT64})}[${i + 1}] AND ${column} < {range_to:Array(${DT64})}[${i + 1}])`).join(' OR ') + ')';
}

/** The target slices as a relation (survey_id, start), from the parameters `surveys` and `starts`. */
const SLICES_SQL = `SELECT tupleElement(t, 1) AS survey_id, tupleElement(t, 2) AS start FROM (SELECT arrayJoin(arrayZip({surveys:Array(UUID)}, {starts:Array(${DT64})})) AS t)`;

/**
 * One rollup row per target slice; slices with no response get empty arrays (the LEFT JOIN's
 * defaults), which replaces whatever the slice held before.
 */
function upsertSql(org: TenantOrg, span: Span, groups: string, answers: string): string {
  const picked = ROLLUP_COLUMNS.map((c) => (c.startsWith('g_') ? `g.${c}` : `a.${c}`));
  return (
    `INSERT INTO survey_rollup (org_id, span, survey_id, start, version, ${ROLLUP_COLUMNS.join(', ')}) ` +
    `SELECT ${org.param}, '${span}', s.survey_id, s.start, now64(9, 'UTC'), ${picked.join(', ')} ` +
    `FROM (${SLICES_SQL}) AS s ` +
    `LEFT JOIN (${groups}) AS g ON g.survey_id = s.survey_id AND g.start = s.start ` +
    `LEFT JOIN (${answers}) AS a ON a.survey_id = s.survey_id AND a.start = s.start`
  );
}

const groupArrays = (pairs: [string, string][]) => pairs.map(([from, to]) => `groupArray(${from}) AS ${to}`).join(', ');

/** Hour slices from the deduplicated responses. */
export function recomputeHoursSql(org: TenantOrg, ranges: [bigint, bigint][]): { sql: string; params: Record<string, unknown> } {
  const params: Record<string, unknown> = {};
  const hour = sliceStartSql('hour', 'created_at');
  const where =
    `${org.condition('survey_responses')} AND survey_id IN {surveys:Array(UUID)} AND ${rangesSql('created_at', ranges, params)} ` +
    `AND (survey_id, ${hour}) IN (${SLICES_SQL})`;
  const dims = GROUP_DIMS.join(', ');
  const groups =
    `SELECT survey_id, slice_start AS start, ` +
    groupArrays([['channel_id', 'g_channel_id'], ['completion', 'g_completion'], ['end_reason', 'g_end_reason'], ['language', 'g_language'],
      ['hf_support', 'g_support'], ['n', 'g_responses'], ['nps', 'g_nps'], ['csat', 'g_csat'], ['ces', 'g_ces']]) +
    ` FROM (SELECT survey_id, ${hour} AS slice_start, ${dims}, hf_support, count() AS n, ` +
    `${countScores('nps_scores')} AS nps, ${countScores('csat_scores')} AS csat, ${countScores('ces_scores')} AS ces ` +
    `FROM survey_responses FINAL WHERE ${where} GROUP BY survey_id, slice_start, ${dims}, hf_support) GROUP BY survey_id, slice_start`;
  // Each distinct (question, value) of a response once: the aggregation's answer buckets count
  // responses; the groups also by `support`, with their score counts (schema/110: answer groups).
  const answers =
    `SELECT survey_id, slice_start AS start, ` +
    groupArrays([['channel_id', 'a_channel_id'], ['completion', 'a_completion'], ['end_reason', 'a_end_reason'], ['language', 'a_language'],
      ['question_id', 'a_question_id'], ['value', 'a_value'], ['n', 'a_responses'], ['hf_support', 'a_support'], ['nps', 'a_nps'], ['csat', 'a_csat'], ['ces', 'a_ces']]) +
    ` FROM (SELECT survey_id, ${hour} AS slice_start, ${dims}, hf_support, tupleElement(qv, 1) AS question_id, tupleElement(qv, 2) AS value, count() AS n, ` +
    `${countScores('nps_scores')} AS nps, ${countScores('csat_scores')} AS csat, ${countScores('ces_scores')} AS ces ` +
    `FROM survey_responses FINAL ARRAY JOIN arrayDistinct(arrayZip(CAST(ans_question_ids, 'Array(String)'), ans_values)) AS qv ` +
    `WHERE ${where} GROUP BY survey_id, slice_start, ${dims}, hf_support, question_id, value) GROUP BY survey_id, slice_start`;
  return { sql: upsertSql(org, 'hour', groups, answers), params };
}

/** Day slices from their hour rows, month slices from their day rows (not from the responses). */
export function recomputeFromBelowSql(org: TenantOrg, span: 'day' | 'month', ranges: [bigint, bigint][]): { sql: string; params: Record<string, unknown> } {
  const params: Record<string, unknown> = {};
  const day = sliceStartSql(span, 'start');
  const where =
    `${org.condition('survey_rollup')} AND span = '${span === 'day' ? 'hour' : 'day'}' AND survey_id IN {surveys:Array(UUID)} AND ${rangesSql('start', ranges, params)} ` +
    `AND (survey_id, ${day}) IN (${SLICES_SQL})`;
  const dims = GROUP_DIMS.join(', ');
  const groups =
    `SELECT survey_id, slice_start AS start, ` +
    groupArrays([['channel_id', 'g_channel_id'], ['completion', 'g_completion'], ['end_reason', 'g_end_reason'], ['language', 'g_language'],
      ['support', 'g_support'], ['n', 'g_responses'], ['nps', 'g_nps'], ['csat', 'g_csat'], ['ces', 'g_ces']]) +
    ` FROM (SELECT survey_id, ${day} AS slice_start, ${dims}, support, sum(x_n) AS n, sumMap(x_nps) AS nps, sumMap(x_csat) AS csat, sumMap(x_ces) AS ces ` +
    `FROM survey_rollup FINAL ARRAY JOIN g_channel_id AS channel_id, g_completion AS completion, g_end_reason AS end_reason, ` +
    `g_language AS language, g_support AS support, g_responses AS x_n, g_nps AS x_nps, g_csat AS x_csat, g_ces AS x_ces ` +
    `WHERE ${where} GROUP BY survey_id, slice_start, ${dims}, support) GROUP BY survey_id, slice_start`;
  // A row written before schema/110 has no a_support / a_nps ... (empty arrays): they are padded to
  // its entries so that the sums of the other arrays stay right, and the slice computed from it
  // gets no score arrays either (`scored`), which readers of the scores see (answer-rollups.ts).
  const padded = (column: string) => `arrayResize(${column}, length(a_question_id))`;
  const scoredOnly = (from: string, to: string, type: string) => `if(min(scored) = 1, groupArray(${from}), CAST([], '${type}')) AS ${to}`;
  const answers =
    `SELECT survey_id, slice_start AS start, ` +
    groupArrays([['channel_id', 'a_channel_id'], ['completion', 'a_completion'], ['end_reason', 'a_end_reason'], ['language', 'a_language'],
      ['question_id', 'a_question_id'], ['value', 'a_value'], ['n', 'a_responses']]) +
    `, ${scoredOnly('support', 'a_support', 'Array(Array(LowCardinality(String)))')}, ${scoredOnly('nps', 'a_nps', 'Array(Map(UInt8, UInt64))')}, ` +
    `${scoredOnly('csat', 'a_csat', 'Array(Map(UInt8, UInt64))')}, ${scoredOnly('ces', 'a_ces', 'Array(Map(UInt8, UInt64))')}` +
    ` FROM (SELECT survey_id, ${day} AS slice_start, ${dims}, support, question_id, value, sum(x_n) AS n, ` +
    `sumMap(x_nps) AS nps, sumMap(x_csat) AS csat, sumMap(x_ces) AS ces, min(length(a_nps) = length(a_question_id)) AS scored ` +
    `FROM survey_rollup FINAL ARRAY JOIN a_channel_id AS channel_id, a_completion AS completion, a_end_reason AS end_reason, ` +
    `a_language AS language, a_question_id AS question_id, a_value AS value, a_responses AS x_n, ` +
    `${padded('a_support')} AS support, ${padded('a_nps')} AS x_nps, ${padded('a_csat')} AS x_csat, ${padded('a_ces')} AS x_ces ` +
    `WHERE ${where} GROUP BY survey_id, slice_start, ${dims}, support, question_id, value) GROUP BY survey_id, slice_start`;
  return { sql: upsertSql(org, span, groups, answers), params };
}

async function runChunked(client: ClickHouseClient, orgId: string, slices: readonly HourSlice[], span: Span,
  build: (org: TenantOrg, ranges: [bigint, bigint][]) => { sql: string; params: Record<string, unknown> }, queryIdPrefix: string | undefined): Promise<void> {
  // In time order, so that each chunk reads one band of created_at.
  const sorted = [...slices].sort((a, b) => (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : a.surveyId < b.surveyId ? -1 : 1));
  for (let i = 0; i < sorted.length; i += SLICES_PER_STATEMENT) {
    const chunk = sorted.slice(i, i + SLICES_PER_STATEMENT);
    const bag = new ParamBag();
    const { sql, params } = build(new TenantOrg(orgId, bag), sliceRanges(span, chunk.map((s) => s.hour)));
    await client.command({
      query: sql,
      query_params: {
        ...params,
        ...bag.toParams(),
        surveys: chunk.map((s) => s.surveyId),
        starts: chunk.map((s) => formatDbMicros(s.hour)),
      },
      clickhouse_settings: MAINTENANCE_SETTINGS,
      query_id: queryIdPrefix === undefined ? undefined : queryIdPrefix + randomUUID(),
    });
  }
}

/**
 * Recomputes these hour slices and the days and months that hold them, from the stored responses:
 * after it returns, the rollup holds what survey_responses FINAL held when it started. The entry
 * point for every change of stored responses (writes, deletions): idempotent, any number of times.
 * `queryIdPrefix` names its statements (so that a shutdown can cut them: a slice row is written
 * whole or not at all).
 */
export async function recomputeSlices(client: ClickHouseClient, orgId: string, slices: readonly HourSlice[], queryIdPrefix?: string): Promise<void> {
  if (slices.length === 0) return;
  await runChunked(client, orgId, slices, 'hour', recomputeHoursSql, queryIdPrefix);
  await runChunked(client, orgId, parentsOf(slices, 'day'), 'day', (org, ranges) => recomputeFromBelowSql(org, 'day', ranges), queryIdPrefix);
  await runChunked(client, orgId, parentsOf(slices, 'month'), 'month', (org, ranges) => recomputeFromBelowSql(org, 'month', ranges), queryIdPrefix);
}

/** The hour slices of the org in [from, to), found in the responses or in the rollup (a slice may have emptied). */
async function slicesIn(client: ClickHouseClient, orgId: string, from: bigint | null, to: bigint | null): Promise<HourSlice[]> {
  const bag = new ParamBag();
  const org = new TenantOrg(orgId, bag);
  const bounds = (column: string) => {
    const parts: string[] = [];
    if (from !== null) parts.push(`${column} >= ${bag.add(formatDbMicros(from), DT64)}`);
    if (to !== null) parts.push(`${column} < ${bag.add(formatDbMicros(to), DT64)}`);
    return parts.map((p) => ` AND ${p}`).join('');
  };
  const rs = await client.query({
    // No FINAL: every version of a response is in the same slice (survey and created_at are fixed).
    query:
      `SELECT toString(survey_id) AS s, toString(h) AS h FROM (` +
      `SELECT DISTINCT survey_id, ${sliceStartSql('hour', 'created_at')} AS h ${org.from('survey_responses')}${bounds('created_at')} ` +
      `UNION DISTINCT SELECT survey_id, start AS h ${org.from('survey_rollup')} AND span = 'hour'${bounds('start')})`,
    query_params: bag.toParams(),
    format: 'JSONEachRow',
    clickhouse_settings: MAINTENANCE_SETTINGS,
  });
  return (await rs.json<{ s: string; h: string }>()).map((r) => ({ surveyId: r.s, hour: parseInstantMicros(r.h)! }));
}

/**
 * Recomputes every slice of the org in [from, to) (null: unbounded) while the whole org is marked
 * pending. For writers that change many slices at once (`seed`) and for recovery (`rebuild`).
 */
export async function withOrgMaintenance<T>(client: ClickHouseClient, orgId: string, write: () => Promise<T>, range: { from: bigint | null; to: bigint | null }): Promise<T> {
  await addMarks(client, orgId, [{ slice: ORG_SENTINEL, marks: 1 }]);
  const result = await write();
  await recomputeSlices(client, orgId, await slicesIn(client, orgId, range.from, range.to));
  await addMarks(client, orgId, [{ slice: ORG_SENTINEL, marks: -1 }]);
  return result;
}

/**
 * Recovery: recompute every slice of the org, then take every owner's pending marks of the org
 * back to 0, including those left by interrupted writes and by processes killed elsewhere
 * (owners.ts). A write in flight during a rebuild may see its own mark taken back and its owner's
 * sum end at -1, which is why it is meant for when writes are stopped or after a crash.
 */
export async function rebuildOrg(client: ClickHouseClient, orgId: string): Promise<{ slices: number }> {
  let count = 0;
  await withOrgMaintenance(client, orgId, async () => {
    count = (await slicesIn(client, orgId, null, null)).length;
  }, { from: null, to: null });
  await takeBackAllMarks(client, orgId, MAINTENANCE_SETTINGS);
  return { slices: count };
}

/** Every org with responses, rollups or pending marks. */
export async function allOrgs(client: ClickHouseClient): Promise<string[]> {
  const rs = await client.query({
    query:
      'SELECT DISTINCT toString(org_id) AS o FROM (SELECT DISTINCT org_id FROM survey_responses UNION ALL ' +
      'SELECT DISTINCT org_id FROM survey_rollup UNION ALL SELECT DISTINCT org_id FROM survey_rollup_pending) ORDER BY o',
    format: 'JSONEachRow',
  });
  return (await rs.json<{ o: string }>()).map((r) => r.o);
}
