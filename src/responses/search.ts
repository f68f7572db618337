/**
 * SEARCH /1.0/survey/<survey_ids>/response and POST /1.0/survey/response, as plain handlers
 * (routes.ts wires them to Koa with auth and scopes).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { clickHouseHttpError } from '../clickhouse/errors.ts';
import { parseOrThrow } from '../server/errors.ts';
import { compileSearch, QUERY_SETTINGS } from './compile.ts';
import type { CompiledQuery } from '../clickhouse/sql.ts';
import { parseSurveyIds, searchBodySchema, type FilterNode } from './filters.ts';
import { parseResponseBatch, type ResponseRecord } from './record.ts';
import { insertResponses } from './store.ts';

export interface SearchInput {
  orgId: string;
  surveyIds: string[] | '*';
  filtersBool: 'AND' | 'OR';
  filters: readonly FilterNode[];
  range?: { start?: string; end?: string };
  size: number;
  offset: number;
}

export interface SearchResult {
  took: number;
  hits: { total: { value: number }; responses: ResponseRecord[] };
}

async function rows<T>(client: ClickHouseClient, q: CompiledQuery): Promise<T[]> {
  const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS });
  return rs.json<T>();
}

/**
 * Runs the page and the count side by side. Measured on 1.5M responses of one org (2 cores): the
 * pair in parallel took 26-330 ms where one query with `count() OVER ()` took 64-2991 ms (the
 * window makes every matching row, `doc` included, travel to it before LIMIT), and an offset past
 * the end would leave it with no row to carry the total. `size` 0 skips the page query.
 */
export async function searchResponses(client: ClickHouseClient, input: SearchInput): Promise<SearchResult> {
  const started = performance.now();
  const { page, count } = compileSearch(input, input.size, input.offset);
  try {
    const [docs, totals] = await Promise.all([
      input.size > 0 ? rows<{ doc: string }>(client, page) : Promise.resolve([]),
      rows<{ total: number | string }>(client, count),
    ]);
    return {
      took: Math.round(performance.now() - started),
      hits: { total: { value: Number(totals[0]?.total ?? 0) }, responses: docs.map((d) => JSON.parse(d.doc) as ResponseRecord) },
    };
  } catch (err) {
    throw clickHouseHttpError(err) ?? err;
  }
}

/** SEARCH /1.0/survey/<survey_ids>/response */
export async function handleSearch(client: ClickHouseClient, orgId: string, surveyIdsParam: string, body: unknown): Promise<SearchResult> {
  const surveyIds = parseSurveyIds(surveyIdsParam);
  const parsed = parseOrThrow(searchBodySchema, body ?? {});
  return searchResponses(client, {
    orgId,
    surveyIds,
    filtersBool: parsed.filters_bool,
    filters: parsed.filters,
    range: parsed.range,
    size: parsed.size,
    offset: parsed.offset,
  });
}

/** POST /1.0/survey/response: 1..1000 records, all or nothing. */
export async function handleWriteResponses(client: ClickHouseClient, orgId: string, body: unknown): Promise<{ count: number }> {
  const records = parseResponseBatch(body, orgId);
  return { count: await insertResponses(client, orgId, records) };
}
