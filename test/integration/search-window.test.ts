import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';

/**
 * The search page is read from the smallest window (1 hour, 1 day, 7, 30, 365 days before
 * min(range end, now)) that holds the newest `offset + size` matches (search-sql.ts). Responses spread
 * over all those windows, pages that fit in each window and pages that cross its start must equal
 * the newest-first list computed in JS.
 */
describe('search: pages read from the smallest window that holds them', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const now = Date.now();
  const MIN = 60_000;
  const HOUR = 60 * MIN;
  const DAY = 24 * HOUR;
  // ages: 5 in the last hour, 6 more in the last day, 7 in the week, 8 in the month, 9 in the year, 4 older; and 2 in the future
  const ages = [
    ...[1, 5, 10, 30, 50].map((m) => m * MIN),
    ...[2, 3, 6, 12, 20, 23].map((h) => h * HOUR),
    ...[2, 3, 4, 5, 6, 6.5, 6.9].map((d) => d * DAY),
    ...[8, 10, 12, 15, 20, 25, 28, 29.5].map((d) => d * DAY),
    ...[40, 60, 90, 120, 200, 250, 300, 330, 360].map((d) => d * DAY),
    ...[400, 500, 800, 1200].map((d) => d * DAY),
    -2 * HOUR,
    -40 * DAY,
  ];
  const records = ages.map((age, i) => ({ id: randomUUID(), created: new Date(now - age - i).toISOString().replace('Z', '000Z') }));
  const newestFirst = [...records].sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : a.id < b.id ? 1 : -1));

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    const body = records.map((r) => ({
      id: r.id, doc_type: 'response', org_id: svc.orgId, channel_id: randomUUID(), respondent_id: randomUUID(), respondent_aliases: [],
      survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
      question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
      group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
      completion: 'not_started', active: true, end_reason: '', ended_at: '', created_at: r.created, updated_at: r.created, last_answer_at: '',
    }));
    const res = await svc.request('POST', '/1.0/survey/response', { token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
  after(async () => svc?.close());

  const search = async (body: Record<string, unknown>) => {
    const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return { total: res.body.hits.total.value as number, ids: (res.body.hits.responses as Array<{ id: string }>).map((r) => r.id) };
  };

  for (const [offset, size] of [[0, 3], [0, 7], [4, 3], [5, 1], [0, 18], [10, 15], [20, 30], [40, 10], [50, 10], [0, 1000], [53, 5]]) {
    it(`no range: offset ${offset}, size ${size}`, async () => {
      const got = await search({ offset, size });
      expect(got.total).to.equal(records.length);
      expect(got.ids).to.deep.equal(newestFirst.slice(offset, offset + size).map((r) => r.id));
    });
  }

  it('a filter the rollups do not answer (a segment): the count reads the rows, the windows beside it, the same pages', async () => {
    // The count then reads the raw rows, and the hour's and the day's pages are read beside it
    // (search.ts pagesBesideCount): a page is taken from them only when the count says they hold it.
    const org = randomUUID();
    const segment = randomUUID();
    const other = randomUUID();
    const rows = ages.map((age, i) => ({ id: randomUUID(), created: new Date(now - age - i).toISOString().replace('Z', '000Z'), group: i % 3 === 2 ? other : segment }));
    const matching = rows.filter((r) => r.group === segment).sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : a.id < b.id ? 1 : -1));
    const orgToken = await svc.token(['responses:read', 'responses:write'], org);
    const body = rows.map((r) => ({
      id: r.id, doc_type: 'response', org_id: org, channel_id: survey, respondent_id: survey, respondent_aliases: [],
      survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
      question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
      group_ids: [r.group], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
      completion: 'not_started', active: true, end_reason: '', ended_at: '', created_at: r.created, updated_at: r.created, last_answer_at: '',
    }));
    expect((await svc.request('POST', '/1.0/survey/response', { token: orgToken, body })).status).to.equal(200);
    const filters = [{ type: 'response', key: 'respondent_segments', operator: 'eq', value: segment }];
    const end = new Date(now - 3 * DAY).toISOString().replace('Z', '000Z');
    const past = matching.filter((r) => r.created <= end);
    for (const [offset, size] of [[0, 1], [0, 3], [2, 3], [0, 5], [4, 4], [0, 12], [10, 15], [30, 10], [0, 1000]]) {
      for (const [range, expected] of [[undefined, matching], [{ end }, past]] as const) {
        const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token: orgToken, body: { offset, size, filters, ...(range ? { range } : {}) } });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        expect(res.body.hits.total.value).to.equal(expected.length);
        expect(res.body.hits.responses.map((r: { id: string }) => r.id), `offset ${offset} size ${size} range ${JSON.stringify(range)}`).to.deep.equal(expected.slice(offset, offset + size).map((r) => r.id));
      }
    }
  });

  it('an org whose responses all stopped over a year ago: windows before its newest response, the same pages', async () => {
    // Every match is older than the largest window before now: the page windows start from the
    // newest match instead (search.ts pageFromWindows), trying 1 hour, 1 day, 7, 30, 365 days.
    const org = randomUUID();
    const old = [
      ...[0, 10, 30].map((m) => 800 * DAY + m * MIN),
      ...[3, 10, 20].map((h) => 800 * DAY + h * HOUR),
      ...[2, 5, 9, 20, 29].map((d) => 800 * DAY + d * DAY),
      ...[60, 200, 364, 500, 900].map((d) => 800 * DAY + d * DAY),
    ].map((age, i) => ({ id: randomUUID(), created: new Date(now - age - i).toISOString().replace('Z', '000Z') }));
    const expected = [...old].sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : a.id < b.id ? 1 : -1));
    const orgToken = await svc.token(['responses:read', 'responses:write'], org);
    const body = old.map((r) => ({
      id: r.id, doc_type: 'response', org_id: org, channel_id: survey, respondent_id: survey, respondent_aliases: [],
      survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
      question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
      group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
      completion: 'not_started', active: true, end_reason: '', ended_at: '', created_at: r.created, updated_at: r.created, last_answer_at: '',
    }));
    expect((await svc.request('POST', '/1.0/survey/response', { token: orgToken, body })).status).to.equal(200);
    for (const [offset, size] of [[0, 1], [0, 3], [1, 3], [0, 5], [3, 4], [5, 6], [0, 12], [10, 5], [15, 3], [17, 1], [0, 1000]]) {
      const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token: orgToken, body: { offset, size } });
      expect(res.status).to.equal(200);
      expect(res.body.hits.total.value).to.equal(old.length);
      expect(res.body.hits.responses.map((r: { id: string }) => r.id), `offset ${offset} size ${size}`).to.deep.equal(expected.slice(offset, offset + size).map((r) => r.id));
    }
  });

  it('a range that ends in the past: windows before its end, the same pages', async () => {
    const end = new Date(now - 3 * DAY).toISOString();
    const start = new Date(now - 700 * DAY).toISOString();
    const inRange = newestFirst.filter((r) => r.created <= end.replace('Z', '000Z') && r.created >= start.replace('Z', '000Z'));
    for (const [offset, size] of [[0, 2], [0, 5], [3, 10], [20, 20]]) {
      const got = await search({ offset, size, range: { start, end } });
      expect(got.total).to.equal(inRange.length);
      expect(got.ids).to.deep.equal(inRange.slice(offset, offset + size).map((r) => r.id));
    }
  });
});
