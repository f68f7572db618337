import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { writeWithLaterUpserts } from './upserts.ts';

/**
 * The respondent alias filters read alias_text (schema/266: the aliases that are not a UUID's
 * text, joined into one string between NULs, a NUL inside an alias stored as 0xFF) for values no
 * UUID text can match, and every alias otherwise (filter-sql.ts): the answers must be those
 * of a case-insensitive substring test (contains) and an exact match (eq / in) over every alias of
 * the latest version of each response, whichever column answers. Random aliases (UUID texts in
 * both cases, emails, hex-looking names, non-ASCII letters, NULs, empty), random values (pieces of
 * the aliases with their case flipped, so also across two aliases' NUL, hex digits and dashes,
 * non-ASCII only), against the same test in JS and against the expression every alias was read
 * with before schema/261, run on the engine.
 *
 * Letters whose upper and lower case differ in UTF-8 length (the Kelvin sign, dotted İ, dotless ı,
 * long ſ, ẞ...) are left out: for them the engine's positionCaseInsensitiveUTF8 answers differently
 * depending on the strings stored beside the tested one (bench/query/README.md), whichever column
 * holds them.
 */

type Rec = Record<string, any>;
const SURVEY = randomUUID();
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString();

const NAMES = ['User-42@Example.com', 'user-420@x.io', 'USER-4@EXAMPLE.COM', 'Ölaf.Müller@straße.de', 'ÉCOLE-ñandú', '日本語-名前', 'Ωmega-øre', 'beef-1234', 'DEAD-BEEF', 'cafe', 'a-b-c', 'x', '', 'plain name', 'nul\u0000Name', 'Zoë\u0000x', '\u0000'];
const aliasArb = fc.oneof(
  fc.constant(null).map(() => randomUUID()), // a UUID text: not in alias_text
  fc.constant(null).map(() => randomUUID().toUpperCase()), // not a UUID's text (upper case): in alias_text
  fc.constantFrom(...NAMES),
  fc.tuple(fc.constantFrom(...NAMES), fc.nat(999)).map(([n, k]) => `${n}${k}`),
);

function record(id: string, i: number, aliases: string[], updated: number): Rec {
  return {
    id, doc_type: 'response', channel_id: SURVEY, respondent_id: id, respondent_aliases: aliases, survey_id: SURVEY, scenario_id: SURVEY,
    language: 'en', locale: 'en-US', question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: at(i + 1),
    created_at: at(i), updated_at: at(i + updated), last_answer_at: at(i),
  };
}

const lc = (s: string) => s.toLowerCase();
function positive(r: Rec, op: string, values: string[]): boolean {
  const aliases: string[] = r.respondent_aliases;
  return op === 'contains' ? aliases.some((a) => lc(a).includes(lc(values[0]))) : aliases.some((a) => values.includes(a));
}

/** The expressions every alias was read with before schema/261. */
function allAliasesSql(op: string): string {
  switch (op) {
    case 'eq': return 'has(respondent_aliases, {v:String})';
    case 'in': return 'hasAny(respondent_aliases, {vs:Array(String)})';
    default: return 'arrayExists(a -> positionCaseInsensitiveUTF8(a, {v:String}) > 0, respondent_aliases)';
  }
}

const flipCase = (s: string, mask: number) => [...s].map((c, i) => ((mask >> (i % 30)) & 1 ? c.toUpperCase() : c.toLowerCase())).join('');

