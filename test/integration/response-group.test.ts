import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';

/**
 * Group commit of survey-response writes (write-group.ts, store.ts insertGroup): concurrent
 * requests of one organization are written together, and each still gets its own answer. A
 * request with a record that would move a response to another survey is a 400 and stores nothing
 * (not even an identity claim); the requests written with it are stored and counted.
 */
describe('survey-response writes: concurrent requests grouped, each answered on its own', function () {
  this.timeout(120_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc?.close());

  const record = (id: string, survey: string, updatedAt = '2024-05-04T10:05:00.000001Z') => ({
    id, survey_id: survey, channel_id: survey, respondent_id: id, language: 'en', completion: 'fully_completed', active: false,
    end_reason: 'completed', ended_at: '', created_at: '2024-05-04T10:00:00.000001Z', updated_at: updatedAt, last_answer_at: '', hidden_fields: [], answers: [],
  });
  const rows = async (query: string) =>
    (await (await svc.client.query({ query, query_params: { org: svc.orgId }, format: 'JSONEachRow' })).json<Record<string, string>>());

  it('a 400 in a group stores nothing of its request; the others are stored and counted', async () => {
    const token = await svc.token(['responses:write']);
    const [s1, s2] = [randomUUID(), randomUUID()];
    const existing = Array.from({ length: 3 }, () => randomUUID());
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: existing.map((id) => record(id, s1)) })).status).to.equal(200);
    // Twelve requests at once: every third moves an existing response to s2 (beside a new id of its own).
    const bodies = Array.from({ length: 12 }, (_, i) => {
      const fresh = Array.from({ length: 20 }, () => record(randomUUID(), s1));
      return i % 3 === 2 ? [...fresh, record(existing[i % 3], s2, '2024-05-04T11:00:00.000001Z')] : fresh;
    });
    const answers = await Promise.all(bodies.map((body) => svc.request('POST', '/1.0/survey/response', { token, body })));
    answers.forEach((res, i) => {
      if (i % 3 === 2) {
        expect(res.status, `request ${i}`).to.equal(400);
        expect(res.body.error.issues[0].path).to.equal('[20].survey_id');
      } else {
        expect(res.status, `request ${i}: ${JSON.stringify(res.body)}`).to.equal(200);
        expect(res.body.count).to.equal(20);
      }
    });
    const stored = new Set((await rows('SELECT toString(id) AS id FROM survey_responses FINAL WHERE org_id = {org:UUID}')).map((r) => r.id));
    const claimed = new Set((await rows('SELECT toString(id) AS id FROM survey_response_ids WHERE org_id = {org:UUID}')).map((r) => r.id));
    bodies.forEach((body, i) => {
      for (const r of body.slice(0, 20)) {
        expect(stored.has(r.id), `request ${i} stored`).to.equal(i % 3 !== 2);
        expect(claimed.has(r.id), `request ${i} claimed`).to.equal(i % 3 !== 2);
      }
    });
    expect(stored.size).to.equal(3 + 8 * 20);
    const moved = await rows('SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND toString(survey_id) != ' + `'${s1}'`);
    expect(Number(moved[0].n)).to.equal(0);
    // The requests were written in fewer INSERTs than requests: grouped.
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const [inserts] = await rows(
      "SELECT count() AS n FROM system.query_log WHERE type = 'QueryFinish' AND query_kind = 'Insert' AND current_database = currentDatabase() " +
      "AND has(tables, concat(currentDatabase(), '.survey_responses')) AND event_time > now() - INTERVAL 10 MINUTE");
    // Written one by one, the eight requests stored would be eight INSERTs after the first.
    expect(Number(inserts.n), 'INSERTs of survey_responses (one before, then the groups)').to.be.within(2, 8);
  });
  it('an id repeated in a request is stored as one row: the latest updated_at, the last of those on a tie', async () => {
    const token = await svc.token(['responses:write']);
    const survey = randomUUID();
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const body = [
      { ...record(a, survey, '2024-05-04T10:07:00.000001Z'), language: 'de' },
      { ...record(a, survey, '2024-05-04T10:06:00.000001Z'), language: 'fr' },
      { ...record(b, survey), language: 'fr' },
      { ...record(b, survey), language: 'de' },
      { ...record(c, survey, '2024-05-04T10:05:00.000001Z'), language: 'fr' },
      { ...record(c, survey, '2024-05-04T10:05:00.000002Z'), language: 'de' },
    ];
    const res = await svc.request('POST', '/1.0/survey/response', { token, body });
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(6);
    // Without FINAL: a second row of an id (the write sends one row per id and the engine's
    // collapse at insert is off) would show here, where FINAL would hide it.
    const stored = await rows(
      `SELECT toString(id) AS id, language, toString(updated_at) AS updated FROM survey_responses WHERE org_id = {org:UUID} AND survey_id = '${survey}' ORDER BY id`);
    expect(stored.map((r) => [r.id, r.language]).sort()).to.deep.equal([[a, 'de'], [b, 'de'], [c, 'de']].sort());
  });
});
