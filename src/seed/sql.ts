/**
 * The one statement that generates survey responses inside ClickHouse:
 * `INSERT INTO survey_responses SELECT … FROM numbers_mt(count)`, rows start..start+count-1.
 *
 * Every random choice is a deterministic hash of a salt and the row number, mixed with `s`
 * (org, seed and `now`), so a run is reproducible and chunks are independent. What belongs to a
 * person (locale, device, role, groups, respondent id) hashes the respondent number with `p`
 * (org and seed only): every run of one org draws from the same people, while a run at another
 * `now` writes new response ids — never a second version of an id under another created_at
 * (created_at is part of the sorting key, so that would be a duplicate). Every categorical value comes from a
 * query parameter (see plan.ts); the SQL text is a constant built from code only. Numbers inlined
 * here are the model (shares, durations), not data.
 */
import { TABLE_SIZE } from './distributions.ts';
import { END_REASONS, QuestionKind } from './plan.ts';
import { PLATFORMS } from './vocabulary.ts';
import { DT64 } from '../clickhouse/sql.ts';
import { NIL_UUID } from '../uuid.ts';

/** Hash of a salt and keys, mixed with the run constant `s` (or the people constant `p`). */
const h = (...keys: (string | number)[]) => `cityHash64(s, ${keys.join(', ')})`;
const hp = (...keys: (string | number)[]) => `cityHash64(p, ${keys.join(', ')})`;
/** Uniform in [0, 1) with 1e-6 resolution. */
const unit = (hash: string) => `(${hash} % 1000000) / 1000000.`;
const u = (...keys: (string | number)[]) => unit(h(...keys));
/** Weighted choice: a slot of a lookup table parameter (see distributions.ts). */
const pickWith = (hash: string, table: string) => `{${table}:Array(UInt8)}[1 + ${hash} % ${TABLE_SIZE}]`;
const pick = (table: string, ...keys: (string | number)[]) => pickWith(h(...keys), table);
const pickPerson = (table: string, ...keys: (string | number)[]) => pickWith(hp(...keys), table);
/** A version-4-shaped UUID from two 64-bit hashes. */
const uuid = (a: string, b: string) =>
  `reinterpretAsUUID(concat(reinterpretAsFixedString(bitOr(bitAnd(${a}, 0xFFFFFFFFFFFF0FFF), 0x4000)), ` +
  `reinterpretAsFixedString(bitOr(bitAnd(${b}, 0x3FFFFFFFFFFFFFFF), 0x8000000000000000))))`;
/** 'YYYY-MM-DDTHH:MM:SS.ffffffZ' of a microsecond Unix timestamp. */
const iso = (us: string) => `formatDateTime(fromUnixTimestamp64Micro(${us}, 'UTC'), '%Y-%m-%dT%H:%i:%S.%fZ')`;
const dt = (us: string) => `fromUnixTimestamp64Micro(${us}, 'UTC')`;
/**
 * A JSON string literal of any ClickHouse string expression (escaping done by ClickHouse; with
 * SEED_SETTINGS it escapes exactly like JSON.stringify, so `doc` is what the writer would store).
 */
const js = (expr: string) => `toJSONString(${expr})`;

const reason = (name: (typeof END_REASONS)[number]) => END_REASONS.indexOf(name) + 1;
const K = QuestionKind;
const WEB_CHANNEL = PLATFORMS.indexOf('web') + 1;
const DAY_US = 86_400_000_000;

export const INSERT_COLUMNS = [
  'org_id', 'survey_id', 'created_at', 'id', 'updated_at', 'channel_id', 'respondent_id', 'respondent_aliases',
  'scenario_id', 'language', 'locale', 'group_ids', 'completion', 'active', 'end_reason', 'ended_at', 'last_answer_at',
  'hf_keys', 'hf_types', 'hf_strings', 'hf_bools', 'hf_numbers',
  'ans_question_ids', 'ans_cta_types', 'ans_values', 'ans_scores', 'answer_text', 'doc',
] as const;

/**
 * Stages of `SELECT *, <new columns> FROM (<previous stage>)`. ClickHouse inlines an alias into
 * every place that uses it, so a long chain of aliases in one SELECT explodes into a huge query
 * tree; a stage boundary turns the columns of the previous stage into plain, computed-once columns.
 */
