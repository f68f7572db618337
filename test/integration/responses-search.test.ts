import { expect } from 'chai';
import fc from 'fast-check';
import { startTestService, type TestService } from './harness.ts';
import { asNumber, asText, entryEq, type HiddenFieldEntry } from './hidden-field-reference.ts';

/**
 * Writes a fixture through POST /1.0/survey/response and checks SEARCH against the same filters
 * evaluated in JS over the fixture array (the expected ids, in order, and the total).
 */

// ---- deterministic fixture -------------------------------------------------------------------
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;

const EVIL = ["'); DROP TABLE survey_responses; --", '{p0:String}', "\\'\"`", 'x} OR 1=1 --', '%_\\%'];
const SURVEYS = [uuid(), uuid(), uuid()];
const CHANNELS = [uuid(), uuid()];
const RESPONDENTS = [uuid(), uuid(), uuid(), uuid(), uuid()];
const GROUPS = [uuid(), uuid(), uuid()];
const LANGS = ['en', 'fr', 'de', ''];
const COMPLETIONS = ['not_started', 'partially_completed', 'fully_completed'] as const;
const OS = ['Linux', 'Mac', 'Windows', 'iOS', EVIL[0]];
const VERSIONS = ['1.10', '2.0', '2.5', '10.1'];
const WORDS = ['great product', 'Too SLOW', 'billing issue', 'love it', EVIL[1], EVIL[3], 'Ünïcode Straße'];
const QUESTION = uuid();
const OPEN_QUESTION = uuid();

type Rec = Record<string, any>;
const micros = (i: number) => String(100000 + i * 7).padStart(6, '0');
const at = (base: number, i: number) => `${new Date(base + i * 3_600_000).toISOString().slice(0, 19)}.${micros(i)}Z`;
const BASE = Date.UTC(2024, 0, 1);

function makeRecord(i: number, orgId: string): Rec {
  const respondent = pick(RESPONDENTS);
  const active = rand() < 0.3;
  const hidden: Rec[] = [];
  if (rand() < 0.8) hidden.push({ key: 'os', t: 0, v_s: pick(OS) });
  if (rand() < 0.7) hidden.push({ key: 'age', t: 2, v_d: Math.floor(rand() * 60) + 18 });
  if (rand() < 0.6) hidden.push({ key: 'logged_in', t: 1, v_b: rand() < 0.5 });
  if (rand() < 0.6) hidden.push({ key: 'version', t: 0, v_s: pick(VERSIONS) });
  if (rand() < 0.5) hidden.push({ key: 'signup', t: 0, v_s: at(BASE - 400 * 3_600_000, Math.floor(rand() * 200)) });
  if (rand() < 0.3) hidden.push({ key: 'mixed', t: 0, v_s: pick(['5', 'true', 'x']) });
  if (rand() < 0.3) hidden.push({ key: 'mixed', t: 2, v_d: pick([5, 7]) });
  if (rand() < 0.2) hidden.push({ key: EVIL[0], t: 0, v_s: EVIL[2] });
  const answers: Rec[] = [{ t: 2, v_d: Math.floor(rand() * 11), cta_type: 'nps', key: 'nps', question_id: QUESTION, question_correlation_id: QUESTION, translations: [], time: at(BASE, i) }];
  if (rand() < 0.7) {
    answers.push({
      t: 0, v_s: pick(WORDS), cta_type: 'open_question', key: 'why', question_id: OPEN_QUESTION, question_correlation_id: OPEN_QUESTION,
      tags: null, lang: 'en', translations: rand() < 0.5 ? [{ lang: 'fr', v_s: pick(['Produit génial', 'Trop lent']) }] : [], time: at(BASE, i),
    });
  }
  return {
    id: uuid(),
    doc_type: 'response',
    org_id: orgId,
    channel_id: pick(CHANNELS),
    respondent_id: respondent,
    respondent_aliases: [respondent, `User-${RESPONDENTS.indexOf(respondent)}@Example.com`, ...(rand() < 0.2 ? [EVIL[4]] : [])],
    survey_id: pick(SURVEYS),
    scenario_id: SURVEYS[0],
    language: pick(LANGS),
    locale: 'fr-FR',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: GROUPS.filter(() => rand() < 0.4),
    hidden_fields: hidden,
    emotions: { fear: null, sadness: 0.25, anger: 0, joy: 0.75 },
    answers,
    completion: pick(COMPLETIONS),
    active,
    end_reason: active ? '' : pick(['closed', 'completed', 'expired', 'interrupted']),
    ended_at: active ? '' : at(BASE, i + 1),
    created_at: at(BASE, i),
    updated_at: at(BASE, i + 2),
    last_answer_at: at(BASE, i),
  };
}

