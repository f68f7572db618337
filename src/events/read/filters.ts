/**
 * The events' filter catalogue: request filters -> a closed union of typed nodes (compile.ts
 * turns them into SQL). The operators are the shared ones (src/query/operators.ts); this file
 * says which of them each key accepts, and what its values must be. A pair outside this table is
 * a 400 naming the filter and listing what the key accepts.
 *
 *   type                 eq neq in not_in                               identify | track | group.assign |
 *                                                                       group.unassign | page | screen | copilot
 *   user_id              eq neq in not_in                               UUIDs
 *   group_id             eq neq in not_in                               group UUIDs: the event's user is
 *                                                                       currently in that group (in: any)
 *   event_name, user_alias, url, screen_name
 *                        eq neq in not_in contains not_contains null not_null
 *   context_locale, context_timezone, agent_id, conversation_id
 *                        eq neq in not_in null not_null
 *   property             every operator; `property_key` names a top-level key of `properties`
 *   user_property        every operator; `property_key` names a property of the event's user
 *                        (its current identify value)
 *
 * null = the event does not carry the field (its type has none, or it was not sent); for
 * property / user_property: no such key, or the JSON value null. contains is a case-insensitive
 * substring. Property values compare by their JSON type: a string value matches string values
 * (lt/gt lexicographically), a number matches numbers numerically (1 = 1.0), a boolean matches
 * booleans; before/after take an ISO 8601 instant and compare string values that read as one.
 * Negative operators are the exact complement of their positive twin.
 */
import * as v from 'valibot';
import { EVENT_TYPES } from '../schema.ts';
import { EQ_IN, OPERATORS, splitOperator, type Operator } from '../../query/operators.ts';
import { formatDb, parseIsoMicros } from '../../time/iso.ts';
import {
  MAX_FILTERS, MAX_FILTER_VALUES, MAX_VALUE_LENGTH, args, boundedString, noArgs, rangeSchema, scalar,
  type FilterProblem, type Scalar,
} from '../../query/filter-args.ts';
import { UUID_PATTERN } from '../../uuid.ts';
import { jsonObject } from '../../validation.ts';
import { maxChars } from '../../chars.ts';
import { cohortEntry } from '../analysis/cohort.ts';

const TEXT_OPS = [...EQ_IN, 'contains', 'not_contains', 'null', 'not_null'] as const;
const NAME_OPS = [...EQ_IN, 'null', 'not_null'] as const;

/** The allow-list: key -> operators it accepts. */
export const EVENT_KEY_OPERATORS = {
  type: EQ_IN,
  user_id: EQ_IN,
  group_id: EQ_IN,
  event_name: TEXT_OPS,
  user_alias: TEXT_OPS,
  url: TEXT_OPS,
  screen_name: TEXT_OPS,
  context_locale: NAME_OPS,
  context_timezone: NAME_OPS,
  agent_id: NAME_OPS,
  conversation_id: NAME_OPS,
  property: OPERATORS,
  user_property: OPERATORS,
} as const satisfies Record<string, readonly Operator[]>;
export type EventFilterKey = keyof typeof EVENT_KEY_OPERATORS;

/** Keys that are a plain String column of `events` ('' when the event does not carry it). */
export type TextKey = 'event_name' | 'user_alias' | 'url' | 'screen_name' | 'context_locale' | 'context_timezone' | 'agent_id' | 'conversation_id';

export type { Scalar } from '../../query/filter-args.ts';

/** One filter after parsing. `negate` carries the negative operators (neq, not_in, ...). */
export type EventFilterNode =
  | { readonly kind: 'type'; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: 'user_id' | 'group_id'; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: TextKey; readonly op: 'eq' | 'in' | 'contains'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: TextKey; readonly op: 'null'; readonly negate: boolean }
  | { readonly kind: 'property' | 'user_property'; readonly key: string; readonly test: JsonTest; readonly negate: boolean };

/** A test of one JSON value (a property), typed by the filter value. */
export type JsonTest =
  | { readonly op: 'null' }
  | { readonly op: 'eq' | 'in'; readonly values: readonly Scalar[] }
  | { readonly op: 'contains'; readonly value: string }
  | { readonly op: 'lt' | 'gt'; readonly value: string | number }
  | { readonly op: 'before' | 'after'; readonly value: string /* DateTime64(6) text */ };

export { MAX_FILTERS, MAX_FILTER_VALUES, MAX_VALUE_LENGTH };

const UUID = UUID_PATTERN;

interface RawFilter {
  key: string;
  operator: Operator;
  value?: unknown;
  values?: unknown[];
  property_key?: string;
}

type Problem = FilterProblem;

const rawFilterSchema = jsonObject({
  key: v.pipe(v.string('key must be a string'), v.minLength(1, 'key must not be empty')),
  operator: v.picklist(OPERATORS, `operator must be one of ${OPERATORS.join(', ')}`),
  value: v.optional(v.unknown()),
  values: v.optional(v.pipe(
    v.array(v.unknown(), 'values must be an array'),
    v.minLength(1, 'values must not be empty'),
    v.maxLength(MAX_FILTER_VALUES, `values holds at most ${MAX_FILTER_VALUES} items`),
  )),
  property_key: v.optional(v.pipe(
    v.string('property_key must be a string'), v.minLength(1, 'property_key must not be empty'), maxChars(255, 'property_key is at most 255 characters'),
  )),
}, 'a filter');

