import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { encodeResponses, insertEncoded } from '../../src/responses/encode.ts';
import { parseWithSchema, toResponseRow, type ResponseRecord } from '../../src/responses/record.ts';
import { record, ORG } from '../response-arbitraries.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The RowBinary INSERT (src/responses/encode.ts) stores what the JSONEachRow rows of
 * toResponseRow store, column for column, materialized columns included: random records the
 * schema accepts, written both ways into two organizations, read back and compared.
 */
describe('survey responses: the RowBinary INSERT stores what toResponseRow defines (property)', function () {
  this.timeout(180_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc?.close();
  });

  /** Every column but org_id, rows ordered by id. */
  async function stored(org: string): Promise<Record<string, unknown>[]> {
    const rs = await svc.client.query({
      query: `SELECT * EXCEPT (org_id), nps_scores, csat_scores, ces_scores, hf_pairs, hf_support FROM survey_responses WHERE org_id = {org:UUID} ORDER BY id, updated_at`,
      query_params: { org },
      format: 'JSONEachRow',
    });
    return rs.json();
  }

  it('random records: same rows both ways', async () => {
    // Records the schema accepts, with distinct ids (an upsert would make the order of versions matter).
    const valid = fc.array(record, { minLength: 1, maxLength: 12 }).map((raw) => {
      const out: ResponseRecord[] = [];
      for (const r of JSON.parse(JSON.stringify(raw)) as unknown[]) {
        try {
          out.push(...parseWithSchema([r], ORG));
        } catch { /* refused by the schema: not a record to store */ }
      }
      return [...new Map(out.map((r) => [r.id.toLowerCase(), r])).values()];
    }).filter((rs) => rs.length > 0);
    let compared = 0;
    await fc.assert(fc.asyncProperty(valid, async (records) => {
      const [binary, json] = [randomUUID(), randomUUID()];
      const doc = (org: string) => records.map((r) => ({ ...r, org_id: org }));
      await insertEncoded(svc.client, encodeResponses(doc(binary), binary));
      await svc.client.insert({ table: 'survey_responses', values: doc(json).map((r) => toResponseRow(r, json)), format: 'JSONEachRow' });
      const [a, b] = [await stored(binary), await stored(json)];
      // The doc names its organization; everything else must be equal.
      const strip = (rows: Record<string, unknown>[], org: string) => rows.map((r) => ({ ...r, doc: String(r.doc).replaceAll(org, 'ORG') }));
      expect(strip(a, binary)).to.deep.equal(strip(b, json));
      expect(a.length).to.equal(records.length);
      compared += a.length;
    }), { numRuns: 25 });
    expect(compared).to.be.greaterThan(25);
  });
});
