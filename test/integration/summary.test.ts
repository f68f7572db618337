import { expect } from 'chai';
import { POLL_WINDOW_MS } from '../../src/query/request-cache.ts';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros, rng } from './random.ts';

/**
 * The summary over HTTP, checked against numbers computed here in plain JS from the very records
 * that were written (no code shared with the compiler).
 */

type Rec = Record<string, any>;

const uuid = () => randomUUID();
const Q = { nps: uuid(), csat: uuid(), ces: uuid(), nps2: uuid() };
const iso = isoMicros;

/** n records with varied scores (on and off the scales), completions, end reasons, languages and supports. */
function makeRecords(n: number, surveys: string[], seed: number): Rec[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    const created = Date.UTC(2024, 0, 1) + Math.floor(r() * 60 * 86_400_000);
    const active = r() < 0.25;
    const answers: Rec[] = [];
    const score = (cta: string, q: string, value: unknown) => {
      if (typeof value === 'number') answers.push({ t: 2, v_d: value, cta_type: cta, question_id: q, question_correlation_id: q });
      else answers.push({ t: 0, v_s: String(value), cta_type: cta, question_id: q, question_correlation_id: q });
    };
    if (r() < 0.8) score('nps', Q.nps, pick([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 9, '9', '3', 11, -1, 7.5, 'n/a']));
    if (r() < 0.2) score('nps', Q.nps2, pick([10, 0, 8])); // a second NPS question: counts as another answer
    if (r() < 0.6) score('csat', Q.csat, pick([1, 2, 3, 4, 5, '4', 0, 6, 2.5]));
    if (r() < 0.4) score('ces', Q.ces, pick([1, 2, 3, 4, 5, 6, 7, '7', 8, 0]));
    if (r() < 0.3) answers.push({ t: 0, v_s: 'great', cta_type: 'open_question', question_id: uuid(), question_correlation_id: uuid() });
    const hidden: Rec[] = [];
    const support = pick(['desktop', 'mobile', 'mobile', null, 'both']);
    if (support === 'both') hidden.push({ key: 'support', t: 0, v_s: 'desktop' }, { key: 'support', t: 0, v_s: 'mobile' });
    else if (support) hidden.push({ key: 'support', t: 0, v_s: support });
    if (r() < 0.1) hidden.push({ key: 'support', t: 0, v_s: support && support !== 'both' ? support : 'tablet' }); // a repeated value counts once
    hidden.push({ key: 'os', t: 0, v_s: pick(['ios', 'android']) });
    out.push({
      id: uuid(),
      channel_id: uuid(),
      respondent_id: uuid(),
      survey_id: pick(surveys),
      language: pick(['en', 'fr', 'de', '']),
      completion: pick(['not_started', 'partially_completed', 'fully_completed', 'fully_completed']),
      active,
      end_reason: active ? '' : pick(['closed', 'completed', 'expired', 'interrupted']),
      ended_at: active ? '' : iso(created + 3_600_000),
      created_at: iso(created, i % 1000),
      updated_at: iso(created, i % 1000),
      last_answer_at: iso(created),
      hidden_fields: hidden,
      answers,
    });
  }
  return out;
}

const SCALES = { nps: [0, 10], csat: [1, 5], ces: [1, 7] } as const;

function scoreOf(a: Rec): number | null {
  if (typeof a.v_d === 'number') return a.v_d;
  if (typeof a.v_s === 'string' && /^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$/.test(a.v_s)) return Number(a.v_s);
  return null;
}

/** num / den to 2 decimals, half away from zero, in exact integer (BigInt) arithmetic: no float drift (1.005 -> 1.01). */
function round2(num: number, den: number): number {
  const n = BigInt(Math.abs(num)) * 200n + BigInt(den);
  const scaled = Number(n / (2n * BigInt(den)));
  return (Math.sign(num) * scaled) / 100 || 0;
}

