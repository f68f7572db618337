/**
 * Answer filters served by the rollups. The responses that gave one answer to one question are
 * read from what the slices hold about them instead of from every response:
 *   - one `eq` answer filter alone: the answer totals of that answer (schema/111: per slice and
 *     (question, value), the slice totals of those responses, sorted by answer), the same
 *     questions as the slice totals answer without a filter (summary, search total, aggregations
 *     by survey_id, created_at and one of completion / end_reason, metrics without those);
 *   - otherwise, one `eq` answer filter ANDed with completion / language / channel_id filters
 *     (columns of the answer groups), or a request the totals do not answer: the answer groups of
 *     the slice rows (schema/110, a_*: per channel, completion, end reason, language, support,
 *     question and value, their count and score counts), as the response groups g_* serve the
 *     other filters.
 * Not served (the raw table answers): `neq`, `in`, `null`, `contains`, `gt` / `lt` (a response
 * with several answers to the question would count once per value, and the score is not a group
 * key), two answer filters, OR, and an aggregation with an `answer` level (its counts are not split
 * by the filter's answer).
 *
 * Versions. Every slice row has a marker in the answer totals at its version (schema/111's view,
 * schema/250's backfill), so the answer totals alone say which version of each slice is current:
 * survey_rollup is not read for it.
 *
 * Completeness. Slices written before schema/110 hold no score arrays (their marker says
 * complete = 0): the read carries, in the same query, whether every slice it read holds what it
 * needs (`answers_complete`), and the caller reads the raw table when one does not (after
 * `tallyhouse rollups rebuild` every slice does).
 */
import type { ParamBag } from '../clickhouse/sql.ts';
import type { AnswerFilterNode } from './answer-filter.ts';
import type { ResponseSelection } from './compile.ts';
import type { FilterNode } from './filters.ts';
import { fromSlicesSql, rollupRowsSql, type RollupCover } from './rollups/read.ts';

const DIMENSION_KINDS: ReadonlySet<FilterNode['kind']> = new Set(['completion', 'language', 'channel_id']);

type EqAnswer = Extract<AnswerFilterNode, { values: readonly string[] }>;

/** The answer filter the answer groups serve, and the dimension filters beside it; undefined when not servable. */
export function answerGroupFilter(selection: ResponseSelection): { answer: EqAnswer; dimensions: readonly FilterNode[] } | undefined {
  const answers = selection.filters.filter((f) => f.kind === 'answer');
  if (answers.length !== 1) return undefined;
  const [answer] = answers;
  if (answer.kind !== 'answer' || answer.op !== 'eq' || answer.negate) return undefined;
  const dimensions = selection.filters.filter((f) => f !== answer);
  if (dimensions.length > 0 && selection.filtersBool !== 'AND') return undefined;
  return dimensions.every((f) => DIMENSION_KINDS.has(f.kind)) ? { answer, dimensions } : undefined;
}

/** The one `eq` answer filter alone (no other filter): the answer totals (schema/111) serve it. */
export function answerTotalsFilter(selection: ResponseSelection): EqAnswer | undefined {
  const found = answerGroupFilter(selection);
  return found && found.dimensions.length === 0 ? found.answer : undefined;
}

/** The key of the markers: one per slice row, holding its `complete` (schema/111). */
const MARKER_KEY = "question_id = '' AND value = ''";

/**
 * The markers of the window's slices, `(span, survey_id, start, version, complete)`: each slice's
 * current version, since every slice row writes its marker (schema/111's view; schema/250 for the
 * rows written before it), so survey_rollup itself need not be read.
 */
const currentMarkersSql = (selection: ResponseSelection, w: RollupCover, bag: ParamBag) =>
  `SELECT span, survey_id, start, version, complete ${fromSlicesSql('survey_rollup_answers', selection, w, bag)} AND ${MARKER_KEY}`;

/** The answer totals' key of the filter's answer. */
function answerKeySql(selection: ResponseSelection, bag: ParamBag): string {
  const answer = answerTotalsFilter(selection)!;
  return `question_id = ${bag.add(answer.question, 'String')} AND value = ${bag.add(answer.values[0], 'String')}`;
}

/**
 * `FROM ... WHERE ...` of the answer totals of the filter's answer in the window (the t_* columns
 * of the slice totals, one row per slice holding the answer), each at its slice's current version:
 * a row of an older version is an answer the slice no longer holds. Their completeness is
 * answerTotalsCompleteSql's to check.
 */
