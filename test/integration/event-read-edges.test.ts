import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

/**
 * What docs/api.md says of the event reads where the contract is silent, pinned through HTTP:
 * `""` on a string key is "not carried" (the write path never stores it), on a property a value;
 * a range instant without a zone is UTC; a property level keys strings by value and other JSON by
 * its text, so "42" and 42 share a bucket that a filter tells apart.
 */
const HOUR = 3_600_000;
// Events may carry a timestamp up to 7 days old: two days back, on a whole hour.
const base = Math.floor((Date.now() - 2 * 24 * HOUR) / HOUR) * HOUR;
const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();

describe('Event reads: the edges docs/api.md decides (HTTP)', () => {
  let svc: TestService;
  let read: string;
  const search = async (body: Record<string, unknown>) => {
    const res = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 0, ...body } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.hits.total.value as number;
  };

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
    read = await svc.token(['events:read']);
    const events = [
      { type: 'track', event_name: 'a', user_alias: 'u1', timestamp: at(10), properties: { v: '42', s: '' } },
      { type: 'track', event_name: 'a', user_alias: 'u2', timestamp: at(20), properties: { v: 42 } },
      { type: 'track', event_name: 'b', timestamp: at(30), properties: { v: 42.0 }, context: { locale: '' } },
      { type: 'page', url: 'https://example.com/', user_alias: 'u1', timestamp: at(40), context: { locale: 'en-GB' } },
      { type: 'identify', user_alias: 'u2', timestamp: at(50), properties: { plan: 'pro' } },
    ];
    const res = await svc.request('POST', '/1.0/event', { token: await svc.token(['events']), body: events });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
  after(() => svc.close());

  it('"" on a string key matches the events without the field, like null; on a property it is a value', async () => {
    const f = (key: string, operator: string, value?: unknown) => ({ filters: [{ key, operator, ...(value === undefined ? {} : operator.endsWith('in') ? { values: [value] } : { value }) }] });
    for (const key of ['event_name', 'user_alias', 'url', 'context_locale']) {
      expect(await search(f(key, 'eq', '')), key).to.equal(await search(f(key, 'null')));
      expect(await search(f(key, 'in', '')), key).to.equal(await search(f(key, 'null')));
      expect(await search(f(key, 'neq', '')), key).to.equal(await search(f(key, 'not_null')));
      expect(await search(f(key, 'not_in', '')), key).to.equal(await search(f(key, 'not_null')));
    }
    expect(await search(f('event_name', 'eq', ''))).to.equal(2); // the page and the identify
    expect(await search(f('context_locale', 'eq', ''))).to.equal(4); // "" sent is "not given"
    expect(await search({ filters: [{ key: 'property', property_key: 's', operator: 'eq', value: '' }] })).to.equal(1);
    expect(await search({ filters: [{ key: 'property', property_key: 's', operator: 'null' }] })).to.equal(4);
  });

  it('a range instant without a zone is UTC', async () => {
    const start = at(15);
    const end = at(35);
    const utc = await search({ range: { field: 'timestamp', start, end } });
    expect(utc).to.equal(2);
    const bare = (t: string) => t.replace('Z', '');
    expect(await search({ range: { field: 'timestamp', start: bare(start), end: bare(end) } })).to.equal(utc);
    expect(await search({ range: { field: 'timestamp', start: start.replace('T', ' ').replace('.000Z', '+00:00'), end } })).to.equal(utc);
  });

  it('a property level: "42" and 42 share the bucket "42", filters tell them apart', async () => {
    const res = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body: { group_by: [{ field: 'property', property_key: 'v' }] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.aggregations.buckets).to.deep.equal([{ key: '42', doc_count: 3 }]);
    const prop = (value: unknown) => search({ filters: [{ key: 'property', property_key: 'v', operator: 'eq', value }] });
    expect(await prop('42')).to.equal(1);
    expect(await prop(42)).to.equal(2);
  });
});
