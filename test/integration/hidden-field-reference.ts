/**
 * The hidden-field matching rules, written independently of the compiler (src/responses/filter-sql.ts),
 * as the integration tests' reference: a string entry matches by text, a number entry by value (a
 * numeric string counts), a bool entry by truth ("true"/"false" count).
 */
import { randomUUID } from 'node:crypto';

export interface HiddenFieldEntry {
  key: string;
  t: 0 | 1 | 2;
  v_s?: string;
  v_b?: boolean;
  v_d?: number;
}

const NUMERIC = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
export const asNumber = (x: unknown) => (typeof x === 'number' ? x : typeof x === 'string' && NUMERIC.test(x) ? Number(x) : undefined);
export const asBool = (x: unknown) => (typeof x === 'boolean' ? x : x === 'true' ? true : x === 'false' ? false : undefined);
export const asText = (x: unknown) => (typeof x === 'string' ? x : String(x));

/** Does the entry equal the filter value `x`? */
export function entryEq(e: HiddenFieldEntry, x: unknown): boolean {
  if (e.t === 0) return e.v_s === asText(x);
  if (e.t === 2) return asNumber(x) !== undefined && e.v_d === asNumber(x);
  return asBool(x) !== undefined && e.v_b === asBool(x);
}

/** A response record of `survey` holding `hidden` (a value, or a placeholder replaced in the JSON text), the i-th minute of 2024. */
export function recordWithHidden(orgId: string, survey: string, id: string, hidden: unknown, i: number): Record<string, unknown> {
  const created = new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString().replace('Z', '000Z');
  return {
    id, doc_type: 'response', org_id: orgId, channel_id: randomUUID(), respondent_id: randomUUID(), respondent_aliases: [],
    survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: hidden, emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: 'not_started', active: true, end_reason: '', ended_at: '', created_at: created, updated_at: created, last_answer_at: '',
  };
}