// ---- the filter semantics, in JS -------------------------------------------------------------
type Filter = { type?: string; key: string; operator: string; value?: any; values?: any[] };
const lc = (s: string) => s.toLowerCase();

function positive(r: Rec, f: Filter, op: string): boolean {
  const arg = op === 'in' ? f.values! : [f.value];
  if (f.type === 'response.hidden_field') {
    const entries = (r.hidden_fields as Rec[]).filter((e) => e.key === f.key);
    switch (op) {
      case 'null': return entries.length === 0;
      case 'eq': case 'in': return entries.some((e) => arg.some((x) => entryEq(e as HiddenFieldEntry, x)));
      case 'contains': return entries.some((e) => e.t === 0 && lc(e.v_s).includes(lc(asText(f.value))));
      case 'gt': case 'lt': {
        const sign = op === 'gt' ? 1 : -1;
        return entries.some((e) => (e.t === 0 ? sign * (e.v_s < asText(f.value) ? -1 : e.v_s > asText(f.value) ? 1 : 0) > 0 : e.t === 2 && asNumber(f.value) !== undefined && sign * (e.v_d - asNumber(f.value)!) > 0));
      }
      case 'before': case 'after': {
        const limit = Date.parse(f.value);
        return entries.some((e) => e.t === 0 && /^\d{4}-\d{2}-\d{2}/.test(e.v_s) && (op === 'before' ? Date.parse(e.v_s) < limit : Date.parse(e.v_s) > limit));
      }
    }
    throw new Error(op);
  }
  switch (f.key) {
    case 'respondent_id': case 'channel_id': return arg.some((x) => lc(r[f.key]) === lc(x));
    case 'respondent_segments': return arg.some((x) => r.group_ids.map(lc).includes(lc(x)));
    case 'respondent_alias': case 'respondent_aliases':
      return op === 'contains' ? r.respondent_aliases.some((a: string) => lc(a).includes(lc(f.value))) : arg.some((x) => r.respondent_aliases.includes(x));
    case 'raw': {
      const texts = (r.answers as Rec[]).flatMap((a) => [a.v_s ?? '', ...(a.translations ?? []).map((t: any) => (typeof t === 'string' ? t : t.v_s ?? ''))]);
      return texts.some((t) => lc(t).includes(lc(f.value)));
    }
    case 'language': return op === 'null' ? (r.language ?? '') === '' : arg.includes(r.language ?? '');
    case 'completion': return arg.includes(r.completion);
  }
  throw new Error(f.key);
}

const NEG: Record<string, string> = { neq: 'eq', not_in: 'in', not_null: 'null', not_contains: 'contains' };
const matches = (r: Rec, f: Filter) => (f.operator in NEG ? !positive(r, f, NEG[f.operator]) : positive(r, f, f.operator));
const newestFirst = (a: Rec, b: Rec) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0);

