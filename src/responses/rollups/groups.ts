/**
 * What the rollup rows of a window answer (read.ts has the window): the response groups, the
 * slice totals and the answer counts, as rows shaped like survey_responses' own. Without a filter,
 * the slice totals (schema/050) stand for the groups (rollupGroupsSql, rollupAnswersSql); with one
 * answer `eq` filter alone, the answer totals of that answer (schema/111, answer-rollups.ts) do.
 */
import type { ParamBag } from '../../clickhouse/sql.ts';
import { answerGroupFilter, answerGroupsSql, answerTotalsFilter, answerTotalsRowsSql } from '../answer-rollups.ts';
import type { ResponseSelection } from '../compile.ts';
import type { FilterNode } from '../filters.ts';
import { rollupRowsSql, type RollupCover } from './read.ts';

/** Filter keys whose every operator the rollup groups can answer. */
const ROLLUP_FILTER_KINDS: ReadonlySet<FilterNode['kind']> = new Set(['completion', 'language', 'channel_id']);

export function filtersServable(selection: ResponseSelection): boolean {
  return selection.filters.every((f) => ROLLUP_FILTER_KINDS.has(f.kind)) || answerGroupFilter(selection) !== undefined;
}

/** The group arrays, by the name their elements take (as in survey_responses). */
const GROUP_ARRAYS = {
  channel_id: 'g_channel_id', completion: 'g_completion', end_reason: 'g_end_reason', language: 'g_language',
  hf_support: 'g_support', x_rows: 'g_responses', x_nps: 'g_nps', x_csat: 'g_csat', x_ces: 'g_ces',
} as const;
export type GroupColumn = keyof typeof GROUP_ARRAYS;

/** The group columns the selection's filters test (filtersServable holds: completion, language, channel_id). */
const filterColumns = (selection: ResponseSelection): GroupColumn[] => selection.filters.map((f) => f.kind as GroupColumn);

const COMPLETION_TYPE = "Enum8('not_started' = 0, 'partially_completed' = 1, 'fully_completed' = 2)";
/**
 * The slice totals (schema/050) that stand for the groups along the one dimension an aggregation
 * level reads: the map column and the key's type in survey_responses (a union with raw rows needs
 * the same type). (t_language and t_support serve the summary only: summary.ts.)
 */
const TOTALS_BY: Partial<Record<GroupColumn, { map: string; type: string }>> = {
  completion: { map: 't_completion', type: COMPLETION_TYPE },
  end_reason: { map: 't_end_reason', type: 'LowCardinality(String)' },
};

/**
 * The slice totals of the selection's responses (t_rows, t_completion, t_end_reason, t_language,
 * t_support, t_nps, t_csat, t_ces), which stand for every group of a slice: the slice rows' own
 * (schema/050) when no filter narrows the groups; the answer totals of the filter's answer
 * (schema/111, answer-rollups.ts) when the filter is one answer `eq` alone. `FROM ... WHERE ...`,
 * one row per slice, its maps expanded by `arrayJoin` when given; undefined when neither serves.
 */
export function totalsRowsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, arrayJoin?: string): string | undefined {
  if (selection.filters.length === 0) return rollupRowsSql(selection, w, bag, arrayJoin);
  return answerTotalsFilter(selection) ? answerTotalsRowsSql(selection, w, bag, arrayJoin) : undefined;
}

export const totalsServable = (selection: ResponseSelection): boolean => selection.filters.length === 0 || answerTotalsFilter(selection) !== undefined;

/** Whether rollupGroupsSql answers these columns from the slice totals: at most one of completion, end_reason. */
export function groupsFromTotals(selection: ResponseSelection, columns: readonly GroupColumn[]): boolean {
  const dims = [...new Set(columns)].filter((c) => c !== 'x_rows');
  return totalsServable(selection) && (dims.length === 0 || (dims.length === 1 && TOTALS_BY[dims[0]] !== undefined));
}

/**
 * Response groups of the rollup rows in the window, one row per group with the columns named as
 * in survey_responses (created_at is the slice's start): survey_id, created_at, and of channel_id,
 * completion, end_reason, language, hf_support and the counts x_rows, x_nps, x_csat, x_ces those
 * asked for. Only those arrays are expanded: expanding all of them cost 3x (1M responses, 18 days
 * of day rows: 134 -> 42 ms of engine CPU).
 *
 * When the slice totals serve (groupsFromTotals), they answer instead: one row per slice, or per
 * value of that dimension in the slice, instead of one per group (5M responses, survey_id under
 * *: 27-63 -> 6-10 ms).
 */
