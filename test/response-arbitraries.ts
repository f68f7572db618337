/**
 * Survey-response records for property tests: mostly valid, with mutations that break one check
 * or another (wrong kinds, the edges of every limit, timestamps of every form).
 */
import fc from 'fast-check';

export const ORG = '0f0f0f0f-0000-4000-8000-000000000001';

// Values a client might send anywhere: the right kind, the wrong kind, and the edges of each check.
const uuid = fc.uuid();
const emoji = '\u{1F600}';
const anyTimestamp = fc.constantFrom(
  '2024-01-02T03:04:05.123456Z', '2024-01-02T03:04:05Z', '2024-01-02 03:04:05', '2024-01-02', '2024-01-02T03:04:05.1234567Z',
  '2024-01-02T03:04:05.123+02:00', '2024-01-02t03:04:05.123456z', '2024-02-30T00:00:00.000000Z', '2024-02-29T00:00:00.000000Z',
  '2023-02-29T00:00:00.000000Z', '1900-01-01T00:00:00.000000Z', '1899-12-31T23:59:59.999999Z', '2299-12-31T23:59:59.999999Z',
  '2300-01-01T00:00:00.000000Z', '2024-01-02T24:00:00.000000Z', '2024-01-02T03:04:05,123456Z', '', 'yesterday',
);
/** Mostly valid: each record carries several, and one bad one refuses it. */
const timestamps = fc.oneof({ arbitrary: fc.constantFrom('2024-01-02T03:04:05.123456Z', '2021-12-31T23:59:59.000001Z'), weight: 12 }, { arbitrary: anyTimestamp, weight: 1 });
const texts = (max: number) => fc.oneof(
  { arbitrary: fc.string({ maxLength: 8 }), weight: 30 },
  { arbitrary: fc.constantFrom('a'.repeat(max), 'a'.repeat(max + 1), emoji.repeat(max), emoji.repeat(max) + 'a', 'x' + '\uD800'.repeat(max)), weight: 1 },
);
const junk = fc.constantFrom<unknown>(null, 0, -0, 1, 2, 3, 1.5, Infinity, '', 'x', true, false, [], {}, [1], { a: 1 }, 'FULLY_COMPLETED',
  '0F0F0F0F-0000-4000-8000-000000000001', '0f0f0f0f-0000-4000-8000-00000000000', '0f0f0f0f-0000-4000-8000-000000000002');

const valued = (vsAlongside: boolean) => fc.record({
  t: fc.constantFrom(0, 1, 2),
  v_s: texts(10_000),
  v_b: fc.boolean(),
  v_d: fc.double({ noNaN: true, noDefaultInfinity: true }),
  /** 0: the member t names alone; 1: v_s beside it; 2: every member (refused). */
  extra: fc.constantFrom(0, 0, 0, 1, 2),
}).map(({ t, extra, ...members }) => {
  const wanted = (['v_s', 'v_b', 'v_d'] as const)[t];
  const out: Record<string, unknown> = { t, [wanted]: members[wanted] };
  if (extra >= 1 && (vsAlongside || extra === 1)) out.v_s = members.v_s;
  if (extra === 2) Object.assign(out, members);
  return out;
});

const hiddenField = fc.tuple(fc.oneof({ arbitrary: texts(255), weight: 1 }, { arbitrary: fc.constantFrom('os', 'plan'), weight: 4 }), valued(false)).map(([key, v]) => ({ key, ...v }));
const translation = fc.oneof(texts(10_000), fc.dictionary(fc.constantFrom('lang', 'v_s', 'constructor', '__proto__', 'x'), fc.oneof(fc.string(), fc.integer())));
const answer = fc.record({
  value: valued(true),
  cta_type: texts(100),
  key: texts(255),
  question_id: uuid,
  question_correlation_id: uuid,
  action_id: fc.option(uuid, { nil: null }),
  action_correlation_id: fc.option(uuid, { nil: null }),
  answer_id: fc.option(uuid, { nil: null }),
  tags: fc.option(fc.array(texts(255), { maxLength: 3 }), { nil: null }),
  lang: fc.option(texts(64), { nil: null }),
  translations: fc.array(translation, { maxLength: 3 }),
  time: timestamps,
}, { requiredKeys: ['value', 'cta_type', 'question_id', 'question_correlation_id'] }).map(({ value, ...rest }) => ({ ...value, ...rest }));