function pipeline(source: string, stages: readonly (readonly string[])[]): string {
  return stages.reduce((from, columns) => `SELECT *,\n  ${columns.join(',\n  ')}\nFROM (${from})`, source);
}

// numbers_mt: generation runs on every core; a row depends only on its number, so order is irrelevant.
const rows = pipeline('SELECT {start:UInt64} + number AS n FROM numbers_mt({count:UInt64})', [
  // Who answers which survey; the respondent number keys everything that belongs to the person.
  [
    `${h(1, 'n')} % {respondents:UInt64} AS ri`,
    `${pick('surveyTable', 2, 'n')} AS si`,
    `toUnixTimestamp64Micro({now:${DT64}}) AS now_us`,
    `toInt64({days:UInt32}) AS days_n`,
    `${u(10, 'n')} AS day_u`,
    `${u(11, 'n')} AS trend_u`,
  ],
  // created_at: a day (a slow upward trend, quieter weekends), then a local hour of the day
  // shifted by the locale's UTC offset; a time outside [first day 00:00, now] moves to another day.
  [
    `${pickPerson('locTable', 3, 'ri')} AS li`,
    `${pickPerson('devTable', 4, 'ri')} AS di`,
    `intDiv(now_us, 1000000) AS now_s`,
    `least(toInt64(floor(if(trend_u < 0.25, sqrt(day_u), day_u) * days_n)), days_n - 1) AS day0`,
  ],
  [
    `now_s - now_s % 86400 - (days_n - 1) * 86400 AS first_day`,
    `{locLanguageIdx:Array(UInt8)}[li] AS lang_i`,
    `toInt64(${pick('hourTable', 14, 'n')}) * 3600 + toInt64(${h(15, 'n')} % 3600) - toInt64({locOffsetMin:Array(Int16)}[li]) * 60 AS utc_sec_in_day`,
    `toInt64(${h(16, 'n')} % 1000000) AS micros`,
  ],
  [
    `if(toDayOfWeek(toDateTime(first_day + day0 * 86400, 'UTC')) >= 6 AND ${u(12, 'n')} < 0.45,
       least(toInt64(floor(${u(13, 'n')} * days_n)), days_n - 1), day0) AS day1`,
  ],
  [`(first_day + day1 * 86400 + utc_sec_in_day) * 1000000 + micros AS t1`],
  [
    `if(t1 > now_us OR t1 < first_day * 1000000,
       (first_day + (1 + toInt64(${h(17, 'n')} % toUInt64(greatest(days_n - 3, 1)))) * 86400 + utc_sec_in_day) * 1000000 + micros,
       t1) AS t2`,
  ],
  // Still outside (a window of a few days): anywhere in it, rather than piling up at its ends.
  [
    `if(t2 > now_us OR t2 < first_day * 1000000,
       first_day * 1000000 + toInt64(${h(18, 'n')} % toUInt64(greatest(now_us - first_day * 1000000, 1))),
       t2) AS created_us`,
  ],
  // How it ended. Open responses are mostly recent ones.
  [
    `now_us - created_us AS age_us`,
    `${u(22, 'n')} AS uc`,
    `{qKinds:Array(Array(UInt8))}[si] AS kinds`,
    `toUInt64(length(kinds)) AS q_count`,
    // One mood per response drives every score and the comment's tone, so they agree.
    `${u(24, 'n')} AS mood`,
    `${pickPerson('roleTable', 30, 'ri')} AS role_i`,
  ],
  [`${u(20, 'n')} < multiIf(age_us < ${DAY_US}, 0.3, age_us < ${3 * DAY_US}, 0.04, 0.008) AS is_active`],
  [
    `if(is_active, 0, ${pick('endReasonTable', 21, 'n')}) AS reason_i`,
    `{npsTable:Array(UInt8)}[1 + toUInt32(mood * ${TABLE_SIZE})] AS nps`,
    `{csatTable:Array(UInt8)}[1 + toUInt32(least(greatest(mood + (${u(25, 'n')} - 0.5) * 0.3, 0), 0.999) * ${TABLE_SIZE})] AS csat`,
    `{cesTable:Array(UInt8)}[1 + toUInt32(least(greatest(mood + (${u(26, 'n')} - 0.5) * 0.4, 0), 0.999) * ${TABLE_SIZE})] AS ces`,
    `if(mood >= {positiveFrom:Float64}, 0, if(mood >= {negativeBelow:Float64}, 1, 2)) AS sentiment`,
  ],
  [
    `toUInt8(multiIf(
       reason_i = 0, if(uc < 0.45, 0, 1),
       reason_i = ${reason('completed')}, if(uc < 0.96, 2, 1),
       reason_i = ${reason('closed')}, if(uc < 0.55, 0, 1),
       reason_i = ${reason('expired')}, if(uc < 0.7, 0, 1),
       if(uc < 0.2, 0, 1))) AS completion_i`,
    `lang_i * 3 + sentiment + 1 AS text_group`,
  ],
  [
    `toUInt64(multiIf(completion_i = 0, 0, completion_i = 2, q_count, 1 + ${h(23, 'n')} % greatest(q_count - 1, 1))) AS k`,
    `{textStart:Array(UInt32)}[text_group] AS t_start`,
    `toUInt64({textCount:Array(UInt32)}[text_group]) AS t_count`,
  ],
  // Durations (seconds) by how the response ended; never past now.
  [
    `${h(27, 'n')} % t_count AS t_a`,
    `multiIf(
       reason_i = ${reason('completed')}, 4 + k * (5 + 25 * ${u(31, 'n')}),
       reason_i = ${reason('closed')}, 1 + 25 * ${u(31, 'n')} + k * 8,
       reason_i = ${reason('expired')}, 900 + 21600 * ${u(31, 'n')},
       reason_i = ${reason('interrupted')}, 3 + 150 * ${u(31, 'n')} + k * 8,
       1 + 90 * ${u(31, 'n')} + k * 10) AS dur_s`,
  ],
  [
    `(t_a + 1 + ${h(28, 'n')} % greatest(t_count - 1, 1)) % t_count AS t_b`,
    `least(toInt64(dur_s * 1000000), now_us - created_us) AS dur_us`,
  ],
  [
    `if(${u(29, 'n')} < 0.3 AND t_a != t_b,
       concat({texts:Array(String)}[t_start + t_a], {textJoiner:Array(String)}[lang_i + 1], {texts:Array(String)}[t_start + t_b]),
       {texts:Array(String)}[t_start + t_a]) AS comment`,
    // An expired survey was answered early and then left open.
    `if(reason_i = ${reason('expired')}, least(dur_us, toInt64(k) * 20000000 + 5000000), dur_us) AS span_us`,
    `created_us + dur_us AS updated_us`,
    `{completions:Array(String)}[completion_i + 1] AS completion`,
    `if(reason_i = 0, '', {endReasons:Array(String)}[reason_i]) AS end_reason`,
  ],
  // Ids, hidden fields and answers as arrays.
  [
    `${uuid(h(5, 'n'), h(6, 'n'))} AS id`,
    `{surveyIds:Array(UUID)}[si] AS survey_id`,
    `{scenarioIds:Array(UUID)}[si] AS scenario_id`,
    `{devChannel:Array(UInt8)}[di] AS channel_i`,
    `${uuid(hp(40, 'ri'), hp(41, 'ri'))} AS respondent_id`,
    `arrayDistinct(arrayMap(j -> toUInt64(floor({groups:UInt64} * pow(${unit(hp(43, 'ri', 'j'))}, 2))),
       range(${pickPerson('groupCountTable', 42, 'ri')}))) AS group_nums`,
    `{locLanguage:Array(String)}[li] AS language`,
    `{locName:Array(String)}[li] AS locale`,
    `${u(50, 'n')} < 0.85 AS logged_in`,
    `{pageTitles:Array(String)}[${pick('pageTable', 51, 'n')}] AS page_title`,
    `toFloat64(1 + floor(exp(${u(52, 'n')} * 5.5))) AS session_count`,
    `arraySlice(kinds, 1, k) AS a_kinds`,
    `arrayMap(i -> created_us + intDiv(span_us * (toInt64(i) * 1000 - toInt64(${h(32, 'n', 'i')} % 500)), toInt64(k) * 1000 + 500),
       range(1, k + 1)) AS a_us`,
  ],
  [
    `{channelIds:Array(UUID)}[channel_i] AS channel_id`,
    `[toString(respondent_id), concat({aliasPrefix:String}, toString(ri + 1), {aliasDomain:String})] AS respondent_aliases`,
    `arrayMap(g -> ${uuid(hp(44, 'g'), hp(45, 'g'))}, group_nums) AS group_ids`,
    // Hidden fields: parallel arrays; page_title only on the web channel.
    `[true, true, true, true, true, true, true, true, channel_i = ${WEB_CHANNEL}, true] AS hf_mask`,
    `arrayMap(x -> {ctaTypes:Array(String)}[x], a_kinds) AS a_cta`,
    `arrayMap(x -> toUInt8(if(x IN (${K.nps}, ${K.csat}, ${K.ces}), 2, 0)), a_kinds) AS a_t`,
    `arrayMap(x -> toFloat64(multiIf(x = ${K.nps}, nps, x = ${K.csat}, csat, x = ${K.ces}, ces, 0)), a_kinds) AS a_number`,
    `arrayMap(x -> multiIf(x = ${K.text}, comment, x = ${K.choice}, {roleLabels:Array(String)}[lang_i * {roleCount:UInt8} + role_i + 1],
       toString(toUInt8(multiIf(x = ${K.nps}, nps, x = ${K.csat}, csat, ces)))), a_kinds) AS a_vs`,
    `arraySlice({qCorrIds:Array(Array(String))}[si], 1, k) AS a_qcorr`,
    `has(a_kinds, ${K.text}) AS has_comment`,
  ],
  [
    `arrayFilter((x, m) -> m, {hfKeys:Array(String)}, hf_mask) AS hf_keys`,
    `arrayFilter((x, m) -> m, {hfTypes:Array(UInt8)}, hf_mask) AS hf_types`,
    `arrayFilter((x, m) -> m, [{devUserAgent:Array(String)}[di], {devOs:Array(String)}[di], {devSupport:Array(String)}[di],
       {devPlatform:Array(String)}[di], {locTimezone:Array(String)}[li], locale, {locCountry:Array(String)}[li], '', page_title, ''],
       hf_mask) AS hf_strings`,
    `arrayFilter((x, m) -> m, [false, false, false, false, false, false, false, logged_in, false, false], hf_mask) AS hf_bools`,
    `arrayFilter((x, m) -> m, [0, 0, 0, 0, 0, 0, 0, 0, 0, session_count], hf_mask) AS hf_numbers`,
    `arrayMap((x, v) -> multiIf(x = ${K.text}, '', x = ${K.choice}, {roleKeys:Array(String)}[role_i + 1], v), a_kinds, a_vs) AS a_key`,
    `arrayMap((t, v) -> if(t = 2, toNullable(v), NULL), a_t, a_number) AS a_scores`,
  ],
]);

