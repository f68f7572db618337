/**
 * Request body of the three survey-response queries (search, summary, aggregation), parsed into
 * a closed union of typed filter nodes. The compiler (filter-sql.ts) only ever sees these nodes.
 *
 * Operators accepted per key (a pair outside this table is a 400 naming the filter and listing
 * what the key accepts). Negative operators are the exact complement of their positive twin
 * (`neq` = NOT `eq`, `not_in` = NOT `in`, `not_contains` = NOT `contains`, `not_null` = NOT `null`),
 * so a response without the field matches the negative one, as "must not" does elsewhere.
 *
 *   respondent_id        eq neq in not_in                          UUID values
 *   channel_id           eq neq in not_in                          UUID values
 *   respondent_segments  eq neq in not_in                          group UUIDs; eq = is in that group,
 *                                                                  in = is in any of them
 *   respondent_alias     eq neq in not_in contains not_contains    matched against every element of
 *   (also respondent_aliases)                                      respondent_aliases; eq/in exact,
 *                                                                  contains = case-insensitive substring
 *   raw                  contains not_contains                     case-insensitive substring of any
 *                                                                  answer text or translation
 *   language             eq neq in not_in null not_null            null = no language ("")
 *   completion           eq neq in not_in                          not_started | partially_completed |
 *                                                                  fully_completed
 *   response.hidden_field (key = the hidden field name)
 *                        eq neq in not_in null not_null contains not_contains gt lt before after
 *     Comparisons are typed by the stored entry: a string entry compares with the value as text,
 *     a number entry with the value as a number (a numeric string counts), a boolean entry with
 *     true/false ("true"/"false" count). gt/lt compare numbers numerically and strings
 *     lexicographically; contains is a case-insensitive substring of string entries; before/after
 *     take an ISO 8601 value and compare string entries that read as a date; null = the response
 *     has no entry with that key.
 *   response.answer (key = the question's correlation id): answer-filter.ts
 *                        eq neq in not_in gt lt null not_null contains not_contains
 */
import * as v from 'valibot';
import { maxChars } from '../chars.ts';
import { invalid } from '../errors.ts';
import { ignored, jsonObject } from '../validation.ts';
import { formatDb, parseIsoMicros } from '../time/iso.ts';
import {
  MAX_FILTERS, MAX_FILTER_VALUES, MAX_VALUE_LENGTH, args, boundedString, noArgs, scalar,
  rangeSchema as sharedRangeSchema, type FilterProblem, type Scalar,
} from '../query/filter-args.ts';
import { UUID_PATTERN } from '../uuid.ts';
import { EQ_IN, NEGATIVE, OPERATORS, type Operator, type Positive } from '../query/operators.ts';
import { answerNode, type AnswerFilterNode } from './answer-filter.ts';

export { OPERATORS, type Operator } from '../query/operators.ts';

export const COMPLETION_VALUES = ['not_started', 'partially_completed', 'fully_completed'] as const;
export type Completion = (typeof COMPLETION_VALUES)[number];

type EqIn = (typeof EQ_IN)[number];

/** The allow-list: key -> operators it accepts. Keys here are the `response` filter keys. */
export const RESPONSE_KEY_OPERATORS = {
  respondent_id: EQ_IN,
  channel_id: EQ_IN,
  respondent_segments: EQ_IN,
  respondent_alias: [...EQ_IN, 'contains', 'not_contains'],
  raw: ['contains', 'not_contains'],
  language: [...EQ_IN, 'null', 'not_null'],
  completion: EQ_IN,
} as const satisfies Record<string, readonly Operator[]>;
export type ResponseKey = keyof typeof RESPONSE_KEY_OPERATORS;

/** The spec's plural spelling of the alias key, accepted as a synonym. */
const KEY_SYNONYMS: Record<string, ResponseKey> = { respondent_aliases: 'respondent_alias' };

export const HIDDEN_FIELD_OPERATORS = OPERATORS;

export type { Scalar } from '../query/filter-args.ts';

/** One filter after parsing. `negate` carries the negative operators (neq, not_in, ...). */
export type FilterNode =
  | { readonly kind: 'respondent_id' | 'channel_id' | 'respondent_segments'; readonly op: Positive<EqIn>; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: 'respondent_alias'; readonly op: 'eq' | 'in' | 'contains'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: 'raw'; readonly op: 'contains'; readonly negate: boolean; readonly value: string }
  | { readonly kind: 'language'; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly string[] }
  | { readonly kind: 'language'; readonly op: 'null'; readonly negate: boolean }
  | { readonly kind: 'completion'; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly Completion[] }
  | { readonly kind: 'hidden_field'; readonly key: string; readonly op: 'eq' | 'in'; readonly negate: boolean; readonly values: readonly Scalar[] }
  | { readonly kind: 'hidden_field'; readonly key: string; readonly op: 'null'; readonly negate: boolean }
  | { readonly kind: 'hidden_field'; readonly key: string; readonly op: 'contains'; readonly negate: boolean; readonly value: string }
  | { readonly kind: 'hidden_field'; readonly key: string; readonly op: 'gt' | 'lt'; readonly negate: false; readonly value: string | number }
  | { readonly kind: 'hidden_field'; readonly key: string; readonly op: 'before' | 'after'; readonly negate: false; readonly value: string /* DateTime64 text */ }
  | AnswerFilterNode;