/** The summary, computed independently. */
function expectedSummary(records: Rec[]) {
  const details: Record<string, Record<string, number>> = {};
  for (const [name, [lo, hi]] of Object.entries(SCALES)) {
    details[name] = {};
    for (let s = lo; s <= hi; s++) details[name][String(s)] = 0;
  }
  const completion: Record<string, number> = { not_started: 0, partially_completed: 0, fully_completed: 0 };
  const count = (obj: Record<string, number>, k: string) => (obj[k] = (obj[k] ?? 0) + 1);
  const end_reasons: Record<string, number> = {};
  const languages: Record<string, number> = {};
  const supports: Record<string, number> = {};
  for (const rec of records) {
    for (const a of rec.answers) {
      const scale = SCALES[a.cta_type as keyof typeof SCALES];
      const s = scoreOf(a);
      if (scale && s !== null && Number.isInteger(s) && s >= scale[0] && s <= scale[1]) details[a.cta_type][String(s)]++;
    }
    completion[rec.completion]++;
    if (rec.end_reason) count(end_reasons, rec.end_reason);
    if (rec.language) count(languages, rec.language);
    for (const v of new Set(rec.hidden_fields.filter((h: Rec) => h.key === 'support').map((h: Rec) => h.v_s))) count(supports, v as string);
  }
  const sum = (d: Record<string, number>, keys: number[]) => keys.reduce((n, k) => n + d[String(k)], 0);
  const avg = (d: Record<string, number>) => {
    const n = Object.values(d).reduce((a, b) => a + b, 0);
    return n === 0 ? null : round2(Object.entries(d).reduce((a, [k, c]) => a + Number(k) * c, 0), n);
  };
  const detractor = sum(details.nps, [0, 1, 2, 3, 4, 5, 6]);
  const neutral = sum(details.nps, [7, 8]);
  const promotor = sum(details.nps, [9, 10]);
  const total = detractor + neutral + promotor;
  const sorted = (o: Record<string, number>) => Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  return {
    ces_avg: avg(details.ces),
    ces_details: details.ces,
    csat_avg: avg(details.csat),
    csat_details: details.csat,
    nps_details: details.nps,
    nps_groups: { detractor, neutral, promotor, total },
    nps_score: total === 0 ? null : round2((promotor - detractor) * 100, total),
    completion,
    end_reasons: sorted(end_reasons),
    languages: sorted(languages),
    supports: sorted(supports),
  };
}

