/**
 * Feedback cohorts: the users of an organization chosen by how they answered its surveys (or rated
 * its copilot), as a condition on the events of a read (the request side: nodes and schema;
 * cohort-sql.ts compiles them). A survey cohort is a survey selection (the
 * survey ids, a `created_at` range, the survey filter language) narrowed by an NPS group, an
 * answer test or a completion; its users are the `respondent_aliases` of the matching responses,
 * matched to the events' `user_alias`. A copilot cohort is the users of the
 * `service_copilot_satisfaction` events whose `rating` passes a test, in a `timestamp` range.
 *
 * Tenancy by construction: survey responses are read through the survey read path's scoped
 * source (src/responses/compile.ts `fromSelection`: org, FINAL), copilot events through the events'
 * guarded source (EventSource); both take the organization of the token, so a cohort never
 * reaches another organization's responses or events. Aliases are compared only within the
 * organization, and anonymous events (alias '') never belong to a survey cohort.
 *
 * A record (response, satisfaction event) passes a test when one of its answers to the question
 * (its rating) passes it; negative operators are the exact complement of their positive twin at
 * the record level, as in the filter languages: `neq 5` keeps the responses with no answer 5 to
 * the question, including those that did not answer it. A user is in the cohort when one of their
 * records passes everything the cohort names, so a user who answered twice can be in two cohorts.
 * NPS groups are the summary's (decisions.md): detractor 0-6, neutral 7-8, promotor 9-10, from the
 * whole-number scores of `nps` answers (schema/004 `nps_scores`).
 */
import * as v from 'valibot';
import { maxChars } from '../../chars.ts';
import {
  MAX_FILTER_VALUES, MAX_FILTERS, args, boundedString, filterValuesSchema, isoInstant, noArgs, scalar, type FilterArgs, type FilterProblem, type Scalar,
} from '../../query/filter-args.ts';
import { UUID_PATTERN } from '../../uuid.ts';
import type { Operator } from '../../query/operators.ts';
import { COMPLETION_VALUES, filterSchema, type Completion, type FilterNode } from '../../responses/filters.ts';
import { compareMicros } from '../../time/iso.ts';
import { jsonObject } from '../../validation.ts';

export const NPS_GROUPS = { detractor: [0, 6], neutral: [7, 8], promotor: [9, 10] } as const;
export type NpsGroup = keyof typeof NPS_GROUPS;

/** Operators of an answer or rating test; `lte`/`gte` are "at most" / "at least". */
export const COHORT_OPERATORS = ['eq', 'neq', 'in', 'not_in', 'lt', 'gt', 'lte', 'gte', 'null', 'not_null', 'contains', 'not_contains'] as const;
export type CohortOperator = (typeof COHORT_OPERATORS)[number];
const RATING_OPERATORS = ['eq', 'neq', 'in', 'not_in', 'lt', 'gt', 'lte', 'gte'] as const;

/** A test of one value (an answer, a rating); `negate` carries neq, not_in, not_null, not_contains. */
export type ValueTest =
  | { readonly op: 'in'; readonly negate: boolean; readonly values: readonly Scalar[] }
  | { readonly op: 'lt' | 'gt' | 'lte' | 'gte'; readonly negate: false; readonly value: number }
  | { readonly op: 'null'; readonly negate: boolean }
  | { readonly op: 'contains'; readonly negate: boolean; readonly value: string };

export type CohortNode =
  | {
      readonly kind: 'survey';
      readonly surveyIds: readonly string[] | '*';
      readonly range?: { readonly start?: string; readonly end?: string };
      readonly filtersBool: 'AND' | 'OR';
      readonly filters: readonly FilterNode[];
      readonly completion?: readonly Completion[];
      readonly nps?: NpsGroup;
      readonly answer?: { readonly questionId: string; readonly test: ValueTest };
    }
  | { readonly kind: 'copilot'; readonly range?: { readonly start?: string; readonly end?: string }; readonly rating: ValueTest };

const NEGATIVE: Partial<Record<CohortOperator, CohortOperator>> = { neq: 'eq', not_in: 'in', not_null: 'null', not_contains: 'contains' };

interface RawTest {
  operator: CohortOperator;
  value?: unknown;
  values?: unknown[];
}