export { MAX_FILTERS, MAX_FILTER_VALUES, MAX_VALUE_LENGTH };
export const MAX_OFFSET = 100_000;
export const MAX_SIZE = 1000;

const UUID = UUID_PATTERN;


interface RawFilter {
  type: 'response' | 'response.hidden_field' | 'response.answer';
  key: string;
  operator: Operator;
  value?: unknown;
  values?: unknown[];
}

type Problem = FilterProblem;

/**
 * Strict (validation.ts), as the event filters: a misspelt or extra field is a 400 naming it
 * (`unknown field "foo"; a filter accepts type, key, ...`), a missing key or operator reads
 * `key is required`, never valibot's default message.
 */
const rawFilterSchema = jsonObject({
  type: v.optional(v.picklist(['response', 'response.hidden_field', 'response.answer'], 'type must be "response", "response.hidden_field" or "response.answer"'), 'response'),
  key: v.pipe(v.string('key must be a string'), v.minLength(1, 'key must not be empty'), maxChars(255, 'key is at most 255 characters')),
  operator: v.picklist(OPERATORS, `operator must be one of ${OPERATORS.join(', ')}`),
  value: v.optional(v.unknown()),
  values: v.optional(v.pipe(
    v.array(v.unknown(), 'values must be an array'),
    v.minLength(1, 'values must not be empty'),
    v.maxLength(MAX_FILTER_VALUES, `values holds at most ${MAX_FILTER_VALUES} items`),
  )),
}, 'a filter');

/** One filter: structure first (valibot), then the key/operator/value rules that make a node. */
export const filterSchema = v.pipe(
  rawFilterSchema,
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const input = dataset.value as unknown as RawFilter;
    const result = toNode(input);
    if (Array.isArray(result)) {
      for (const p of result) {
        const path: [v.IssuePathItem, ...v.IssuePathItem[]] = [
          { type: 'object', origin: 'value', input: input as never, key: p.field, value: (input as never)[p.field] },
        ];
        if (p.index !== undefined) {
          path.push({ type: 'array', origin: 'value', input: input.values as never, key: p.index, value: input.values?.[p.index] });
        }
        addIssue({ message: p.message, path });
      }
      return NEVER;
    }
    return result;
  }),
);

/** Pure key/operator/value rules; returns the node or the list of problems. */
export function toNode(f: RawFilter): FilterNode | Problem[] {
  if (f.type === 'response.hidden_field') return hiddenFieldNode(f);
  if (f.type === 'response.answer') return answerNode(f);
  const key = KEY_SYNONYMS[f.key] ?? f.key;
  if (!Object.hasOwn(RESPONSE_KEY_OPERATORS, key)) {
    return [{ field: 'key', message: `unknown key "${f.key}"; response filter keys are ${Object.keys(RESPONSE_KEY_OPERATORS).join(', ')} (hidden fields use type "response.hidden_field")` }];
  }
  const k = key as ResponseKey;
  const accepted: readonly Operator[] = RESPONSE_KEY_OPERATORS[k];
  if (!accepted.includes(f.operator)) {
    return [{ field: 'operator', message: `operator "${f.operator}" is not supported for key "${f.key}"; it accepts ${accepted.join(', ')}` }];
  }
  const negate = f.operator in NEGATIVE;
  const op = (NEGATIVE[f.operator] ?? f.operator) as Positive<Operator>;
  const problems: Problem[] = [];
  switch (k) {
    case 'respondent_id':
    case 'channel_id':
    case 'respondent_segments': {
      const values = args(f, op, problems, (x) => (typeof x === 'string' && UUID.test(x) ? x.toLowerCase() : undefined), 'a UUID');
      return problems.length ? problems : { kind: k, op: op as 'eq' | 'in', negate, values };
    }
    case 'respondent_alias': {
      const values = args(f, op, problems, boundedString(op === 'contains' ? 1 : 0), 'a string');
      return problems.length ? problems : { kind: 'respondent_alias', op: op as 'eq' | 'in' | 'contains', negate, values };
    }
    case 'raw': {
      const [value] = args(f, op, problems, boundedString(1), 'a non-empty string');
      return problems.length ? problems : { kind: 'raw', op: 'contains', negate, value };
    }
    case 'language': {
      if (op === 'null') return noArgs(f, problems) ?? { kind: 'language', op: 'null', negate };
      const values = args(f, op, problems, boundedString(0), 'a string');
      return problems.length ? problems : { kind: 'language', op: op as 'eq' | 'in', negate, values };
    }
    case 'completion': {
      const values = args(f, op, problems, (x) => ((COMPLETION_VALUES as readonly unknown[]).includes(x) ? (x as Completion) : undefined), `one of ${COMPLETION_VALUES.join(', ')}`);
      return problems.length ? problems : { kind: 'completion', op: op as 'eq' | 'in', negate, values };
    }
  }
}

