/**
 * The survey-response record (service-spec.md, "Survey response record"): its schema for
 * `POST /1.0/survey/response`, which validates a batch, types the parsed records and feeds the
 * OpenAPI document. Parsing (the fast path and this schema) and the row it is stored as are in
 * record.ts.
 *
 * Consistency rules checked beyond types:
 * - hidden field entry: `t` 0 -> `v_s` string, 1 -> `v_b` boolean, 2 -> `v_d` number; exactly that member.
 * - answer entry: same, except that `v_s` may stand beside `v_b`/`v_d` (the answer as shown).
 * - `active` true -> `end_reason` and `ended_at` are "" (or absent); false -> `ended_at` is a
 *   timestamp or "".
 */
import * as v from 'valibot';
import { maxChars } from '../chars.ts';
import { formatApi, parseIsoMicros } from '../time/iso.ts';
import { COMPLETION_VALUES } from './filters.ts';

export const MAX_BATCH = 1000;

const uuid = (name: string) => v.pipe(v.string(`${name} must be a UUID string`), v.uuid(`${name} must be a UUID`));
const text = (name: string, max: number) => v.pipe(v.string(`${name} must be a string`), maxChars(max, `${name} is at most ${max} characters`));

/** ISO 8601 -> `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds), never through JS Date's milliseconds. */
const timestamp = (name: string) =>
  v.pipe(
    v.string(`${name} must be an ISO 8601 string`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const t = parseIsoMicros(dataset.value);
      if (!t) {
        addIssue({ message: `${name} must be an ISO 8601 date-time, e.g. 2024-01-02T03:04:05.123456Z` });
        return NEVER;
      }
      return formatApi(t);
    }),
  );

/** "" (not set) or a timestamp. */
const optionalTimestamp = (name: string) =>
  v.union([v.literal(''), timestamp(name)], `${name} must be "" or an ISO 8601 date-time`);

const VALUE_MEMBER = { 0: 'v_s', 1: 'v_b', 2: 'v_d' } as const;
const VALUE_TYPE = { v_s: 'string', v_b: 'boolean', v_d: 'number' } as const;

type Valued = { t: 0 | 1 | 2; v_s?: string; v_b?: boolean; v_d?: number };

/**
 * The problem with an entry whose `t` does not match its value member, or undefined.
 * `vsAlongside`: answers may carry `v_s` next to the typed member; hidden fields may not.
 */
function typedValueProblem(entry: Valued, vsAlongside: boolean): string | undefined {
  const wanted = VALUE_MEMBER[entry.t];
  if (entry[wanted] === undefined) return `t ${entry.t} needs ${wanted} (${VALUE_TYPE[wanted]})`;
  for (const member of ['v_s', 'v_b', 'v_d'] as const) {
    if (member === wanted || entry[member] === undefined || (member === 'v_s' && vsAlongside)) continue;
    return `t ${entry.t} carries its value in ${wanted}; ${member} does not belong with it`;
  }
  return undefined;
}

const valueMembers = {
  t: v.picklist([0, 1, 2], 't must be 0 (string), 1 (boolean) or 2 (number)'),
  v_s: v.optional(text('v_s', 10_000)),
  v_b: v.optional(v.boolean('v_b must be a boolean')),
  v_d: v.optional(v.pipe(v.number('v_d must be a number'), v.finite('v_d must be a finite number'))),
};

export const hiddenFieldSchema = v.pipe(
  v.object({ key: v.pipe(text('key', 255), v.minLength(1, 'key must not be empty')), ...valueMembers }),
  // Reported on `t`; partialCheck runs even when other fields of the entry are invalid.
  v.forward(
    v.partialCheck(
      [['t'], ['v_s'], ['v_b'], ['v_d']],
      (entry) => typedValueProblem(entry, false) === undefined,
      (issue) => typedValueProblem(issue.input as Valued, false) ?? 'invalid value member',
    ),
    ['t'],
  ),
);

/** A translation: a text, or an object such as `{ "lang": "en", "v_s": "..." }` (kept as written). */
const translationSchema = v.union(
  [text('translation', 10_000), v.record(v.string(), v.unknown())],
  'a translation must be a string or an object',
);

