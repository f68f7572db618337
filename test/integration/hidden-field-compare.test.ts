import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { asNumber, asText, recordWithHidden, type HiddenFieldEntry } from './hidden-field-reference.ts';

/**
 * Hidden-field `gt` / `lt` read the typed columns of schema/080: number entries by value, string
 * entries by the first 32 bytes of their text (hf_string_heads) when the filter value is shorter
 * than that, the whole text otherwise. This checks them against the comparison of whole texts in
 * byte order on the values where a head could go wrong: strings of 31, 32 and 33 bytes and longer,
 * sharing the filter value as a prefix or differing just past the 32nd byte, multi-byte characters
 * cut by the 32nd byte, the empty string, filter values of 31, 32 and 33 bytes, numbers beside
 * numeric strings, and a key holding both types.
 */
const A31 = 'a'.repeat(31);
const A32 = 'a'.repeat(32);
const LONG = `${A32}zzzz`;
const UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko)';
const STRINGS = [
  '', '5', '50', 'Linux', A31, A32, `${A32}a`, `${A31}b`, LONG, `${A32}0`, UA, `${UA.slice(0, 31)}é tail`, `${'é'.repeat(16)}x`, `${'€'.repeat(11)}`, '€'.repeat(12),
];
const NUMBERS = [-3, 0, 2.5, 5, 50, 1e21];
const VALUES: unknown[] = [
  '5', 'Linux', 'M', A31, `${A31}b`, A32, `${A32}a`, `${A32}zzzz`, `${A32}zzzy`, UA.slice(0, 31), UA.slice(0, 32), UA.slice(0, 33), UA, `${UA.slice(0, 31)}é`,
  `${'é'.repeat(15)}`, `${'é'.repeat(16)}`, '€'.repeat(11), 5, 4.9, 1e20, -3,
];

/** Byte order of UTF-8 texts: the engine's String comparison. */
const textCompare = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

function entryCompares(e: HiddenFieldEntry, op: 'gt' | 'lt', x: unknown): boolean {
  const sign = op === 'gt' ? 1 : -1;
  if (e.t === 0) return sign * textCompare(e.v_s!, asText(x)) > 0;
  const n = asNumber(x);
  return e.t === 2 && n !== undefined && sign * (e.v_d! - n) > 0;
}

describe('hidden fields gt / lt through the typed columns: the order of whole texts and numbers', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const records: Array<{ id: string; entries: HiddenFieldEntry[] }> = [];
  const survey = randomUUID();

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    const entries: HiddenFieldEntry[][] = [
      ...STRINGS.map((s) => [{ key: 'v', t: 0 as const, v_s: s }]),
      ...NUMBERS.map((n) => [{ key: 'v', t: 2 as const, v_d: n }]),
      [{ key: 'v', t: 1, v_b: true }],
      [{ key: 'other', t: 0, v_s: LONG }, { key: 'other', t: 2, v_d: 99 }],
      [{ key: 'v', t: 0, v_s: '5' }, { key: 'v', t: 2, v_d: 2.5 }, { key: 'v', t: 0, v_s: LONG }],
    ];
    const body = entries.map((e, i) => {
      const id = randomUUID();
      records.push({ id, entries: e });
      return recordWithHidden(svc.orgId, survey, id, e, i);
    });
    const res = await svc.request('POST', '/1.0/survey/response', { token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  });
  after(async () => svc?.close());

  const search = async (filter: unknown) => {
    const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { size: 1000, filters: [filter] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return (res.body.hits.responses as Array<{ id: string }>).map((r) => r.id).sort();
  };
  const expected = (match: (r: { entries: HiddenFieldEntry[] }) => boolean) => records.filter(match).map((r) => r.id).sort();

  for (const op of ['gt', 'lt'] as const) {
    for (const x of VALUES) {
      it(`${op} ${JSON.stringify(x)} (${typeof x === 'string' ? `${Buffer.byteLength(x)} bytes` : typeof x})`, async () => {
        const want = expected((r) => r.entries.some((e) => e.key === 'v' && entryCompares(e, op, x)));
        expect(await search({ type: 'response.hidden_field', key: 'v', operator: op, value: x })).to.deep.equal(want);
      });
    }
  }

  it('an aggregation filtered by a comparison counts the same responses', async () => {
    const filter = { type: 'response.hidden_field', key: 'v', operator: 'gt', value: A31 };
    const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response/aggregation`, { token, body: { filters: [filter], group_by: [{ field: 'completion' }] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.hits.total.value).to.equal(expected((r) => r.entries.some((e) => e.key === 'v' && entryCompares(e, 'gt', A31))).length);
  });
});
