/**
 * The stored form of a survey-response record: `doc` holds what the typed columns of the same row
 * do not (the remainder), and a read rebuilds the record from both. The record a search or an
 * export returns is the parsed record as written (record.ts), field for field.
 *
 * A member is left out of the remainder only when a column gives it back exactly:
 *   - ids (id, survey_id, channel_id, respondent_id, org_id, scenario_id, group_ids) when written
 *     in lower case (a UUID column prints lower case; `A1...` stays in the remainder as written);
 *   - optional members (scenario_id, respondent_aliases, group_ids, language, locale, end_reason,
 *     ended_at, last_answer_at, hidden_fields) only when the column tells them from absent: a
 *     non-nil id, a non-empty text or list, a timestamp (""/null timestamps and the empty text or
 *     list stay in the remainder, so an absent member stays absent);
 *   - texts only when well formed (a lone UTF-16 surrogate is stored as U+FFFD in a column);
 *   - completion, active, created_at and updated_at always (the writer's canonical forms; created_at
 *     is the stored identity's, store.ts);
 *   - hidden_fields: one typed member per entry (record-schema.ts), all of it in hf_keys .. hf_numbers.
 * Answers, emotions, the paths and doc_type stay in the remainder. A doc stored whole (before this
 * form) holds every member and reads back the same: a member of the doc always wins.
 *
 * Rebuilt records list their members in the schema's order (record-schema.ts responseRecordSchema).
 */
import type { COMPLETION_VALUES } from './filters.ts';
import { NIL_UUID } from '../uuid.ts';
import { responseRecordSchema, type ResponseRecord } from './record-schema.ts';


/** Members in the schema's order: the order of a rebuilt record. */
let memberOrder: readonly string[] | undefined;
const membersInOrder = () => (memberOrder ??= Object.keys(responseRecordSchema.pipe[0].entries));

/** One `survey_responses` row, as JSONEachRow takes it. */
export interface ResponseRow {
  org_id: string;
  survey_id: string;
  created_at: string;
  id: string;
  updated_at: string;
  channel_id: string;
  respondent_id: string;
  respondent_aliases: string[];
  scenario_id: string;
  language: string;
  locale: string;
  group_ids: string[];
  completion: (typeof COMPLETION_VALUES)[number];
  active: boolean;
  end_reason: string;
  ended_at: string | null;
  last_answer_at: string | null;
  hf_keys: string[];
  hf_types: number[];
  hf_strings: string[];
  hf_bools: boolean[];
  hf_numbers: number[];
  ans_question_ids: string[];
  ans_cta_types: string[];
  ans_values: string[];
  ans_scores: (number | null)[];
  answer_text: string;
  doc: string;
}

/**
 * The columns a read selects beside `doc` to rebuild a record, as they come back in JSONEachRow:
 * the values of the row the writer stored (timestamps as `YYYY-MM-DD HH:MM:SS.ffffff`).
 */
export type StoredColumns = Pick<
  ResponseRow,
  'doc' | 'org_id' | 'id' | 'survey_id' | 'channel_id' | 'respondent_id' | 'scenario_id' | 'respondent_aliases' | 'language' | 'locale' | 'group_ids' |
  'completion' | 'active' | 'end_reason' | 'ended_at' | 'created_at' | 'updated_at' | 'last_answer_at' | 'hf_keys' | 'hf_types' | 'hf_strings' | 'hf_bools' | 'hf_numbers'
>;

/**
 * The SELECT list of a read that rebuilds records: the columns themselves (an alias would shadow
 * the column in WHERE and ORDER BY); timestamps come back as `YYYY-MM-DD HH:MM:SS.ffffff`
 * (date_time_output_format 'simple', pinned: src/clickhouse/settings.ts).
 */
export const STORED_COLUMNS_SQL =
  'doc, org_id, id, survey_id, channel_id, respondent_id, scenario_id, respondent_aliases, language, locale, group_ids, completion, active, ' +
  'end_reason, ended_at, created_at, updated_at, last_answer_at, hf_keys, hf_types, hf_strings, hf_bools, hf_numbers';