const testEntries = {
  operator: v.picklist(COHORT_OPERATORS, `operator must be one of ${COHORT_OPERATORS.join(', ')}`),
  value: v.optional(v.unknown()),
  values: v.optional(filterValuesSchema),
};

const finite = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);

/** The operator's argument(s) -> a test, or the problems (each naming its member). */
export function toValueTest(raw: RawTest): ValueTest | FilterProblem[] {
  const negate = raw.operator in NEGATIVE;
  const op = NEGATIVE[raw.operator] ?? raw.operator;
  const problems: FilterProblem[] = [];
  // The shared argument rules (value or values by operator); they only read the operator's name.
  const f = raw as unknown as FilterArgs;
  switch (op) {
    case 'null':
      return noArgs(f, problems) ?? { op: 'null', negate };
    case 'eq':
    case 'in': {
      const values = args(f, op, problems, scalar, 'a string (at most 1000 characters), number or boolean');
      return problems.length ? problems : { op: 'in', negate, values };
    }
    case 'contains': {
      const [value] = args(f, op, problems, boundedString(1), 'a non-empty string');
      return problems.length ? problems : { op: 'contains', negate, value };
    }
    default: {
      const [value] = args(f, op as Operator, problems, finite, 'a number');
      return problems.length ? problems : { op: op as 'lt' | 'gt' | 'lte' | 'gte', negate: false, value };
    }
  }
}

/** valibot: a strict object with the test entries plus `extra`, turned into `{...extra, test}`. */
function testSchema<const E extends v.ObjectEntries>(extra: E, what: string, operators: readonly CohortOperator[]) {
  return v.pipe(
    jsonObject({ ...extra, ...testEntries }, what),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const input = dataset.value as unknown as RawTest & Record<string, unknown>;
      if (!operators.includes(input.operator)) {
        addIssue({
          message: `operator "${input.operator}" is not supported here; it accepts ${operators.join(', ')}`,
          path: [{ type: 'object', origin: 'value', input: input as never, key: 'operator', value: input.operator }],
        });
        return NEVER;
      }
      const test = toValueTest(input);
      if (!Array.isArray(test)) return { ...(input as Record<string, unknown>), test } as { test: ValueTest } & Record<string, unknown>;
      for (const p of test) {
        const path: [v.IssuePathItem, ...v.IssuePathItem[]] = [{ type: 'object', origin: 'value', input: input as never, key: p.field, value: input[p.field] }];
        if (p.index !== undefined) path.push({ type: 'array', origin: 'value', input: input.values as never, key: p.index, value: input.values?.[p.index] });
        addIssue({ message: p.message, path });
      }
      return NEVER;
    }),
  );
}

const answerSchema = testSchema(
  { question_id: v.pipe(v.string('question_id must be a string'), v.minLength(1, 'question_id must not be empty'), maxChars(255, 'question_id is at most 255 characters')) },
  'answer',
  COHORT_OPERATORS,
);
const ratingSchema = testSchema({}, 'copilot_rating', RATING_OPERATORS);

const cohortRangeSchema = jsonObject({
  field: v.optional(v.picklist(['created_at', 'timestamp'], 'range.field must be "created_at" (survey cohorts) or "timestamp" (copilot cohorts)')),
  start: v.optional(isoInstant('start', 'date or date-time, e.g. 2026-11-01T00:00:00Z')),
  end: v.optional(isoInstant('end', 'date or date-time, e.g. 2026-11-30T23:59:59Z')),
}, 'range');

const surveyIdsSchema = v.pipe(
  v.array(v.pipe(v.string('each survey id must be a string'), v.regex(UUID_PATTERN, 'each survey id must be a UUID')), 'survey_ids must be an array of survey UUIDs'),
  v.minLength(1, 'survey_ids must not be empty (leave it out for every survey)'),
  v.maxLength(MAX_FILTER_VALUES, `survey_ids holds at most ${MAX_FILTER_VALUES} ids`),
);