describe('respondent alias filters against JS and the all-aliases expression (alias_text, FINAL)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let read: string;
  let latest: Rec[] = [];

  before(async () => {
    svc = await startTestService();
    const write = await svc.token(['responses:write']);
    read = await svc.token(['responses:read']);
    const sets = fc.sample(fc.array(aliasArb, { maxLength: 4 }), { numRuns: 120, seed: 261 });
    const first = sets.map((aliases, i) => record(randomUUID(), i, aliases, 1));
    // Upserts in a later part: every third record gets other aliases, so a value may match an older
    // version only (FINAL must answer the newer one) or the newer one only.
    const upserts = first.filter((_, i) => i % 3 === 0).map((r, k) => record(r.id, first.indexOf(r), sets[(k * 7 + 5) % sets.length].slice().reverse(), 2));
    latest = await writeWithLaterUpserts(svc, write, first, upserts, 60);
  });
  after(() => svc?.close());

  it('stores the aliases that are not UUID texts in alias_text, in order, between NULs', async () => {
    const rs = await svc.client.query({
      query: 'SELECT toString(id) AS id, hex(alias_text) AS text FROM survey_responses FINAL WHERE org_id = {org:UUID}',
      query_params: { org: svc.orgId }, format: 'JSONEachRow',
    });
    const rows = await rs.json<{ id: string; text: string }>();
    const byId = new Map(latest.map((r) => [r.id, r]));
    expect(rows.length).to.equal(latest.length);
    const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const row of rows) {
      const texts = (byId.get(row.id)!.respondent_aliases as string[]).filter((a) => !uuidText.test(a));
      const expected = Buffer.concat([Buffer.from([0]), ...texts.map((a) => Buffer.concat([Buffer.from(a).map((b) => (b === 0 ? 0xff : b)), Buffer.from([0])]))]);
      expect(row.text, row.id).to.equal(expected.toString('hex').toUpperCase());
    }
  });

  it('answers the same ids and total as JS and as the all-aliases expression, for every operator', async () => {
    const aliases = latest.flatMap((r) => r.respondent_aliases as string[]).filter((a) => a.length > 0);
    const piece = fc.tuple(fc.constantFrom(...aliases), fc.nat(), fc.integer({ min: 1, max: 14 }), fc.nat())
      .map(([a, s, n, mask]) => flipCase([...a].slice(s % a.length, (s % a.length) + n).join(''), mask));
    // The end of one alias, a NUL and the start of another: in no alias (one joined string must not match it).
    const across = fc.tuple(fc.constantFrom(...aliases), fc.constantFrom(...aliases), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }))
      .map(([a, b, n, m]) => `${[...a].slice(-n).join('')}\u0000${[...b].slice(0, m).join('')}`);
    const value = fc.oneof(
      piece,
      fc.constantFrom(...aliases),
      fc.string({ unit: fc.constantFrom('0', '4', '9', 'a', 'B', 'e', 'F', '-'), minLength: 1, maxLength: 8 }), // hex digits and dashes: every alias
      across,
      fc.constantFrom('é', 'Ü', 'ß', '日本', 'ø', 'Ω', 'ñandú', 'ÖLAF', 'user-42', 'USER-42@', '-42@', '420@x', 'R-4', 'user-4@example.COM', '@', '.', ' ', 'no such alias', '\u0000', 'l\u0000n', 'm\u0000', 'ë\u0000X'),
    ).filter((v) => v.length > 0);
    const op = fc.constantFrom('contains', 'not_contains', 'eq', 'neq', 'in', 'not_in');
    await fc.assert(fc.asyncProperty(op, value, fc.array(fc.oneof(fc.constantFrom(...aliases), piece), { maxLength: 3 }), async (operator, v, more) => {
      const positiveOp = operator.replace(/^(not_|n)/, '');
      const values = positiveOp === 'in' ? [v, ...more] : [v];
      const negate = positiveOp !== operator;
      const filter = positiveOp === 'in' ? { type: 'response', key: 'respondent_alias', operator, values } : { type: 'response', key: 'respondent_alias', operator, value: v };
      const res = await svc.request('SEARCH', `/1.0/survey/${SURVEY}/response`, { token: read, body: { size: 1000, filters: [filter] } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const got = res.body.hits.responses.map((r: Rec) => r.id).sort();
      const label = `${operator} ${JSON.stringify(values)}`;
      const expected = latest.filter((r) => positive(r, positiveOp, values) !== negate).map((r) => r.id).sort();
      expect(res.body.hits.total.value, label).to.equal(expected.length);
      expect(got, label).to.deep.equal(expected);
      const rs = await svc.client.query({
        query: `SELECT toString(id) AS id FROM survey_responses FINAL WHERE org_id = {org:UUID} AND ${negate ? 'NOT ' : ''}${allAliasesSql(positiveOp)}`,
        query_params: { org: svc.orgId, v, vs: values }, format: 'JSONEachRow',
      });
      expect((await rs.json<{ id: string }>()).map((r) => r.id).sort(), `${label} (all aliases)`).to.deep.equal(expected);
    }), { numRuns: 150, seed: 261 });
  });
});