const lowerCase = (id: string) => id === id.toLowerCase();
/** No lone UTF-16 surrogate (a column stores one as U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (s: string) => !LONE_SURROGATE.test(s);
/** `YYYY-MM-DD HH:MM:SS.ffffff` -> `YYYY-MM-DDTHH:MM:SS.ffffffZ` (the API form, record-schema.ts). */
const apiTime = (db: string) => `${db.slice(0, 10)}T${db.slice(11)}Z`;

/** Whether the columns give the member back exactly (see the module comment). */
function rebuildable(record: ResponseRecord, member: string): boolean {
  const value = (record as Record<string, unknown>)[member];
  switch (member) {
    case 'id': case 'survey_id': case 'channel_id': case 'respondent_id': case 'org_id':
      return typeof value === 'string' && lowerCase(value);
    case 'scenario_id':
      return typeof value === 'string' && lowerCase(value) && value !== NIL_UUID;
    case 'group_ids':
      return Array.isArray(value) && value.length > 0 && value.every(lowerCase);
    case 'respondent_aliases':
      return Array.isArray(value) && value.length > 0 && value.every(wellFormed);
    case 'language': case 'locale': case 'end_reason':
      return typeof value === 'string' && value !== '' && wellFormed(value);
    case 'ended_at': case 'last_answer_at':
      return typeof value === 'string' && value !== '';
    case 'completion': case 'active': case 'created_at': case 'updated_at':
      return true;
    case 'hidden_fields':
      return Array.isArray(value) && value.length > 0 && record.hidden_fields!.every((h) => wellFormed(h.key) && (h.v_s === undefined || wellFormed(h.v_s)));
    default:
      return false;
  }
}

/** What `doc` stores for a record of the org: the members the columns do not give back. */
export function docRemainder(record: ResponseRecord, orgId: string): Partial<ResponseRecord> {
  const whole: ResponseRecord = { ...record, org_id: orgId };
  const out: Record<string, unknown> = {};
  for (const [member, value] of Object.entries(whole)) if (!rebuildable(whole, member)) out[member] = value;
  return out as Partial<ResponseRecord>;
}

/** A member as the columns give it back, or undefined when they hold nothing for it. */
function fromColumns(row: StoredColumns, member: string): unknown {
  switch (member) {
    case 'id': case 'survey_id': case 'channel_id': case 'respondent_id': case 'org_id': case 'completion': case 'active':
      return row[member];
    case 'scenario_id':
      return row.scenario_id === NIL_UUID ? undefined : row.scenario_id;
    case 'respondent_aliases': case 'group_ids':
      return row[member].length > 0 ? row[member] : undefined;
    case 'language': case 'locale': case 'end_reason':
      return row[member] !== '' ? row[member] : undefined;
    case 'created_at': case 'updated_at':
      return apiTime(row[member]);
    case 'ended_at': case 'last_answer_at':
      return row[member] === null ? undefined : apiTime(row[member]!);
    case 'hidden_fields':
      if (row.hf_keys.length === 0) return undefined;
      return row.hf_keys.map((key, i) => {
        const t = row.hf_types[i] as 0 | 1 | 2;
        return t === 0 ? { key, t, v_s: row.hf_strings[i] } : t === 1 ? { key, t, v_b: row.hf_bools[i] } : { key, t, v_d: row.hf_numbers[i] };
      });
    default:
      return undefined;
  }
}

/** The record as written, from a row's `doc` and columns. */
export function rebuildRecord(row: StoredColumns): ResponseRecord {
  const doc = JSON.parse(row.doc) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const member of membersInOrder()) {
    const value = member in doc ? doc[member] : fromColumns(row, member);
    if (value !== undefined) out[member] = value;
  }
  return out as ResponseRecord;
}