const path = (param: string) => js(`arrayStringConcat(arraySlice({${param}:Array(Array(String))}[si], 1, k), '/')`);

const answersJson = `concat('[', arrayStringConcat(arrayMap(i -> concat(
    '{"t":', toString(a_t[i]), ',"v_s":', ${js('a_vs[i]')},
    if(a_t[i] = 2, concat(',"v_d":', toString(a_number[i])), ''),
    ',"cta_type":', ${js('a_cta[i]')}, ',"key":', ${js('a_key[i]')},
    ',"question_id":"', {qIds:Array(Array(String))}[si][i],
    '","question_correlation_id":"', a_qcorr[i],
    '","action_id":"', {aIds:Array(Array(String))}[si][i],
    '","action_correlation_id":"', {aCorrIds:Array(Array(String))}[si][i],
    '","answer_id":"', toString(${uuid(h(60, 'n', 'i'), h(61, 'n', 'i'))}),
    '","tags":null,"lang":', if(a_kinds[i] = ${K.text}, ${js('language')}, 'null'),
    ',"translations":[],"time":"', ${iso('a_us[i]')}, '"}'),
  range(1, toUInt32(k) + 1)), ','), ']')`;

/** Emotions only when there is a comment to read them from; tone follows the comment. */
const emotion = (index: number, salt: number) =>
  `toString(round({emotionBase:Array(Array(Float64))}[sentiment + 1][${index}] + {emotionSpread:Array(Array(Float64))}[sentiment + 1][${index}] * ${u(salt, 'n')}, 2))`;
