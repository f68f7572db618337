/**
 * The answer filter of the survey filter catalogue: `{"type": "response.answer", "key": <question
 * correlation id>, "operator", "value" | "values"}` keeps the responses by the answer given to
 * one question.
 *
 *   eq neq in not_in        the answer's value: its text as the `answer` group_by buckets show it
 *                           (v_s, else v_d / v_b as text), so a bucket's key filters to exactly its
 *                           responses; numbers and booleans are compared as that text
 *   gt lt                   the answer's score (v_d, else v_s read as a number), numerically
 *   null not_null           null: the response has no answer to the question (skipped or not
 *                           asked); not_null: it has one
 *   contains not_contains   a case-insensitive substring of the value's text
 *
 * A response with several answers to the question matches when one of them does (`neq`,
 * `not_in`, `not_contains` are the exact complement: none does). A question id nobody answered,
 * of another organization included, is a question no response in selection answered: `eq` matches
 * nothing, `null` everything; the answer never tells whether the id exists elsewhere.
 */
import type { ParamBag } from '../clickhouse/sql.ts';
import { args, boundedString, noArgs, scalar, scalarAsNumber, type FilterProblem } from '../query/filter-args.ts';
import { splitOperator, type Operator } from '../query/operators.ts';

export const ANSWER_OPERATORS = ['eq', 'neq', 'in', 'not_in', 'gt', 'lt', 'null', 'not_null', 'contains', 'not_contains'] as const satisfies readonly Operator[];

export type AnswerFilterNode =
  | { readonly kind: 'answer'; readonly question: string; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: 'answer'; readonly question: string; readonly op: 'gt' | 'lt'; readonly negate: false; readonly value: number }
  | { readonly kind: 'answer'; readonly question: string; readonly op: 'null'; readonly negate: boolean }
  | { readonly kind: 'answer'; readonly question: string; readonly op: 'contains'; readonly negate: boolean; readonly value: string };

interface RawAnswerFilter {
  key: string;
  operator: Operator;
  value?: unknown;
  values?: unknown[];
}

/** Pure key/operator/value rules of an answer filter: the node, or its problems. */
export function answerNode(f: RawAnswerFilter): AnswerFilterNode | FilterProblem[] {
  if (!(ANSWER_OPERATORS as readonly Operator[]).includes(f.operator)) {
    return [{ field: 'operator', message: `operator "${f.operator}" is not supported for answer filters; they accept ${ANSWER_OPERATORS.join(', ')}` }];
  }
  const question = f.key;
  const { op, negate } = splitOperator(f.operator);
  const problems: FilterProblem[] = [];
  switch (op) {
    case 'null':
      return noArgs(f, problems) ?? { kind: 'answer', question, op: 'null', negate };
    case 'eq':
    case 'in': {
      // The value's text, as ans_values holds it (record.ts answerValue: String(v_d), String(v_b)).
      const values = args(f, op, problems, (x) => { const s = scalar(x); return s === undefined ? undefined : String(s); }, 'a string, number or boolean');
      return problems.length ? problems : { kind: 'answer', question, op, negate, values };
    }
    case 'gt':
    case 'lt': {
      const [value] = args(f, op, problems, (x) => { const s = scalar(x); return s === undefined || typeof s === 'boolean' ? undefined : scalarAsNumber(s); }, 'a number');
      return problems.length ? problems : { kind: 'answer', question, op, negate: false, value };
    }
    case 'contains': {
      const [value] = args(f, op, problems, (x) => (typeof x === 'number' && Number.isFinite(x) ? String(x) : boundedString(1)(x)), 'a non-empty string');
      return problems.length ? problems : { kind: 'answer', question, op, negate, value };
    }
    default:
      throw new Error(`unreachable answer operator ${op}`);
  }
}

/** The positive condition on survey_responses (compileFilter negates it). */
export function answerFilterSql(node: AnswerFilterNode, bag: ParamBag): string {
  const q = bag.add(node.question, 'String');
  switch (node.op) {
    case 'null':
      return `NOT has(ans_question_ids, ${q})`;
    case 'eq':
      return `arrayExists((v, q) -> q = ${q} AND v = ${bag.add(node.values[0], 'String')}, ans_values, ans_question_ids)`;
    case 'in':
      return `arrayExists((v, q) -> q = ${q} AND has(${bag.add(node.values, 'Array(String)')}, v), ans_values, ans_question_ids)`;
    case 'contains':
      return `arrayExists((v, q) -> q = ${q} AND positionCaseInsensitiveUTF8(v, ${bag.add(node.value, 'String')}) > 0, ans_values, ans_question_ids)`;
    case 'gt':
    case 'lt':
      // A score is NULL when the answer has none (free text): it is neither above nor below.
      return `arrayExists((s, q) -> q = ${q} AND ifNull(s ${node.op === 'gt' ? '>' : '<'} ${bag.add(node.value, 'Float64')}, false), ans_scores, ans_question_ids)`;
  }
}
