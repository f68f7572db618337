import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';

/**
 * Length limits count characters (code points), not UTF-16 units, on every endpoint: an emoji is
 * one character. (Events: event-limits.test.ts.) N emoji take 2N UTF-16 units, so each limit is
 * tried at N (accepted, though 2N units exceed it) and N + 1 (refused, naming the field).
 */
const emoji = (n: number) => '\u{1F600}'.repeat(n);

describe('length limits count characters on releases, survey responses and event reads (HTTP)', () => {
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startTestService();
    token = await svc.token(['releases', 'responses:read', 'responses:write', 'events', 'events:read']);
  });
  after(() => svc.close());

  it('release name, version and tags: 255 emoji are 201, 256 a 400 naming the field; description 10,000', async () => {
    const ok = await svc.request('POST', '/1.0/release', {
      token,
      body: { name: emoji(255), version: emoji(255), tags: [emoji(255)], description: emoji(10_000) },
    });
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).to.equal(201);
    expect([...ok.body.name].length).to.equal(255);
    const bad = await svc.request('POST', '/1.0/release', {
      token,
      body: { name: emoji(256), version: emoji(256), tags: [emoji(256)], description: emoji(10_001) },
    });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues.map((i: { path: string }) => i.path)).to.have.members(['name', 'version', 'tags[0]', 'description']);
  });

  const record = (over: Record<string, unknown>) => ({
    id: randomUUID(),
    channel_id: randomUUID(),
    respondent_id: randomUUID(),
    survey_id: randomUUID(),
    completion: 'fully_completed',
    active: false,
    created_at: '2024-01-02T03:04:05.000000Z',
    updated_at: '2024-01-02T03:04:05.000000Z',
    ...over,
  });

  it('survey response text fields: an alias of 1000 emoji is stored, 1001 is a 400 naming it', async () => {
    const alias = emoji(1000);
    const ok = await svc.request('POST', '/1.0/survey/response', { token, body: [record({ respondent_aliases: [alias], end_reason: emoji(100) })] });
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).to.be.oneOf([200, 201]);
    const bad = await svc.request('POST', '/1.0/survey/response', { token, body: [record({ respondent_aliases: [emoji(1001)], end_reason: emoji(101) })] });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues.map((i: { path: string }) => i.path)).to.have.members(['[0].respondent_aliases[0]', '[0].end_reason']);
  });

  it('survey filters: a value of 1000 emoji and a hidden-field key of 255 are taken; 1001 and 256 are 400s', async () => {
    const search = (filters: unknown[]) => svc.request('SEARCH', '/1.0/survey/*/response', { token, body: { filters } });
    const ok = await search([
      { type: 'response', key: 'respondent_alias', operator: 'contains', value: emoji(1000) },
      { type: 'response.hidden_field', key: emoji(255), operator: 'eq', value: 'x' },
    ]);
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).to.equal(200);
    const tooLongValue = await search([{ type: 'response', key: 'respondent_alias', operator: 'contains', value: emoji(1001) }]);
    expect(tooLongValue.status).to.equal(400);
    expect(JSON.stringify(tooLongValue.body.error)).to.include('1000 characters');
    const tooLongKey = await search([{ type: 'response.hidden_field', key: emoji(256), operator: 'eq', value: 'x' }]);
    expect(tooLongKey.status).to.equal(400);
  });

  it('group_by hidden_field_key: 255 emoji are taken, 256 a 400', async () => {
    const aggregate = (key: string) =>
      svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token, body: { group_by: [{ field: 'hidden_field', hidden_field_key: key }] } });
    const ok = await aggregate(emoji(255));
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).to.equal(200);
    expect((await aggregate(emoji(256))).status).to.equal(400);
  });

  it('event reads: a property_key of 255 emoji and a user_alias of 255 emoji are taken, 256 are 400s', async () => {
    const alias = emoji(255);
    expect((await svc.request('POST', '/1.0/event', { token, body: [{ type: 'identify', user_alias: alias, properties: { [emoji(255)]: 'v' } }] })).status).to.equal(200);
    const profile = await svc.request('GET', `/1.0/user/${encodeURIComponent(alias)}`, { token });
    expect(profile.status, JSON.stringify(profile.body).slice(0, 300)).to.equal(200);
    expect((await svc.request('GET', `/1.0/user/${encodeURIComponent(emoji(256))}`, { token })).status).to.equal(400);
    const search = (propertyKey: string) =>
      svc.request('POST', '/1.0/event/search', { token, body: { filters: [{ key: 'property', property_key: propertyKey, operator: 'eq', value: 'v' }] } });
    const found = await search(emoji(255));
    expect(found.status, JSON.stringify(found.body).slice(0, 300)).to.equal(200);
    expect((await search(emoji(256))).status).to.equal(400);
  });
});
