/**
 * The survey-response record (service-spec.md, "Survey response record"): parsing a batch for
 * `POST /1.0/survey/response` (its schema: record-schema.ts) and its mapping to a
 * `survey_responses` row (stored-doc.ts).
 *
 * What search and export return is the parsed record, stored as the row's columns plus `doc`, the
 * members they do not hold (stored-doc.ts), so it comes back field for field: unknown
 * fields are dropped (as for events), `org_id` is the token's organization, and timestamps are in
 * the one form the API returns, `2024-01-02T03:04:05.123456Z` (a record written in that form reads
 * back identical; one written as `...+02:00` or with milliseconds reads back in UTC, microseconds).
 */
import * as v from 'valibot';
import { invalid, toIssues, type Issue } from '../errors.ts';
import { scalarAsNumber } from '../query/filter-args.ts';
import { NIL_UUID, UUID_PATTERN } from '../uuid.ts';
import { fastParseBatch } from './record-fast.ts';
import { responseBatchSchema, type AnswerEntry, type ResponseRecord } from './record-schema.ts';
import { docRemainder, type ResponseRow } from './stored-doc.ts';

export type { ResponseRecord } from './record-schema.ts';

/**
 * Parses a batch or throws one 400 naming every bad record by index and field, including records
 * whose `org_id` names another organization than the token's. All or nothing. The fast path
 * (record-fast.ts) answers the batches the schema accepts; every other goes through the schema.
 */
export function parseResponseBatch(body: unknown, orgId: string): ResponseRecord[] {
  return fastParseBatch(body, orgId) ?? parseWithSchema(body, orgId);
}

/** parseResponseBatch through the schema alone (the reference of the fast path's property test). */
export function parseWithSchema(body: unknown, orgId: string): ResponseRecord[] {
  const result = v.safeParse(responseBatchSchema, body, { abortEarly: false });
  const issues: Issue[] = result.success ? [] : toIssues(result.issues).map((issue, i) => {
    // valibot words a missing member as "Invalid key: Expected "x" but received undefined".
    const raw = (result.issues ?? [])[i];
    return raw?.kind === 'schema' && raw.type === 'object' && raw.input === undefined && raw.path?.length
      ? { path: issue.path, message: `${String(raw.path[raw.path.length - 1].key)} is required` }
      : issue;
  });
  if (Array.isArray(body)) {
    body.forEach((item, i) => {
      const named = (item as { org_id?: unknown } | null)?.org_id;
      if (typeof named === 'string' && UUID_PATTERN.test(named) && named.toLowerCase() !== orgId.toLowerCase()) {
        issues.push({ path: `[${i}].org_id`, message: 'org_id names another organization than the token\'s; omit it or use the token\'s organization' });
      }
    });
  }
  if (issues.length > 0) {
    issues.sort((a, b) => indexOf(a.path) - indexOf(b.path));
    throw invalid('Invalid response records', issues);
  }
  return (result as v.SafeParseResult<typeof responseBatchSchema> & { success: true }).output;
}

const indexOf = (path: string) => Number(/^\[(\d+)\]/.exec(path)?.[1] ?? -1);

/** `2024-01-02T03:04:05.123456Z` (the parsed form) -> `2024-01-02 03:04:05.123456` (DateTime64(6)). */
export function apiToDb(api: string): string {
  return `${api.slice(0, 10)} ${api.slice(11, 26)}`;
}

const dbOrNull = (t: string | null | undefined) => (t ? apiToDb(t) : null);

/** The score of an answer: `v_d`, else `v_s` read as a number, else null. */
export function answerScore(a: AnswerEntry): number | null {
  if (a.v_d !== undefined) return a.v_d;
  return a.v_s === undefined ? null : (scalarAsNumber(a.v_s) ?? null);
}

/** The bucket key of an answer: `v_s`, else `v_d` / `v_b` as text. */
export function answerValue(a: AnswerEntry): string {
  if (a.v_s !== undefined) return a.v_s;
  if (a.v_d !== undefined) return String(a.v_d);
  if (a.v_b !== undefined) return String(a.v_b);
  return '';
}

// Keys of a translation object that name a language rather than hold text.
const NOT_TEXT = new Set(['lang', 'language', 'locale']);

/** Answer texts (v_s) and translation texts, lower-cased, one per line: what `raw` searches. */
export function answerText(answers: readonly AnswerEntry[]): string {
  const texts: string[] = [];
  for (const a of answers) {
    if (a.v_s) texts.push(a.v_s);
    for (const tr of a.translations ?? []) {
      if (typeof tr === 'string') {
        if (tr) texts.push(tr);
      } else {
        for (const [k, val] of Object.entries(tr)) if (!NOT_TEXT.has(k) && typeof val === 'string' && val) texts.push(val);
      }
    }
  }
  return texts.join('\n').toLowerCase();
}

/** The row for one parsed record; `doc` holds what the other columns do not (stored-doc.ts). */
export function toResponseRow(record: ResponseRecord, orgId: string): ResponseRow {
  const hidden = record.hidden_fields ?? [];
  const answers = record.answers ?? [];
  return {
    org_id: orgId,
    survey_id: record.survey_id,
    created_at: apiToDb(record.created_at),
    id: record.id,
    updated_at: apiToDb(record.updated_at),
    channel_id: record.channel_id,
    respondent_id: record.respondent_id,
    respondent_aliases: record.respondent_aliases ?? [],
    scenario_id: record.scenario_id ?? NIL_UUID,
    language: record.language ?? '',
    locale: record.locale ?? '',
    group_ids: record.group_ids ?? [],
    completion: record.completion,
    active: record.active,
    end_reason: record.end_reason ?? '',
    ended_at: dbOrNull(record.ended_at),
    last_answer_at: dbOrNull(record.last_answer_at),
    hf_keys: hidden.map((h) => h.key),
    hf_types: hidden.map((h) => h.t),
    hf_strings: hidden.map((h) => h.v_s ?? ''),
    hf_bools: hidden.map((h) => h.v_b ?? false),
    hf_numbers: hidden.map((h) => h.v_d ?? 0),
    ans_question_ids: answers.map((a) => a.question_correlation_id),
    ans_cta_types: answers.map((a) => a.cta_type),
    ans_values: answers.map(answerValue),
    ans_scores: answers.map(answerScore),
    answer_text: answerText(answers),
    doc: JSON.stringify(docRemainder(record, orgId)),
  };
}
