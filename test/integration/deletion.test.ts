import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { purgeDeleted } from '../../src/clickhouse/delete.ts';
import { request, startTestService, type TestService } from './harness.ts';
import { startServiceProcess, type ServiceProcess } from './service-process.ts';

/**
 * DELETE /1.0/survey/response/<id> and DELETE /1.0/respondent/<id>: gone from every read at once
 * (search, summary, aggregation served from rollups or not, export), not brought back by a version
 * from before the deletion, and removed from disk by the purge.
 */
describe('deleting survey responses (HTTP)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const respondent = randomUUID();
  const record = (i: number, who = randomUUID(), updated = '2024-03-02T00:00:00.000000Z') => ({
    id: randomUUID(), doc_type: 'response', channel_id: survey, respondent_id: who, respondent_aliases: [],
    survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: i % 2 ? 'fully_completed' : 'not_started', active: true, end_reason: '', ended_at: '',
    created_at: `2024-03-01T${String(i).padStart(2, '0')}:00:00.000000Z`, updated_at: updated, last_answer_at: '',
  });
  const records = [record(1), record(2), record(3, respondent), record(4, respondent), record(5)];
  const write = (body: unknown[]) => svc.request('POST', '/1.0/survey/response', { token, body });
  const read = (suffix: string, body: unknown = {}) => svc.request('SEARCH', `/1.0/survey/${survey}${suffix}`, { token, body });

  /** What every read path says is stored: ids from search and export, counts from summary and aggregation. */
  async function everyRead() {
    const search = (await read('/response', { size: 100 })).body;
    const exported = ((await read('/response/export')).body ?? '') as string;
    const summary = (await read('/response/summary')).body;
    const aggregation = (await read('/response/aggregation', { group_by: [{ field: 'completion' }] })).body;
    return {
      search: (search.hits.responses as Array<{ id: string }>).map((r) => r.id).sort(),
      total: search.hits.total.value,
      exported: exported.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id: string }).id).sort(),
      summary: Object.values(summary.completion as Record<string, number>).reduce((a, b) => a + b, 0),
      aggregation: (aggregation.aggregations.buckets as Array<{ doc_count: number }>).reduce((a, b) => a + b.doc_count, 0),
    };
  }
  const expectStored = async (ids: string[]) => {
    const seen = await everyRead();
    expect(seen).to.deep.equal({ search: [...ids].sort(), total: ids.length, exported: [...ids].sort(), summary: ids.length, aggregation: ids.length });
  };
  // Past the 3 s polling window, so that summary and aggregation run again.
  const pastTheWindow = () => new Promise((r) => setTimeout(r, 3200));

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    expect((await write(records)).status).to.equal(200);
    await svc.settle(); // the rollups hold the responses: the deletion must reach them too
  });
  after(async () => svc?.close());

  it('DELETE /1.0/survey/response/<id>: 202 {deleted: 1}, and gone from every read at once and once the rollups are recomputed', async () => {
    await expectStored(records.map((r) => r.id));
    const res = await svc.request('DELETE', `/1.0/survey/response/${records[0].id}`, { token });
    expect(res.status).to.equal(202);
    expect(res.body).to.deep.equal({ deleted: 1 });
    // At once: the summary and aggregation cached just before are not served any more.
    await expectStored(records.slice(1).map((r) => r.id));
    await svc.settle();
    await pastTheWindow();
    await expectStored(records.slice(1).map((r) => r.id));
  });

  it('a version from before the deletion is acknowledged and dropped; a later version is stored as a new response', async () => {
    const old = { ...records[0], completion: 'partially_completed', updated_at: '2024-03-05T00:00:00.000000Z' };
    const again = await write([old]);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal({ count: 0 });
    await pastTheWindow();
    await expectStored(records.slice(1).map((r) => r.id));
    const later = { ...records[0], updated_at: new Date(Date.now() + 60_000).toISOString().replace('Z', '000Z') };
    expect((await write([later])).body).to.deep.equal({ count: 1 });
    await pastTheWindow();
    await expectStored(records.map((r) => r.id));
    // Back to the state the next tests expect.
    expect((await svc.request('DELETE', `/1.0/survey/response/${records[0].id}`, { token })).body).to.deep.equal({ deleted: 1 });
  });

  it('DELETE /1.0/respondent/<id>: every response of the respondent', async () => {
    const res = await svc.request('DELETE', `/1.0/respondent/${respondent}`, { token });
    expect(res.status).to.equal(202);
    expect(res.body).to.deep.equal({ deleted: 2 });
    await expectStored([records[1].id, records[4].id]);
    expect((await svc.request('DELETE', `/1.0/respondent/${respondent}`, { token })).body).to.deep.equal({ deleted: 0 });
  });

  it('another organization cannot delete ours; unknown ids count 0; a malformed id is a 400; responses:write is required', async () => {
    const stranger = await svc.token(['responses:write'], randomUUID());
    expect((await svc.request('DELETE', `/1.0/survey/response/${records[1].id}`, { token: stranger })).body).to.deep.equal({ deleted: 0 });
    expect((await svc.request('DELETE', `/1.0/respondent/${records[1].respondent_id}`, { token: stranger })).body).to.deep.equal({ deleted: 0 });
    expect((await svc.request('DELETE', `/1.0/survey/response/${randomUUID()}`, { token })).body).to.deep.equal({ deleted: 0 });
    const bad = await svc.request('DELETE', '/1.0/survey/response/not-a-uuid', { token });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues[0].path).to.equal('response_id');
    expect((await svc.request('DELETE', `/1.0/respondent/${records[1].id}`, { token: await svc.token(['responses:read']) })).status).to.equal(403);
    await pastTheWindow();
    await expectStored([records[1].id, records[4].id]);
  });

  it('segment and hidden-field filters (answered from text indexes, schema/210) do not count a deleted response', async () => {
    const group = randomUUID();
    const tagged = [6, 7].map((i) => ({ ...record(i), group_ids: [group], hidden_fields: [{ key: 'plan', t: 0, v_s: 'pro' }] }));
    expect((await write(tagged)).status).to.equal(200);
    const filters = [
      { type: 'response', key: 'respondent_segments', operator: 'eq', value: group },
      { type: 'response.hidden_field', key: 'plan', operator: 'eq', value: 'pro' },
    ];
    const counts = async () => Promise.all(filters.map(async (f) => (await read('/response', { size: 10, filters: [f] })).body.hits.total.value as number));
    expect(await counts()).to.deep.equal([2, 2]);
    expect((await svc.request('DELETE', `/1.0/survey/response/${tagged[0].id}`, { token })).body).to.deep.equal({ deleted: 1 });
    expect(await counts()).to.deep.equal([1, 1]);
    expect((await svc.request('DELETE', `/1.0/survey/response/${tagged[1].id}`, { token })).body).to.deep.equal({ deleted: 1 });
    expect(await counts()).to.deep.equal([0, 0]);
  });

  it('the purge removes the deleted rows from disk (no row left under the deleted mask)', async () => {
    const count = async (sql: string) => Number((await (await svc.client.query({ query: sql, query_params: { org: svc.orgId }, format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
    // The rows still on disk, deleted mask ignored: the deleted ones are there until the purge.
    const onDisk = 'SELECT count() AS c FROM survey_responses WHERE org_id = {org:UUID} SETTINGS apply_deleted_mask = 0';
    expect(await count(onDisk)).to.be.above(2);
    // The purge the deleter schedules an hour after a deletion (ResponseDeleter.schedulePurge).
    await purgeDeleted(svc.db, 'survey_responses');
    expect(await count(onDisk)).to.equal(2);
  });
});

describe('deleting a user (DELETE /1.0/user/<alias>)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events', 'events:read']);
    const events = (alias: string) => [
      { type: 'identify', user_alias: alias, properties: { plan: 'pro' } },
      { type: 'group.assign', user_alias: alias, group_type: 'team', group_name: 'blue' },
      { type: 'track', user_alias: alias, event_name: 'opened' },
    ];
    expect((await svc.request('POST', '/1.0/event', { token, body: [...events('gone'), ...events('stays')] })).status).to.equal(200);
  });
  after(async () => svc?.close());

  it('deletes their events, properties and groups from every read; other users keep theirs', async () => {
    const total = async () => (await svc.request('SEARCH', '/1.0/event', { token, body: { size: 0 } })).body.hits.total.value;
    expect((await svc.request('GET', '/1.0/user/gone', { token })).status).to.equal(200);
    expect(await total()).to.equal(6);
    const res = await svc.request('DELETE', '/1.0/user/gone', { token });
    expect(res.status).to.equal(202);
    expect(res.body).to.deep.equal({ deleted: 5 }); // 3 events, 1 property, 1 membership
    expect((await svc.request('GET', '/1.0/user/gone', { token })).status).to.equal(404);
    expect(await total()).to.equal(3);
    const kept = await svc.request('GET', '/1.0/user/stays', { token });
    expect(kept.body).to.deep.include({ event_count: 3, properties: { plan: 'pro' } });
    expect(kept.body.groups).to.have.length(1);
    expect((await svc.request('DELETE', '/1.0/user/gone', { token })).body).to.deep.equal({ deleted: 0 });
    expect((await svc.request('DELETE', '/1.0/user/stays', { token: await svc.token(['events:read']) })).status).to.equal(403);
  });
});


