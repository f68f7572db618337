import { expect } from 'chai';
import fc from 'fast-check';
import { batch, ORG } from '../response-arbitraries.ts';
import { DomainError } from '../../src/errors.ts';
import { parseResponseBatch, parseWithSchema, type ResponseRecord } from '../../src/responses/record.ts';
import { fastParseBatch } from '../../src/responses/record-fast.ts';


/** The schema's verdict: the records, or the 400's issues. */
function schemaVerdict(body: unknown): { records?: ResponseRecord[]; issues?: unknown } {
  try {
    return { records: parseWithSchema(body, ORG) };
  } catch (err) {
    if (err instanceof DomainError) return { issues: err.issues };
    throw err;
  }
}

/** Where valibot reads an array as an object (emotions, a translation): the fast path asks the schema. */
function arrayAsObject(body: unknown): boolean {
  return Array.isArray(body) && body.some((r) => {
    const rec = r as Record<string, any> | null;
    if (typeof rec !== 'object' || rec === null) return false;
    if (Array.isArray(rec.emotions)) return true;
    return Array.isArray(rec.answers) && rec.answers.some((a: any) => a && Array.isArray(a.translations) && a.translations.some(Array.isArray));
  });
}

describe('survey-response fast path vs the schema (property)', () => {
  it('accepts exactly what the schema accepts, with the same output; everything else goes to the schema', () => {
    let accepted = 0;
    let rejected = 0;
    fc.assert(fc.property(batch, (body) => {
      // Through JSON, as the body arrives (the generator's undefined members disappear).
      const input = JSON.parse(JSON.stringify(body));
      const schema = schemaVerdict(input);
      const fast = fastParseBatch(input, ORG);
      if (schema.issues) {
        rejected++;
        expect(fast, 'the fast path accepted what the schema refuses').to.equal(undefined);
        return;
      }
      accepted++;
      if (fast === undefined) {
        expect(arrayAsObject(input), 'the fast path asked the schema about a batch it accepts').to.equal(true);
        return;
      }
      expect(fast).to.deep.equal(schema.records);
      expect(JSON.stringify(fast)).to.equal(JSON.stringify(schema.records));
    }), { numRuns: 1500 });
    // The generator reaches both verdicts often (a property that only ever saw one proves little).
    expect(accepted).to.be.greaterThan(75);
    expect(rejected).to.be.greaterThan(75);
  });

  it('a batch the fast path does not take is answered by the schema: same records, same 400', () => {
    const ok = { id: '33333333-3333-4333-8333-000000000001', channel_id: ORG, respondent_id: ORG, survey_id: ORG, completion: 'not_started', active: true,
      created_at: '2024-01-02T03:04:05Z', updated_at: '2024-01-02T03:04:05Z' };
    const asArray = [{ ...ok, emotions: [] }];
    expect(fastParseBatch(asArray, ORG)).to.equal(undefined);
    expect(parseResponseBatch(asArray, ORG)).to.deep.equal(parseWithSchema(asArray, ORG));
    const bad = [{ ...ok, created_at: '2024-02-30' }];
    expect(() => parseResponseBatch(bad, ORG)).to.throw(DomainError);
    expect(schemaVerdict(bad).issues).to.deep.equal([{ path: '[0].created_at', message: 'created_at must be an ISO 8601 date-time, e.g. 2024-01-02T03:04:05.123456Z' }]);
  });
});