export const record = fc.record({
  id: uuid, doc_type: fc.constant('response'), org_id: fc.constantFrom(ORG, ORG.toUpperCase()), channel_id: uuid, respondent_id: uuid,
  respondent_aliases: fc.array(texts(1000), { maxLength: 3 }), survey_id: uuid, scenario_id: uuid, language: texts(64), locale: texts(64),
  question_id_path: texts(1000), question_correlation_id_path: texts(1000), action_id_path: texts(1000), action_correlation_id_path: texts(1000),
  group_ids: fc.array(uuid, { maxLength: 3 }), hidden_fields: fc.array(hiddenField, { maxLength: 3 }),
  emotions: fc.option(fc.record({ fear: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }), joy: fc.double({ min: 0, max: 1, noNaN: true }) }, { requiredKeys: [] }), { nil: null }),
  answers: fc.array(answer, { maxLength: 4 }),
  completion: fc.constantFrom('not_started', 'partially_completed', 'fully_completed'),
  active: fc.boolean(),
  end_reason: fc.constantFrom('', 'completed', 'closed'),
  ended_at: fc.oneof(timestamps, fc.constant(null)),
  created_at: timestamps, updated_at: timestamps, last_answer_at: fc.oneof(timestamps, fc.constant(null)),
  unknown_member: fc.string(),
}, { requiredKeys: ['id', 'channel_id', 'respondent_id', 'survey_id', 'completion', 'active', 'created_at', 'updated_at'] }).map((r) => {
  // Mostly what an active response may carry (mutations break it again).
  if (r.active && r.id.endsWith('1') === false) Object.assign(r, { end_reason: '', ended_at: '' });
  return r;
});

/** A path into a record, and a value to put there (or undefined: delete the member). */
const mutation = fc.tuple(
  fc.constantFrom('id', 'org_id', 'channel_id', 'survey_id', 'scenario_id', 'language', 'group_ids', 'hidden_fields', 'emotions', 'answers', 'completion', 'active',
    'end_reason', 'ended_at', 'created_at', 'updated_at', 'last_answer_at', 'respondent_aliases', 'doc_type',
    'hidden_fields.0', 'hidden_fields.0.key', 'hidden_fields.0.t', 'hidden_fields.0.v_s', 'hidden_fields.0.v_b', 'hidden_fields.0.v_d',
    'answers.0', 'answers.0.t', 'answers.0.v_s', 'answers.0.v_d', 'answers.0.v_b', 'answers.0.cta_type', 'answers.0.question_id', 'answers.0.action_id',
    'answers.0.tags', 'answers.0.tags.0', 'answers.0.lang', 'answers.0.translations', 'answers.0.translations.0', 'answers.0.time', 'emotions.fear'),
  fc.oneof(junk, anyTimestamp, fc.constant(undefined)),
);

function mutate(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at: unknown = target;
  for (const k of keys.slice(0, -1)) {
    if (typeof at !== 'object' || at === null) return;
    at = (at as Record<string, unknown>)[k];
  }
  if (typeof at !== 'object' || at === null) return;
  const last = keys[keys.length - 1];
  if (value === undefined) delete (at as Record<string, unknown>)[last];
  // A copy: the junk values are shared constants, and a later mutation of this record writes
  // into what it was given (one that put a junk object inside itself made a cyclic record).
  else (at as Record<string, unknown>)[last] = structuredClone(value);
}

export const batch = fc.array(fc.tuple(record, fc.oneof({ arbitrary: fc.constant([]), weight: 2 }, { arbitrary: fc.array(mutation, { minLength: 1, maxLength: 2 }), weight: 1 })), { minLength: 1, maxLength: 4 }).map((items) =>
  items.map(([r, mutations]) => {
    const copy = structuredClone(r) as Record<string, unknown>;
    for (const [path, value] of mutations) mutate(copy, path, value);
    return copy;
  }));

