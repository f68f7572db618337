import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { checkedKey, IdempotencyStore } from '../../src/idempotency/store.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * Idempotency-Key on POST /1.0/release and POST /1.0/survey/response, through HTTP against the
 * real engine: a retry gets the first answer and stores nothing; another body is a 409.
 */
describe('Idempotency-Key', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const releasesOf = async (org: string) =>
    Number((await (await svc.client.query({ query: 'SELECT count() AS c FROM releases WHERE org_id = {org:UUID}', query_params: { org }, format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
  const surveyResponse = (completion = 'fully_completed') => ({
    id: randomUUID(),
    survey_id: randomUUID(),
    channel_id: randomUUID(),
    respondent_id: randomUUID(),
    active: true,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    completion,
  });
  const release = (token: string, body: unknown, key?: string) =>
    svc.request('POST', '/1.0/release', { token, body, headers: key === undefined ? {} : { 'Idempotency-Key': key } });

  it('POST /1.0/release: the same key and body answers the first answer (status, body) and stores nothing new', async () => {
    const org = randomUUID();
    const token = await svc.token(['releases'], org);
    const body = { name: 'Spring', version: '2.4.0' };
    const first = await release(token, body, 'k-1');
    expect(first.status).to.equal(201);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    const again = await release(token, body, 'k-1');
    expect(again.status).to.equal(201);
    expect(again.body).to.deep.equal(first.body);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(await releasesOf(org)).to.equal(1);
    // Another key, or no key: stored again, as without the header.
    expect((await release(token, body, 'k-2')).body.id).to.not.equal(first.body.id);
    expect((await release(token, body)).status).to.equal(201);
    expect(await releasesOf(org)).to.equal(3);
  });

  it('the same key with another body is a 409 idempotency_conflict, storing nothing', async () => {
    const org = randomUUID();
    const token = await svc.token(['releases'], org);
    expect((await release(token, { name: 'A', version: '1' }, 'same')).status).to.equal(201);
    const res = await release(token, { name: 'B', version: '1' }, 'same');
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('idempotency_conflict');
    expect(await releasesOf(org)).to.equal(1);
  });

  it('keys are per organization and per endpoint', async () => {
    const [orgA, orgB] = [randomUUID(), randomUUID()];
    const [tA, tB] = [await svc.token(['releases', 'responses:write'], orgA), await svc.token(['releases'], orgB)];
    expect((await release(tA, { name: 'A', version: '1' }, 'shared')).status).to.equal(201);
    expect((await release(tB, { name: 'B', version: '1' }, 'shared')).status).to.equal(201);
    const response = surveyResponse();
    const res = await svc.request('POST', '/1.0/survey/response', { token: tA, body: [response], headers: { 'Idempotency-Key': 'shared' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect([await releasesOf(orgA), await releasesOf(orgB)]).to.deep.equal([1, 1]);
  });

  it('POST /1.0/survey/response replays its first answer', async () => {
    const org = randomUUID();
    const token = await svc.token(['responses:write'], org);
    const body = [surveyResponse()];
    const send = () => svc.request('POST', '/1.0/survey/response', { token, body, headers: { 'Idempotency-Key': 'resp-1' } });
    const first = await send();
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const again = await send();
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).to.deep.equal([200, first.body, 'true']);
    const other = await svc.request('POST', '/1.0/survey/response', { token, body: [{ ...body[0], completion: 'partially_completed' }], headers: { 'Idempotency-Key': 'resp-1' } });
    expect([other.status, other.body.error.code]).to.deep.equal([409, 'idempotency_conflict']);
  });

  for (const [name, key] of [
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['with a space', 'a b'],
  ] as const) {
    it(`rejects a key that is ${name} with 400, storing nothing`, async () => {
      const org = randomUUID();
      const token = await svc.token(['releases'], org);
      const res = await svc.request('POST', '/1.0/release', { token, body: { name: 'A', version: '1' }, headers: { 'Idempotency-Key': key } });
      expect(res.status).to.equal(400);
      expect(JSON.stringify(res.body)).to.include('Idempotency-Key');
      expect(await releasesOf(org)).to.equal(0);
    });
  }

  it('accepts keys of 1..255 printable ASCII characters only (fetch cannot even send some others)', () => {
    expect(checkedKey('k'.repeat(255))).to.equal('k'.repeat(255));
    expect(checkedKey(undefined)).to.equal(undefined);
    for (const bad of ['clé', 'a\tb', '']) expect(() => checkedKey(bad)).to.throw('Idempotency-Key');
  });

  it('concurrent requests with one key (as on two instances): exactly one runs; the others get 409 or the replay', async () => {
    const org = randomUUID();
    // Two stores on the same database are two service instances.
    const stores = [new IdempotencyStore(() => svc.client), new IdempotencyStore(() => svc.client)];
    let runs = 0;
    const work = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 50));
      return { status: 201, body: { n: runs } };
    };
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => stores[i % 2].run({ orgId: org, endpoint: 'createRelease', key: 'race', body: { a: 1 } }, work)),
    );
    expect(runs).to.equal(1);
    for (const r of results) {
      if (r.status === 'fulfilled') expect(r.value.body).to.deep.equal({ n: 1 });
      else expect(r.reason).to.include({ kind: 'conflict', code: 'idempotency_conflict' });
    }
    // Once answered, every retry gets the replay.
    expect((await stores[1].run({ orgId: org, endpoint: 'createRelease', key: 'race', body: { a: 1 } }, work)).replayed).to.equal(true);
    expect(runs).to.equal(1);
  });

  it('a failed handler keeps nothing: the retry runs it', async () => {
    const store = new IdempotencyStore(() => svc.client);
    const req = { orgId: randomUUID(), endpoint: 'createRelease', key: 'fails-once', body: {} };
    let calls = 0;
    const flaky = async () => {
      if (++calls === 1) throw new Error('store down');
      return { status: 201, body: { ok: true } };
    };
    await store.run(req, flaky).then(
      () => expect.fail('should throw'),
      (e) => expect(String(e)).to.include('store down'),
    );
    expect(await store.run(req, flaky)).to.deep.equal({ status: 201, body: { ok: true }, replayed: false });
  });
});
