/**
 * Feedback cohorts compiled (cohort.ts has the nodes and their meaning): sub-selects of the users
 * of a cohort, read through the guarded sources only (survey responses: src/responses/compile.ts
 * `fromSelection`; copilot ratings: EventSource, whose `from` the caller passes in because the
 * source itself compiles its cohort with this module), so the organization guard is the token's by
 * construction.
 */
import type { ParamBag } from '../../clickhouse/sql.ts';
import type { ReadSelection } from '../../query/selection.ts';
import { fromSelection, type ResponseSelection } from '../../responses/compile.ts';
import type { FilterNode } from '../../responses/filters.ts';
import type { EventFilterNode } from '../read/filters.ts';
import { NPS_GROUPS, type CohortNode, type ValueTest } from './cohort.ts';

/** `FROM events ... WHERE <selection>` on the caller's ParamBag: `new EventSource(selection, bag).from()` (src/events/read/source.ts). */
export type EventsFrom = (selection: ReadSelection<EventFilterNode>) => string;

/** The condition on one value expression; `asNumber` reads it as a number (NULL when it is none). */
function testSql(test: ValueTest, value: string, asNumber: string, bag: ParamBag): string {
  switch (test.op) {
    case 'in': {
      const texts = test.values.filter((x) => typeof x !== 'number').map(String);
      const numbers = test.values.filter((x): x is number => typeof x === 'number');
      const branches: string[] = [];
      if (texts.length) branches.push(`has(${bag.add(texts, 'Array(String)')}, ${value})`);
      if (numbers.length) branches.push(`ifNull(has(${bag.add(numbers, 'Array(Float64)')}, ${asNumber}), false)`);
      return branches.length === 1 ? branches[0] : `(${branches.join(' OR ')})`;
    }
    case 'contains':
      return `positionCaseInsensitiveUTF8(${value}, ${bag.add(test.value, 'String')}) > 0`;
    case 'null':
      throw new Error('null is a test of presence, not of a value');
    default: {
      const cmp = { lt: '<', gt: '>', lte: '<=', gte: '>=' }[test.op];
      return `ifNull(${asNumber} ${cmp} ${bag.add(test.value, 'Float64')}, false)`;
    }
  }
}

/** The response-level condition of an answer test on question `questionId`. */
function answerSql(answer: { questionId: string; test: ValueTest }, bag: ParamBag): string {
  const q = bag.add(answer.questionId, 'String');
  const { test } = answer;
  const positive =
    test.op === 'null'
      ? `NOT has(ans_question_ids, ${q})`
      : `arrayExists((aq, av, ascore) -> aq = ${q} AND ${testSql(test, 'av', 'ascore', bag)}, ans_question_ids, ans_values, ans_scores)`;
  return test.negate ? `NOT (${positive})` : positive;
}

/** The survey selection a cohort reads responses through (the survey read path's guarded source). */
function surveyScope(orgId: string, cohort: Extract<CohortNode, { kind: 'survey' }>): ResponseSelection {
  const filters: FilterNode[] = [...cohort.filters];
  const selection: ResponseSelection = { orgId, surveyIds: cohort.surveyIds === '*' ? '*' : [...cohort.surveyIds], filtersBool: cohort.filtersBool, filters, range: cohort.range };
  return selection;
}

/** The aliases of a survey cohort: a sub-select of one String column `alias`. */
export function cohortAliasesSql(orgId: string, cohort: Extract<CohortNode, { kind: 'survey' }>, bag: ParamBag): string {
  const conditions: string[] = [];
  if (cohort.completion) conditions.push(`completion IN ${bag.add(cohort.completion, 'Array(String)')}`);
  if (cohort.nps) {
    const [lo, hi] = NPS_GROUPS[cohort.nps];
    conditions.push(`arrayExists(s -> s >= ${lo} AND s <= ${hi}, nps_scores)`);
  }
  if (cohort.answer) conditions.push(answerSql(cohort.answer, bag));
  const extra = conditions.map((c) => ` AND ${c}`).join('');
  return `SELECT arrayJoin(respondent_aliases) AS alias ${fromSelection(surveyScope(orgId, cohort), bag)}${extra}`;
}

const COPILOT_SATISFACTION: readonly EventFilterNode[] = [
  { kind: 'type', op: 'eq', negate: false, values: ['copilot'] },
  { kind: 'event_name', op: 'eq', negate: false, values: ['service_copilot_satisfaction'] },
];

/** The users of a copilot cohort: a sub-select of `user_id` over the organization's satisfaction events. */
export function copilotUsersSql(orgId: string, cohort: Extract<CohortNode, { kind: 'copilot' }>, bag: ParamBag, eventsFrom: EventsFrom): string {
  const from = eventsFrom({ orgId, filtersBool: 'AND', filters: COPILOT_SATISFACTION, range: cohort.range });
  const positive = testSql(cohort.rating, 'rating', 'toFloat64OrNull(rating)', bag);
  return `SELECT user_id ${from} AND ${cohort.rating.negate ? `NOT (${positive})` : positive}`;
}

/**
 * The condition "the event's user is in the cohort", over `events` columns (`user_alias`,
 * `anonymous`, `user_id`) or over per-user rows with the same names.
 */
export function cohortCondition(orgId: string, cohort: CohortNode, bag: ParamBag, eventsFrom: EventsFrom): string {
  if (cohort.kind === 'copilot') return `user_id IN (${copilotUsersSql(orgId, cohort, bag, eventsFrom)})`;
  return `(anonymous = 0 AND user_alias IN (${cohortAliasesSql(orgId, cohort, bag)}))`;
}

