import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

describe('rate limits (HTTP)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ RATE_LIMIT_EVENTS: '5', RATE_LIMIT_RELEASES: '3', RATE_LIMIT_QUERIES: '3' });
  });
  after(() => svc.close());

  it('answers 429 with Retry-After and RateLimit-* headers past the per-token limit, storing nothing of the rejected requests', async () => {
    const token = await svc.token(['events']);
    const marker = `rl-${Date.now()}`;
    const results = await Promise.all(
      Array.from({ length: 12 }, () => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: marker }, { type: 'track', event_name: marker }] })),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok.length).to.equal(5);
    expect(limited.length).to.equal(7);
    for (const r of limited) {
      expect(r.body.error.code).to.equal('rate_limited');
      expect(Number(r.headers.get('retry-after'))).to.be.within(1, 1);
      expect(r.headers.get('ratelimit-limit')).to.equal('5');
      expect(r.headers.get('ratelimit-remaining')).to.equal('0');
      expect(Number(r.headers.get('ratelimit-reset'))).to.be.within(1, 1);
    }
    expect(ok[0].headers.get('ratelimit-limit')).to.equal('5');
    const stored = await (await svc.client.query({ query: 'SELECT count() AS c FROM events WHERE event_name = {m:String}', query_params: { m: marker }, format: 'JSONEachRow' })).json<{ c: string }>();
    expect(Number(stored[0].c)).to.equal(ok.length * 2);
  });

  it('counts per token, and admits again after the window', async function () {
    const a = await svc.token(['events']);
    const b = await svc.token(['events']);
    const burst = (token: string) => Promise.all(Array.from({ length: 6 }, () => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'x' }] })));
    const [ra, rb] = await Promise.all([burst(a), burst(b)]);
    expect(ra.filter((r) => r.status === 200).length).to.equal(5);
    expect(rb.filter((r) => r.status === 200).length).to.equal(5);
    // The reservoir refills once a second has passed, checked every 250 ms: 1 to 1.25 s.
    await new Promise((r) => setTimeout(r, 1400));
    expect((await svc.request('POST', '/1.0/event', { token: a, body: [{ type: 'track', event_name: 'x' }] })).status).to.equal(200);
  });

  it('limits the survey reads with one budget per token (search, summary and aggregation together), and writes with another', async () => {
    const token = await svc.token(['responses:read', 'responses:write']);
    const reads = await Promise.all(
      ['/1.0/survey/*/response', '/1.0/survey/*/response/summary', '/1.0/survey/*/response/aggregation', '/1.0/survey/*/response', '/1.0/survey/*/response/summary'].map(
        (path) => svc.request('SEARCH', path, { token, body: path.endsWith('aggregation') ? { group_by: [{ field: 'completion' }] } : {} }),
      ),
    );
    expect(reads.map((r) => r.status).sort()).to.deep.equal([200, 200, 200, 429, 429]);
    for (const r of reads.filter((x) => x.status === 429)) {
      expect(r.body.error.code).to.equal('rate_limited');
      expect(r.headers.get('ratelimit-limit')).to.equal('3');
      expect(r.headers.get('retry-after')).to.equal('1');
    }
    // The reads used up their budget, not the writes': an (empty, so invalid) write is let through to validation.
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: [] })).status).to.equal(400);
  });

  it('limits releases separately', async () => {
    const token = await svc.token(['releases']);
    const results = await Promise.all(Array.from({ length: 5 }, () => svc.request('GET', '/1.0/release', { token })));
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 200, 200, 429, 429]);
  });
});