// ---- tests -------------------------------------------------------------------------------------
describe('survey responses: write and SEARCH (HTTP)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let read: string;
  let write: string;
  let readB: string;
  let writeB: string;
  const orgB = '0b0b0b0b-0000-4000-8000-00000000000b';
  let fixture: Rec[] = [];
  let fixtureB: Rec[] = [];

  const search = (surveys: string, body: unknown, token = read) => svc.request('SEARCH', `/1.0/survey/${surveys}/response`, { token, body });
  const all = SURVEYS.join(',');

  async function expectIds(body: Rec, records: Rec[], surveys = '*') {
    const expected = records.filter((r) => (body.filters ?? []).length === 0 || (body.filters_bool === 'OR' ? body.filters.some((f: Filter) => matches(r, f)) : body.filters.every((f: Filter) => matches(r, f)))).sort(newestFirst);
    const res = await search(surveys, { size: 1000, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.hits.total.value).to.equal(expected.length);
    expect(res.body.hits.responses.map((x: Rec) => x.id)).to.deep.equal(expected.map((x) => x.id));
    return expected.length;
  }

  before(async () => {
    svc = await startTestService();
    [read, write, readB, writeB] = await Promise.all([
      svc.token(['responses:read']), svc.token(['responses:write']), svc.token(['responses:read'], orgB), svc.token(['responses:write'], orgB),
    ]);
    fixture = Array.from({ length: 120 }, (_, i) => makeRecord(i, svc.orgId));
    // Org B: same survey ids, interleaved times, no org_id in the body (it comes from the token).
    fixtureB = Array.from({ length: 30 }, (_, i) => {
      const r = makeRecord(i * 3 + 1000, orgB);
      delete r.org_id;
      return r;
    });
    for (const [batch, token] of [[fixture.slice(0, 70), write], [fixture.slice(70), write], [fixtureB, writeB]] as const) {
      const res = await svc.request('POST', '/1.0/survey/response', { token, body: batch });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.equal({ count: batch.length });
    }
  });
  after(() => svc?.close());

  describe('round trip and tenancy', () => {
    it('returns every record exactly as written, newest first, with defaults size 10', async () => {
      const res = await search('*', {});
      expect(res.status).to.equal(200);
      expect(res.body.took).to.be.a('number');
      expect(res.body.hits.total.value).to.equal(fixture.length);
      expect(res.body.hits.responses).to.deep.equal([...fixture].sort(newestFirst).slice(0, 10));
    });

    it('a whole page of 1000 round-trips field for field', async () => {
      const res = await search(all, { size: 1000 });
      expect(res.body.hits.responses).to.deep.equal([...fixture].sort(newestFirst));
    });

    it('org B sees only its own responses, with its org_id, under the same survey ids', async () => {
      const res = await search(all, { size: 1000 }, readB);
      expect(res.body.hits.total.value).to.equal(fixtureB.length);
      expect(res.body.hits.responses).to.deep.equal([...fixtureB].sort(newestFirst).map((r) => ({ ...r, org_id: orgB })));
    });

    it('filters never reach across organizations', async () => {
      const alias = fixtureB[0].respondent_aliases[1];
      const res = await search('*', { filters: [{ type: 'response', key: 'respondent_id', operator: 'eq', value: fixtureB[0].respondent_id }, { key: 'respondent_alias', operator: 'eq', value: alias }], filters_bool: 'OR' });
      expect(res.body.hits.responses).to.not.be.empty; // org A's own respondent matches
      expect(res.body.hits.responses.every((x: Rec) => x.org_id === svc.orgId)).to.equal(true);
    });

    it('a record naming another organization is a 400 and nothing of the batch is stored', async () => {
      const good = makeRecord(500, svc.orgId);
      const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: [good, { ...makeRecord(501, svc.orgId), org_id: orgB }] });
      expect(res.status).to.equal(400);
      expect(res.body.error.issues).to.deep.equal([{ path: '[1].org_id', message: "org_id names another organization than the token's; omit it or use the token's organization" }]);
      const found = await search('*', { filters: [{ key: 'respondent_alias', operator: 'eq', value: good.respondent_aliases[1] }], size: 1000 });
      expect(found.body.hits.responses.map((x: Rec) => x.id)).not.to.include(good.id);
    });

    it('invalid records: 400 naming each by index and field', async () => {
      const bad = makeRecord(502, svc.orgId);
      bad.answers[0].t = 0;
      const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: [makeRecord(503, svc.orgId), bad, { ...bad, id: 'nope' }] });
      expect(res.status).to.equal(400);
      expect(res.body.error.issues.map((i: Rec) => i.path)).to.include.members(['[1].answers[0].t', '[2].id', '[2].answers[0].t']);
    });

    it('scopes: write needs responses:write, search needs responses:read', async () => {
      expect((await svc.request('POST', '/1.0/survey/response', { token: read, body: [makeRecord(504, svc.orgId)] })).status).to.equal(403);
      expect((await search('*', {}, write)).status).to.equal(403);
    });
  });

  describe('every key × accepted operator, against the same filter in JS', () => {
    const r0 = () => fixture[0];
    const cases: Array<[string, () => Filter]> = [
      ['respondent_id eq', () => ({ type: 'response', key: 'respondent_id', operator: 'eq', value: RESPONDENTS[0] })],
      ['respondent_id neq (upper-case UUID)', () => ({ type: 'response', key: 'respondent_id', operator: 'neq', value: RESPONDENTS[1].toUpperCase() })],
      ['respondent_id in', () => ({ type: 'response', key: 'respondent_id', operator: 'in', values: [RESPONDENTS[0], RESPONDENTS[2]] })],
      ['respondent_id not_in', () => ({ type: 'response', key: 'respondent_id', operator: 'not_in', values: [RESPONDENTS[0], RESPONDENTS[2]] })],
      ['channel_id eq', () => ({ type: 'response', key: 'channel_id', operator: 'eq', value: CHANNELS[0] })],
      ['channel_id neq', () => ({ type: 'response', key: 'channel_id', operator: 'neq', value: CHANNELS[0] })],
      ['channel_id in', () => ({ type: 'response', key: 'channel_id', operator: 'in', values: CHANNELS })],
      ['channel_id not_in', () => ({ type: 'response', key: 'channel_id', operator: 'not_in', values: [CHANNELS[1]] })],
      ['respondent_segments eq', () => ({ type: 'response', key: 'respondent_segments', operator: 'eq', value: GROUPS[0] })],
      ['respondent_segments neq', () => ({ type: 'response', key: 'respondent_segments', operator: 'neq', value: GROUPS[0] })],
      ['respondent_segments in', () => ({ type: 'response', key: 'respondent_segments', operator: 'in', values: [GROUPS[1], GROUPS[2]] })],
      ['respondent_segments not_in', () => ({ type: 'response', key: 'respondent_segments', operator: 'not_in', values: [GROUPS[1], GROUPS[2]] })],
      ['respondent_alias eq', () => ({ type: 'response', key: 'respondent_alias', operator: 'eq', value: 'User-3@Example.com' })],
      ['respondent_alias eq is case-sensitive', () => ({ type: 'response', key: 'respondent_alias', operator: 'eq', value: 'user-3@example.com' })],
      ['respondent_aliases neq', () => ({ type: 'response', key: 'respondent_aliases', operator: 'neq', value: 'User-3@Example.com' })],
      ['respondent_alias in', () => ({ type: 'response', key: 'respondent_alias', operator: 'in', values: ['User-1@Example.com', r0().respondent_id] })],
      ['respondent_alias not_in', () => ({ type: 'response', key: 'respondent_alias', operator: 'not_in', values: ['User-1@Example.com'] })],
      ['respondent_alias contains (case-insensitive)', () => ({ type: 'response', key: 'respondent_alias', operator: 'contains', value: 'USER-2@' })],
      ['respondent_alias not_contains', () => ({ type: 'response', key: 'respondent_alias', operator: 'not_contains', value: 'user-2@' })],
      ['raw contains', () => ({ type: 'response', key: 'raw', operator: 'contains', value: 'SLOW' })],
      ['raw contains a translation', () => ({ type: 'response', key: 'raw', operator: 'contains', value: 'génial' })],
      ['raw contains non-ASCII case-insensitively', () => ({ type: 'response', key: 'raw', operator: 'contains', value: 'ÜNÏCODE STRASSE'.replace('SS', 'ß').toLowerCase().replace('ü', 'Ü') })],
      ['raw not_contains', () => ({ type: 'response', key: 'raw', operator: 'not_contains', value: 'great' })],
      ['language eq', () => ({ type: 'response', key: 'language', operator: 'eq', value: 'fr' })],
      ['language neq', () => ({ type: 'response', key: 'language', operator: 'neq', value: 'fr' })],
      ['language in', () => ({ type: 'response', key: 'language', operator: 'in', values: ['fr', 'de'] })],
      ['language not_in', () => ({ type: 'response', key: 'language', operator: 'not_in', values: ['fr', 'de'] })],
      ['language null', () => ({ type: 'response', key: 'language', operator: 'null' })],
      ['language not_null', () => ({ type: 'response', key: 'language', operator: 'not_null' })],
      ['completion eq', () => ({ type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' })],
      ['completion neq', () => ({ type: 'response', key: 'completion', operator: 'neq', value: 'fully_completed' })],
      ['completion in', () => ({ type: 'response', key: 'completion', operator: 'in', values: ['not_started', 'partially_completed'] })],
      ['completion not_in', () => ({ type: 'response', key: 'completion', operator: 'not_in', values: ['not_started'] })],
      ['hidden eq string', () => ({ type: 'response.hidden_field', key: 'os', operator: 'eq', value: 'Mac' })],
      ['hidden eq number', () => ({ type: 'response.hidden_field', key: 'age', operator: 'eq', value: fixture.find((r) => r.hidden_fields.some((e: Rec) => e.key === 'age'))!.hidden_fields.find((e: Rec) => e.key === 'age').v_d })],
      ['hidden eq boolean', () => ({ type: 'response.hidden_field', key: 'logged_in', operator: 'eq', value: true })],
      ['hidden eq "false" as text', () => ({ type: 'response.hidden_field', key: 'logged_in', operator: 'eq', value: 'false' })],
      ['hidden eq numeric text on mixed entries', () => ({ type: 'response.hidden_field', key: 'mixed', operator: 'eq', value: '5' })],
      ['hidden neq', () => ({ type: 'response.hidden_field', key: 'os', operator: 'neq', value: 'Mac' })],
      ['hidden in mixed types', () => ({ type: 'response.hidden_field', key: 'mixed', operator: 'in', values: [7, 'x', true] })],
      ['hidden not_in', () => ({ type: 'response.hidden_field', key: 'os', operator: 'not_in', values: ['Mac', 'Linux'] })],
      ['hidden null', () => ({ type: 'response.hidden_field', key: 'version', operator: 'null' })],
      ['hidden not_null', () => ({ type: 'response.hidden_field', key: 'version', operator: 'not_null' })],
      ['hidden contains', () => ({ type: 'response.hidden_field', key: 'os', operator: 'contains', value: 'NU' })],
      ['hidden not_contains', () => ({ type: 'response.hidden_field', key: 'os', operator: 'not_contains', value: 'in' })],
      ['hidden gt string (lexicographic) on a string field', () => ({ type: 'response.hidden_field', key: 'version', operator: 'gt', value: '2.0' })],
      ['hidden gt numeric text on a number field', () => ({ type: 'response.hidden_field', key: 'age', operator: 'gt', value: '40' })],
      ['hidden lt number', () => ({ type: 'response.hidden_field', key: 'age', operator: 'lt', value: 30 })],
      ['hidden before', () => ({ type: 'response.hidden_field', key: 'signup', operator: 'before', value: '2023-12-20T00:00:00Z' })],
      ['hidden after (offset)', () => ({ type: 'response.hidden_field', key: 'signup', operator: 'after', value: '2023-12-20T01:00:00+01:00' })],
    ];
    for (const [name, make] of cases) {
      it(name, async () => {
        await expectIds({ filters: [make()] }, fixture);
      });
    }

    it('the fixture makes most cases non-trivial', () => {
      const sizes = cases.map(([, make]) => fixture.filter((r) => matches(r, make())).length);
      expect(sizes.filter((n) => n > 0 && n < fixture.length).length).to.be.greaterThan(cases.length - 5);
    });
  });

  describe('AND / OR', () => {
    const f1: Filter = { type: 'response', key: 'language', operator: 'eq', value: 'fr' };
    const f2: Filter = { type: 'response.hidden_field', key: 'age', operator: 'gt', value: 40 };
    const f3: Filter = { type: 'response', key: 'completion', operator: 'neq', value: 'not_started' };
    it('AND (the default)', () => expectIds({ filters: [f1, f2, f3] }, fixture));
    it('OR', () => expectIds({ filters_bool: 'OR', filters: [f1, f2, f3] }, fixture));
    it('OR with a survey list', () => expectIds({ filters_bool: 'OR', filters: [f1, f2] }, fixture.filter((r) => r.survey_id !== SURVEYS[2]), `${SURVEYS[0]},${SURVEYS[1]}`));
  });

  describe('surveys in the path', () => {
    it('"*" equals the full list', () => expectIds({}, fixture, all));
    it('one survey', () => expectIds({}, fixture.filter((r) => r.survey_id === SURVEYS[1]), SURVEYS[1]));
    it('an unknown survey matches nothing', async () => {
      const res = await search('00000000-0000-4000-8000-000000000000', {});
      expect(res.body.hits).to.deep.equal({ total: { value: 0 }, responses: [] });
    });
    it('a malformed list is a 400', async () => {
      for (const bad of ['abc', `${SURVEYS[0]},x`, `${SURVEYS[0]},`]) {
        const res = await search(encodeURIComponent(bad), {});
        expect(res.status, bad).to.equal(400);
      }
    });
  });

  describe('paging', () => {
    const sorted = () => [...fixture].sort(newestFirst);
    it('size 0: only the total', async () => {
      const res = await search('*', { size: 0 });
      expect(res.body.hits).to.deep.equal({ total: { value: fixture.length }, responses: [] });
    });
    it('size 1000 returns everything', async () => {
      expect((await search('*', { size: 1000 })).body.hits.responses).to.have.length(fixture.length);
    });
    it('offset + size walk the list without gaps or repeats', async () => {
      const seen: string[] = [];
      for (let offset = 0; offset < fixture.length; offset += 25) {
        const res = await search('*', { size: 25, offset });
        seen.push(...res.body.hits.responses.map((r: Rec) => r.id));
      }
      expect(seen).to.deep.equal(sorted().map((r) => r.id));
    });
    it('the last element, and past the end (total still given)', async () => {
      const last = await search('*', { size: 10, offset: fixture.length - 1 });
      expect(last.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal([sorted().at(-1)!.id]);
      const past = await search('*', { size: 10, offset: fixture.length });
      expect(past.body.hits).to.deep.equal({ total: { value: fixture.length }, responses: [] });
      const max = await search('*', { size: 1000, offset: 100000 });
      expect(max.body.hits).to.deep.equal({ total: { value: fixture.length }, responses: [] });
    });
    it('over the limits: 400', async () => {
      const off = await search('*', { offset: 100001 });
      expect(off.status).to.equal(400);
      expect(off.body.error.issues[0]).to.include({ path: 'offset' });
      expect(off.body.error.issues[0].message).to.match(/next_cursor/);
      expect((await search('*', { size: 1001 })).status).to.equal(400);
      expect((await search('*', { size: -1 })).status).to.equal(400);
    });
  });

  describe('range', () => {
    const sorted = () => [...fixture].sort(newestFirst);
    it('start and end are inclusive, to the microsecond', async () => {
      const s = sorted();
      const start = s[40].created_at;
      const end = s[10].created_at;
      const res = await search('*', { size: 1000, range: { field: 'created_at', start, end } });
      expect(res.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(s.slice(10, 41).map((r) => r.id));
    });
    it('one microsecond past an edge excludes it', async () => {
      const s = sorted();
      const bump = (t: string, d: number) => `${t.slice(0, 20)}${String(Number(t.slice(20, 26)) + d).padStart(6, '0')}Z`;
      const res = await search('*', { size: 1000, range: { start: bump(s[40].created_at, 1), end: bump(s[10].created_at, -1) } });
      expect(res.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(s.slice(11, 40).map((r) => r.id));
    });
    it('offsets in the bounds; open-ended ranges', async () => {
      const s = sorted();
      const t = s[20].created_at;
      const plusOne = new Date(Date.parse(t) + 3_600_000).toISOString().slice(0, 19).replace(/$/, `.${t.slice(20, 26)}+01:00`);
      const res = await search('*', { size: 1000, range: { end: plusOne } });
      expect(res.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(s.slice(20).map((r) => r.id));
      const res2 = await search('*', { size: 1000, range: { start: t } });
      expect(res2.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(s.slice(0, 21).map((r) => r.id));
    });
    it('start after end, or a bad date: 400', async () => {
      expect((await search('*', { range: { start: '2024-02-01', end: '2024-01-01' } })).status).to.equal(400);
      expect((await search('*', { range: { start: 'last week' } })).status).to.equal(400);
    });
  });

  describe('upsert', () => {
    // Distinct created_at for every record: ties would be ordered by ClickHouse's UUID order (id DESC).
    let next = 900;
    const base = () => makeRecord(next++, svc.orgId);
    const post = (records: Rec[]) => svc.request('POST', '/1.0/survey/response', { token: write, body: records });
    const byId = async (id: string) => {
      const res = await search('*', { size: 1000 });
      return { total: res.body.hits.total.value as number, versions: res.body.hits.responses.filter((r: Rec) => r.id === id) };
    };

    it('a newer updated_at replaces; an older one does not; never two versions', async () => {
      const v1 = base();
      expect((await post([v1])).status).to.equal(200);
      const v2 = { ...v1, completion: 'fully_completed', language: 'de', updated_at: '2030-01-01T00:00:00.000002Z' };
      expect((await post([v2])).status).to.equal(200);
      const stale = { ...v1, language: 'xx', updated_at: '2030-01-01T00:00:00.000001Z' };
      expect((await post([stale])).status).to.equal(200);
      const { total, versions } = await byId(v1.id);
      expect(versions).to.deep.equal([v2]);
      expect(total).to.equal(fixture.length + 1);
      const count = await search('*', { size: 0, filters: [{ key: 'language', operator: 'in', values: ['de', 'xx'] }] });
      expect(count.body.hits.total.value).to.equal(fixture.filter((r) => r.language === 'de').length + 1);
      fixture.push(v2);
    });

    it('segment and hidden-field eq / in (answered from the text indexes of schema/210) test the newest version only', async () => {
      const group = uuid();
      const key = `plan_${next}`;
      const count = async (filter: Filter) => (await search('*', { size: 0, filters: [filter] })).body.hits.total.value as number;
      const filters: Filter[] = [
        { type: 'response', key: 'respondent_segments', operator: 'eq', value: group.toUpperCase() },
        { type: 'response', key: 'respondent_segments', operator: 'in', values: [group, uuid()] },
        { type: 'response.hidden_field', key, operator: 'eq', value: 'pro' },
        { type: 'response.hidden_field', key, operator: 'in', values: ['pro', 'team'] },
      ];
      // Older version with the segment and the entry, newer without: not counted; and the reverse.
      const a1: Rec = { ...base(), group_ids: [group], hidden_fields: [{ key, t: 0, v_s: 'pro' }], updated_at: '2030-01-01T00:00:00.000001Z' };
      const b1: Rec = { ...base(), group_ids: [], hidden_fields: [], updated_at: '2030-01-01T00:00:00.000001Z' };
      expect((await post([a1, b1])).status).to.equal(200);
      for (const f of filters) expect(await count(f), JSON.stringify(f)).to.equal(1);
      const a2 = { ...a1, group_ids: [], hidden_fields: [{ key, t: 0, v_s: 'free' }], updated_at: '2030-01-01T00:00:00.000002Z' };
      const b2 = { ...b1, group_ids: [group], hidden_fields: [{ key, t: 0, v_s: 'pro' }], updated_at: '2030-01-01T00:00:00.000002Z' };
      expect((await post([a2, b2])).status).to.equal(200);
      for (const f of filters) {
        expect(await count(f), JSON.stringify(f)).to.equal(1);
        const found = await search('*', { size: 10, filters: [f] });
        expect(found.body.hits.responses.map((r: Rec) => r.id), JSON.stringify(f)).to.deep.equal([b1.id]);
      }
      fixture.push(a2, b2);
    });

    it('the same id twice in one batch: the later updated_at wins', async () => {
      const a: Rec = { ...base(), updated_at: '2030-01-01T00:00:00.000005Z', language: 'en' };
      const b = { ...a, updated_at: '2030-01-01T00:00:00.000004Z', language: 'fr' };
      expect((await post([a, b])).status).to.equal(200);
      expect((await byId(a.id)).versions).to.deep.equal([a]);
      fixture.push(a);
    });

    it('keeps the stored created_at when a later version moves it', async () => {
      const v1 = base();
      await post([v1]);
      const v2 = { ...v1, created_at: '2031-01-01T00:00:00.000000Z', updated_at: '2031-01-02T00:00:00.000000Z' };
      await post([v2]);
      const { versions } = await byId(v1.id);
      expect(versions).to.deep.equal([{ ...v2, created_at: v1.created_at }]);
      fixture.push({ ...v2, created_at: v1.created_at });
    });

    it('concurrent first writes of one id with different created_at leave one response', async () => {
      const v1 = base();
      const versions = Array.from({ length: 6 }, (_, i) => ({ ...v1, created_at: at(BASE, 700 + i), updated_at: `2032-01-01T00:00:00.00000${i}Z` }));
      const results = await Promise.all(versions.map((r) => post([r])));
      expect(results.map((r) => r.status)).to.deep.equal(versions.map(() => 200));
      const found = (await byId(v1.id)).versions;
      expect(found).to.have.length(1);
      expect(found[0].updated_at).to.equal(versions[5].updated_at);
      fixture.push(found[0]);
    });

    it('moving a response to another survey is a 400', async () => {
      const v1 = base();
      await post([v1]);
      const res = await post([{ ...v1, survey_id: v1.survey_id === SURVEYS[0] ? SURVEYS[1] : SURVEYS[0], updated_at: '2031-01-01T00:00:00Z' }]);
      expect(res.status).to.equal(400);
      expect(res.body.error.issues[0].path).to.equal('[0].survey_id');
      fixture.push(v1);
    });

    it('the same id in another organization is another response', async () => {
      const v1 = base();
      await post([v1]);
      const res = await svc.request('POST', '/1.0/survey/response', { token: writeB, body: [{ ...v1, org_id: undefined, language: 'xx' }] });
      expect(res.status).to.equal(200);
      expect((await byId(v1.id)).versions).to.deep.equal([v1]);
      fixture.push(v1);
      fixtureB.push({ ...v1, org_id: undefined, language: 'xx' });
    });
  });

  describe('injection strings are stored and matched literally', () => {
    for (const evil of EVIL) {
      it(JSON.stringify(evil), async () => {
        const r: Rec = { ...makeRecord(950 + EVIL.indexOf(evil), svc.orgId), language: evil, respondent_aliases: [evil], hidden_fields: [{ key: evil, t: 0, v_s: evil }] };
        r.answers[0] = { ...r.answers[0], t: 0, v_s: evil, v_d: undefined };
        delete r.answers[0].v_d;
        const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: [r] });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        fixture.push(r);
        const filters: Filter[] = [
          { key: 'language', operator: 'eq', value: evil },
          { key: 'respondent_alias', operator: 'eq', value: evil },
          { key: 'respondent_alias', operator: 'contains', value: evil },
          { key: 'raw', operator: 'contains', value: evil },
          { type: 'response.hidden_field', key: evil, operator: 'eq', value: evil },
          { type: 'response.hidden_field', key: evil, operator: 'contains', value: evil },
        ];
        for (const f of filters) {
          const n = await expectIds({ filters: [f] }, fixture);
          expect(n, JSON.stringify(f)).to.be.greaterThan(0);
        }
      });
    }
  });

  describe('random filter bodies', () => {
    it('give 200 or 400, never 500', async () => {
      const keys = ['respondent_id', 'respondent_alias', 'respondent_aliases', 'respondent_segments', 'channel_id', 'raw', 'language', 'completion', 'os', 'age', '', 'x'.repeat(300)];
      const ops = ['eq', 'neq', 'in', 'not_in', 'not_null', 'null', 'contains', 'not_contains', 'before', 'after', 'lt', 'gt', 'like', ''];
      const scalar = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom(...RESPONDENTS, ...GROUPS, ...EVIL, 'fully_completed', '2024-01-01T00:00:00Z'));
      const filter = fc.record({
        type: fc.constantFrom('response', 'response.hidden_field', 'other', undefined),
        key: fc.constantFrom(...keys),
        operator: fc.constantFrom(...ops),
        value: fc.option(scalar, { nil: undefined }),
        values: fc.option(fc.array(scalar, { maxLength: 4 }), { nil: undefined }),
      }, { requiredKeys: [] });
      const body = fc.record({
        filters_bool: fc.constantFrom('AND', 'OR', 'and', undefined),
        filters: fc.option(fc.array(filter, { maxLength: 4 }), { nil: undefined }),
        size: fc.option(fc.integer({ min: -2, max: 1002 }), { nil: undefined }),
        offset: fc.option(fc.integer({ min: -2, max: 100002 }), { nil: undefined }),
        range: fc.option(fc.record({ field: fc.constantFrom('created_at', 'x'), start: fc.option(fc.constantFrom('2024-01-01', '2024-01-03T00:00:00Z', 'x'), { nil: undefined }), end: fc.option(fc.constantFrom('2024-01-02', 'y'), { nil: undefined }) }, { requiredKeys: [] }), { nil: undefined }),
      }, { requiredKeys: [] });
      await fc.assert(fc.asyncProperty(fc.oneof(body, fc.anything()), async (b) => {
        const res = await search('*', b);
        expect([200, 400], JSON.stringify({ b, res: res.body })).to.include(res.status);
      }), { numRuns: 60 });
    });
  });
});
