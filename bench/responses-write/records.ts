/**
 * Survey-response records as live traffic sends them: created_at in the last 7 days (the newest
 * partitions), three hidden fields, an NPS answer and a comment. Shared by the write benches.
 */
import { randomUUID } from 'node:crypto';

const COMMENTS = ['too slow to load', 'great support, thanks', 'billing page is confusing', 'love the new dashboard', 'export keeps failing'];
const QUESTION = '6f1c2d3e-4a5b-4c6d-8e7f-000000000001';

/** µs-precision ISO text of a ms instant plus `micros` (0-999). */
export const isoMicros = (ms: number, micros: number) => `${new Date(ms).toISOString().slice(0, 19)}.${String((ms % 1000) * 1000 + micros).padStart(6, '0')}Z`;

export type BenchRecord = ReturnType<typeof responseRecord>;

/** The i-th record of a run: a new id, fully completed. */
export function responseRecord(orgId: string, surveyId: string, nowMs: number, i: number) {
  const created = nowMs - ((i * 7919) % (7 * 86_400_000));
  const ts = isoMicros(created, i % 1000);
  return {
    id: randomUUID(),
    doc_type: 'response',
    org_id: orgId,
    channel_id: surveyId,
    respondent_id: randomUUID(),
    respondent_aliases: [`user-${i % 5000}@example.com`],
    survey_id: surveyId,
    scenario_id: surveyId,
    language: ['en', 'fr', 'de'][i % 3],
    locale: ['en-US', 'fr-FR', 'de-DE'][i % 3],
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [] as string[],
    hidden_fields: [
      { key: 'country', t: 0, v_s: ['FR', 'US', 'DE', 'GB'][i % 4] },
      { key: 'plan', t: 0, v_s: ['free', 'pro', 'enterprise'][i % 3] },
      { key: 'session_count', t: 2, v_d: i % 40 },
    ] as Array<Record<string, unknown>>,
    emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [
      { t: 2, v_d: i % 11, cta_type: 'nps', key: 'nps', question_id: QUESTION, question_correlation_id: QUESTION, translations: [], time: ts },
      { t: 0, v_s: COMMENTS[i % COMMENTS.length], cta_type: 'open_question', key: 'why', question_id: surveyId, question_correlation_id: surveyId, translations: [], time: ts },
    ] as Array<Record<string, unknown>>,
    completion: 'fully_completed',
    active: false,
    end_reason: 'completed',
    ended_at: ts,
    created_at: ts,
    updated_at: ts,
    last_answer_at: ts,
  };
}

/**
 * A later version of a record (an upsert): updated a second later, another NPS score, and the
 * respondent's comment changed; same id, survey and created_at.
 */
export function upsertOf(record: BenchRecord, n: number): BenchRecord {
  const updated = Date.parse(record.updated_at) + 1000 * (n + 1);
  const ts = isoMicros(updated, n % 1000);
  const answers = record.answers.map((a) => (a.cta_type === 'nps' ? { ...a, v_d: (Number(a.v_d) + 3) % 11 } : { ...a, v_s: COMMENTS[n % COMMENTS.length] }));
  return { ...record, answers, completion: n % 2 ? 'partially_completed' : 'fully_completed', updated_at: ts, last_answer_at: ts };
}
