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

  describe('survey filter items and group_by rules are strict, their messages plain (q-user18b)', () => {
    const paths = ['/1.0/survey/*/response', '/1.0/survey/*/response/summary', '/1.0/survey/*/response/aggregation'];
    const GROUP_BY = [{ field: 'completion' }];
    const search = (path: string, body: Record<string, unknown>) =>
      svc.request('SEARCH', path, { token: read, body: path.endsWith('aggregation') ? { group_by: GROUP_BY, ...body } : body });
    const language = { type: 'response', key: 'language', operator: 'eq', value: 'en' };

    // A filter's extra field was dropped (200, every response of the filter); the event filters were a 400 naming it.
    for (const path of paths) {
      it(`${path.split('/').pop()}: a filter with an unknown field -> 400 naming it and the fields a filter accepts`, async () => {
        for (const filters_bool of ['AND', 'OR']) {
          const res = await search(path, { filters_bool, filters: [language, { ...language, foo: 1 }] });
          expect(res.status, JSON.stringify(res.body).slice(0, 300)).to.equal(400);
          expect(res.body.error.code).to.equal('validation_error');
          expect(res.body.error.issues).to.deep.equal([{ path: 'filters[1].foo', message: 'unknown field "foo"; a filter accepts type, key, operator, value, values' }]);
        }
        // The same filter without it still answers.
        expect((await search(path, { filters: [language] })).status).to.equal(200);
      });
    }

    it('the survey filter words an unknown field as the event filter does', async () => {
      const events = await svc.token(['events:read']);
      const res = await svc.request('SEARCH', '/1.0/event', { token: events, body: { filters: [{ key: 'type', operator: 'eq', value: 'track', foo: 1 }] } });
      expect(res.status).to.equal(400);
      expect(res.body.error.issues[0].message).to.match(/^unknown field "foo"; a filter accepts /);
    });

    it('a filter missing key or operator, or not an object -> 400 "<field> is required" (was valibot\'s "Invalid key: ...")', async () => {
      const cases: Array<[unknown, Array<{ path: string; message: string }>]> = [
        [{ type: 'response.hidden_field', operator: 'eq', value: 'x' }, [{ path: 'filters[0].key', message: 'key is required' }]],
        [{ key: 'language', value: 'en' }, [{ path: 'filters[0].operator', message: 'operator is required' }]],
        [['language', 'eq', 'en'], [{ path: 'filters[0]', message: 'a filter must be a JSON object' }]],
      ];
      for (const path of paths) {
        for (const [filter, issues] of cases) {
          const res = await search(path, { filters: [filter] });
          expect(res.status, `${path} ${JSON.stringify(filter)}`).to.equal(400);
          expect(res.body.error.issues, `${path} ${JSON.stringify(filter)}`).to.deep.equal(issues);
        }
      }
    });

    it('a group_by rule with an unknown field -> 400 naming it and the fields that rule accepts (was 200)', async () => {
      const cases: Array<[unknown, string]> = [
        [{ field: 'completion', foo: 1 }, 'unknown field "foo"; a completion group_by rule accepts field'],
        [{ field: 'hidden_field', hidden_field_key: 'support', foo: 1 }, 'unknown field "foo"; a hidden_field group_by rule accepts field, hidden_field_key'],
        [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 3, foo: 1 }, 'unknown field "foo"; a date group_by rule accepts field, date_histogram_min_interval, date_histogram_buckets'],
        [{ field: 'answer', question_id: 'q1', foo: 1 }, 'unknown field "foo"; an answer group_by rule accepts field, question_id'],
      ];
      for (const [rule, message] of cases) {
        const res = await svc.request('SEARCH', paths[2], { token: read, body: { group_by: [{ field: 'survey_id' }, rule] } });
        expect(res.status, JSON.stringify(rule)).to.equal(400);
        expect(res.body.error.issues, JSON.stringify(rule)).to.deep.equal([{ path: 'group_by[1].foo', message }]);
      }
    });

    it('a group_by rule missing a member -> 400 "<member> is required" (was valibot\'s "Invalid key: ...")', async () => {
      const cases: Array<[unknown, Array<{ path: string; message: string }>]> = [
        [{ field: 'hidden_field' }, [{ path: 'group_by[0].hidden_field_key', message: 'hidden_field_key is required' }]],
        [{ field: 'answer' }, [{ path: 'group_by[0].question_id', message: 'question_id is required' }]],
        [{ field: 'created_at', date_histogram_min_interval: 'day' }, [{ path: 'group_by[0].date_histogram_buckets', message: 'date_histogram_buckets is required' }]],
        [{ field: 'ended_at', date_histogram_buckets: 3 }, [{ path: 'group_by[0].date_histogram_min_interval', message: 'date_histogram_min_interval is required' }]],
      ];
      for (const [rule, issues] of cases) {
        const res = await svc.request('SEARCH', paths[2], { token: read, body: { group_by: [rule] } });
        expect(res.status, JSON.stringify(rule)).to.equal(400);
        expect(res.body.error.issues, JSON.stringify(rule)).to.deep.equal(issues);
      }
    });

    it('every rule and filter type, written as documented, still answers 200', async () => {
      const res = await svc.request('SEARCH', paths[2], {
        token: read,
        body: {
          filters_bool: 'OR',
          filters: [
            language,
            { key: 'completion', operator: 'in', values: ['fully_completed'] },
            { type: 'response.hidden_field', key: 'support', operator: 'null' },
            { type: 'response.answer', key: 'q1', operator: 'gt', value: 8 },
          ],
          group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 5 }, { field: 'hidden_field', hidden_field_key: 'support' }, { field: 'answer', question_id: 'q1' }],
        },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.hits.total.value).to.equal(20);
    });

    it('the OpenAPI document shows filters and rules as strict objects, and the bodies a missing body cannot stand for as required', async () => {
      const doc = (await svc.request('GET', '/openapi.json')).body;
      const bodyOf = (path: string) => doc.paths[path].post.requestBody;
      const filter = bodyOf('/1.0/survey/{survey_ids}/response').content['application/json'].schema.properties.filters.items;
      expect(filter).to.deep.include({ additionalProperties: false, required: ['key', 'operator'] });
      const rules = bodyOf('/1.0/survey/{survey_ids}/response/aggregation').content['application/json'].schema.properties.group_by.items.oneOf;
      expect(rules.map((r: any) => r.additionalProperties)).to.deep.equal(rules.map(() => false));
      // name and version are required: a missing body is a 400, not a release.
      expect(bodyOf('/1.0/release').required).to.equal(true);
      const missing = await svc.request('POST', '/1.0/release', { token: await svc.token(['releases']) });
      expect(missing.status).to.equal(400);
      expect(bodyOf('/1.0/survey/{survey_ids}/response').required).to.equal(false);
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