const completionSchema = v.union(
  [
    v.picklist(COMPLETION_VALUES),
    // A value given twice is the same condition (deduplicated below), not a 400.
    v.pipe(
      v.array(v.picklist(COMPLETION_VALUES)),
      v.minLength(1, 'completion must not be an empty list (leave it out for any completion)'),
      v.maxLength(MAX_FILTER_VALUES, `completion lists at most ${MAX_FILTER_VALUES} values`),
    ),
  ],
  `completion must be one of ${COMPLETION_VALUES.join(', ')}, or a list of them`,
);

const SURVEY_FIELDS = ['survey_ids', 'filters_bool', 'filters', 'completion', 'nps', 'answer'] as const;

const rawCohortSchema = jsonObject({
  survey_ids: v.optional(surveyIdsSchema),
  range: v.optional(cohortRangeSchema),
  filters_bool: v.optional(v.picklist(['AND', 'OR'], 'filters_bool must be "AND" or "OR"')),
  filters: v.optional(v.pipe(v.array(filterSchema, 'filters must be an array of survey response filters'), v.maxLength(MAX_FILTERS, `at most ${MAX_FILTERS} filters`))),
  completion: v.optional(completionSchema),
  nps: v.optional(v.picklist(Object.keys(NPS_GROUPS) as NpsGroup[], `nps must be one of ${Object.keys(NPS_GROUPS).join(', ')}`)),
  answer: v.optional(answerSchema),
  copilot_rating: v.optional(ratingSchema),
}, 'a cohort');

/**
 * The cohort of a request body: survey fields, or `copilot_rating`, never both; the range's field
 * (optional) says which clock it bounds.
 */
export const cohortSchema = v.pipe(
  rawCohortSchema,
  v.rawTransform(({ dataset, addIssue, NEVER }): CohortNode => {
    const c = dataset.value;
    const issue = (key: string, message: string) =>
      addIssue({ message, path: [{ type: 'object', origin: 'value', input: c as never, key, value: (c as Record<string, unknown>)[key] }] });
    const range = c.range && { start: c.range.start, end: c.range.end };
    if (c.range?.start && c.range.end && compareMicros(c.range.start.t, c.range.end.t) > 0) issue('range', 'range.start must not be after range.end');
    const dbRange = range && { start: range.start?.db, end: range.end?.db };
    if (c.copilot_rating) {
      for (const key of SURVEY_FIELDS) if (c[key] !== undefined) issue(key, `a copilot cohort (copilot_rating) takes only range; "${key}" belongs to survey cohorts`);
      if (c.range?.field === 'created_at') issue('range', 'the range of a copilot cohort is on "timestamp" (the rating event)');
      return { kind: 'copilot', range: dbRange, rating: c.copilot_rating.test };
    }
    if (c.range?.field === 'timestamp') issue('range', 'the range of a survey cohort is on "created_at" (the response)');
    const completion = c.completion === undefined ? undefined : typeof c.completion === 'string' ? [c.completion] : [...new Set(c.completion)];
    const node: CohortNode = {
      kind: 'survey',
      surveyIds: c.survey_ids ? [...new Set(c.survey_ids.map((s) => s.toLowerCase()))] : '*',
      range: dbRange,
      filtersBool: c.filters_bool ?? 'AND',
      filters: c.filters ?? [],
      completion,
      nps: c.nps,
      answer: c.answer && { questionId: c.answer.question_id as string, test: c.answer.test },
    };
    return node;
  }),
);

/** `cohort` of a read body. */
export const cohortEntry = v.optional(cohortSchema);

export const MAX_SPLIT_COHORTS = 10;

/** `split_by_cohorts`: named cohorts answered side by side with the whole. */
export const splitByCohortsSchema = v.pipe(
  v.array(
    jsonObject({
      name: v.pipe(v.string('name must be a string'), v.minLength(1, 'name must not be empty'), maxChars(100, 'name is at most 100 characters')),
      cohort: cohortSchema,
    }, 'a split cohort'),
    'split_by_cohorts must be an array of {name, cohort}',
  ),
  v.minLength(1, 'split_by_cohorts must not be empty (leave it out)'),
  v.maxLength(MAX_SPLIT_COHORTS, `split_by_cohorts holds at most ${MAX_SPLIT_COHORTS} cohorts`),
  v.check((list) => new Set(list.map((c) => c.name)).size === list.length, 'split_by_cohorts names must be distinct'),
);
