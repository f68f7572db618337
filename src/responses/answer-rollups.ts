/**
 * Answer filters served by the rollups (schema/110): the responses that gave one answer to one
 * question are groups of each slice of their own (a_*: per channel, completion, end reason,
 * language, support, question and value, their count and score counts), so a summary, an
 * aggregation or a search total filtered by `response.answer` `eq` reads those groups instead of
 * every response, as the response groups g_* serve the other filters.
 *
 * Served: one `eq` answer filter, alone or ANDed with completion / language / channel_id filters
 * (those are columns of the answer groups). Not served (the raw table answers): `neq`, `in`, `null`,
 * `contains`, `gt` / `lt` (a response with several answers to the question would count once per
 * value, and the score is not a group key), two answer filters, OR, and an aggregation with an
 * `answer` level (its counts are not split by the filter's answer).
 *
 * Slice rows written before schema/110 hold no score arrays: the read carries, in the same query,
 * whether every slice row it read holds them (`answers_complete`), and the caller reads the raw
 * table when one does not (after `tallyhouse rollups rebuild` every row does).
 */
import type { ParamBag } from '../clickhouse/sql.ts';
import type { AnswerFilterNode } from './answer-filter.ts';
import type { Scope } from './compile.ts';
import type { FilterNode } from './filters.ts';
import { rollupRowsSql, type RollupWindow } from './rollups/read.ts';

const DIMENSION_KINDS: ReadonlySet<FilterNode['kind']> = new Set(['completion', 'language', 'channel_id']);

type EqAnswer = Extract<AnswerFilterNode, { values: readonly string[] }>;

/** The answer filter the answer groups serve, and the dimension filters beside it; undefined when not servable. */
export function answerGroupFilter(scope: Scope): { answer: EqAnswer; dimensions: readonly FilterNode[] } | undefined {
  const answers = scope.filters.filter((f) => f.kind === 'answer');
  if (answers.length !== 1) return undefined;
  const [answer] = answers;
  if (answer.kind !== 'answer' || answer.op !== 'eq' || answer.negate) return undefined;
  const dimensions = scope.filters.filter((f) => f !== answer);
  if (dimensions.length > 0 && scope.filtersBool !== 'AND') return undefined;
  return dimensions.every((f) => DIMENSION_KINDS.has(f.kind)) ? { answer, dimensions } : undefined;
}

/**
 * The answer groups of the filter's (question, value) in the window, one row per group with the
 * columns of rollupGroupsSql (survey_id, created_at, channel_id, completion, end_reason,
 * language, hf_support, x_rows, x_nps, x_csat, x_ces); the dimension filters apply to them.
 */
export function answerGroupsSql(scope: Scope, w: RollupWindow, bag: ParamBag): string {
  const found = answerGroupFilter(scope)!;
  const q = bag.add(found.answer.question, 'String');
  const value = bag.add(found.answer.values[0], 'String');
  // Only the entries of that answer are expanded; each array is filtered alike by one mask of the
  // entries, computed once per row (the strings compared once, not once per array), and passed as
  // an argument rather than captured (a captured column is copied once per element).
  // Score arrays are padded to the entries: a row without them counts no score and is flagged by answersCompleteSql.
  const mask = `arrayMap((q, v) -> q = ${q} AND v = ${value}, a_question_id, a_value)`;
  let first = true;
  const only = (column: string) => {
    const m = first ? `(${mask} AS answer_mask)` : 'answer_mask';
    first = false;
    return `arrayFilter((x, m) -> m, ${column}, ${m})`;
  };
  const padded = (column: string) => only(`arrayResize(${column}, length(a_question_id))`);
  const arrays = [
    `${only('a_channel_id')} AS channel_id`, `${only('a_completion')} AS completion`, `${only('a_end_reason')} AS end_reason`,
    `${only('a_language')} AS language`, `${padded('a_support')} AS hf_support`, `${only('a_responses')} AS x_rows`,
    `${padded('a_nps')} AS x_nps`, `${padded('a_csat')} AS x_csat`, `${padded('a_ces')} AS x_ces`,
  ];
  // Slice rows without the question hold none of its groups: skipped before their arrays are filtered.
  const rows = `${rollupRowsSql({ ...scope, filters: found.dimensions }, w, bag, arrays.join(', '))} AND has(a_question_id, ${q})`;
  return `SELECT survey_id, start AS created_at, channel_id, completion, end_reason, language, hf_support, x_rows, x_nps, x_csat, x_ces ${rows}`;
}

/** A scalar: 1 when every slice row of the window holding the question holds its score arrays (schema/110), else 0. */
export function answersCompleteSql(scope: Scope, w: RollupWindow, bag: ParamBag): string {
  const q = bag.add(answerGroupFilter(scope)!.answer.question, 'String');
  return `(SELECT countIf(length(a_nps) != length(a_question_id)) = 0 ${rollupRowsSql({ ...scope, filters: [] }, w, bag)} AND has(a_question_id, ${q}))`;
}

/** The column carrying answersCompleteSql, for a query of a scope the answer groups serve ('' otherwise). */
export function answersCompleteColumn(scope: Scope, w: RollupWindow | undefined, bag: ParamBag): string {
  return w && answerGroupFilter(scope) ? `, ${answersCompleteSql(scope, w, bag)} AS answers_complete` : '';
}

/** Rows of such a query: null when a slice row lacked its score arrays (read the raw table), else the rows without the column. */
export function completeRows<R extends object>(rows: readonly R[]): R[] | null {
  if (rows.some((r) => 'answers_complete' in r && Number((r as { answers_complete: unknown }).answers_complete) === 0)) return null;
  return rows.map((r) => {
    if (!('answers_complete' in r)) return r;
    const { answers_complete: _, ...rest } = r as R & { answers_complete: unknown };
    return rest as R;
  });
}