describe('deletions across a restart of tallyhouse serve', function () {
  this.timeout(300_000);
  let first: ServiceProcess | undefined;
  let second: ServiceProcess | undefined;
  after(async () => {
    await second?.cleanup();
    await first?.cleanup();
  });

  it('a deleted response and a deleted user stay deleted after the service and its engine restart', async () => {
    first = await startServiceProcess({ env: { TALLYHOUSE_DEMO: '1' } });
    const { tokens } = first;
    const survey = randomUUID();
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const body = ids.map((id, i) => ({
      id, survey_id: survey, channel_id: survey, respondent_id: randomUUID(), language: 'en', completion: 'fully_completed', active: true, end_reason: '',
      ended_at: '', answers: [], created_at: `2024-03-01T0${i}:00:00Z`, updated_at: '2024-03-01T09:00:00Z', last_answer_at: '', hidden_fields: [],
    }));
    const call = (svc: ServiceProcess, method: string, path: string, token: string, b?: unknown) =>
      request(svc.url, method, path, { token, ...(b === undefined ? {} : { body: b }) });
    expect((await call(first, 'POST', '/1.0/survey/response', tokens['responses:write'], body)).status).to.equal(200);
    expect((await call(first, 'POST', '/1.0/event', tokens.events, [{ type: 'track', user_alias: 'leaving', event_name: 'x' }])).status).to.equal(200);
    expect((await call(first, 'DELETE', `/1.0/survey/response/${ids[1]}`, tokens['responses:write'])).body).to.deep.equal({ deleted: 1 });
    expect((await call(first, 'DELETE', '/1.0/user/leaving', tokens.events)).body).to.deep.equal({ deleted: 1 });
    first.child.kill('SIGTERM');
    expect(await first.exited).to.deep.equal({ code: 0, signal: null });

    second = await startServiceProcess({ dataDir: first.dataDir });
    const left = await call(second, 'SEARCH', `/1.0/survey/${survey}/response`, second.tokens['responses:read'], { size: 10 });
    expect(left.body.hits.responses.map((r: { id: string }) => r.id).sort()).to.deep.equal([ids[0], ids[2]].sort());
    const summary = await call(second, 'SEARCH', `/1.0/survey/${survey}/response/summary`, second.tokens['responses:read'], {});
    expect(summary.body.completion.fully_completed).to.equal(2);
    expect((await call(second, 'GET', '/1.0/user/leaving', second.tokens['events:read'])).status).to.equal(404);
    // The old version is still refused after the restart (the tombstone is stored).
    expect((await call(second, 'POST', '/1.0/survey/response', second.tokens['responses:write'], [body[1]])).body).to.deep.equal({ count: 0 });
  });
});