/** One filter: structure first (valibot), then the key/operator/value rules that make a node. */
export const eventFilterSchema = v.pipe(
  rawFilterSchema,
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const input = dataset.value as unknown as RawFilter;
    const result = toEventNode(input);
    if (!Array.isArray(result)) return result;
    for (const p of result) {
      const path: [v.IssuePathItem, ...v.IssuePathItem[]] = [
        { type: 'object', origin: 'value', input: input as never, key: p.field, value: (input as never)[p.field] },
      ];
      if (p.index !== undefined) path.push({ type: 'array', origin: 'value', input: input.values as never, key: p.index, value: input.values?.[p.index] });
      addIssue({ message: p.message, path });
    }
    return NEVER;
  }),
);

/** Pure key/operator/value rules; returns the node or the list of problems. */
export function toEventNode(f: RawFilter): EventFilterNode | Problem[] {
  if (!Object.hasOwn(EVENT_KEY_OPERATORS, f.key)) {
    return [{ field: 'key', message: `unknown key "${f.key}"; event filter keys are ${Object.keys(EVENT_KEY_OPERATORS).join(', ')}` }];
  }
  const key = f.key as EventFilterKey;
  const accepted: readonly Operator[] = EVENT_KEY_OPERATORS[key];
  if (!accepted.includes(f.operator)) {
    return [{ field: 'operator', message: `operator "${f.operator}" is not supported for key "${key}"; it accepts ${accepted.join(', ')}` }];
  }
  const isProperty = key === 'property' || key === 'user_property';
  if (isProperty && f.property_key === undefined) return [{ field: 'property_key', message: `key "${key}" needs a "property_key"` }];
  if (!isProperty && f.property_key !== undefined) return [{ field: 'property_key', message: `only the keys property and user_property take a "property_key"` }];
  const { op, negate } = splitOperator(f.operator);
  const problems: Problem[] = [];
  switch (key) {
    case 'type': {
      const values = args(f, op, problems, (x) => ((EVENT_TYPES as readonly unknown[]).includes(x) ? (x as string) : undefined), `one of ${EVENT_TYPES.join(', ')}`);
      return problems.length ? problems : { kind: 'type', op: op as 'eq' | 'in', negate, values };
    }
    case 'user_id':
    case 'group_id': {
      const values = args(f, op, problems, (x) => (typeof x === 'string' && UUID.test(x) ? x.toLowerCase() : undefined), 'a UUID');
      return problems.length ? problems : { kind: key, op: op as 'eq' | 'in', negate, values };
    }
    case 'property':
    case 'user_property': {
      const test = jsonTest(f, op, problems);
      return problems.length || !test ? problems : { kind: key, key: f.property_key!, test, negate };
    }
    default: {
      if (op === 'null') return noArgs(f, problems) ?? { kind: key, op: 'null', negate };
      const values = args(f, op, problems, boundedString(op === 'contains' ? 1 : 0), op === 'contains' ? 'a non-empty string' : 'a string');
      return problems.length ? problems : { kind: key, op: op as 'eq' | 'in' | 'contains', negate, values };
    }
  }
}

function jsonTest(f: RawFilter, op: ReturnType<typeof splitOperator>['op'], problems: Problem[]): JsonTest | undefined {
  switch (op) {
    case 'null':
      return noArgs(f, problems) ? undefined : { op: 'null' };
    case 'eq':
    case 'in': {
      const values = args(f, op, problems, scalar, 'a string, number or boolean');
      return { op, values };
    }
    case 'contains': {
      const [value] = args(f, op, problems, boundedString(1), 'a non-empty string');
      return { op, value };
    }
    case 'lt':
    case 'gt': {
      const [value] = args(f, op, problems, (x) => (typeof x === 'number' && Number.isFinite(x) ? x : boundedString(1)(x)), 'a number or a non-empty string');
      return { op, value };
    }
    case 'before':
    case 'after': {
      const [value] = args(f, op, problems, (x) => {
        const t = typeof x === 'string' ? parseIsoMicros(x) : undefined;
        return t ? formatDb(t) : undefined;
      }, 'an ISO 8601 date-time');
      return { op, value };
    }
  }
}

/** `{field: "timestamp", start, end}`, both inclusive, as DateTime64(6) texts. */
export const eventRangeSchema = rangeSchema('timestamp', 'date or date-time with an offset, e.g. 2026-11-01T00:00:00Z');

/** filters_bool, filters, range, cohort: the part shared by event search, aggregation and export. */
export const eventSelectionEntries = {
  filters_bool: v.optional(v.picklist(['AND', 'OR'], 'filters_bool must be "AND" or "OR"'), 'AND'),
  filters: v.optional(v.pipe(
    v.array(eventFilterSchema, 'filters must be an array'),
    v.maxLength(MAX_FILTERS, `at most ${MAX_FILTERS} filters`),
  ), []),
  range: v.optional(eventRangeSchema),
  cohort: cohortEntry,
};