export const answerSchema = v.pipe(
  v.object({
    ...valueMembers,
    cta_type: text('cta_type', 100),
    key: v.optional(text('key', 255)),
    question_id: uuid('question_id'),
    question_correlation_id: uuid('question_correlation_id'),
    action_id: v.optional(v.nullable(uuid('action_id'))),
    action_correlation_id: v.optional(v.nullable(uuid('action_correlation_id'))),
    answer_id: v.optional(v.nullable(uuid('answer_id'))),
    tags: v.optional(v.nullable(v.pipe(v.array(text('tag', 255), 'tags must be an array of strings or null'), v.maxLength(100, 'at most 100 tags')))),
    lang: v.optional(v.nullable(text('lang', 64))),
    translations: v.optional(v.pipe(v.array(translationSchema, 'translations must be an array'), v.maxLength(100, 'at most 100 translations'))),
    time: v.optional(timestamp('time')),
  }),
  // Reported on `t`; partialCheck runs even when other fields of the entry are invalid.
  v.forward(
    v.partialCheck(
      [['t'], ['v_s'], ['v_b'], ['v_d']],
      (entry) => typedValueProblem(entry, true) === undefined,
      (issue) => typedValueProblem(issue.input as Valued, true) ?? 'invalid value member',
    ),
    ['t'],
  ),
);

const emotion = v.optional(v.nullable(v.pipe(v.number('an emotion is a number or null'), v.finite('an emotion must be finite'))));

export const responseRecordSchema = v.pipe(
  v.object({
    id: uuid('id'),
    doc_type: v.optional(v.literal('response', 'doc_type must be "response"')),
    org_id: v.optional(uuid('org_id')),
    channel_id: uuid('channel_id'),
    respondent_id: uuid('respondent_id'),
    respondent_aliases: v.optional(v.pipe(v.array(text('an alias', 1000), 'respondent_aliases must be an array of strings'), v.maxLength(100, 'at most 100 aliases'))),
    survey_id: uuid('survey_id'),
    scenario_id: v.optional(uuid('scenario_id')),
    language: v.optional(text('language', 64)),
    locale: v.optional(text('locale', 64)),
    question_id_path: v.optional(text('question_id_path', 1000)),
    question_correlation_id_path: v.optional(text('question_correlation_id_path', 1000)),
    action_id_path: v.optional(text('action_id_path', 1000)),
    action_correlation_id_path: v.optional(text('action_correlation_id_path', 1000)),
    group_ids: v.optional(v.pipe(v.array(uuid('a group id'), 'group_ids must be an array of UUIDs'), v.maxLength(1000, 'at most 1000 group ids'))),
    hidden_fields: v.optional(v.pipe(v.array(hiddenFieldSchema, 'hidden_fields must be an array'), v.maxLength(200, 'at most 200 hidden fields'))),
    emotions: v.optional(v.nullable(v.object({ fear: emotion, sadness: emotion, anger: emotion, joy: emotion }, 'emotions must be an object'))),
    answers: v.optional(v.pipe(v.array(answerSchema, 'answers must be an array'), v.maxLength(500, 'at most 500 answers'))),
    completion: v.picklist(COMPLETION_VALUES, `completion must be one of ${COMPLETION_VALUES.join(', ')}`),
    active: v.boolean('active must be a boolean'),
    end_reason: v.optional(text('end_reason', 100)),
    ended_at: v.optional(v.nullable(optionalTimestamp('ended_at'))),
    created_at: timestamp('created_at'),
    updated_at: timestamp('updated_at'),
    last_answer_at: v.optional(v.nullable(optionalTimestamp('last_answer_at'))),
  }, 'a response record must be an object'),
  // partialCheck: reported even when other fields of the record are invalid.
  v.forward(
    v.partialCheck([['active'], ['end_reason']], (r) => !r.active || !r.end_reason, 'end_reason must be "" while the response is active'),
    ['end_reason'],
  ),
  v.forward(
    v.partialCheck([['active'], ['ended_at']], (r) => !r.active || !r.ended_at, 'ended_at must be "" while the response is active'),
    ['ended_at'],
  ),
);

export type ResponseRecord = v.InferOutput<typeof responseRecordSchema>;
export type AnswerEntry = v.InferOutput<typeof answerSchema>;

export const responseBatchSchema = v.pipe(
  v.array(responseRecordSchema, 'the body must be a JSON array of response records'),
  v.minLength(1, 'the batch needs at least 1 record'),
  v.maxLength(MAX_BATCH, `a batch holds at most ${MAX_BATCH} records`),
);