describe('summary (HTTP)', () => {
  let svc: TestService;
  let read: string;
  let write: string;
  const surveys = [uuid(), uuid(), uuid()];
  let records: Rec[];
  const OTHER_ORG = '00000000-0000-4000-8000-00000000beef';

  const summary = (ids: string, body: unknown = {}, token = read) => svc.request('SEARCH', `/1.0/survey/${ids}/response/summary`, { token, body });
  const inRange = (rec: Rec, start: string, end: string) => rec.created_at >= start && rec.created_at <= end; // same-format ISO strings sort by time

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    write = await svc.token(['responses:write']);
    records = makeRecords(400, surveys, 7);
    const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: records });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    // Another organization writes to the same survey ids: never counted for ours.
    const otherWrite = await svc.token(['responses:write'], OTHER_ORG);
    const theirs = makeRecords(50, surveys, 8);
    expect((await svc.request('POST', '/1.0/survey/response', { token: otherWrite, body: theirs })).status).to.equal(200);
  });
  after(() => svc.close());

  it('every field matches the values computed from the records (all surveys, *)', async () => {
    const res = await summary('*');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.equal(expectedSummary(records));
    // sanity: the fixture exercises every part
    expect(res.body.nps_groups.total).to.be.greaterThan(100);
    expect(res.body.supports).to.have.keys('desktop', 'mobile', 'tablet');
  });

  it('a survey list, a range and filters narrow every number alike', async () => {
    const start = '2024-01-15T00:00:00.000000Z';
    const end = '2024-02-10T23:59:59.999999Z';
    const body = {
      filters_bool: 'AND',
      filters: [
        { type: 'response', key: 'completion', operator: 'in', values: ['fully_completed', 'partially_completed'] },
        { type: 'response', key: 'language', operator: 'not_in', values: ['de'] },
      ],
      range: { field: 'created_at', start, end },
      size: 3, // ignored by the summary
      offset: 7,
    };
    const res = await summary(`${surveys[0]},${surveys[1]}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const want = records.filter(
      (r) => [surveys[0], surveys[1]].includes(r.survey_id) && inRange(r, start, end) && r.completion !== 'not_started' && r.language !== 'de',
    );
    expect(want.length).to.be.greaterThan(20);
    expect(res.body).to.deep.equal(expectedSummary(want));
  });

  it('OR filters: any one matches', async () => {
    const body = { filters_bool: 'OR', filters: [{ key: 'completion', operator: 'eq', value: 'not_started' }, { key: 'language', operator: 'eq', value: 'fr' }] };
    const res = await summary('*', body);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal(expectedSummary(records.filter((r) => r.completion === 'not_started' || r.language === 'fr')));
  });

  it('nothing in scope: zeros everywhere, averages and nps_score null', async () => {
    for (const ids of [uuid(), '*']) {
      const body = ids === '*' ? { range: { start: '2030-01-01T00:00:00Z' } } : {};
      const res = await summary(ids, body);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal(expectedSummary([]));
      expect(res.body.ces_avg).to.equal(null);
      expect(res.body.nps_score).to.equal(null);
      expect(res.body.nps_details).to.have.keys(...Array.from({ length: 11 }, (_, i) => String(i)));
    }
  });

  it("the other organization's responses never count, and ours never count for it", async () => {
    const theirs = await svc.token(['responses:read'], OTHER_ORG);
    const res = await summary(surveys.join(','), {}, theirs);
    expect(res.status).to.equal(200);
    const total = Object.values(res.body.completion as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(total).to.equal(50);
  });

  it('NPS score: sign and rounding to 2 decimals', async () => {
    const cases: Array<[number[], number | null]> = [
      [[10, 9, 0, 0, 5, 7, 8], -14.29], // (2 - 3) / 7
      [[10, 10, 9, 7, 3, 8], 33.33], // (3 - 1) / 6
      [[9, 6], 0],
      [[10], 100],
      [[0, 6, 1], -100],
      [[7, 8], 0],
    ];
    for (const [scores, want] of cases) {
      const survey = uuid();
      const recs = makeRecords(scores.length, [survey], 99).map((rec, i) => ({
        ...rec,
        answers: [{ t: 2, v_d: scores[i], cta_type: 'nps', question_id: Q.nps, question_correlation_id: Q.nps }],
      }));
      expect((await svc.request('POST', '/1.0/survey/response', { token: write, body: recs })).status).to.equal(200);
      const res = await summary(survey);
      expect(res.body.nps_score, String(scores)).to.equal(want);
      expect(res.body.nps_groups.total).to.equal(scores.length);
    }
  });

  it('bad input is a 400 naming the field; a token without responses:read is a 403', async () => {
    const bad = await summary('*', { filters: [{ key: 'completion', operator: 'eq', value: 'done' }] });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues[0].path).to.equal('filters[0].value');
    const badIds = await summary('not-a-uuid');
    expect(badIds.status).to.equal(400);
    const badRange = await summary('*', { range: { start: 'yesterday' } });
    expect(badRange.status).to.equal(400);
    expect((await summary('*', {}, write)).status).to.equal(403);
  });

  it('polling: a repeated query is served from the cache; new data shows after the 3 s window', async () => {
    const survey = uuid();
    const first = makeRecords(3, [survey], 5);
    expect((await svc.request('POST', '/1.0/survey/response', { token: write, body: first })).status).to.equal(200);
    const asked = Date.now();
    const a = await summary(survey);
    const count = (body: any) => Object.values(body.completion as Record<string, number>).reduce((x, y) => x + y, 0);
    expect(count(a.body)).to.equal(3);
    expect((await svc.request('POST', '/1.0/survey/response', { token: write, body: makeRecords(2, [survey], 6) })).status).to.equal(200);
    const b = await summary(survey);
    // The cached answer within the window, with its run's watermark. On a machine slow enough that
    // the write and the read took longer than the window, the answer is a fresh one (both writes,
    // a later watermark): never a mix of the two.
    if (Date.now() - asked < POLL_WINDOW_MS) {
      expect(count(b.body), 'still the cached result within the window').to.equal(3);
      expect(b.headers.get('data-watermark')).to.equal(a.headers.get('data-watermark'));
    } else {
      expect(count(b.body) === 3).to.equal(b.headers.get('data-watermark') === a.headers.get('data-watermark'));
    }
    await new Promise((r) => setTimeout(r, POLL_WINDOW_MS + 100));
    const c = await summary(survey);
    expect(count(c.body), 'fresh after the window').to.equal(5);
  });
});