export function answerTotalsRowsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, arrayJoin?: string): string {
  return (
    `${fromSlicesSql('survey_rollup_answers', selection, w, bag, arrayJoin ? [`ARRAY JOIN ${arrayJoin}`] : [])} AND ${answerKeySql(selection, bag)} ` +
    `AND (span, survey_id, start, version) IN (SELECT span, survey_id, start, version FROM (${currentMarkersSql(selection, w, bag)}))`
  );
}

/** The answer totals' columns, in the order of the tuple answerTotalsSummarySql picks per slice. */
const TOTALS = ['complete', 't_rows', 't_completion', 't_end_reason', 't_language', 't_support', 't_nps', 't_csat', 't_ces'] as const;

/**
 * The summary's part from the answer totals, in one read of survey_rollup_answers: per slice of
 * the window, its marker and its row of the filter's answer, and of the two the newer, the
 * answer's row on a tie. The marker is at the slice's current version, so the answer's row is
 * taken only when it is at that version too; otherwise (no row, or a row of an answer the slice no
 * longer holds) the marker's empty totals stand in. `columns` (aggregates of the t_* columns, one
 * row) and `b_incomplete`, the slices whose answer totals are incomplete (more than 0: the caller
 * reads the raw table).
 */
export function answerTotalsSummarySql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, columns: string): string {
  const newest = `argMax(tuple(${TOTALS.join(', ')}), (version, question_id != '')) AS newest`;
  const rows = `SELECT span, survey_id, start, version, question_id, ${TOTALS.join(', ')} ${fromSlicesSql('survey_rollup_answers', selection, w, bag)} AND ((${answerKeySql(selection, bag)}) OR (${MARKER_KEY}))`;
  const perSlice = `SELECT ${TOTALS.map((c, i) => `newest.${i + 1} AS ${c}`).join(', ')} FROM (SELECT ${newest} FROM (${rows}) GROUP BY span, survey_id, start)`;
  return `SELECT ${columns}, countIf(complete = 0) AS b_incomplete FROM (${perSlice})`;
}

/** A scalar: 1 when every slice of the window has complete answer totals (schema/111), else 0. */
export const answerTotalsCompleteSql = (selection: ResponseSelection, w: RollupCover, bag: ParamBag): string =>
  `(SELECT countIf(complete = 0) = 0 FROM (${currentMarkersSql(selection, w, bag)}))`;

/**
 * The answer groups of the filter's (question, value) in the window, one row per group with the
 * columns of rollupGroupsSql (survey_id, created_at, channel_id, completion, end_reason,
 * language, hf_support, x_rows, x_nps, x_csat, x_ces); the dimension filters apply to them.
 */
export function answerGroupsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag): string {
  const found = answerGroupFilter(selection)!;
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
  const rows = `${rollupRowsSql({ ...selection, filters: found.dimensions }, w, bag, arrays.join(', '))} AND has(a_question_id, ${q})`;
  return `SELECT survey_id, start AS created_at, channel_id, completion, end_reason, language, hf_support, x_rows, x_nps, x_csat, x_ces ${rows}`;
}

/** A scalar: 1 when every slice row of the window holding the question holds its score arrays (schema/110), else 0. */
export function answersCompleteSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag): string {
  const q = bag.add(answerGroupFilter(selection)!.answer.question, 'String');
  return `(SELECT countIf(length(a_nps) != length(a_question_id)) = 0 ${rollupRowsSql({ ...selection, filters: [] }, w, bag)} AND has(a_question_id, ${q}))`;
}

/**
 * The completeness check of what a query read, a scalar: answerTotalsCompleteSql when its groups
 * came from the answer totals (`fromTotals`: rollups/read.ts groupsFromTotals), answersCompleteSql
 * when from the answer groups; undefined for a selection without a served answer filter.
 */
function answersCheckSql(selection: ResponseSelection, w: RollupCover | undefined, bag: ParamBag, fromTotals: boolean): string | undefined {
  if (!w || !answerGroupFilter(selection)) return undefined;
  return fromTotals && answerTotalsFilter(selection) ? answerTotalsCompleteSql(selection, w, bag) : answersCompleteSql(selection, w, bag);
}

/** answersCheckSql as the column `answers_complete` of a query's row ('' when there is none). */
export function answersCompleteColumn(selection: ResponseSelection, w: RollupCover | undefined, bag: ParamBag, fromTotals: boolean): string {
  const check = answersCheckSql(selection, w, bag, fromTotals);
  return check ? `, ${check} AS answers_complete` : '';
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