const emotionsJson = `if(has_comment,
    concat('{"fear":', ${emotion(1, 70)}, ',"sadness":', ${emotion(2, 71)}, ',"anger":', ${emotion(3, 72)}, ',"joy":', ${emotion(4, 73)}, '}'),
    '{"fear":null,"sadness":null,"anger":null,"joy":null}')`;

/**
 * The stored doc (src/responses/stored-doc.ts): the members the columns do not give back, in the
 * schema's order, as docRemainder writes them. Seeded ids are lower case and texts well formed, so
 * what is left out is what the columns hold: ids, states, timestamps, and the optional members
 * when they are set (an empty list or text, an active response's "" ended_at, no answer's ""
 * last_answer_at stay, so that they read back as written).
 */
const unlessSet = (isSet: string, member: string, json: string) => `if(${isSet}, '', concat(',"${member}":', ${json}))`;
const docJson = `concat(
    '{"doc_type":"response"',
    ${unlessSet('notEmpty(respondent_aliases)', 'respondent_aliases', "'[]'")},
    ${unlessSet(`scenario_id != toUUID('${NIL_UUID}')`, 'scenario_id', `'"${NIL_UUID}"'`)},
    ${unlessSet("language != ''", 'language', "'\"\"'")}, ${unlessSet("locale != ''", 'locale', "'\"\"'")},
    ',"question_id_path":', ${path('qShort')}, ',"question_correlation_id_path":', ${path('qCorrShort')},
    ',"action_id_path":', ${path('aShort')}, ',"action_correlation_id_path":', ${path('aCorrShort')},
    ${unlessSet('notEmpty(group_ids)', 'group_ids', "'[]'")},
    ${unlessSet('notEmpty(hf_keys)', 'hidden_fields', "'[]'")},
    ',"emotions":', ${emotionsJson},
    ',"answers":', ${answersJson},
    ${unlessSet("end_reason != ''", 'end_reason', "'\"\"'")},
    ${unlessSet('NOT is_active', 'ended_at', "'\"\"'")},
    ${unlessSet('k != 0', 'last_answer_at', "'\"\"'")}, '}')`;

