import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { encodeResponses, insertEncoded } from '../../src/responses/encode.ts';
import { parseWithSchema, toResponseRow, type ResponseRecord } from '../../src/responses/record.ts';
import { rebuildRecord, STORED_COLUMNS_SQL, type StoredColumns } from '../../src/responses/stored-doc.ts';
import { record, ORG } from '../response-arbitraries.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * `doc` holds what the columns do not (src/responses/stored-doc.ts): random records the schema
 * accepts, stored by the writer's INSERT, come back from `doc` and the columns as the parsed record
 * with the token's org, member for member: ids written in upper case, the nil scenario_id, absent,
 * empty and "" members, "" and null timestamps, lone surrogates, -0 and extreme numbers. A doc
 * stored whole (the earlier form) reads back the same, and so do search and export.
 */
const NIL = '00000000-0000-0000-0000-000000000000';
/** JSON's view of a value (what a client receives): -0 is 0, undefined members are gone. */
const asJson = (x: unknown) => JSON.parse(JSON.stringify(x));

/** Records the schema accepts, some with upper-case ids, the nil scenario or empty members. */
const records = fc.array(fc.tuple(record, fc.nat({ max: 8 })), { minLength: 1, maxLength: 10 }).map((raw) => {
  const out: ResponseRecord[] = [];
  for (const [r, twist] of JSON.parse(JSON.stringify(raw)) as Array<[Record<string, unknown>, number]>) {
    if (twist === 1) Object.assign(r, { id: String(r.id).toUpperCase(), group_ids: ((r.group_ids as string[] | undefined) ?? []).map((g) => g.toUpperCase()) });
    if (twist === 2) Object.assign(r, { scenario_id: NIL, respondent_aliases: [], group_ids: [], hidden_fields: [], language: '', locale: '', last_answer_at: '' });
    if (twist === 3) Object.assign(r, { channel_id: String(r.channel_id).toUpperCase(), hidden_fields: [{ key: 'n', t: 2, v_d: -0 }, { key: 'n', t: 2, v_d: 5e-324 }, { key: 'n', t: 2, v_d: 1e21 }, { key: 'b', t: 1, v_b: false }, { key: 'nul\u0000', t: 0, v_s: 'a\u0000b' }] });
    if (twist === 5) Object.assign(r, { language: 'a\uD800', end_reason: '\uDC00', respondent_aliases: ['\uDC00x', 'ok'], hidden_fields: [{ key: 'k\uD800', t: 0, v_s: 'v' }, { key: 'u', t: 0, v_s: '\uD83D' }] });
    if (twist === 4) for (const m of ['scenario_id', 'respondent_aliases', 'group_ids', 'hidden_fields', 'language', 'locale', 'end_reason', 'ended_at', 'last_answer_at']) delete r[m];
    try {
      out.push(...parseWithSchema([r], ORG));
    } catch { /* refused by the schema: not a record to store */ }
  }
  return [...new Map(out.map((r) => [r.id.toLowerCase(), r])).values()];
}).filter((rs) => rs.length > 0);

describe('survey responses: doc and the columns give back the record as written (property)', function () {
  this.timeout(180_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.close());

  async function readBack(org: string): Promise<ResponseRecord[]> {
    const rs = await svc.client.query({ query: `SELECT ${STORED_COLUMNS_SQL} FROM survey_responses WHERE org_id = {org:UUID}`, query_params: { org }, format: 'JSONEachRow' });
    return (await rs.json<StoredColumns>()).map(rebuildRecord);
  }
  const byId = (rs: readonly ResponseRecord[]) => asJson([...rs].sort((a, b) => (a.id.toLowerCase() < b.id.toLowerCase() ? -1 : 1)));

  it('random records: the writer\'s INSERT, read back and rebuilt', async () => {
    let compared = 0;
    await fc.assert(fc.asyncProperty(records, async (written) => {
      const org = randomUUID();
      await insertEncoded(svc.client, encodeResponses(written, org));
      expect(byId(await readBack(org))).to.deep.equal(byId(written.map((r) => ({ ...r, org_id: org }))));
      compared += written.length;
    }), { numRuns: 60, seed: 20261126, endOnFailure: true });
    expect(compared).to.be.greaterThan(100);
  });

  it('a doc stored whole (the earlier form) reads back the same', async () => {
    const org = randomUUID();
    const written = fc.sample(records, { numRuns: 5, seed: 7 }).flat();
    const rows = written.map((r) => ({ ...toResponseRow(r, org), doc: JSON.stringify({ ...r, org_id: org }) }));
    await svc.client.insert({ table: 'survey_responses', values: rows, format: 'JSONEachRow' });
    expect(byId(await readBack(org))).to.deep.equal(byId(written.map((r) => ({ ...r, org_id: org }))));
  });

  it('search and export return the records as written', async () => {
    const org = randomUUID();
    const token = await svc.token(['responses:read', 'responses:write'], org);
    // The API refuses lone surrogates (400 invalid_json): records without them.
    const written = fc.sample(records, { numRuns: 8, seed: 11 }).flat().filter((r) => !/\\ud[89a-f]/i.test(JSON.stringify(r))).map(({ org_id: _org, ...r }, i) => ({ ...r, survey_id: '22222222-2222-4222-8222-222222222222', created_at: `2024-01-01T00:00:${String(i % 60).padStart(2, '0')}.000001Z` }));
    const unique = [...new Map(written.map((r) => [r.id.toLowerCase(), r])).values()];
    const res = await svc.request('POST', '/1.0/survey/response', { token, body: unique });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const stored = await readBack(org);
    const search = await svc.request('SEARCH', '/1.0/survey/*/response', { token, body: { size: 1000 } });
    expect(search.status).to.equal(200);
    expect(byId(search.body.hits.responses)).to.deep.equal(byId(stored));
    const exported = await svc.request('SEARCH', '/1.0/survey/*/response/export', { token, body: {} });
    expect(exported.status).to.equal(200);
    expect(byId((exported.body as string).split('\n').filter(Boolean).map((l) => JSON.parse(l)))).to.deep.equal(byId(stored));
    // The API's writer stores each record as parsed (created_at kept as the first write's).
    expect(byId(stored)).to.deep.equal(byId(unique.map((r) => ({ ...parseWithSchema([r], org)[0], org_id: org }))));
  });
});
