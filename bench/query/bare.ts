/**
 * Bare ClickHouse: the bench organization's responses held the way a ClickHouse user would hold
 * them, in the same engine (same version, same process, same caches), and the five questions of
 * issue 22 asked of it directly, with @clickhouse/client and the engine's default settings.
 *
 * The table: one MergeTree ordered by (org_id, survey_id, created_at, id), no partitions, hidden
 * fields and answers as Nested columns, filled by INSERT ... SELECT from survey_responses FINAL
 * (the same responses, their latest versions) and then OPTIMIZE FINAL (one part). It holds what
 * the questions read and what a search shows of a response, not the service's derived columns nor
 * the record as written (`doc`).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { MICROS_PER_DAY, formatDbMicros, parseInstantMicros } from '../../src/query/histogram.ts';

export const BARE_TABLE = 'bare_responses';

const DT = "DateTime64(6, 'UTC')";

const CREATE = `CREATE TABLE IF NOT EXISTS ${BARE_TABLE}
(
    org_id UUID, survey_id UUID, created_at ${DT}, id UUID, updated_at ${DT},
    channel_id UUID, respondent_id UUID, respondent_aliases Array(String), group_ids Array(UUID), scenario_id UUID,
    language LowCardinality(String), locale LowCardinality(String),
    completion Enum8('not_started' = 0, 'partially_completed' = 1, 'fully_completed' = 2), active Bool,
    end_reason LowCardinality(String), ended_at Nullable(${DT}), last_answer_at Nullable(${DT}),
    hidden_fields Nested(key LowCardinality(String), value String),
    answers Nested(question_id LowCardinality(String), cta_type LowCardinality(String), value String, score Nullable(Float64))
)
ENGINE = MergeTree
ORDER BY (org_id, survey_id, created_at, id)`;

const FILL = `INSERT INTO ${BARE_TABLE}
SELECT org_id, survey_id, created_at, id, updated_at, channel_id, respondent_id, respondent_aliases, group_ids, scenario_id,
    language, locale, completion, active, end_reason, ended_at, last_answer_at,
    hf_keys, arrayMap((t, s, b, n) -> multiIf(t = 0, s, t = 1, if(b, 'true', 'false'), toString(n)), hf_types, hf_strings, hf_bools, hf_numbers),
    ans_question_ids, ans_cta_types, ans_values, ans_scores
FROM survey_responses FINAL WHERE org_id = {org:UUID}`;

/** Creates and fills the bare table for the org when it does not hold exactly `responses` rows; one part. */
export async function ensureBareTable(client: ClickHouseClient, orgId: string, responses: number, log: (line: string) => void): Promise<void> {
  await client.command({ query: CREATE });
  const count = async () => Number((await (await client.query({ query: `SELECT count() AS n FROM ${BARE_TABLE}`, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
  if ((await count()) !== responses) {
    log(`filling ${BARE_TABLE} with the org's ${responses.toLocaleString('en-US')} responses (INSERT SELECT, then OPTIMIZE FINAL)`);
    await client.command({ query: `TRUNCATE TABLE ${BARE_TABLE}` });
    await client.command({ query: FILL, query_params: { org: orgId }, clickhouse_settings: { max_execution_time: 3600, max_insert_threads: '2' } });
  }
  await client.command({ query: `OPTIMIZE TABLE ${BARE_TABLE} FINAL`, clickhouse_settings: { optimize_skip_merged_partitions: 1, max_execution_time: 3600 } });
}

/** Compressed bytes on disk of a table's active parts. */
export async function tableBytes(client: ClickHouseClient, table: string): Promise<number> {
  const rs = await client.query({
    query: 'SELECT sum(bytes_on_disk) AS b FROM system.parts WHERE database = currentDatabase() AND table = {t:String} AND active',
    query_params: { t: table },
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ b: string }>())[0].b);
}

/** The questions' shared range: 100 days (minus 1 µs) ending inside an hour, as "the last 100 days" does. */
export interface Range {
  start: string;
  end: string;
}

export function questionRange(maxCreatedAt: string, variant: number): Range & { startMicros: bigint; endMicros: bigint; dayStart: string; dayStartMicros: bigint } {
  // "Now" is 17 min 13.5 s after the newest response: inside an hour, after every response.
  const end0 = parseInstantMicros(maxCreatedAt)! + 1_033_500_000n;
  const startMicros = end0 - 100n * MICROS_PER_DAY + 1n;
  const endMicros = end0 - BigInt(variant % 1_000_000);
  // The same range started on the UTC day 99 days before the end's day: day buckets on whole days.
  const dayStartMicros = (end0 / MICROS_PER_DAY) * MICROS_PER_DAY - 99n * MICROS_PER_DAY;
  const iso = (t: bigint) => formatDbMicros(t).replace(' ', 'T') + 'Z';
  return { start: iso(startMicros), end: iso(endMicros), startMicros, endMicros, dayStart: iso(dayStartMicros), dayStartMicros };
}

type Query = { query: string; params: Record<string, unknown> };

/** The bare SQL of each question for a range: what a ClickHouse user would send. */
export function bareQueries(orgId: string, range: ReturnType<typeof questionRange>, keyword: string, surveyIds?: string[]): Record<string, Query[]> {
  const params = { org: orgId, start: formatDbMicros(range.startMicros), end: formatDbMicros(range.endMicros), kw: keyword };
  const dayParams = { ...params, start: formatDbMicros(range.dayStartMicros) };
  const where = `org_id = {org:UUID} AND created_at >= {start:${DT}} AND created_at <= {end:${DT}}` + (surveyIds ? ' AND survey_id IN {surveys:Array(UUID)}' : '');
  const p = surveyIds ? { ...params, surveys: surveyIds } : params;
  const page = (cond: string) => `SELECT * EXCEPT (org_id) FROM ${BARE_TABLE} WHERE ${where} AND ${cond} ORDER BY created_at DESC, id DESC LIMIT 20`;
  const count = (cond: string) => `SELECT count() AS total FROM ${BARE_TABLE} WHERE ${where} AND ${cond}`;
  const q1 = "completion = 'fully_completed' AND language != 'fr'";
  const q2 = 'arrayExists(v -> positionCaseInsensitiveUTF8(v, {kw:String}) > 0, answers.value)';
  const scores = (cta: string, min: number, max: number) => {
    const picked = `arrayMap(s -> toUInt8(assumeNotNull(s)), arrayFilter((s, c) -> c = '${cta}' AND ifNull(s >= ${min} AND s <= ${max} AND s = floor(s), false), answers.score, answers.cta_type))`;
    return `sumMap(${picked}, arrayMap(x -> toUInt64(1), ${picked})) AS ${cta}`;
  };
  const support = "arrayDistinct(arrayFilter((v, k) -> k = 'support', hidden_fields.value, hidden_fields.key))";
  const q3 =
    `SELECT ${scores('nps', 0, 10)}, ${scores('csat', 1, 5)}, ${scores('ces', 1, 7)}, ` +
    'sumMap([toString(completion)], [toUInt64(1)]) AS completion, ' +
    "sumMapIf([toString(end_reason)], [toUInt64(1)], end_reason != '') AS end_reasons, " +
    "sumMapIf([toString(language)], [toUInt64(1)], language != '') AS languages, " +
    `sumMap(${support}, arrayMap(x -> toUInt64(1), ${support})) AS supports ` +
    `FROM ${BARE_TABLE} WHERE ${where}`;
  const q4 =
    `SELECT intDiv(toUnixTimestamp64Micro(created_at) - toUnixTimestamp64Micro({start:${DT}}), ${MICROS_PER_DAY}) AS day, completion, count() AS n ` +
    `FROM ${BARE_TABLE} WHERE ${where} GROUP BY day, completion WITH ROLLUP`;
  const q5 =
    `SELECT plan, count() AS n FROM ${BARE_TABLE} ` +
    "ARRAY JOIN arrayDistinct(arrayFilter((v, k) -> k = 'platform', hidden_fields.value, hidden_fields.key)) AS plan " +
    `WHERE ${where} AND arrayExists((k, v) -> k = 'session_count' AND toFloat64OrNull(v) > 5, hidden_fields.key, hidden_fields.value) ` +
    'GROUP BY plan ORDER BY n DESC, plan LIMIT 100';
  return {
    Q1: [{ query: count(q1), params: p }, { query: page(q1), params: p }],
    Q2: [{ query: count(q2), params: p }, { query: page(q2), params: p }],
    Q3: [{ query: q3, params: p }],
    Q4: [{ query: q4, params: p }],
    Q4d: [{ query: q4, params: surveyIds ? { ...dayParams, surveys: surveyIds } : dayParams }],
    Q5: [{ query: q5, params: p }],
  };
}

/** Runs one question's queries one after the other; returns the first query's rows. */
export async function runBare(client: ClickHouseClient, queries: Query[]): Promise<unknown[]> {
  let first: unknown[] | undefined;
  for (const q of queries) {
    const rows = await (await client.query({ query: q.query, query_params: q.params, format: 'JSONEachRow' })).json();
    first ??= rows;
  }
  return first!;
}