/** Final columns, in INSERT_COLUMNS order. */
const finalLevel = `
  SELECT
    {org:UUID} AS org_id, survey_id, ${dt('created_us')} AS created_at, id, ${dt('updated_us')} AS updated_at,
    channel_id, respondent_id, respondent_aliases, scenario_id, language, locale, group_ids, completion,
    is_active AS active, end_reason,
    if(is_active, NULL, ${dt('updated_us')}) AS ended_at,
    if(k = 0, NULL, ${dt('a_us[k]')}) AS last_answer_at,
    hf_keys, hf_types, hf_strings, hf_bools, hf_numbers,
    a_qcorr AS ans_question_ids, a_cta AS ans_cta_types, a_vs AS ans_values, a_scores AS ans_scores,
    lowerUTF8(arrayStringConcat(a_vs, '\\n')) AS answer_text,
    ${docJson} AS doc
  FROM (${rows})`;

/** The generating statement; chunk bounds are the `start` and `count` parameters. */
export const SEED_INSERT_SQL = `INSERT INTO survey_responses (${INSERT_COLUMNS.join(', ')})
WITH cityHash64({org:UUID}, {seed:UInt64}) AS p, cityHash64(p, {now:${DT64}}) AS s
${finalLevel}`;

/**
 * The identities of the same rows (same parameters) for the key table survey_response_ids
 * (schema/030), which the API's writer reads: the engine prunes every column the key row does
 * not need from the stages, so this costs a fraction of the rows themselves.
 */
export const SEED_IDS_SQL = `INSERT INTO survey_response_ids (org_id, id, survey_id, created_at)
WITH cityHash64({org:UUID}, {seed:UInt64}) AS p, cityHash64(p, {now:${DT64}}) AS s
SELECT {org:UUID} AS org_id, id, survey_id, ${dt('created_us')} AS created_at FROM (${rows})`;
