/**
 * `group_by` of the aggregation endpoint: the request schema, the closed union of rule nodes, and
 * the SQL key expression of each level (one GROUP BY column per rule).
 *
 * Every key expression yields NULL for "this response has no value at this level" (no ended_at,
 * no entry for the hidden field or question, an empty end_reason, a date outside the series), so
 * that the response still counts in its parent bucket but in no bucket of this level.
 */
import * as v from 'valibot';
import { maxChars } from '../chars.ts';
import { strictMessage } from '../validation.ts';
import type { ParamBag } from '../clickhouse/sql.ts';
import { MIN_INTERVALS, type HistogramPlan, type MinInterval } from '../query/histogram.ts';
import { bucketIndexSql } from '../query/histogram-sql.ts';
import { eachDistinctOrNull } from '../query/multi-valued.ts';

export { MAX_GROUP_BY_LEVELS, MAX_HISTOGRAM_BUCKETS, MAX_TERMS_BUCKETS } from '../query/ranked-buckets.ts';
import { MAX_GROUP_BY_LEVELS, MAX_HISTOGRAM_BUCKETS } from '../query/ranked-buckets.ts';

/** API date field -> column (allow-list). `last_activity_at` is the time of the last answer. */
export const DATE_FIELD_COLUMNS = {
  created_at: 'created_at',
  ended_at: 'ended_at',
  last_activity_at: 'last_answer_at',
} as const;
export type DateField = keyof typeof DATE_FIELD_COLUMNS;
const DATE_FIELDS = Object.keys(DATE_FIELD_COLUMNS) as DateField[];

export const GROUP_BY_FIELDS = [...DATE_FIELDS, 'completion', 'survey_id', 'end_reason', 'hidden_field', 'answer'] as const;

export type GroupByRule =
  | { readonly kind: 'date'; readonly field: DateField; readonly minInterval: MinInterval; readonly buckets: number }
  | { readonly kind: 'completion'; readonly field: 'completion' }
  | { readonly kind: 'survey_id'; readonly field: 'survey_id' }
  | { readonly kind: 'end_reason'; readonly field: 'end_reason' }
  | { readonly kind: 'hidden_field'; readonly field: 'hidden_field'; readonly key: string }
  | { readonly kind: 'answer'; readonly field: 'answer'; readonly questionId: string };

export type DateRule = Extract<GroupByRule, { kind: 'date' }>;

const nonEmptyName = (name: string) =>
  v.pipe(v.string(`${name} must be a string`), v.minLength(1, `${name} must not be empty`), maxChars(255, `${name} is at most 255 characters`));

const bucketsMessage = `date_histogram_buckets must be an integer from 1 to ${MAX_HISTOGRAM_BUCKETS}`;

/**
 * A rule is strict, like every object of a request body (validation.ts): an unknown member is a 400
 * naming it and the members this rule accepts, a missing one reads `hidden_field_key is required`.
 */
const rule = <const E extends v.ObjectEntries>(entries: E, what: string) => v.strictObject(entries, strictMessage(what, entries));

const dateRuleSchema = v.pipe(
  rule({
    field: v.picklist(DATE_FIELDS),
    date_histogram_min_interval: v.picklist(MIN_INTERVALS, `date_histogram_min_interval must be one of ${MIN_INTERVALS.join(', ')}`),
    date_histogram_buckets: v.pipe(
      v.number(bucketsMessage), v.integer(bucketsMessage), v.minValue(1, bucketsMessage), v.maxValue(MAX_HISTOGRAM_BUCKETS, bucketsMessage),
    ),
  }, 'a date group_by rule'),
  v.transform((r): GroupByRule => ({ kind: 'date', field: r.field, minInterval: r.date_histogram_min_interval, buckets: r.date_histogram_buckets })),
);

const plainRule = <F extends 'completion' | 'survey_id' | 'end_reason'>(field: F) =>
  v.pipe(rule({ field: v.literal(field) }, `a ${field} group_by rule`), v.transform((): GroupByRule => ({ kind: field, field }) as GroupByRule));

const hiddenFieldRuleSchema = v.pipe(
  rule({ field: v.literal('hidden_field'), hidden_field_key: nonEmptyName('hidden_field_key') }, 'a hidden_field group_by rule'),
  v.transform((r): GroupByRule => ({ kind: 'hidden_field', field: 'hidden_field', key: r.hidden_field_key })),
);