export function rollupGroupsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, columns: readonly GroupColumn[]): string {
  if (groupsFromTotals(selection, columns)) {
    const [dim] = [...new Set(columns)].filter((c) => c !== 'x_rows');
    if (!dim) return `SELECT survey_id, start AS created_at, t_rows AS x_rows ${totalsRowsSql(selection, w, bag)!}`;
    const totals = TOTALS_BY[dim]!;
    return (
      `SELECT survey_id, start AS created_at, CAST(total_key AS ${totals.type}) AS ${dim}, x_rows ` +
      totalsRowsSql(selection, w, bag, `mapKeys(${totals.map}) AS total_key, mapValues(${totals.map}) AS x_rows`)!
    );
  }
  // An answer filter with dimension filters: the groups of the responses with that answer (schema/110).
  if (answerGroupFilter(selection)) return answerGroupsSql(selection, w, bag);
  const used = [...new Set<GroupColumn>(['x_rows', ...columns, ...filterColumns(selection)])];
  return `SELECT survey_id, start AS created_at, ${used.join(', ')} ${rollupRowsSql(selection, w, bag, used.map((c) => `${GROUP_ARRAYS[c]} AS ${c}`).join(', '))}`;
}

/**
 * The slice totals and the answer counts of one question in ONE read of the slice rows, where both
 * come from totals (no filter, no group column): per slice a row with `answer_value` NULL and the
 * slice's response count (t_rows), then a row per value of the question with its count (q_*).
 * Columns survey_id, created_at, answer_value, x_rows. An aggregation with an answer level needs
 * both, and each FINAL read of survey_rollup costs its planning again; undefined when the totals
 * do not serve them.
 */
export function rollupTotalsWithAnswersSql(selection: ResponseSelection, w: RollupCover, questionId: string, bag: ParamBag, columns: readonly GroupColumn[]): string | undefined {
  if (selection.filters.length > 0 || columns.length > 0) return undefined;
  return `SELECT survey_id, start AS created_at, answer_value, x_rows ${totalsWithAnswersRowsSql(selection, w, questionId, bag)}`;
}

/** `FROM ... WHERE ...` of rollupTotalsWithAnswersSql: each slice row's arrays expanded to `answer_value`, `x_rows`. */
function totalsWithAnswersRowsSql(selection: ResponseSelection, w: RollupCover, questionId: string, bag: ParamBag): string {
  const q = bag.add(questionId, 'String');
  const only = (column: string) => `arrayFilter((x, q) -> q = ${q}, ${column}, q_question_id)`;
  const arrays = `arrayPushFront(CAST(${only('q_value')}, 'Array(Nullable(String))'), NULL) AS answer_value, arrayPushFront(${only('q_responses')}, t_rows) AS x_rows`;
  return rollupRowsSql(selection, w, bag, arrays);
}

/**
 * rollupTotalsWithAnswersSql's rows as one aggregation level's weighted rows, without the slice
 * keys: `answer_value` (NULL on the slice's own row) and `x_rows` as UInt64. Undefined when the
 * totals do not serve them (a filter).
 */
export function rollupAnswerLevelSql(selection: ResponseSelection, w: RollupCover, questionId: string, bag: ParamBag): string | undefined {
  if (selection.filters.length > 0) return undefined;
  return `SELECT answer_value, toUInt64(x_rows) AS x_rows ${totalsWithAnswersRowsSql(selection, w, questionId, bag)}`;
}

/**
 * Answer counts of one question in the window: survey_id, created_at, answer_value, x_rows and
 * the group columns the other levels or the filters need (`columns`: channel_id, completion,
 * end_reason, language). With no filter and no such column, the per-(question, value) totals
 * (q_*, schema/050) answer: 2.3-3.7x fewer entries to filter than the per-group a_* arrays.
 */
export function rollupAnswersSql(selection: ResponseSelection, w: RollupCover, questionId: string, bag: ParamBag, columns: readonly GroupColumn[]): string {
  // Only the entries of that question are expanded (a slice holds the answers of every question):
  // each array is filtered alike, without capturing a column in a lambda (the engine would copy
  // the captured array once per element) and without indexing after the ARRAY JOIN (each row
  // would carry the whole array).
  const q = bag.add(questionId, 'String');
  const totals = selection.filters.length === 0 && columns.length === 0;
  const questions = totals ? 'q_question_id' : 'a_question_id';
  const only = (column: string) => `arrayFilter((x, q) -> q = ${q}, ${column}, ${questions})`;
  const arrays = totals
    ? [['q_value', 'answer_value'], ['q_responses', 'x_rows']]
    : [['a_channel_id', 'channel_id'], ['a_completion', 'completion'], ['a_end_reason', 'end_reason'], ['a_language', 'language'], ['a_value', 'answer_value'], ['a_responses', 'x_rows']];
  const names = ['survey_id', 'start AS created_at', ...arrays.map(([, name]) => name)];
  return `SELECT ${names.join(', ')} ${rollupRowsSql(selection, w, bag, arrays.map(([column, name]) => `${only(column)} AS ${name}`).join(', '))}`;
}
