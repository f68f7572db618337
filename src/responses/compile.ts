/**
 * The survey responses' selection and guarded source: filter nodes + selection -> the parameterised
 * `FROM survey_responses FINAL WHERE <selection>` every survey read starts from.
 *
 * Values only ever travel as query parameters (ParamBag); the only text spliced into SQL is
 * column names, operators and type literals from these files. Every read is
 * `FROM survey_responses FINAL WHERE <selection>`, and the selection starts with the token's org.
 * The filter nodes' SQL is filter-sql.ts; the search's count and page, search-sql.ts.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import type { ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import type { FilterNode, SelectionBody } from './filters.ts';
import { compileSelectionWhere } from '../query/selection.ts';
import { NO_JIT_SETTINGS, READ_SETTINGS } from '../query/settings.ts';
import { compileFilter } from './filter-sql.ts';

/**
 * Settings of every survey-response query: the query language's read limits, with the engine's JIT
 * compilation of expressions off (both src/query/settings.ts).
 */
export const QUERY_SETTINGS: ClickHouseSettings = Object.freeze({ ...READ_SETTINGS, ...NO_JIT_SETTINGS });

export interface ResponseSelection {
  orgId: string;
  surveyIds: string[] | '*';
  filtersBool: 'AND' | 'OR';
  filters: readonly FilterNode[];
  range?: { start?: string; end?: string };
}

/** The selection of a read: the token's organization, the path's survey list, the body's filters and range. */
export function selectionOf(orgId: string, surveyIds: ResponseSelection['surveyIds'], body: SelectionBody): ResponseSelection {
  return { orgId, surveyIds, filtersBool: body.filters_bool, filters: body.filters, range: body.range };
}

/**
 * The WHERE expression (without the keyword): org first, then surveys, the created_at window,
 * then the filters joined by filtersBool in parentheses. Range bounds are inclusive DateTime64
 * texts ('YYYY-MM-DD HH:MM:SS.ffffff', as rangeSchema produces them).
 */
export function compileSelection(selection: ResponseSelection, bag: ParamBag): string {
  const org = new TenantOrg(selection.orgId, bag);
  const extra = selection.surveyIds !== '*' ? [`survey_id IN ${bag.add(selection.surveyIds, 'Array(UUID)')}`] : [];
  return compileSelectionWhere(selection, bag, { org, table: 'survey_responses', time: 'created_at', extra, filter: (f) => compileFilter(f, bag) });
}

/**
 * The one source every survey read starts from: `FROM survey_responses FINAL WHERE <selection>`, whose
 * selection begins with the token's organization. The tenant guard and the version dedup (FINAL) are
 * part of the source, so no query can forget either (as PostHog's HogQL prints team_id into every
 * table it reads). Callers append `AND ...` conditions or GROUP BY / ORDER BY after it.
 * `prewhere` may only test columns of the sorting key (created_at, survey_id): every version of a
 * response shares them, so filtering before FINAL keeps or drops its versions together.
 */
export function fromSelection(selection: ResponseSelection, bag: ParamBag, prewhere?: (bag: ParamBag) => string | undefined): string {
  const where = compileSelection(selection, bag);
  const before = prewhere?.(bag);
  return `FROM survey_responses FINAL${before ? ` PREWHERE ${before}` : ''} WHERE ${where}`;
}
