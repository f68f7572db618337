/**
 * Filter operators, shared by every filter language (survey responses, events). Each feature's
 * key catalogue says which of them a key accepts. A negative operator is the exact complement of
 * its positive twin (`neq` = NOT `eq`, `not_in` = NOT `in`, `not_contains` = NOT `contains`,
 * `not_null` = NOT `null`), so a record without the field matches the negative one.
 */
export const OPERATORS = [
  'eq', 'neq', 'in', 'not_in', 'not_null', 'null', 'contains', 'not_contains', 'before', 'after', 'lt', 'gt',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** The positive operators: what a filter node carries, with `negate` for the negative ones. */
export type Positive<O extends Operator> = Exclude<O, 'neq' | 'not_in' | 'not_null' | 'not_contains'>;

export const NEGATIVE: Partial<Record<Operator, Operator>> = { neq: 'eq', not_in: 'in', not_null: 'null', not_contains: 'contains' };

/** `neq` -> { op: 'eq', negate: true }; a positive operator is itself. */
export function splitOperator(operator: Operator): { op: Positive<Operator>; negate: boolean } {
  return { op: (NEGATIVE[operator] ?? operator) as Positive<Operator>, negate: operator in NEGATIVE };
}

export const EQ_IN = ['eq', 'neq', 'in', 'not_in'] as const;
