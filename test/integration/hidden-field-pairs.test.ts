import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { entryEq, recordWithHidden, type HiddenFieldEntry } from './hidden-field-reference.ts';

/**
 * Hidden-field eq/in filters and hidden_field buckets read `hf_pairs` (schema/004: one
 * "key NUL tag text" entry per hidden field, the number text formatted by the engine). This checks
 * them against the typed semantics (string entries by text, number entries by value, bool entries
 * by truth) on the values where a text encoding could go wrong: -0 and 0, long and tiny floats,
 * 0.1 + 0.2, exponents, numeric strings that are not the canonical text of their number, a NUL
 * inside a string value (the pair's separator).
 */
const NUMBERS = ['0', '-0', '0.30000000000000004', '1e21', '1e-7', '123456789.123', '2.5', '-3', '5e-324', '1.7976931348623157e308', '30'];
const STRINGS = ['5', '5.0', '0', '-0', 'true', 'false', '1e21', '2.50', 'FR', 'Li\u0000nux'];
const FILTER_VALUES: unknown[] = [0, -0, 0.1 + 0.2, 1e21, 1e-7, 123456789.123, 2.5, -3, 5e-324, 1.7976931348623157e308, 30, 5, '5', '5.0', '0', '-0', '2.5', '2.50', '1e21', '1e+21', 'true', 'false', true, false, 'FR', 'fr', 'Li\u0000nux', 'Li'];

type Entry = HiddenFieldEntry;

describe('hidden fields through hf_pairs: eq/in and buckets keep the typed semantics', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const records: Array<{ id: string; entries: Entry[] }> = [];
  const survey = randomUUID();

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    // One record per value, as number entries (raw JSON text, so that -0 and 1e21 arrive as written),
    // as string entries, and two bool entries.
    const entries: Entry[][] = [
      ...NUMBERS.map((n) => [{ key: 'v', t: 2 as const, v_d: Number(n) }]),
      ...STRINGS.map((s) => [{ key: 'v', t: 0 as const, v_s: s }]),
      [{ key: 'v', t: 1, v_b: true }],
      [{ key: 'v', t: 1, v_b: false }],
      [{ key: 'other', t: 0, v_s: '5' }],
      [{ key: 'v', t: 0, v_s: '5' }, { key: 'v', t: 2, v_d: 2.5 }],
    ];
    const rawNumber = new Map(NUMBERS.map((n) => [Number(n), n]));
    const bodies = entries.map((e, i) => {
      const id = randomUUID();
      records.push({ id, entries: e });
      const hidden = e
        .map((x) => (x.t === 2 ? `{"key":${JSON.stringify(x.key)},"t":2,"v_d":${Object.is(x.v_d, -0) ? '-0' : rawNumber.get(x.v_d!) ?? JSON.stringify(x.v_d)}}` : JSON.stringify(x)))
        .join(',');
      return JSON.stringify(recordWithHidden(svc.orgId, survey, id, '@HIDDEN@', i)).replace('"@HIDDEN@"', `[${hidden}]`);
    });
    const res = await svc.request('POST', '/1.0/survey/response', { token, rawBody: `[${bodies.join(',')}]`, headers: { 'content-type': 'application/json' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
  after(async () => svc?.close());

  const search = async (filter: unknown) => {
    const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { size: 1000, filters: [filter] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return (res.body.hits.responses as Array<{ id: string }>).map((r) => r.id).sort();
  };
  const expected = (match: (r: { entries: Entry[] }) => boolean) => records.filter(match).map((r) => r.id).sort();

  for (const x of FILTER_VALUES) {
    const label = Object.is(x, -0) ? '-0 (number)' : `${JSON.stringify(x)} (${typeof x})`;
    it(`eq and neq ${label}`, async () => {
      const eq = expected((r) => r.entries.some((e) => e.key === 'v' && entryEq(e, x)));
      expect(await search({ type: 'response.hidden_field', key: 'v', operator: 'eq', value: x })).to.deep.equal(eq);
      expect(await search({ type: 'response.hidden_field', key: 'v', operator: 'neq', value: x })).to.deep.equal(records.map((r) => r.id).filter((id) => !eq.includes(id)).sort());
    });
  }

  it('in with a few values (hf_pairs) and with many (the arrays) agree with the semantics', async () => {
    for (const values of [[5, 'true', 2.5], FILTER_VALUES.slice(0, 12)]) {
      const want = expected((r) => r.entries.some((e) => e.key === 'v' && values.some((x) => entryEq(e, x))));
      expect(await search({ type: 'response.hidden_field', key: 'v', operator: 'in', values })).to.deep.equal(want);
    }
  });

  it('hidden_field buckets are the entry texts: strings as written, numbers as the engine prints them', async () => {
    const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response/aggregation`, { token, body: { group_by: [{ field: 'hidden_field', hidden_field_key: 'v' }] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const keys = (res.body.aggregations.buckets as Array<{ key: string; doc_count: number }>).map((b) => b.key).sort();
    // The engine's Float64 text (toString): 1e21, 5e-324, -0; the texts written for the strings.
    expect(keys).to.include.members(['-0', '1e21', '5e-324', '0.30000000000000004', '2.5', '5.0', 'FR', 'true', 'false']);
    const five = res.body.aggregations.buckets.find((b: { key: string }) => b.key === '5');
    // string "5" twice (one record also holds 2.5); `other` is another key
    expect(five.doc_count).to.equal(2);
  });
});
