/**
 * The parts of a filter every catalogue reads the same way (survey responses, events): its value
 * or values, checked against the operator, with the shared bounds; and the inclusive range body.
 * Each catalogue keeps its keys, their operators and what their values must be.
 */
import * as v from 'valibot';
import { charCount } from '../chars.ts';
import { compareMicros, formatDb, parseIsoMicros } from '../time/iso.ts';
import { jsonObject } from '../validation.ts';
import type { Operator } from './operators.ts';

export const MAX_FILTERS = 100;
export const MAX_FILTER_VALUES = 1000;
export const MAX_VALUE_LENGTH = 1000;

export type Scalar = string | number | boolean;

/** `values` of a filter: a non-empty list of at most MAX_FILTER_VALUES items, each checked by the operator's rules. */
export const filterValuesSchema = v.pipe(
  v.array(v.unknown(), 'values must be an array'),
  v.minLength(1, 'values must not be empty'),
  v.maxLength(MAX_FILTER_VALUES, `values holds at most ${MAX_FILTER_VALUES} items`),
);

/** The argument part of a raw filter. */
export interface FilterArgs {
  operator: Operator;
  value?: unknown;
  values?: unknown[];
}

/** A problem of one filter; `field` names its member, `index` an element of `values`. */
export interface FilterProblem {
  field: string;
  message: string;
  index?: number;
}

const NUMERIC = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/**
 * A scalar read as a number, when it is one (numbers, numeric strings). The one rule for both a
 * survey response hidden-field filter's numeric match and an answer's score (`v_s` read as a
 * number, decisions.md).
 */
export function scalarAsNumber(x: Scalar): number | undefined {
  if (typeof x === 'number') return x;
  if (typeof x === 'string' && NUMERIC.test(x)) {
    const n = Number(x);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

export function scalar(x: unknown): Scalar | undefined {
  if (typeof x === 'boolean') return x;
  if (typeof x === 'number') return Number.isFinite(x) ? x : undefined;
  return boundedString(0)(x);
}

export function boundedString(min: number) {
  return (x: unknown): string | undefined =>
    typeof x === 'string' && x.length >= min && charCount(x) <= MAX_VALUE_LENGTH ? x : undefined;
}

/** `null`/`not_null` take no argument: the problems, or undefined when there are none. */
export function noArgs(f: FilterArgs, problems: FilterProblem[]): FilterProblem[] | undefined {
  if (f.value !== undefined) problems.push({ field: 'value', message: `operator "${f.operator}" takes no value` });
  if (f.values !== undefined) problems.push({ field: 'values', message: `operator "${f.operator}" takes no values` });
  return problems.length ? problems : undefined;
}

/**
 * Reads the argument(s): `values` (a list) for in/not_in (`op` is the positive operator), `value`
 * (one) for the rest. Returns the converted list (one element for single-value operators);
 * problems go to `problems`.
 */
export function args<T>(f: FilterArgs, op: Operator, problems: FilterProblem[], convert: (x: unknown) => T | undefined, expected: string): T[] {
  if (op === 'in') {
    if (f.value !== undefined) problems.push({ field: 'value', message: `operator "${f.operator}" takes "values" (a list), not "value"` });
    if (f.values === undefined) {
      problems.push({ field: 'values', message: `operator "${f.operator}" needs "values" (a non-empty list)` });
      return [];
    }
    const out: T[] = [];
    f.values.forEach((x, i) => {
      const c = convert(x);
      if (c === undefined) problems.push({ field: 'values', index: i, message: `must be ${expected}${maxNote(x)}` });
      else out.push(c);
    });
    return out;
  }
  if (f.values !== undefined) problems.push({ field: 'values', message: `operator "${f.operator}" takes "value", not "values"` });
  if (f.value === undefined || f.value === null) {
    problems.push({ field: 'value', message: `operator "${f.operator}" needs a "value"` });
    return [];
  }
  const c = convert(f.value);
  if (c === undefined) {
    problems.push({ field: 'value', message: `must be ${expected}${maxNote(f.value)}` });
    return [];
  }
  return [c];
}

function maxNote(x: unknown): string {
  return typeof x === 'string' && charCount(x) > MAX_VALUE_LENGTH ? ` of at most ${MAX_VALUE_LENGTH} characters` : '';
}

/** An ISO 8601 instant: `{t, db}` (µs and its DateTime64(6) text). `hint` ends the message of a bad one. */
export function isoInstant(name: string, hint: string) {
  return v.pipe(
    v.string(`${name} must be an ISO 8601 string`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const t = parseIsoMicros(dataset.value);
      if (!t) {
        addIssue({ message: `${name} must be an ISO 8601 ${hint}` });
        return NEVER;
      }
      return { t, db: formatDb(t) };
    }),
  );
}

/** RE2 pattern inside a SQL string literal: `^\\d{4}-\\d{2}-\\d{2}` reads as ^\d{4}-\d{2}-\d{2}. */
const ISO_DATE_PREFIX = '^\\\\d{4}-\\\\d{2}-\\\\d{2}';

/**
 * `before` / `after` on a stored text (`text`, an SQL expression): only a text that starts like an
 * ISO date takes part, read as an instant and compared with `instantParam` (a DT64 placeholder of
 * the filter's isoInstant). The pattern is a constant, never input.
 */
export function textBeforeAfterSql(op: 'before' | 'after', text: string, instantParam: string): string {
  const cmp = op === 'before' ? '<' : '>';
  return `match(${text}, '${ISO_DATE_PREFIX}') AND ifNull(parseDateTime64BestEffortOrNull(${text}, 6, 'UTC') ${cmp} ${instantParam}, false)`;
}

/** `{field, start, end}` on one time column, both ends inclusive, as DateTime64(6) texts ready to be parameters. */
export function rangeSchema<const F extends string>(field: F, hint: string) {
  return v.pipe(
    jsonObject({
      field: v.optional(v.picklist([field], `range.field must be "${field}"`), field),
      start: v.optional(isoInstant('start', hint)),
      end: v.optional(isoInstant('end', hint)),
    }, 'range'),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const { start, end } = dataset.value;
      if (start && end && compareMicros(start.t, end.t) > 0) {
        addIssue({ message: 'range.start must not be after range.end', path: [{ type: 'object', origin: 'value', input: dataset.value as never, key: 'start', value: start }] });
        return NEVER;
      }
      return { field, start: start?.db, end: end?.db };
    }),
  );
}
