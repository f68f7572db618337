import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { request, startTestService, type TestService } from './harness.ts';
import { startInstance } from './instance.ts';

/**
 * Several service instances (separate processes, so separate in-process id locks) writing one
 * database: first writes of the same ids at the same moment, with different created_at or
 * surveys, must still leave one row per id (src/responses/identity.ts, schema/030).
 */
describe('response identity across service instances', function () {
  this.timeout(180_000);
  let svc: TestService;
  let token: string;
  let a: Awaited<ReturnType<typeof startInstance>>;
  let b: Awaited<ReturnType<typeof startInstance>>;
  const surveys = [randomUUID(), randomUUID()];

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    // Both started before either is awaited; when one fails, the other is kept for after() to stop.
    const started = await Promise.allSettled([startInstance(svc.database), startInstance(svc.database)]);
    [a, b] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined!));
    for (const s of started) if (s.status === 'rejected') throw s.reason;
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await svc?.close();
  });

  const record = (id: string, survey: string, createdAt: string, updatedAt: string) => ({
    id, doc_type: 'response', org_id: svc.orgId, channel_id: surveys[0], respondent_id: surveys[0], respondent_aliases: [],
    survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: 'not_started', active: true, end_reason: '', ended_at: '', created_at: createdAt, updated_at: updatedAt, last_answer_at: '',
  });
  const post = (url: string, body: unknown[]) => request(url, 'POST', '/1.0/survey/response', { token, body });
  const rows = async <T>(query: string, params: Record<string, unknown> = {}) =>
    (await (await svc.client.query({ query, query_params: { org: svc.orgId, ...params }, format: 'JSONEachRow' })).json()) as T[];

  it('racing first writes with different created_at end as one row per id, with the first claim', async () => {
    const written: string[] = [];
    let raced = 0;
    // Rounds until the two instances really raced (both claimed some id): the check must not pass
    // because the writes happened one after the other.
    for (let round = 0; round < 10 && raced === 0; round++) {
      const ids = Array.from({ length: 50 }, () => randomUUID());
      written.push(...ids);
      const [ra, rb] = await Promise.all([
        post(a.url, ids.map((id, i) => record(id, surveys[0], `2024-03-0${1 + (i % 5)}T10:00:00.000001Z`, '2024-04-01T00:00:00.000001Z'))),
        post(b.url, ids.map((id, i) => record(id, surveys[0], `2024-05-1${i % 5}T12:00:00.000002Z`, '2024-06-01T00:00:00.000002Z'))),
      ]);
      expect([ra.status, rb.status], JSON.stringify([ra.body, rb.body])).to.deep.equal([200, 200]);
      [{ raced }] = await rows<{ raced: number }>(
        'SELECT toUInt32(count()) AS raced FROM (SELECT id FROM survey_response_ids WHERE org_id = {org:UUID} GROUP BY id HAVING count() > 1)',
      );
    }
    expect(raced, 'the two instances never claimed the same id at once').to.be.greaterThan(0);

    const stored = await rows<{ id: string; versions: number; created_at: string; claimed: string }>(
      `SELECT toString(r.id) AS id, toUInt32(count()) AS versions, toString(any(r.created_at)) AS created_at, toString(any(k.first)) AS claimed
       FROM survey_responses AS r FINAL
       JOIN (SELECT id, argMin(created_at, _block_number) AS first FROM survey_response_ids WHERE org_id = {org:UUID} GROUP BY id) AS k ON k.id = r.id
       WHERE r.org_id = {org:UUID} GROUP BY r.id`,
    );
    expect(stored).to.have.length(written.length);
    for (const s of stored) {
      expect(s.versions, s.id).to.equal(1);
      expect(s.created_at, s.id).to.equal(s.claimed);
    }
    // And through the API: one response per id, whatever the FINAL merge does.
    const res = await svc.request('SEARCH', `/1.0/survey/${surveys[0]}/response`, { token, body: { size: 0 } });
    expect(res.body.hits.total.value).to.equal(written.length);
  });

  it('racing first writes into two surveys: one batch is stored, the other is a 400 naming the survey', async () => {
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const [ra, rb] = await Promise.all([
      post(a.url, ids.map((id) => record(id, surveys[0], '2024-07-01T00:00:00.000003Z', '2024-07-02T00:00:00Z'))),
      post(b.url, ids.map((id) => record(id, surveys[1], '2024-07-01T00:00:00.000004Z', '2024-07-02T00:00:00Z'))),
    ]);
    expect([ra.status, rb.status].sort()).to.deep.equal([200, 400]);
    const [winner, loser] = ra.status === 200 ? [surveys[0], rb] : [surveys[1], ra];
    expect(loser.body.error.issues[0].path).to.equal('[0].survey_id');
    const stored = await rows<{ survey: string; n: number }>(
      'SELECT toString(survey_id) AS survey, toUInt32(count()) AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)} GROUP BY survey_id',
      { ids },
    );
    expect(stored).to.deep.equal([{ survey: winner, n: ids.length }]);
  });
});
