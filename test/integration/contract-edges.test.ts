import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { startTestService, type TestService } from './harness.ts';

/**
 * The contract from outside, as a client meets it (docs/api.md): the Accept header (406 naming what
 * an endpoint answers), the charset of a body (415 unless UTF-8), the query string (strict like a
 * body: unknown or repeated parameters, `from` after `to`), and the forms of context.locale and
 * context.timezone.
 */
describe('contract edges: Accept, charset, query strings, paths, locale and time zone (HTTP)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const surveyExport = `/1.0/survey/${survey}/response/export`;

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events', 'events:read', 'releases', 'responses:read', 'responses:write']);
    const events = await svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'negotiated', user_alias: 'u-neg' }] });
    expect(events.status).to.equal(200);
  });
  after(async () => svc?.close());

  describe('Accept', () => {
    const exports = [
      ['survey responses', surveyExport],
      ['events', '/1.0/event/export'],
    ] as const;
    for (const [what, path] of exports) {
      it(`the ${what} export: a type it cannot produce is a 406 naming NDJSON and CSV; the documented ones keep working`, async () => {
        for (const accept of ['application/xml', 'text/html', 'image/*', 'text/csv;q=0', 'application/x-ndjson;q=0, text/csv;q=0, application/json;q=0', 'text/csv; charset=latin1']) {
          const res = await svc.request('SEARCH', path, { token, body: {}, headers: { accept } });
          expect([res.status, res.body.error?.code], accept).to.deep.equal([406, 'not_acceptable']);
          expect(res.body.error.message, accept).to.equal('Not acceptable: this endpoint answers application/x-ndjson, text/csv or application/json, and the Accept header names none of them');
        }
        const cases: Array<[string | undefined, string]> = [
          [undefined, 'application/x-ndjson'],
          ['', 'application/x-ndjson'],
          ['*/*', 'application/x-ndjson'],
          ['application/*', 'application/x-ndjson'],
          ['application/x-ndjson', 'application/x-ndjson'],
          ['application/json', 'application/x-ndjson'],
          ['application/json, text/plain, */*', 'application/x-ndjson'],
          ['application/json;q=0.9, text/csv;q=0.5', 'application/x-ndjson'],
          ['text/csv', 'text/csv'],
          ['TEXT/CSV', 'text/csv'],
          ['text/*', 'text/csv'],
          ['application/json;q=0.5, text/csv', 'text/csv'],
          ['text/csv;q=0, */*', 'application/x-ndjson'],
          ['application/xml, text/csv;q=0.1', 'text/csv'],
          ['application/json; charset=utf-8', 'application/x-ndjson'],
          ['application/x-ndjson; charset=UTF-8', 'application/x-ndjson'],
          ['text/csv; charset=utf-8', 'text/csv'],
        ];
        for (const [accept, type] of cases) {
          const res = await svc.request('POST', path, { token, body: {}, headers: accept === undefined ? {} : { accept } });
          expect([res.status, res.headers.get('content-type')], String(accept)).to.deep.equal([200, `${type}; charset=utf-8`]);
        }
      });
    }

    it('a JSON endpoint (search, a conditional one, a GET, the ingest) answers 406 to a type it cannot produce, JSON to the rest', async () => {
      const calls: Array<[string, string, unknown]> = [
        ['SEARCH', '/1.0/event', {}],
        ['SEARCH', `/1.0/survey/${survey}/response`, {}],
        ['SEARCH', `/1.0/survey/${survey}/response/summary`, {}],
        ['GET', '/1.0/release', undefined],
        ['GET', '/1.0/user/u-neg', undefined],
        ['POST', '/1.0/event', [{ type: 'track', event_name: 'negotiated' }]],
      ];
      for (const [method, path, body] of calls) {
        const refused = await svc.request(method, path, { token, body, headers: { accept: 'application/xml' } });
        expect([refused.status, refused.body.error?.message], `${method} ${path}`).to.deep.equal([406, 'Not acceptable: this endpoint answers application/json, and the Accept header names none of them']);
        for (const accept of ['*/*', 'application/json', 'application/json;q=0.5, application/xml;q=0.1', 'text/html,application/xhtml+xml,*/*;q=0.8', '', 'application/json; charset=utf-8', 'application/json;charset=UTF-8']) {
          const res = await svc.request(method, path, { token, body, headers: { accept } });
          expect([res.status < 300, res.headers.get('content-type')], `${method} ${path} ${accept}`).to.deep.equal([true, 'application/json; charset=utf-8']);
        }
      }
    });

    it('a conditional answer: If-None-Match still gets its 304 under any acceptable Accept', async () => {
      const path = `/1.0/survey/${survey}/response/summary`;
      const first = await svc.request('SEARCH', path, { token, body: {}, headers: { accept: 'application/json;q=0.9' } });
      const etag = first.headers.get('etag')!;
      const again = await svc.request('SEARCH', path, { token, body: {}, headers: { accept: '*/*;q=0.1', 'if-none-match': etag } });
      expect(again.status).to.equal(304);
      const refused = await svc.request('SEARCH', path, { token, body: {}, headers: { accept: 'text/csv', 'if-none-match': etag } });
      expect(refused.status).to.equal(406);
    });

    it('the public routes (health, the OpenAPI document) answer whatever Accept says; a missing token is still a 401 first', async () => {
      expect((await svc.request('GET', '/healthz', { headers: { accept: 'application/xml' } })).status).to.equal(200);
      expect((await svc.request('GET', '/openapi.json', { headers: { accept: 'text/plain' } })).status).to.equal(200);
      expect((await svc.request('SEARCH', '/1.0/event/export', { body: {}, headers: { accept: 'application/xml' } })).status).to.equal(401);
    });
  });

  describe('charset of a request body', () => {
    const release = { name: 'charset', version: '1' };
    const bodies: Array<[string, string, unknown, number]> = [
      ['POST', '/1.0/release', release, 201],
      ['POST', '/1.0/event', [{ type: 'track', event_name: 'charset' }], 200],
      ['SEARCH', '/1.0/event', { size: 1 }, 200],
      ['SEARCH', `/1.0/survey/${survey}/response`, { size: 1 }, 200],
      ['POST', `/1.0/survey/${survey}/response/aggregation`, { group_by: [{ field: 'completion' }] }, 200],
    ];
    for (const [method, path, body, ok] of bodies) {
      it(`${method} ${path}: a charset other than UTF-8 is a 415 (gzip or not); utf-8, UTF-8, utf8 or none are read`, async () => {
        for (const type of ['application/json; charset=latin1', 'application/json; charset=ISO-8859-1', 'application/json;charset="windows-1252"', 'application/json; charset=utf-16', 'application/json; charset=US-ASCII', 'application/json; charset=latin1;', 'application/json; charset=latin1; x', 'application/json; CHARSET=latin1']) {
          for (const gzip of [false, true]) {
            const text = JSON.stringify(body);
            const res = await svc.request(method, path, { token, rawBody: gzip ? gzipSync(text) : text, headers: { 'content-type': type, ...(gzip ? { 'content-encoding': 'gzip' } : {}) } });
            expect([res.status, res.body.error?.code], `${type} gzip=${gzip}`).to.deep.equal([415, 'unsupported_media_type']);
            const charset = /charset="?([^";]+)"?/i.exec(type)![1];
            expect(res.body.error.message).to.equal(`Request bodies are JSON, which is UTF-8 (RFC 8259): charset "${charset}" is not supported; send UTF-8, with charset=utf-8 or no charset`);
          }
        }
        for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'Application/JSON;Charset="UTF-8"', 'application/json; charset=utf8', 'application/json;', 'application/json; charset=utf-8;']) {
          for (const gzip of [false, true]) {
            const text = JSON.stringify(body);
            const res = await svc.request(method, path, { token, rawBody: gzip ? gzipSync(text) : text, headers: { 'content-type': type, ...(gzip ? { 'content-encoding': 'gzip' } : {}) } });
            expect(res.status, `${type} gzip=${gzip} ${JSON.stringify(res.body)}`).to.equal(ok);
          }
        }
      });
    }
  });

  describe('query strings', () => {
    const issuesOf = async (method: string, path: string, body?: unknown) => {
      const res = await svc.request(method, path, { token, body });
      expect(res.status, `${method} ${path}`).to.equal(400);
      return res.body.error.issues;
    };

    it('GET /1.0/release: an unknown parameter is a 400 naming it and the ones it takes; a repeated one too; from after to too', async () => {
      expect(await issuesOf('GET', '/1.0/release?foo=1')).to.deep.equal([{ path: 'foo', message: 'unknown query parameter "foo"; GET /1.0/release takes from, to, limit' }]);
      expect(await issuesOf('GET', '/1.0/release?limit=5&size=5')).to.deep.equal([{ path: 'size', message: 'unknown query parameter "size"; GET /1.0/release takes from, to, limit' }]);
      expect(await issuesOf('GET', '/1.0/release?limit=1&limit=2')).to.deep.equal([{ path: 'limit', message: 'is given 2 times; give it once' }]);
      expect(await issuesOf('GET', '/1.0/release?from=2024-03-01T00:00:00Z&to=2024-02-01T00:00:00Z')).to.deep.equal([{ path: 'from', message: 'must not be after to' }]);
      expect(await issuesOf('GET', '/1.0/release?from=2024-03-01T00:00:00.000001Z&to=2024-03-01T01:00:00%2B01:00')).to.deep.equal([{ path: 'from', message: 'must not be after to' }]);
      for (const query of ['from=2024-03-01T00:00:00Z&to=2024-03-01T01:00:00%2B01:00', 'limit=1000', 'limit=1', '', 'from=2024-01-01T00:00:00Z']) {
        const res = await svc.request('GET', `/1.0/release?${query}`, { token });
        expect(res.status, query).to.equal(200);
      }
    });

    it('an endpoint that reads no query string refuses one (its request is the body or the path), never ignoring it', async () => {
      expect(await issuesOf('SEARCH', '/1.0/event?size=5', {})).to.deep.equal([
        { path: 'size', message: 'unknown query parameter "size"; this endpoint takes none (its request is the JSON body)' },
      ]);
      expect(await issuesOf('POST', `/1.0/survey/${survey}/response/export?cursor=x`, {})).to.deep.equal([
        { path: 'cursor', message: `unknown query parameter "cursor"; this endpoint takes none (its request is the JSON body)` },
      ]);
      expect(await issuesOf('GET', '/1.0/user/u-neg?with=groups')).to.deep.equal([
        { path: 'with', message: 'unknown query parameter "with"; this endpoint takes none (its request is the path)' },
      ]);
      expect((await svc.request('GET', '/healthz?probe=1')).status).to.equal(200);
    });
  });

  describe('paths and plain messages', () => {
    it('a path parameter whose percent-encoding is not UTF-8 is a 400, never read as the raw text (DELETE /1.0/user/%FF deleted the user "%FF")', async () => {
      const alias = `%FF-${randomUUID()}`;
      expect((await svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'pct', user_alias: alias }] })).status).to.equal(200);
      const raw = `/1.0/user/${alias}`; // "%FF" then the uuid: not UTF-8 once decoded
      const message = "The path is not valid percent-encoded UTF-8: encode each byte of a parameter's UTF-8 text as %XX (and % itself as %25)";
      for (const method of ['GET', 'DELETE']) {
        const res = await svc.request(method, raw, { token });
        expect([res.status, res.body.error?.message], method).to.deep.equal([400, message]);
      }
      for (const path of ['/1.0/user/%E0%A4', `/1.0/survey/%FF/response`, '/1.0/survey/response/%C3']) {
        const res = await svc.request(path.includes('survey/%FF') ? 'SEARCH' : path.startsWith('/1.0/user') ? 'GET' : 'DELETE', path, { token, body: path.includes('survey/%FF') ? {} : undefined });
        expect([res.status, res.body.error?.message], path).to.deep.equal([400, message]);
      }
      const profile = await svc.request('GET', `/1.0/user/${encodeURIComponent(alias)}`, { token });
      expect([profile.status, profile.body.user_alias]).to.deep.equal([200, alias]);
    });

    it('POST /1.0/release: a field of the wrong type gets a plain message naming it', async () => {
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [{ name: null, version: '1' }, 'name', 'must be a string'],
        [{ name: 1, version: '1' }, 'name', 'must be a string'],
        [{ name: 'a', version: [] }, 'version', 'must be a string'],
        [{ name: 'a', version: '1', description: null }, 'description', 'must be a string'],
        [{ name: 'a', version: '1', tags: 'web' }, 'tags', 'must be an array of strings'],
        [{ name: 'a', version: '1', tags: [1] }, 'tags[0]', 'must be a string'],
        [{ name: 'a', version: '1', released_at: 1714557600 }, 'released_at', 'must be an ISO 8601 date-time string with an offset, e.g. 2024-05-01T10:00:00Z'],
      ];
      for (const [body, path, message] of cases) {
        const res = await svc.request('POST', '/1.0/release', { token, body });
        expect([res.status, res.body.error?.issues], JSON.stringify(body)).to.deep.equal([400, [{ path, message }]]);
      }
    });
  });

  describe('event reads over ranges the API takes (1900..2299)', () => {
    it('a range starting before 1970 or ending after 2149-06-06 reads the events in it (it read none: the day hint pruned every granule)', async () => {
      const alias = `range-${randomUUID()}`;
      expect((await svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'ranged', user_alias: alias }, { type: 'page', url: '/r', user_alias: alias }] })).status).to.equal(200);
      const filters = [{ key: 'user_alias', operator: 'eq', value: alias }];
      for (const range of [
        { field: 'timestamp', start: '1900-01-01T00:00:00Z' },
        { field: 'timestamp', start: '1969-12-31T23:00:00-05:00' },
        { field: 'timestamp', start: '1900-01-01T00:00:00Z', end: '2299-12-31T23:59:59Z' },
        { field: 'timestamp', end: '2149-06-07T00:00:00Z' },
        { field: 'timestamp', end: '2200-01-01T00:00:00Z' },
      ]) {
        const search = await svc.request('SEARCH', '/1.0/event', { token, body: { filters, range } });
        expect([search.status, search.body.hits?.total.value, search.body.hits?.events.length], JSON.stringify(range)).to.deep.equal([200, 2, 2]);
        const aggregation = await svc.request('SEARCH', '/1.0/event/aggregation', { token, body: { filters, range, group_by: [{ field: 'type' }] } });
        expect([aggregation.status, aggregation.body.hits?.total.value], JSON.stringify(range)).to.deep.equal([200, 2]);
        const exported = await svc.request('SEARCH', '/1.0/event/export', { token, body: { filters, range } });
        expect((exported.body as string).split('\n').filter((l) => l !== ''), JSON.stringify(range)).to.have.length(2);
      }
      for (const range of [{ field: 'timestamp', end: '1969-12-31T23:59:59Z' }, { field: 'timestamp', start: '2200-01-01T00:00:00Z' }]) {
        const search = await svc.request('SEARCH', '/1.0/event', { token, body: { filters, range } });
        expect([search.status, search.body.hits?.total.value], JSON.stringify(range)).to.deep.equal([200, 0]);
      }
    });
  });

  describe('context.locale and context.timezone', () => {
    it('takes the forms clients send and refuses the rest with a 400 naming the field and the form; nothing of a refused batch is stored', async () => {
      const good = [
        ...['en', 'en-US', 'pt-BR', 'zh-Hant-TW', 'en_US', 'es-419'].map((locale) => ({ type: 'track', event_name: 'forms', context: { locale } })),
        ...['UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5', 'Europe/Paris'].map((timezone) => ({ type: 'track', event_name: 'forms', context: { timezone } })),
      ];
      expect((await svc.request('POST', '/1.0/event', { token, body: good })).status).to.equal(200);
      const alias = `forms-${randomUUID()}`;
      const bad = await svc.request('POST', '/1.0/event', {
        token,
        body: [
          { type: 'track', event_name: 'forms', user_alias: alias, context: { locale: 'English', timezone: 'Europe/Paris' } },
          { type: 'track', event_name: 'forms', user_alias: alias, context: { locale: 'en-US', timezone: '+05:00' } },
        ],
      });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.issues).to.deep.equal([
        { path: '[0].context.locale', message: 'Must be a locale in language-REGION form (BCP 47), e.g. en, en-US, pt-BR, zh-Hant-TW (en_US is taken too)' },
        { path: '[1].context.timezone', message: 'Must be an IANA time zone name, e.g. UTC, Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5' },
      ]);
      const stored = await svc.client.query({ query: 'SELECT count() AS n FROM events WHERE user_alias = {a:String}', query_params: { a: alias }, format: 'JSONEachRow' });
      expect(Number((await stored.json<{ n: number | string }>())[0].n)).to.equal(0);
    });
  });
});
