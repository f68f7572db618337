import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';
import { revokeToken, listTokens } from '../../src/tokens/tokens.ts';

const track = [{ type: 'track', event_name: 'signup' }];

describe('auth: tokens and scopes (HTTP)', () => {
  let svc: TestService;
  // A short token cache, so that the revocation test waits one second, not five.
  const TTL_MS = 1000;
  before(async () => {
    svc = await startTestService({ TOKEN_CACHE_TTL_MS: String(TTL_MS) });
  });
  after(() => svc.close());

  const endpoints: Array<[string, string, unknown]> = [
    ['POST', '/1.0/event', track],
    ['POST', '/1.0/release', { name: 'r', version: '1' }],
    ['GET', '/1.0/release', undefined],
    ['POST', '/1.0/survey/response', []],
    ['SEARCH', '/1.0/survey/*/response', {}],
    ['SEARCH', '/1.0/survey/*/response/summary', {}],
    ['SEARCH', '/1.0/survey/*/response/aggregation', {}],
  ];

  it('gives the same 401 body for missing, malformed, unknown and revoked tokens on every endpoint', async () => {
    const revoked = await svc.token(['events', 'releases', 'responses:read', 'responses:write']);
    const [row] = (await listTokens(svc.client, svc.orgId)).slice(-1);
    await revokeToken(svc.client, row.id);
    // A fresh service so the revocation is not hidden by another service's cache.
    const cases: Array<[string, Record<string, string>]> = [
      ['missing', {}],
      ['malformed', { authorization: 'Bearer not-a-token' }],
      ['not bearer', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['unknown', { authorization: `Bearer th_${'A'.repeat(43)}` }],
      ['revoked', { authorization: `Bearer ${revoked}` }],
    ];
    const bodies = new Set<string>();
    for (const [method, path, body] of endpoints) {
      for (const [, headers] of cases) {
        const res = await svc.request(method, path, { body, headers });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.equal('Bearer');
        bodies.add(JSON.stringify(res.body));
      }
    }
    expect([...bodies]).to.deep.equal([JSON.stringify({ error: { status: 401, code: 'unauthorized', message: 'Missing or invalid API token' } })]);
  });

  it('gives 403 for a valid token without the endpoint scope', async () => {
    const eventsOnly = await svc.token(['events']);
    for (const [method, path, body] of endpoints.filter(([, p]) => p !== '/1.0/event')) {
      const res = await svc.request(method, path, { token: eventsOnly, body });
      expect(res.status, `${method} ${path}`).to.equal(403);
      expect(res.body.error.code).to.equal('forbidden');
    }
    const releasesOnly = await svc.token(['releases']);
    expect((await svc.request('POST', '/1.0/event', { token: releasesOnly, body: track })).status).to.equal(403);
  });

  it('stops accepting a revoked token once its cache entry expires (TOKEN_CACHE_TTL_MS)', async function () {
    const token = await svc.token(['events']);
    expect((await svc.request('POST', '/1.0/event', { token, body: track })).status).to.equal(200);
    const tokens = await listTokens(svc.client, svc.orgId);
    const mine = tokens[tokens.length - 1];
    await revokeToken(svc.client, mine.id);
    // Not a timing assertion: the deadline only stops a loop that would never end.
    const deadline = Date.now() + TTL_MS + 30_000;
    let status = 200;
    while (Date.now() < deadline && status === 200) {
      status = (await svc.request('POST', '/1.0/event', { token, body: track })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).to.equal(401);
  });

  it('answers 404 for unknown routes and 405 for a known path with a wrong method, in the error shape', async () => {
    const notFound = await svc.request('GET', '/nope');
    expect(notFound.status).to.equal(404);
    expect(notFound.body.error.code).to.equal('not_found');
    const wrongMethod = await svc.request('PUT', '/1.0/event');
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.body.error.code).to.equal('method_not_allowed');
  });

  it('serves health, readiness and the OpenAPI document without a token', async () => {
    expect((await svc.request('GET', '/healthz')).body).to.deep.equal({ status: 'ok' });
    const ready = await svc.request('GET', '/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.include({ engine: true, migrations: true });
    const doc = await svc.request('GET', '/openapi.json');
    expect(doc.body.openapi).to.equal('3.1.0');
    expect(Object.keys(doc.body.paths)).to.include.members(['/1.0/event', '/1.0/release', '/1.0/survey/{survey_ids}/response']);
  });
});
