import { expect } from 'chai';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { MAX_EVENT_BATCH_BYTES } from '../../src/events/limits.ts';
import { startTestService, type TestService } from './harness.ts';

const copilotPrompt = { type: 'copilot', event_name: 'service_copilot_user_prompt', agent_id: 'a1', conversation_id: 'c1', copilot_session_id: 's1', prompt: 'hi' };
const VALID: Record<string, object> = {
  identify: { type: 'identify', user_alias: 'u1', properties: { plan: 'pro' } },
  track: { type: 'track', event_name: 'signup' },
  'group.assign': { type: 'group.assign', group_name: 'acme', group_type: 'company' },
  'group.unassign': { type: 'group.unassign', group_name: 'acme' },
  page: { type: 'page', url: 'https://example.com/' },
  screen: { type: 'screen', screen_name: 'Home' },
  copilot: copilotPrompt,
};

describe('POST /1.0/event (HTTP)', () => {
  let svc: TestService;
  let token: string;
  // events is a plain MergeTree (no FINAL); the derived tables are read as their current state.
  const count = async (table = 'events', where = '1') =>
    Number((await (await svc.client.query({ query: `SELECT count() AS c FROM ${table}${table === 'events' ? '' : ' FINAL'} WHERE ${where}`, format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
  const post = (body: unknown, opts: { headers?: Record<string, string>; token?: string } = {}) =>
    svc.request('POST', '/1.0/event', { token: opts.token ?? token, body, headers: opts.headers });

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events']);
  });
  after(() => svc.close());

  for (const [type, item] of Object.entries(VALID)) {
    it(`stores a valid ${type} event and answers {count, lag} after the commit`, async () => {
      const n = await count();
      const res = await post([item]);
      expect(res.status).to.equal(200);
      expect(res.body.count).to.equal(1);
      expect(res.body.lag).to.be.a('number').and.at.least(0);
      // Acknowledged means committed: visible to the very next query.
      expect(await count()).to.equal(n + 1);
    });
  }

  const invalid: Array<[string, unknown, string[]]> = [
    ['a non-array body', { type: 'track', event_name: 'x' }, ['']],
    ['0 items', [], ['']],
    ['101 items', Array.from({ length: 101 }, () => VALID.track), ['']],
    ['an item without type', [{ event_name: 'x' }], ['[0].type']],
    ['an unknown type', [{ type: 'click' }], ['[0].type']],
    ['track without event_name', [{ type: 'track' }], ['[0].event_name']],
    ['page without url', [{ type: 'page' }], ['[0].url']],
    ['screen without screen_name', [{ type: 'screen' }], ['[0].screen_name']],
    ['group.assign without group_name', [{ type: 'group.assign' }], ['[0].group_name']],
    ['copilot prompt without prompt', [{ ...copilotPrompt, prompt: undefined }], ['[0].prompt']],
    ['copilot agent_id over 100', [{ ...copilotPrompt, agent_id: 'a'.repeat(101) }], ['[0].agent_id']],
    ['a bad timestamp', [{ ...VALID.track, timestamp: 'yesterday' }], ['[0].timestamp']],
    ['several bad items', [VALID.track, { type: 'track' }, VALID.page, { type: 'page' }], ['[1].event_name', '[3].url']],
  ];
  for (const [name, body, paths] of invalid) {
    it(`rejects ${name} with 400 naming ${paths.join(', ') || 'the body'}, storing nothing`, async () => {
      const n = await count();
      const res = await post(body);
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('validation_error');
      const got = (res.body.error.issues ?? []).map((i: { path: string }) => i.path);
      for (const p of paths) expect(got).to.include(p);
      expect(await count()).to.equal(n);
    });
  }

  it('rejects invalid JSON (400), a wrong content type (415) and a body over the limit (413)', async () => {
    const n = await count();
    const bad = await svc.request('POST', '/1.0/event', { token, rawBody: '[{"type":', headers: { 'content-type': 'application/json' } });
    expect([bad.status, bad.body.error.code]).to.deep.equal([400, 'invalid_json']);
    const text = await svc.request('POST', '/1.0/event', { token, rawBody: JSON.stringify([VALID.track]), headers: { 'content-type': 'text/plain' } });
    expect([text.status, text.body.error.code]).to.deep.equal([415, 'unsupported_media_type']);
    // The limit applies after decompression (it admits the largest valid batch, see
    // event-limits.test.ts): a small gzip body that inflates past it is a 413.
    const big = Buffer.from(`[{"type":"track","event_name":"x","properties":{"blob":"${'x'.repeat(MAX_EVENT_BATCH_BYTES)}"}}]`);
    const bomb = await svc.request('POST', '/1.0/event', {
      token,
      rawBody: gzipSync(big),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(bomb.body.error.code).to.equal('payload_too_large');
    expect(bomb.status).to.equal(413);
    expect(await count()).to.equal(n);
  });

  it('rejects text that is not valid Unicode (an unpaired surrogate escape) with 400 naming each place, and it fails no other request', async () => {
    const n = await count();
    const marker = `surrogates-${Date.now()}`;
    // Sent together, so that without the check both would share one INSERT, which ClickHouse refuses.
    const [bad, good] = await Promise.all([
      svc.request('POST', '/1.0/event', {
        token,
        rawBody: `[{"type":"track","event_name":"x\\ud800y","properties":{"k\\udfff":"v","ok":"\\ud83d\\ude00"}},{"type":"identify","user_alias":"\\udc00"}]`,
        headers: { 'content-type': 'application/json' },
      }),
      post([{ type: 'track', event_name: marker, properties: { emoji: '\u{1F600}' } }]),
    ]);
    expect([bad.status, bad.body.error.code]).to.deep.equal([400, 'invalid_json']);
    expect(bad.body.error.issues.map((i: { path: string }) => i.path)).to.deep.equal(['[0].event_name', '[0].properties.k\udfff', '[1].user_alias']);
    expect(good.status).to.equal(200);
    expect(await count()).to.equal(n + 1);
  });

  it('rejects a body nested more than 64 levels deep with 400 (deeper ones once made a 500), and takes 64', async () => {
    const n = await count();
    const nest = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    // The batch array is level 1, the event level 2, its properties level 3.
    const send = (depth: number) =>
      svc.request('POST', '/1.0/event', {
        token,
        rawBody: `[{"type":"identify","user_alias":"deep","properties":${nest(depth - 2)}}]`,
        headers: { 'content-type': 'application/json' },
      });
    for (const depth of [65, 20_000, 150_000]) {
      const res = await send(depth);
      expect([res.status, res.body.error?.code], `depth ${depth}`).to.deep.equal([400, 'invalid_json']);
    }
    expect(await count()).to.equal(n);
    expect((await send(64)).status).to.equal(200);
    expect(await count()).to.equal(n + 1);
  });

  it('accepts a gzip body', async () => {
    const n = await count();
    const res = await svc.request('POST', '/1.0/event', {
      token,
      rawBody: gzipSync(JSON.stringify([VALID.track, VALID.page])),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(2);
    expect(await count()).to.equal(n + 2);
  });

  it('keeps a valid timestamp and replaces one older than 7 days or in the future by the reception time', async () => {
    const recent = new Date(Date.now() - 3600_000).toISOString();
    const old = new Date(Date.now() - 8 * 86400_000).toISOString();
    const future = new Date(Date.now() + 3600_000).toISOString();
    const before = Date.now();
    const res = await post([
      { type: 'track', event_name: 'ts-recent', timestamp: recent },
      { type: 'track', event_name: 'ts-old', timestamp: old },
      { type: 'track', event_name: 'ts-future', timestamp: future },
    ]);
    expect(res.status).to.equal(200);
    const rows = await (
      await svc.client.query({ query: "SELECT event_name, toUnixTimestamp64Milli(timestamp) AS t FROM events WHERE event_name LIKE 'ts-%'", format: 'JSONEachRow' })
    ).json<{ event_name: string; t: string }>();
    const at = Object.fromEntries(rows.map((r) => [r.event_name, Number(r.t)]));
    expect(at['ts-recent']).to.equal(Date.parse(recent));
    for (const name of ['ts-old', 'ts-future']) expect(at[name]).to.be.within(before - 1000, Date.now() + 1000);
  });

  it('maps an alias to the same user id across requests; items without alias are distinct anonymous users', async () => {
    await post([{ type: 'track', event_name: 'alias-a', user_alias: 'same-user' }]);
    await post([{ type: 'track', event_name: 'alias-b', user_alias: 'same-user' }]);
    await post([{ type: 'track', event_name: 'anon' }, { type: 'track', event_name: 'anon' }]);
    const rows = await (
      await svc.client.query({ query: "SELECT event_name, toString(user_id) AS u, anonymous FROM events WHERE event_name IN ('alias-a','alias-b','anon')", format: 'JSONEachRow' })
    ).json<{ event_name: string; u: string; anonymous: number }>();
    const alias = rows.filter((r) => r.event_name.startsWith('alias'));
    expect(new Set(alias.map((r) => r.u)).size).to.equal(1);
    expect(alias.every((r) => r.anonymous === 0)).to.equal(true);
    const anon = rows.filter((r) => r.event_name === 'anon');
    expect(new Set(anon.map((r) => r.u)).size).to.equal(2);
    expect(anon.every((r) => r.anonymous === 1)).to.equal(true);
  });

  it('identify keeps the latest value per property', async () => {
    const t1 = new Date(Date.now() - 60_000).toISOString();
    const t2 = new Date(Date.now() - 30_000).toISOString();
    await post([{ type: 'identify', user_alias: 'props', timestamp: t2, properties: { plan: 'pro', seats: 5 } }]);
    await post([{ type: 'identify', user_alias: 'props', timestamp: t1, properties: { plan: 'free', country: 'FR' } }]);
    const rows = await (
      await svc.client.query({
        query: "SELECT key, value FROM user_properties FINAL WHERE user_id = (SELECT any(user_id) FROM events WHERE user_alias = 'props') ORDER BY key",
        format: 'JSONEachRow',
      })
    ).json<{ key: string; value: string }>();
    expect(rows).to.deep.equal([
      { key: 'country', value: '"FR"' },
      { key: 'plan', value: '"pro"' },
      { key: 'seats', value: '5' },
    ]);
  });

  it('assign then unassign leaves no membership', async () => {
    await post([{ type: 'group.assign', user_alias: 'member', group_type: 'team', group_name: 'blue' }]);
    await post([{ type: 'group.assign', user_alias: 'member', group_type: 'team', group_name: 'red' }]);
    expect(await count('group_memberships', "group_name IN ('blue','red')")).to.equal(2);
    await post([{ type: 'group.unassign', user_alias: 'member', group_type: 'team', group_name: 'blue' }]);
    const rows = await (await svc.client.query({ query: "SELECT group_name FROM group_memberships FINAL WHERE group_name IN ('blue','red')", format: 'JSONEachRow' })).json<{ group_name: string }>();
    expect(rows).to.deep.equal([{ group_name: 'red' }]);
  });

  it('many concurrent requests: stored rows equal the sum of acknowledged counts, exactly', async () => {
    const marker = `concurrent-${Date.now()}`;
    const requests = Array.from({ length: 60 }, (_, i) =>
      post(Array.from({ length: 1 + (i % 100) }, () => ({ type: 'track', event_name: marker }))),
    );
    const results = await Promise.all(requests);
    const acknowledged = results.filter((r) => r.status === 200).reduce((s, r) => s + r.body.count, 0);
    expect(results.every((r) => r.status === 200)).to.equal(true);
    expect(await count('events', `event_name = '${marker}'`)).to.equal(acknowledged);
  });

  it('random JSON bodies and headers never produce a 500', async function () {
    this.timeout(300_000);
    const n = await count();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue(), fc.array(fc.record({ type: fc.constantFrom(...Object.keys(VALID), 'x'), event_name: fc.string(), url: fc.string() }, { requiredKeys: ['type'] }))),
        fc.constantFrom('application/json', 'text/plain', 'application/vnd.api+json', ''),
        fc.constantFrom(undefined, 'gzip', 'br'),
        async (body, type, encoding) => {
          const headers: Record<string, string> = {};
          if (type) headers['content-type'] = type;
          if (encoding) headers['content-encoding'] = encoding;
          const res = await svc.request('POST', '/1.0/event', { token, rawBody: JSON.stringify(body) ?? '', headers });
          expect(res.status, JSON.stringify(res.body)).to.be.oneOf([200, 400, 413, 415]);
          expect(res.body.error ?? res.body).to.be.an('object');
        },
      ),
      { numRuns: 150 },
    );
    expect(await count()).to.be.at.least(n);
  });
});
