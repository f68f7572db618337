import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { MAX_EVENT_BATCH_BYTES, escapedJsonLength, worstCaseItems } from '../../src/events/limits.ts';
import { MAX_PROPERTIES_BYTES } from '../../src/events/schema.ts';
import { startTestService, type TestService } from './harness.ts';

/** JSON text with every character of every string and key written as a \u escape (surrogate pairs for astral ones). */
function escapeAll(value: unknown): string {
  if (typeof value === 'string') {
    let out = '"';
    for (let i = 0; i < value.length; i++) out += '\\u' + value.charCodeAt(i).toString(16).padStart(4, '0');
    return out + '"';
  }
  if (Array.isArray(value)) return `[${value.map(escapeAll).join(',')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, x]) => `${escapeAll(k)}:${escapeAll(x)}`).join(',')}}`;
  return JSON.stringify(value);
}

describe('event batch limits, characters and property keys (HTTP)', () => {
  let svc: TestService;
  let token: string;
  const json = { 'content-type': 'application/json' };
  const gzipped = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
  const post = (rawBody: Buffer | string, headers: Record<string, string> = json) => svc.request('POST', '/1.0/event', { token, rawBody, headers });
  const query = async <T>(sql: string, params: Record<string, unknown> = {}) =>
    (await svc.client.query({ query: sql, query_params: params, format: 'JSONEachRow' })).json<T>();
  const count = async (where: string, params: Record<string, unknown>) =>
    Number((await query<{ c: string }>(`SELECT count() AS c FROM events WHERE ${where}`, params))[0].c);

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events']);
  });
  after(() => svc.close());

  describe('the body limit admits every batch the contract allows (it refused these with 413)', () => {
    // 100 copilot responses of 10,000 "é": over 2 MB of UTF-8 (2.05 MB as reported, with its other fields).
    const accented = Array.from({ length: 100 }, (_, i) => ({
      type: 'copilot',
      event_name: 'service_copilot_response',
      agent_id: 'agent-accented',
      conversation_id: `c${i}`,
      copilot_session_id: 's',
      response: 'é'.repeat(10_000),
    }));
    // 100 ASCII items with every optional field filled: 1.10 MB.
    const full = Array.from({ length: 100 }, (_, i) => ({
      type: 'copilot',
      event_name: 'service_copilot_satisfaction',
      user_alias: 'u'.repeat(255),
      timestamp: new Date().toISOString(),
      // 64 characters each, of their forms (language-REGION, IANA name).
      context: { locale: `en${'-abcdefgh'.repeat(6)}-abcdefg`, timezone: 't'.repeat(64) },
      properties: { n: i },
      agent_id: 'agent-full',
      conversation_id: 'c'.repeat(100),
      copilot_session_id: 's'.repeat(100),
      prompt: 'p'.repeat(5_000),
      response: 'r'.repeat(5_450),
      rating: '5',
      rating_scale: '1-5',
    }));
    for (const [name, batch, agent, size] of [
      ['100 copilot responses of 10,000 "é"', accented, 'agent-accented', 2_000_000],
      ['100 ASCII items with every optional field filled', full, 'agent-full', 1_100_000],
    ] as const) {
      for (const encoding of ['plain', 'gzip'] as const) {
        it(`${name} (${encoding}): 200, all stored`, async () => {
          const text = Buffer.from(JSON.stringify(batch));
          expect(text.length).to.be.at.least(size);
          const before = await count('agent_id = {a:String}', { a: agent });
          const res = await post(encoding === 'gzip' ? gzipSync(text) : text, encoding === 'gzip' ? gzipped : json);
          expect([res.status, res.body.count], JSON.stringify(res.body).slice(0, 500)).to.deep.equal([200, 100]);
          expect(await count('agent_id = {a:String}', { a: agent })).to.equal(before + 100);
        });
      }
    }

    it('the largest batch the contract allows, every character escaped, properties at their bound (gzip): 200', async () => {
      const copilot = worstCaseItems().find((item) => item.type === 'copilot')!;
      // Properties whose JSON text is exactly the bound, of astral characters (12 bytes each escaped).
      const key = 'k';
      const overhead = Buffer.byteLength(JSON.stringify({ [key]: '' }));
      const properties = { [key]: '\u{1F600}'.repeat((MAX_PROPERTIES_BYTES - overhead) / 4) };
      expect(Buffer.byteLength(JSON.stringify(properties))).to.equal(MAX_PROPERTIES_BYTES);
      const batch = Array.from({ length: 100 }, (_, i) => ({ ...copilot, conversation_id: `${i}`, properties }));
      const text = escapeAll(batch);
      expect(text.length).to.equal(escapedJsonLength(batch));
      expect(text.length).to.be.at.most(MAX_EVENT_BATCH_BYTES).and.above(0.6 * MAX_EVENT_BATCH_BYTES);
      const res = await post(gzipSync(text), gzipped);
      expect([res.status, res.body.count], JSON.stringify(res.body).slice(0, 500)).to.deep.equal([200, 100]);
      const [stored] = await query<{ prompt: number; props: number }>(
        'SELECT max(char_length(prompt)) AS prompt, max(length(properties)) AS props FROM events WHERE agent_id = {a:String}',
        { a: copilot.agent_id },
      );
      expect([Number(stored.prompt), Number(stored.props)]).to.deep.equal([10_000, MAX_PROPERTIES_BYTES]);
    });

    it(`properties over ${MAX_PROPERTIES_BYTES} bytes of JSON text: 400 naming the item, nothing stored`, async () => {
      const big = { type: 'track', event_name: 'big-properties', properties: { k: 'x'.repeat(MAX_PROPERTIES_BYTES) } };
      const res = await post(JSON.stringify([{ type: 'track', event_name: 'big-properties' }, big]));
      expect([res.status, res.body.error.code]).to.deep.equal([400, 'validation_error']);
      expect(res.body.error.issues.map((i: { path: string }) => i.path)).to.deep.equal(['[1].properties']);
      expect(await count('event_name = {n:String}', { n: 'big-properties' })).to.equal(0);
    });

    it('a body that inflates past the limit is still a 413', async () => {
      const res = await post(gzipSync(Buffer.alloc(MAX_EVENT_BATCH_BYTES + 1, 0x20)), gzipped);
      expect([res.status, res.body.error.code]).to.deep.equal([413, 'payload_too_large']);
    });
  });

  describe('lengths count characters (code points), not UTF-16 units', () => {
    const emoji = (n: number) => '\u{1F600}'.repeat(n);
    const prompt = (agent: string) => ({ type: 'copilot', event_name: 'service_copilot_user_prompt', agent_id: agent, conversation_id: 'c', copilot_session_id: 's', prompt: 'hi' });

    it('takes an agent_id of 100 emoji (200 UTF-16 units) and a prompt of 10,000, stored whole', async () => {
      const res = await post(JSON.stringify([{ ...prompt(emoji(100)), prompt: emoji(10_000) }]));
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const [row] = await query<{ a: string; p: string }>('SELECT char_length(agent_id) AS a, char_length(prompt) AS p FROM events WHERE agent_id = {a:String}', { a: emoji(100) });
      expect([Number(row.a), Number(row.p)]).to.deep.equal([100, 10_000]);
    });

    it('refuses 101 emoji with 400 naming the field', async () => {
      const res = await post(JSON.stringify([prompt(emoji(101))]));
      expect(res.status).to.equal(400);
      expect(res.body.error.issues).to.deep.equal([{ path: '[0].agent_id', message: 'Must be at most 100 characters' }]);
    });

    it('counts every text field the same way (user_alias 255, url 8192; context.locale and timezone are ASCII forms)', async () => {
      const ok = [
        { type: 'identify', user_alias: emoji(255) },
        { type: 'page', url: emoji(8192) },
        { type: 'track', event_name: emoji(255) },
      ];
      expect((await post(JSON.stringify(ok))).status).to.equal(200);
      const bad = await post(JSON.stringify([{ type: 'identify', user_alias: emoji(256) }, { type: 'page', url: emoji(8193) }, { type: 'track', event_name: emoji(256) }]));
      expect(bad.body.error.issues.map((i: { path: string }) => i.path)).to.deep.equal(['[0].user_alias', '[1].url', '[2].event_name']);
    });
  });

  it('stores the property keys constructor, prototype and __proto__ like any other (events and user_properties)', async () => {
    const alias = `proto-${Date.now()}`;
    // Written as text: an object literal's __proto__ would set the prototype, not a key.
    const body = `[{"type":"identify","user_alias":"${alias}","properties":{"constructor":"c","prototype":{"p":1},"__proto__":{"polluted":true},"plan":"pro"}},` +
      `{"type":"track","event_name":"${alias}","properties":{"__proto__":1,"constructor":[2]}}]`;
    const res = await post(body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const events = await query<{ type: string; properties: string }>(
      'SELECT type, properties FROM events WHERE user_alias = {a:String} OR event_name = {a:String} ORDER BY seq',
      { a: alias },
    );
    expect(events.map((e) => e.properties)).to.deep.equal([
      '{"constructor":"c","prototype":{"p":1},"__proto__":{"polluted":true},"plan":"pro"}',
      '{"__proto__":1,"constructor":[2]}',
    ]);
    const props = await query<{ key: string; value: string }>(
      `SELECT key, value FROM user_properties FINAL WHERE user_id = (SELECT any(user_id) FROM events WHERE user_alias = {a:String}) ORDER BY key`,
      { a: alias },
    );
    expect(props).to.deep.equal([
      { key: '__proto__', value: '{"polluted":true}' },
      { key: 'constructor', value: '"c"' },
      { key: 'plan', value: '"pro"' },
      { key: 'prototype', value: '{"p":1}' },
    ]);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });
});
