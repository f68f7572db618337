import { expect } from 'chai';
import fc from 'fast-check';
import { startTestService, type TestService } from './harness.ts';

/**
 * `events.property_map` two ways (schema/141): as the service sends it (src/events/encode.ts, the
 * typed values of rows.ts propertyMapValue) and as the column's DEFAULT computes it from the stored
 * JSON text (what parts written before the column, and writers that leave it out, get). Random
 * properties (any JSON: unicode keys and strings, escapes, numbers of every form, nested values,
 * nulls) go through POST /1.0/event; the same rows are then copied into another organization
 * without the column, so the engine computes it; both maps must be equal, entry for entry.
 * Then a property filter and level read the map the same for both organizations.
 */
describe('property_map: the service writes what the DEFAULT computes', () => {
  let svc: TestService;

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
  });
  after(() => svc.close());

  const key = fc.oneof(fc.string({ maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 6 }), fc.constantFrom('plan', 'a.b', '', '__proto__', '1', '0x'));
  // Integer literals beyond 64 bits (JSON.stringify writes 1e20 so) are left out: the engine's
  // parser refuses the whole text, and the DEFAULT gives no map (schema/141). Inside objects, no
  // positive exponent either: the engine rewrites that number's text its own way (1e21).
  const plain = (bound: number) => fc.oneof(fc.integer(), fc.double({ noNaN: true, min: -bound, max: bound }), fc.constantFrom(0, -0, 1e-7, 1.5e-300, 2 ** 53 + 2, 1e18, -1.5));
  const number = fc.oneof(plain(1e18), fc.constantFrom(1e21, -2.5e300, 1.7976931348623157e308));
  const scalar = (n: fc.Arbitrary<number>) => fc.oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ maxLength: 6 }), n, fc.boolean(), fc.constant(null));
  const nested = fc.letrec<{ json: unknown }>((tie) => ({
    json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar(plain(1e18)), fc.array(tie('json'), { maxLength: 4 }), fc.dictionary(key, tie('json'), { maxKeys: 4 })),
  })).json;
  const value = fc.oneof({ weight: 4, arbitrary: scalar(number) }, { weight: 1, arbitrary: nested });
  const properties = fc.option(fc.dictionary(key, value, { maxKeys: 6 }), { nil: undefined });

  it('for random properties, the same map (property)', async function () {
    this.timeout(120_000);
    const write = await svc.token(['events']);
    const samples = fc.sample(properties, { numRuns: 300, seed: 21 });
    const items = samples.map((p, i) => ({ type: 'track', event_name: `e${i % 4}`, user_alias: `u${i % 7}`, ...(p === undefined ? {} : { properties: p }) }));
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).to.equal(200);
    }
    const copy = crypto.randomUUID();
    await svc.client.command({
      query:
        'INSERT INTO events (org_id, timestamp, type, event_name, user_id, event_id, user_alias, anonymous, received_at, seq, properties) ' +
        'SELECT {copy:UUID}, timestamp, type, event_name, user_id, event_id, user_alias, anonymous, received_at, seq, properties FROM events WHERE org_id = {org:UUID}',
      query_params: { copy, org: svc.orgId },
    });
    const read = async (org: string) =>
      new Map((await (await svc.client.query({
        query: 'SELECT toString(event_id) AS id, mapKeys(property_map) AS k, mapValues(property_map) AS v FROM events WHERE org_id = {org:UUID}',
        query_params: { org },
        format: 'JSONEachRow',
      })).json<{ id: string; k: string[]; v: string[] }>()).map((r) => [r.id, r.k.map((k, i) => [k, r.v[i]])]));
    const sent = await read(svc.orgId);
    const computed = await read(copy);
    expect(sent.size).to.equal(items.length);
    expect(computed.size).to.equal(items.length);
    let entries = 0;
    for (const [id, map] of sent) {
      expect(map, `event ${id}`).to.deep.equal(computed.get(id));
      entries += map.length;
    }
    // The sample exercised the map: entries of each type tag.
    expect(entries).to.be.greaterThan(300);
    const tags = new Set([...sent.values()].flatMap((m) => m.map(([, v]) => v[0])));
    expect([...tags].sort()).to.deep.equal(['b', 'n', 'o', 's']);
  });
});