function hiddenFieldNode(f: RawFilter): FilterNode | Problem[] {
  const key = f.key;
  const negate = f.operator in NEGATIVE;
  const op = (NEGATIVE[f.operator] ?? f.operator) as Positive<Operator>;
  const problems: Problem[] = [];
  switch (op) {
    case 'null':
      return noArgs(f, problems) ?? { kind: 'hidden_field', key, op: 'null', negate };
    case 'eq':
    case 'in': {
      const values = args(f, op, problems, scalar, 'a string, number or boolean');
      return problems.length ? problems : { kind: 'hidden_field', key, op, negate, values };
    }
    case 'contains': {
      const [value] = args(f, op, problems, (x) => (typeof x === 'number' && Number.isFinite(x) ? String(x) : boundedString(1)(x)), 'a non-empty string');
      return problems.length ? problems : { kind: 'hidden_field', key, op, negate, value };
    }
    case 'gt':
    case 'lt': {
      const [value] = args(f, op, problems, (x) => (typeof x === 'number' && Number.isFinite(x) ? x : boundedString(1)(x)), 'a number or a non-empty string');
      return problems.length ? problems : { kind: 'hidden_field', key, op, negate: false, value };
    }
    case 'before':
    case 'after': {
      const [value] = args(f, op, problems, (x) => {
        const t = typeof x === 'string' ? parseIsoMicros(x) : undefined;
        return t ? formatDb(t) : undefined;
      }, 'an ISO 8601 date-time');
      return problems.length ? problems : { kind: 'hidden_field', key, op, negate: false, value };
    }
  }
}

/** `range` on created_at, both ends inclusive (DateTime64(6) texts, ready to be parameters). */
export const rangeSchema = sharedRangeSchema('created_at', 'date or date-time, e.g. 2024-01-02T03:04:05.123456Z');

/** filters_bool, filters, range: the part shared by search, summary and aggregation. */
export const selectionEntries = {
  filters_bool: v.optional(v.picklist(['AND', 'OR'], 'filters_bool must be "AND" or "OR"'), 'AND'),
  filters: v.optional(v.pipe(
    v.array(filterSchema, 'filters must be an array'),
    v.maxLength(MAX_FILTERS, `at most ${MAX_FILTERS} filters`),
  ), []),
  range: v.optional(rangeSchema),
};

/**
 * The summary body: the selection; `size` and `offset` are accepted and ignored (a dashboard may send
 * its search body as is). Any other field is a 400.
 */
export const selectionSchema = v.pipe(
  jsonObject({ ...selectionEntries, size: ignored, offset: ignored }, 'the body'),
  v.transform(({ size: _size, offset: _offset, ...selection }) => selection),
);

export const searchBodySchema = jsonObject({
  ...selectionEntries,
  size: v.optional(v.pipe(
    v.number('size must be an integer'), v.integer('size must be an integer'),
    v.minValue(0, 'size must be 0 to 1000'), v.maxValue(MAX_SIZE, 'size must be 0 to 1000'),
  ), 10),
  offset: v.optional(v.pipe(
    v.number('offset must be an integer'), v.integer('offset must be an integer'),
    v.minValue(0, 'offset must be 0 to 100000'),
    v.maxValue(MAX_OFFSET, 'offset must be at most 100000; to page further, send the next_cursor of the previous answer as cursor'),
  ), 0),
  /** next_cursor of a previous answer to the same search: the page starts after its last response. */
  cursor: v.optional(v.pipe(v.string('cursor must be a string'), v.minLength(1, 'cursor must not be empty'), v.maxLength(1000, 'cursor is not valid'))),
}, 'the search body');

export type SelectionBody = v.InferOutput<typeof selectionSchema>;
export type SearchBody = v.InferOutput<typeof searchBodySchema>;

/** `*` (every survey of the organization) or a comma-separated list of survey UUIDs. */
export function parseSurveyIds(pathParam: string): string[] | '*' {
  const text = pathParam.trim();
  if (text === '*') return '*';
  const parts = text.split(',').map((s) => s.trim());
  const bad = parts.filter((s) => !UUID.test(s));
  if (bad.length > 0) {
    throw invalid('survey_ids must be "*" or a comma-separated list of survey UUIDs', [
      { path: 'survey_ids', message: `not a UUID: ${bad.slice(0, 5).map((s) => JSON.stringify(s.slice(0, 64))).join(', ')}` },
    ]);
  }
  if (parts.length > MAX_FILTER_VALUES) {
    throw invalid(`at most ${MAX_FILTER_VALUES} survey ids`, [{ path: 'survey_ids', message: `${parts.length} ids given` }]);
  }
  return [...new Set(parts.map((s) => s.toLowerCase()))];
}
