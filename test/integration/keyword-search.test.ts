import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { writeWithLaterUpserts } from './upserts.ts';

/**
 * The `raw` keyword filter is a case-insensitive substring match on a response's answer texts and
 * their translations, whatever the text index (schema/170) narrows: random keywords (pieces of the
 * written texts, across word boundaries, with LIKE's own metacharacters, non-ASCII letters and
 * separators) against the same match in JS over the records' latest versions, after upserts that
 * changed some texts (so FINAL must pick the newer version where a skipped granule could hide it).
 */

type Rec = Record<string, any>;
const FRAGMENTS = ['the app is slow', 'Crashes on login', 'café très bon', 'Straße', '50% off', 'user_name', 'back\\slash', '日本語のテキスト', 'naïve', 'ÉCOLE', 'x', 'a_b%c', '  spaced  out ', 'slow-ish', 'e.g. dots'];
const SURVEY = randomUUID();
const QUESTION = randomUUID();
/** A word only record i's first version holds. */
const marker = (i: number) => `mk${String(i).padStart(4, '0')}z`;
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString();

function record(id: string, i: number, text: string, translation: string | null, updated: number): Rec {
  return {
    id, doc_type: 'response', channel_id: SURVEY, respondent_id: id, respondent_aliases: [], survey_id: SURVEY, scenario_id: SURVEY,
    language: 'en', locale: 'en-US', question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [{
      t: 0, v_s: text, cta_type: 'open_question', key: 'why', question_id: QUESTION, question_correlation_id: QUESTION, tags: null, lang: 'en',
      translations: translation === null ? [] : [{ lang: 'fr', v_s: translation }], time: at(i),
    }],
    completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: at(i + 1),
    created_at: at(i), updated_at: at(i + updated), last_answer_at: at(i),
  };
}

const textsOf = (r: Rec) => (r.answers as Rec[]).flatMap((a) => [a.v_s, ...a.translations.map((t: Rec) => t.v_s)]);
const matches = (r: Rec, keyword: string) => textsOf(r).some((t: string) => t.toLowerCase().includes(keyword.toLowerCase()));

describe('the raw keyword filter against a substring match in JS (text index, FINAL)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let read: string;
  let latest: Rec[] = [];

  before(async () => {
    svc = await startTestService();
    const write = await svc.token(['responses:write']);
    read = await svc.token(['responses:read']);
    const rand = fc.sample(fc.tuple(fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 4 }), fc.option(fc.constantFrom(...FRAGMENTS))), { numRuns: 90, seed: 22 });
    const first = rand.map(([words, tr], i) => record(randomUUID(), i, `${words.join(' ')} ${marker(i)}`, tr, 1));
    // Upserts in a later part: every third record changes its text, so a keyword may match an
    // older version only (FINAL must answer the newer one) or the newer one only.
    const upserts = first.filter((_, i) => i % 3 === 0).map((r, k) => record(r.id, first.indexOf(r), rand[(k * 7 + 5) % rand.length][0].reverse().join(' '), null, 2));
    latest = await writeWithLaterUpserts(svc, write, first, upserts, 45);
  });
  after(() => svc?.close());

  it('answers the same ids and total as the JS match, for contains and not_contains', async () => {
    const pieces = latest.flatMap(textsOf);
    const keyword = fc.oneof(
      fc.tuple(fc.constantFrom(...pieces), fc.nat(), fc.integer({ min: 1, max: 12 })).map(([t, s, n]) => [...t].slice(s % t.length, (s % t.length) + n).join('')),
      fc.constantFrom('%', '_', '\\', 'slow', 'SLOW', 'é', 'ß', 'テキスト', 'no such words', 'a_b', '50%', 'off u', 'café très'),
      fc.string({ unit: fc.constantFrom('a', 'e', 's', 'l', 'o', 'w', ' ', '%', '_', '\\', 'é', '.'), minLength: 1, maxLength: 6 }),
    ).filter((k) => k.length > 0);
    await fc.assert(fc.asyncProperty(keyword, fc.constantFrom('contains', 'not_contains'), async (value, operator) => {
      const res = await svc.request('SEARCH', `/1.0/survey/${SURVEY}/response`, { token: read, body: { size: 1000, filters: [{ type: 'response', key: 'raw', operator, value }] } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const expected = latest.filter((r) => matches(r, value) === (operator === 'contains')).map((r) => r.id).sort();
      expect(res.body.hits.total.value, `${operator} ${JSON.stringify(value)}`).to.equal(expected.length);
      expect(res.body.hits.responses.map((r: Rec) => r.id).sort(), `${operator} ${JSON.stringify(value)}`).to.deep.equal(expected);
    }), { numRuns: 80, seed: 22 });
  });

  it('a word only an older version held finds nothing; one the latest version holds finds that response only', async () => {
    let replaced = 0;
    for (let i = 0; i < latest.length; i++) {
      const res = await svc.request('SEARCH', `/1.0/survey/${SURVEY}/response`, { token: read, body: { size: 10, filters: [{ key: 'raw', operator: 'contains', value: marker(i).toUpperCase() }] } });
      const expected = latest.filter((r) => matches(r, marker(i))).map((r) => r.id);
      expect(res.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(expected);
      if (expected.length === 0) replaced++;
    }
    expect(replaced).to.equal(30);
  });
});