const answerRuleSchema = v.pipe(
  rule({ field: v.literal('answer'), question_id: nonEmptyName('question_id') }, 'an answer group_by rule'),
  v.transform((r): GroupByRule => ({ kind: 'answer', field: 'answer', questionId: r.question_id })),
);

/** One rule; the `field` picks the variant, so a bad field is one issue at `group_by[i].field`. */
export const groupByRuleSchema = v.variant(
  'field',
  [dateRuleSchema, plainRule('completion'), plainRule('survey_id'), plainRule('end_reason'), hiddenFieldRuleSchema, answerRuleSchema],
  `each group_by rule is an object whose field is one of ${GROUP_BY_FIELDS.join(', ')}`,
);

export const groupBySchema = v.pipe(
  v.array(groupByRuleSchema, 'group_by must be an array of grouping rules'),
  v.minLength(1, 'group_by needs at least one rule'),
  v.maxLength(MAX_GROUP_BY_LEVELS, `group_by has at most ${MAX_GROUP_BY_LEVELS} rules (nesting levels)`),
);

// --- SQL key expression per level ------------------------------------------------------------------

/** Whether a response may fall in several buckets of this level (several entries for the key). */
export function isMultiValued(rule: GroupByRule): boolean {
  return rule.kind === 'hidden_field' || rule.kind === 'answer';
}

/**
 * The GROUP BY expression of one level. Date levels need their series plan (computed from the
 * range or the data bounds) and yield the bucket index; the others yield the bucket key as text.
 */
export function levelKeySql(rule: GroupByRule, plan: HistogramPlan | undefined, bag: ParamBag, level: number): string {
  // Names for sub-expressions used twice; unique per level, made of code only.
  const alias = `level${level}`;
  switch (rule.kind) {
    case 'date':
      if (!plan) throw new Error(`no histogram plan for ${rule.field}`);
      return bucketIndexSql(DATE_FIELD_COLUMNS[rule.field], plan, bag, alias);
    // Grouped by the column itself (the Enum8, the UUID, the LowCardinality), not by its text:
    // hashing a 1-byte enum or a 16-byte UUID is cheaper than converting every row to a String,
    // and JSONEachRow prints the enum's name and the UUID's text anyway (bench/query/README.md,
    // "Figures behind the schema and the code"). The ranking (query/ranked-buckets.ts) orders ties by
    // toString(key).
    case 'completion':
      return 'completion';
    case 'survey_id':
      return 'survey_id';
    case 'end_reason':
      // "" while the response is active: such a response has no end reason to count.
      return 'if(empty(end_reason), NULL, end_reason)';
    case 'hidden_field':
      return eachDistinctOrNull(
        rule.key.includes('\u0000') ? hiddenFieldValuesSql(bag.add(rule.key, 'String')) : hiddenFieldPairValuesSql(bag.add(`${rule.key}\u0000`, 'String')),
        alias,
        level,
      );
    case 'answer':
      return eachDistinctOrNull(answerValuesSql(bag.add(rule.questionId, 'String')), alias, level);
  }
}

/** A response's values of one question (Array(String), repeats kept), given the question's placeholder. */
export function answerValuesSql(questionPlaceholder: string): string {
  return `arrayFilter((v, q) -> q = ${questionPlaceholder}, ans_values, ans_question_ids)`;
}

/**
 * The same values read from `hf_pairs` (schema/004: `key NUL tag text`), given the placeholder of
 * `key NUL`: the entries starting with it, without it and the one-letter type tag. Reads one
 * LowCardinality array instead of five arrays (the string one holding every user agent). Keys
 * containing NUL are not in hf_pairs: the caller uses hiddenFieldValuesSql for them.
 */
export function hiddenFieldPairValuesSql(prefixPlaceholder: string): string {
  return `arrayMap(p -> substring(p, length(${prefixPlaceholder}) + 2), arrayFilter(p -> startsWith(p, ${prefixPlaceholder}), hf_pairs))`;
}

/**
 * The values, as text, of the hidden-field entries with key `keyPlaceholder` (a parameter): string
 * as is, bool as true/false, number as ClickHouse prints a Float64 (3, 2.5). The same expression
 * computes hf_support in schema/004.
 */
export function hiddenFieldValuesSql(keyPlaceholder: string): string {
  return `arrayFilter((v, k) -> k = ${keyPlaceholder}, arrayMap((t, s, b, n) -> multiIf(t = 0, s, t = 1, if(b, 'true', 'false'), toString(n)), hf_types, hf_strings, hf_bools, hf_numbers), hf_keys)`;
}
