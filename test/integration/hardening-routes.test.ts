import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';

/**
 * Issue 16, defects 2-4, over HTTP: unknown methods and paths are 404/405 (with Allow), never 500;
 * filter values too large for a URL still answer; survey reads refuse bodies that are not the
 * documented object instead of dropping their filters. And the POST alias of every SEARCH route.
 */
describe('hardening: routes, parameters and body shapes', function () {
  this.timeout(300_000);
  let svc: TestService;
  let read: string;
  let write: string;
  const survey = randomUUID();

  const record = (i: number, alias: string) => ({
    id: randomUUID(),
    doc_type: 'response',
    channel_id: randomUUID(),
    respondent_id: randomUUID(),
    respondent_aliases: [alias],
    survey_id: survey,
    scenario_id: randomUUID(),
    language: 'en',
    locale: 'en-US',
    question_id_path: '', question_correlation_id_path: '', action_id_path: '', action_correlation_id_path: '',
    group_ids: [],
    hidden_fields: [],
    emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [],
    completion: 'fully_completed',
    active: false,
    end_reason: 'completed',
    ended_at: `2024-03-0${1 + (i % 5)}T10:00:00.000000Z`,
    created_at: `2024-03-0${1 + (i % 5)}T09:00:00.00000${i % 10}Z`,
    updated_at: `2024-03-0${1 + (i % 5)}T10:00:00.000000Z`,
    last_answer_at: `2024-03-0${1 + (i % 5)}T09:30:00.000000Z`,
  });

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    write = await svc.token(['responses:write']);
    const records = Array.from({ length: 20 }, (_, i) => record(i, `alias-${i}-${'x'.repeat(900)}`));
    const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: records });
    expect(res.status).to.equal(200);
  });
  after(() => svc.close());

  describe('methods and paths (defect 2)', () => {
    for (const [method, path] of [['SEARCH', '/nope'], ['PROPFIND', '/nope'], ['PURGE', '/1.0'], ['SEARCH', '/1.0/survey/response/nope/more']] as const) {
      it(`${method} ${path} -> 404, the error body, no token needed`, async () => {
        const res = await svc.request(method, path);
        expect(res.status).to.equal(404);
        expect(res.body.error.code).to.equal('not_found');
      });
    }
    it('a method the HTTP parser does not know (BREW) is its 400, not a 500', async () => {
      const res = await svc.request('BREW', '/');
      expect(res.status).to.equal(400);
    });
    for (const [method, path, allow] of [
      ['PUT', '/1.0/event', 'SEARCH'],
      ['PROPFIND', '/1.0/event', 'POST'],
      ['GET', '/1.0/event', 'POST'],
      ['DELETE', '/1.0/release', 'GET'],
      ['GET', '/1.0/survey/*/response', 'SEARCH'],
      ['PATCH', '/1.0/survey/response', 'POST'],
      ['SEARCH', '/1.0/survey/response/nope', 'DELETE'],
    ] as const) {
      it(`${method} ${path} -> 405 with Allow (with or without a token)`, async () => {
        for (const token of [undefined, read]) {
          const res = await svc.request(method, path, { token });
          expect(res.status).to.equal(405);
          expect(res.body.error.code).to.equal('method_not_allowed');
          expect(res.headers.get('allow')).to.include(allow);
        }
      });
    }
    it('OPTIONS on a known path -> 204 with Allow', async () => {
      const res = await svc.request('OPTIONS', '/1.0/survey/*/response/summary');
      expect(res.status).to.equal(204);
      expect(res.headers.get('allow')).to.include('SEARCH').and.include('POST');
    });
  });

  describe('filter values beyond the URL and field caps (defect 3)', () => {
    it('30 filters of 1000 UUIDs (OR) answer 200 and match exactly', async () => {
      const filters = Array.from({ length: 30 }, () => ({ type: 'response', key: 'respondent_id', operator: 'in', values: Array.from({ length: 1000 }, () => randomUUID()) }));
      const res = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: { size: 0, filters } });
      expect(res.status).to.equal(200);
      expect(res.body.hits.total.value).to.equal(0);
      const negated = filters.map((f) => ({ ...f, operator: 'not_in' }));
      const all = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: { size: 0, filters: negated } });
      expect(all.status).to.equal(200);
      expect(all.body.hits.total.value).to.equal(20);
    });
    it('an alias `in` with 200 values of 1000 characters answers 200 and matches', async () => {
      const values = Array.from({ length: 200 }, (_, i) => (i < 5 ? `alias-${i}-${'x'.repeat(900)}` : `other-${i}-${'y'.repeat(990)}`));
      const res = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: { size: 0, filters: [{ type: 'response', key: 'respondent_alias', operator: 'in', values }] } });
      expect(res.status).to.equal(200);
      expect(res.body.hits.total.value).to.equal(5);
    });
  });

  describe('survey read bodies (defect 4)', () => {
    const paths = ['/1.0/survey/*/response', '/1.0/survey/*/response/summary', '/1.0/survey/*/response/aggregation'];
    const bad: Array<[string, string, string]> = [
      ['[]', '[]', 'must be a JSON object'],
      ['null', 'null', 'must be a JSON object'],
      ['[{"filters": [...]}]', '[{"filters":[{"type":"response","key":"language","operator":"eq","value":"xx"}]}]', 'must be a JSON object'],
      ['{"range": []}', '{"range":[],"group_by":[{"field":"completion"}]}', 'range must be a JSON object'],
      ['{"filter": [...]} (a typo)', '{"filter":[{"type":"response","key":"language","operator":"eq","value":"xx"}],"group_by":[{"field":"completion"}]}', 'unknown field "filter"'],
      ['{"filters": {}}', '{"filters":{},"group_by":[{"field":"completion"}]}', 'filters must be an array'],
    ];
    it('aggregation: a body without group_by -> 400 saying group_by is required (not "must be a JSON object")', async () => {
      const res = await svc.request('SEARCH', paths[2], { token: read, body: { filters: [] } });
      expect(res.status).to.equal(400);
      expect(res.body.error.issues).to.deep.equal([{ path: 'group_by', message: 'group_by is required' }]);
    });
    for (const path of paths) {
      for (const [name, raw, message] of bad) {
        it(`${path.split('/').pop()}: ${name} -> 400 naming it, nothing answered`, async () => {
          const res = await svc.request('SEARCH', path, { token: read, rawBody: raw, headers: { 'content-type': 'application/json' } });
          expect(res.status, JSON.stringify(res.body)).to.equal(400);
          expect(res.body.error.code).to.equal('validation_error');
          expect(JSON.stringify(res.body.error).replaceAll('\\"', '"')).to.include(message);
        });
      }
    }
    it('the search body names the fields it accepts when one is unknown', async () => {
      const res = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: { sizes: 3 } });
      expect(res.status).to.equal(400);
      expect(res.body.error.issues[0]).to.deep.include({ path: 'sizes' });
      expect(res.body.error.issues[0].message).to.include('filters_bool, filters, range, size, offset');
    });
    it('no body at all still reads as {} (everything in scope)', async () => {
      const res = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read });
      expect(res.status).to.equal(200);
      expect(res.body.hits.total.value).to.equal(20);
    });
    it('summary and aggregation accept (and ignore) size and offset, as the search body carries them', async () => {
      for (const path of paths.slice(1)) {
        const res = await svc.request('SEARCH', path, { token: read, body: { size: 5, offset: 1, group_by: [{ field: 'completion' }] } });
        expect(res.status, path).to.equal(path.endsWith('summary') ? 400 : 200); // summary has no group_by
      }
      const summary = await svc.request('SEARCH', paths[1], { token: read, body: { size: 5, offset: 1 } });
      expect(summary.status).to.equal(200);
    });
  });

  describe('POST alias of every SEARCH route', () => {
    const bodies: Record<string, unknown> = {
      '/1.0/survey/*/response': { size: 3 },
      '/1.0/survey/*/response/summary': {},
      '/1.0/survey/*/response/aggregation': { group_by: [{ field: 'completion' }] },
    };
    for (const [path, body] of Object.entries(bodies)) {
      it(`POST ${path} answers as SEARCH does`, async () => {
        const viaSearch = await svc.request('SEARCH', path, { token: read, body });
        const viaPost = await svc.request('POST', path, { token: read, body });
        expect(viaPost.status).to.equal(200);
        const strip = (b: any) => ({ ...b, took: 0 });
        expect(strip(viaPost.body)).to.deep.equal(strip(viaSearch.body));
        const forbidden = await svc.request('POST', path, { token: write, body });
        expect(forbidden.status).to.equal(403);
      });
    }
  });
});
